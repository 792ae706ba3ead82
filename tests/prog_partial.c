/* A program that allocates large blocks and writes only part of each, as growable buffers, hash
 * tables sized for the worst case and I/O buffers do: the case where a replay that writes every page
 * of every block overstates the real program's RSS, and understates what a smaller mmap threshold
 * saves. Used by bench/fidelity.sh and by tests/e2e/touched_pages.sh.
 *
 *   prog_partial [-n ROUNDS] [-l LIVE] [-f PERCENT] [-s SEED] [-k]
 *
 * LIVE blocks (default 48) of 64 KiB to 4 MiB (log-uniform) are kept live; each round frees one at
 * random and allocates another in its place (malloc, or calloc one time in eight), then writes the
 * first PERCENT % (default 25; per block 1/2x to 3/2x of it, capped at 100) of its bytes, page by page.
 * Small blocks (16 B to 1 KiB) come and go between the large ones. At the end, with every large
 * block still live, it prints its peak RSS (VmHWM) in KiB, and frees every block; with -k it leaves
 * them live to its exit, as a server keeps the buffers it made at start. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prog_util.h"

#define MAX_LIVE 4096u

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* xorshift64*: deterministic for a seed, so every run (native, traced) does the same calls */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static size_t large_size(void)
{
    /* about log-uniform over 64 KiB .. 4 MiB: a power of two from 2^16 to 2^21, plus up to as much */
    const size_t base = (size_t)65536 << (rnd() % 6);
    return base + (size_t)(rnd() % base);
}

static unsigned long arg(const char *s, const char *what, unsigned long max)
{
    char *end;
    const unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *end != '\0' || *s == '-' || v > max) {
        fprintf(stderr, "prog_partial: %s must be a number up to %lu\n", what, max);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    unsigned long rounds = 3000, live = 48, percent = 25, seed = 1;
    int c, keep = 0;
    while ((c = getopt(argc, argv, "n:l:f:s:k")) != -1) {
        switch (c) {
        case 'n':
            rounds = arg(optarg, "-n", 100000000ul);
            break;
        case 'l':
            live = arg(optarg, "-l", MAX_LIVE);
            break;
        case 'f':
            percent = arg(optarg, "-f", 100);
            break;
        case 's':
            seed = arg(optarg, "-s", 1ul << 40);
            break;
        case 'k':
            keep = 1;
            break;
        default:
            fprintf(stderr, "usage: prog_partial [-n ROUNDS] [-l LIVE] [-f PERCENT] [-s SEED] [-k]\n");
            return 2;
        }
    }
    if (!live)
        live = 1;
    rng_state = 0x9e3779b97f4a7c15ull ^ seed;
    const long page = sysconf(_SC_PAGESIZE);
    static char *blocks[MAX_LIVE];
    static void *small[64];
    uint64_t written = 0;
    for (unsigned long i = 0; i < live + rounds; i++) {
        const unsigned k = i < live ? (unsigned)i : (unsigned)(rnd() % live);
        free(blocks[k]);
        const size_t size = large_size();
        blocks[k] = (rnd() % 8) ? malloc(size) : calloc(1, size);
        if (!blocks[k])
            return 1;
        /* 1/2 to 3/2 of the asked share, so that blocks differ */
        uint64_t share = (uint64_t)size * percent / 100 * (50 + rnd() % 101) / 100;
        if (share > size)
            share = size;
        for (uint64_t off = 0; off < share; off += (uint64_t)page)
            blocks[k][off] = (char)off;
        written += share;
        for (unsigned j = 0; j < 8; j++) {
            const unsigned s = (unsigned)(rnd() % 64);
            free(small[s]);
            small[s] = malloc(16 + rnd() % 1008);
            if (small[s])
                memset(small[s], 1, 16);
        }
    }
    printf("written_mib %.1f\npeak_rss_kb %ld\n", (double)written / 1048576.0, status_kb("VmHWM:"));
    if (keep)
        return 0;
    for (unsigned k = 0; k < live; k++)
        free(blocks[k]);
    for (unsigned s = 0; s < 64; s++)
        free(small[s]);
    return 0;
}
