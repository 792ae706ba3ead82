/* Runs a fuzz target (LLVMFuzzerTestOneInput) over files: each argument is a file or a directory,
 * whose files (and those of its subdirectories) run in name order. Used by the normal tests to replay
 * the corpora and the regression inputs without libFuzzer; in a sanitizer build it finds what the
 * fuzzer would. Each input is in a buffer of its exact size, so an overread is caught by ASan.
 *
 * usage: replay_main [-v] FILE|DIR...   (-v or FUZZ_REPLAY_VERBOSE=1: name each input) */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

static const char *current; /* the input being run, named if the process dies */
static unsigned long replayed;
static int verbose;

static void name_current(void)
{
    if (current) {
        static const char msg[] = "replay: died on input ";
        (void)!write(2, msg, sizeof msg - 1);
        (void)!write(2, current, strlen(current));
        (void)!write(2, "\n", 1);
    }
}

static void on_signal(int sig)
{
    name_current();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Sanitizer runtimes call this before they end the process (weak: absent without a sanitizer). */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fprintf(stderr, "replay: %s: out of memory\n", path);
            fclose(f);
            return -1;
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        cap *= 2;
        uint8_t *g = realloc(buf, cap);
        if (!g)
            free(buf);
        buf = g;
    }
    fclose(f);
    /* An exact-size copy: the bytes after the input are not the target's to read. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    current = path;
    if (verbose)
        fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(exact, n);
    current = NULL;
    free(exact);
    replayed++;
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_path(const char *path, int depth)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return run_file(path);
    if (depth > 8)
        return 0;
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "README.md"))
            continue; /* ., .., .gitkeep and the like */
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **g = realloc(names, cap * sizeof *g);
            if (!g)
                break;
            names = g;
        }
        if (asprintf(&names[n], "%s/%s", path, e->d_name) < 0)
            break;
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (run_path(names[i], depth + 1) < 0)
            rc = -1;
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    const char *v = getenv("FUZZ_REPLAY_VERBOSE");
    verbose = v && *v && strcmp(v, "0") != 0;
    if (__sanitizer_set_death_callback)
        __sanitizer_set_death_callback(name_current);
    const int sigs[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL };
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        signal(sigs[i], on_signal);
    int rc = 0, any = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) {
            verbose = 1;
            continue;
        }
        any = 1;
        if (run_path(argv[i], 0) < 0)
            rc = 1;
    }
    if (!any) {
        fprintf(stderr, "usage: %s [-v] FILE|DIR...\n", argv[0]);
        return 2;
    }
    printf("replayed %lu inputs\n", replayed);
    return rc;
}
