/* A program whose blocks of 16 KiB are carved up as a pool carves them (Tcl's allocator takes 16384
 * bytes at a time): every byte written but the last 16, or for one block in FULL, to the end as a
 * buffer is filled. Under glibc with an mmap threshold of 4096 each block is a mapping of five pages,
 * the fifth for its last 16 bytes alone: resident only where they were written. Used by
 * tests/e2e/edge_pages.sh.
 *
 *   prog_edge [-n BLOCKS] [-f FULL]
 *
 * Makes BLOCKS blocks (default 2000), one in FULL (default 4) written to its end, all live at once,
 * then prints its peak RSS (VmHWM) in KiB, frees every other block (their evidence comes at their
 * end) and leaves the rest live to its exit (theirs comes at exit). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "prog_util.h"

#define BLOCK 16384u
#define EDGE 16u

int main(int argc, char **argv)
{
    unsigned n = 2000, full = 4;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-n"))
            n = (unsigned)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-f"))
            full = (unsigned)atoi(argv[i + 1]);
    }
    if (!n || !full)
        return 2;
    unsigned char **b = calloc(n, sizeof *b);
    if (!b)
        return 1;
    for (unsigned i = 0; i < n; i++) {
        if (!(b[i] = malloc(BLOCK)))
            return 1;
        memset(b[i], (int)(i % 251) + 1, i % full == 0 ? BLOCK : BLOCK - EDGE);
    }
    put("blocks", n);
    put("peak_rss_kb", (uint64_t)status_kb("VmHWM:"));
    flush_out();
    for (unsigned i = 0; i < n; i += 2)
        free(b[i]);
    return 0;
}
