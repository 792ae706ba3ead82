/* Stands in for mtrace-sim in the allocator tests: takes the simulator's arguments, and writes as
 * its result which library answers malloc in this process, so a test can see what the replay driver
 * preloaded. Writes {"kind": "replay", "allocator": LABEL, "malloc_from": FILE, "ld_preload": ENV}. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *json = NULL, *label = "";
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = argv[++i];
        else if (!strcmp(argv[i], "--label"))
            label = argv[++i];
    }
    if (!json) {
        fprintf(stderr, "which_malloc: no --json\n");
        return 2;
    }
    void *m = dlsym(RTLD_DEFAULT, "malloc");
    Dl_info info;
    const char *from = m && dladdr(m, &info) && info.dli_fname ? info.dli_fname : "unknown";
    const char *pre = getenv("LD_PRELOAD");
    FILE *f = fopen(json, "w");
    if (!f) {
        perror(json);
        return 1;
    }
    /* the names are paths without quotes or backslashes */
    fprintf(f, "{\"kind\": \"replay\", \"allocator\": \"%s\", \"malloc_from\": \"%s\", \"ld_preload\": \"%s\"}\n",
            label, from, pre ? pre : "");
    return fclose(f) == 0 ? 0 : 1;
}
