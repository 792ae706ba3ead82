/* What the recorder's per-call time source costs here: rdtsc, and for comparison clock_gettime and
 * glibc's sbrk(0) (which the recorder calls to see the heap top move). Prints ns per call, first
 * back to back, then inside a malloc/free loop like a traced program's (where a time read's cost
 * may differ: it can overlap the allocator's work, or wait for it). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "mtrace/clock.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline uint64_t rdtscp(void)
{
    uint32_t lo, hi, aux;
    __asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
    return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

enum { NONE, TSC, TSCP, MONO, COARSE };

/* One malloc and one free per iteration, sizes 16..1024, 64 blocks live, a time read per call. */
static double in_loop(int clock, long n)
{
    static void *live[64];
    uint64_t sink = 0, x = 88172645463325252u;
    const double t0 = now();
    for (long i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const unsigned k = (unsigned)(x & 63);
        for (int c = 0; c < 2; c++) {
            switch (clock) {
            case TSC:
                sink += mt_clock();
                break;
            case TSCP:
                sink += rdtscp();
                break;
            case MONO:
                sink += mt_mono_ns();
                break;
            case COARSE:
                sink += coarse_ns();
                break;
            default:
                break;
            }
            if (c == 0) {
                free(live[k]);
                live[k] = NULL;
            } else {
                live[k] = malloc(16 + (x >> 8) % 1009);
                if (live[k])
                    *(volatile char *)live[k] = (char)sink;
            }
        }
    }
    return (now() - t0) / (double)(2 * n) * 1e9;
}

int main(void)
{
    const long n = 20000000;
    uint64_t sink = 0;
    double t0 = now();
    for (long i = 0; i < n; i++)
        sink += mt_clock();
    printf("mt_clock (rdtsc): %.1f ns\n", (now() - t0) / (double)n * 1e9);
    t0 = now();
    for (long i = 0; i < n; i++)
        sink += (uint64_t)(uintptr_t)sbrk(0);
    printf("sbrk(0):          %.1f ns\n", (now() - t0) / (double)n * 1e9);
    t0 = now();
    for (long i = 0; i < n; i++)
        sink += mt_mono_ns();
    printf("clock_gettime:    %.1f ns\n", (now() - t0) / (double)n * 1e9);

    /* In the loop: the median of 5 runs each, interleaved, minus the loop with no time read. */
    static const char *const names[] = { "none", "rdtsc", "rdtscp", "CLOCK_MONOTONIC", "CLOCK_MONOTONIC_COARSE" };
    double t[5][5];
    for (int r = 0; r < 5; r++)
        for (int c = NONE; c <= COARSE; c++)
            t[c][r] = in_loop(c, n / 8);
    double med[5];
    for (int c = NONE; c <= COARSE; c++) {
        for (int a = 0; a < 5; a++) /* insertion sort of 5 */
            for (int b = a; b > 0 && t[c][b] < t[c][b - 1]; b--) {
                const double tmp = t[c][b];
                t[c][b] = t[c][b - 1];
                t[c][b - 1] = tmp;
            }
        med[c] = t[c][2];
    }
    printf("in a malloc/free loop (%.1f ns per call without a time read), added per call:\n", med[NONE]);
    for (int c = TSC; c <= COARSE; c++)
        printf("  %-24s %+.1f ns\n", names[c], med[c] - med[NONE]);
    return (int)(sink & 0); /* keeps the loops */
}
