/* What the recorder's per-call time source costs here: rdtsc, and for comparison clock_gettime and
 * glibc's sbrk(0) (which the recorder calls to see the heap top move). Prints ns per call. */
#include <stdio.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "mtrace/clock.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
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
    return (int)(sink & 0); /* keeps the loops */
}
