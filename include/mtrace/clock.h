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
    uint64_t lo, hi; /* rdtsc clears the upper halves of rax and rdx: no zero extension needed */
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (hi << 32) | lo;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* One step of a spin-wait: tells the CPU this thread is waiting (x86 `pause`, Arm `yield`), which
 * frees the core's resources for a sibling hardware thread; elsewhere only stops the compiler from
 * folding the loop. The one place with per-architecture instructions besides mt_clock. */
static inline void mt_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("pause" ::: "memory");
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ volatile("yield" ::: "memory");
#else
    __asm__ volatile("" ::: "memory");
#endif
}

static inline uint64_t mt_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
