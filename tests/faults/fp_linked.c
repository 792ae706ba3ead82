/* Linked against another allocator (jemalloc, tcmalloc) at build time: a known sequence of calls.
 * Info: every pointer and usable size as "key value". stdout: a summary that does not depend on the
 * run.
 *   usage: fp_linked INFO */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "fp_util.h"

static void *block(const char *key, void *p)
{
    fp_info("%s %llu", key, (unsigned long long)(uintptr_t)p);
    if (!p)
        exit(3);
    *(volatile char *)p = 1;
    return p;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    fp_info_path = argv[1];
    char *a = block("a", malloc(100));
    char *c = block("c", calloc(10, 24));
    char *r = block("r", realloc(a, 5000));
    void *pm = NULL;
    if (posix_memalign(&pm, 64, 200) != 0)
        return 3;
    block("pm", pm);
    char *al = block("al", aligned_alloc(128, 256));
    char *me = block("me", memalign(32, 100));
    fp_info("u_c %llu", (unsigned long long)malloc_usable_size(c));
    free(c);
    free(r);
    free(pm);
    free(al);
    free(me);
    free(NULL);
    fp_say("linked: 6 blocks\n");
    return 0;
}
