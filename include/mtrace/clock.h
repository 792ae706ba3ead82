/* The time source of the recorder and the simulator: the CPU's time-stamp counter where there is
 * one (a few nanoseconds, no system call; its rate is measured against CLOCK_MONOTONIC), else
 * CLOCK_MONOTONIC in nanoseconds. */
#ifndef MTRACE_CLOCK_H
#define MTRACE_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#define MT_CLOCK_IS_TSC 1
#else
#define MT_CLOCK_IS_TSC 0
#endif

static inline uint64_t mt_clock(void)
{
#if MT_CLOCK_IS_TSC
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

static inline uint64_t mt_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
