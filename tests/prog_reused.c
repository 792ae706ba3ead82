/* A program whose large blocks reuse heap memory that earlier blocks wrote, and are written less
 * than the fresh ones: the case where the pages a reused block shows resident say nothing of what
 * the program wrote, and the fresh blocks' share stands for other blocks (git's zlib buffers).
 * Used by tests/e2e/reused_pages.sh.
 *
 *   prog_reused [-n BLOCKS] [-r PERCENT] [-f PERCENT]
 *
 * First BLOCKS (default 128) blocks of 96 KiB (under glibc's default mmap threshold: heap blocks)
 * are made and written whole, each followed by a small block kept to the end so that the large ones
 * neither merge when freed nor go back to the system; then freed, and the program does something
 * else for 0.1 s (the recorder's counting budget is a share of the time). Then BLOCKS blocks of the same
 * size, made of that memory, have their first -r PERCENT (default 10) of pages written with other
 * bytes, and 3 x BLOCKS fresh ones (the heap grows) their first -f PERCENT (default 50), all live at
 * once: the program's peak with every block a mapping of its own (mmap_threshold=4096). It prints
 * that peak (VmHWM, KiB) as "peak_rss_kb", then frees everything. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prog_util.h"

#define LARGE (96u * 1024u)
#define MAX_BLOCKS 4096u

static unsigned long arg(const char *s, const char *what, unsigned long max)
{
    char *end;
    const unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *end != '\0' || *s == '-' || v > max) {
        fprintf(stderr, "prog_reused: %s must be a number up to %lu\n", what, max);
        exit(2);
    }
    return v;
}

/* Writes the first `percent` % of block b's pages with byte `v`. */
static void fill(char *b, unsigned long percent, int v)
{
    memset(b, v, (size_t)LARGE * percent / 100);
}

int main(int argc, char **argv)
{
    unsigned long n = 128, reused = 10, fresh = 50;
    int c;
    while ((c = getopt(argc, argv, "n:r:f:")) != -1) {
        switch (c) {
        case 'n':
            n = arg(optarg, "-n", MAX_BLOCKS);
            break;
        case 'r':
            reused = arg(optarg, "-r", 100);
            break;
        case 'f':
            fresh = arg(optarg, "-f", 100);
            break;
        default:
            fprintf(stderr, "usage: prog_reused [-n BLOCKS] [-r PERCENT] [-f PERCENT]\n");
            return 2;
        }
    }
    static char *first[MAX_BLOCKS], *guard[MAX_BLOCKS], *later[4 * MAX_BLOCKS];
    for (unsigned long i = 0; i < n; i++) {
        if (!(first[i] = malloc(LARGE)) || !(guard[i] = malloc(64)))
            return 1;
        fill(first[i], 100, 0xa5);
    }
    for (unsigned long i = 0; i < n; i++)
        free(first[i]);
    usleep(100000);
    for (unsigned long i = 0; i < 4 * n; i++) {
        if (!(later[i] = malloc(LARGE)))
            return 1;
        fill(later[i], i < n ? reused : fresh, 0x5a);
    }
    printf("peak_rss_kb %ld\n", status_kb("VmHWM:"));
    for (unsigned long i = 0; i < 4 * n; i++)
        free(later[i]);
    for (unsigned long i = 0; i < n; i++)
        free(guard[i]);
    return 0;
}
