/* Run under `mtrace record --stacks 8` by the report tests (callsites.sh, html_chromium.sh):
 *   - malloc(1000) in main, never freed (a leak of 1000 bytes at a known line);
 *   - malloc(3000) in the shared library libreport_callee, freed before the end;
 *   - with an argument N: N rounds of allocations of sizes from 16 bytes to 32 KiB on two threads,
 *     with a live set that grows and then shrinks, so the plots and histograms have a shape.
 * Prints "main_line L" and "lib_line L" (the lines of the two calls), then exits 0.
 * Built with -g -O0 -fno-builtin: every call is a real call on its own line. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libreport_callee.h"

enum { SLOTS = 512 };

static void churn(unsigned rounds, unsigned seed)
{
    void **slot = calloc(SLOTS, sizeof *slot);
    if (!slot)
        exit(1);
    unsigned x = seed;
    for (unsigned i = 0; i < rounds; i++) {
        x = x * 1103515245u + 12345u;
        /* the first half fills more slots than it empties, the second half the other way round */
        const unsigned k = (x >> 8) % SLOTS;
        const int grow = i < rounds / 2 ? (x >> 4) % 4 != 0 : (x >> 4) % 4 == 0;
        if (slot[k] && !grow) {
            free(slot[k]);
            slot[k] = NULL;
        } else if (!slot[k] && grow) {
            const size_t n = (size_t)16 << ((x >> 20) % 12);
            slot[k] = malloc(n);
            if (!slot[k])
                exit(1);
            memset(slot[k], 1, n);
        } else {
            void *tmp = malloc(64); /* a temporary */
            free(tmp);
        }
    }
    for (unsigned k = 0; k < SLOTS; k++)
        free(slot[k]);
    free(slot);
}

static unsigned g_rounds;

static void *worker(void *arg)
{
    (void)arg;
    churn(g_rounds / 2, 99);
    return NULL;
}

int main(int argc, char **argv)
{
    unsigned lib_line = 0;
    /* clang-format off */
    void *keep = malloc(1000); const unsigned main_line = __LINE__;
    /* clang-format on */
    void *lib = report_callee_alloc(3000, &lib_line);
    memset(keep, 2, 1000);
    memset(lib, 3, 3000);
    if (argc > 1) {
        g_rounds = (unsigned)strtoul(argv[1], NULL, 10);
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL) != 0)
            return 1;
        churn(g_rounds, 7);
        pthread_join(t, NULL);
    }
    free(lib);
    printf("main_line %u\nlib_line %u\n", main_line, lib_line);
    return 0; /* keep is leaked on purpose */
}
