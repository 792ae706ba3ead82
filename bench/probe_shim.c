/* probe_shim: a preload library that forwards malloc, free, calloc and realloc to glibc and adds,
 * per call, one piece of what a recorder does, to learn what each piece costs on churn
 * (bench/RESULTS.md, "Where the time goes on a large working set"). Built in variants:
 *   PROBE_TSC    a read of the time-stamp counter
 *   PROBE_ALU    PROBE_ALU independent one-cycle instructions (a multiple of 4), no memory access
 *   PROBE_STORE  an 8-byte store into a 64 KiB thread buffer, zeroed when full (the home chunk)
 * and none of them (the forwarding alone). It answers mtrace_control's pause and resume, so that
 * churn -A measures it in-process as it does the recorder (bench/ab_overhead.sh -i). x86-64. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mtrace.h"

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);
void *malloc(size_t size);
void free(void *p);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t size);

static int paused;
static __thread uint64_t last;
#ifdef PROBE_STORE
static __thread uint8_t buf[65536] __attribute__((aligned(64)));
static __thread size_t pos;
#endif

int mtrace_control(int cmd, const char *label)
{
    (void)label;
    if (cmd == MTRACE_CTL_PAUSE || cmd == MTRACE_CTL_RESUME)
        paused = cmd == MTRACE_CTL_PAUSE;
    return 0;
}

static inline void probe(uint64_t a, uint64_t b)
{
    if (__builtin_expect(paused, 0))
        return;
#ifdef PROBE_TSC
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    const uint64_t now = (uint64_t)hi << 32 | lo;
#else
    const uint64_t now = last + 1;
#endif
#ifdef PROBE_ALU
    uint64_t r0 = a, r1 = b, r2 = now, r3 = a ^ b;
#pragma GCC unroll 128 /* straight-line code, no loop */
    for (unsigned i = 0; i < PROBE_ALU / 4; i++)
        __asm__ volatile("add $1,%0\n\txor %1,%1\n\tlea 3(%2),%2\n\tshl $1,%3"
                         : "+r"(r0), "+r"(r1), "+r"(r2), "+r"(r3));
    a = r0 ^ r1 ^ r2 ^ r3;
#endif
#ifdef PROBE_STORE
    if (pos + 8 > sizeof buf) {
        memset(buf, 0, sizeof buf);
        pos = 0;
    }
    const uint64_t v = (now - last) ^ a ^ b;
    memcpy(buf + pos, &v, 8);
    pos += 8;
#else
    (void)a;
    (void)b;
#endif
    last = now;
}

void *malloc(size_t size)
{
    void *r = __libc_malloc(size);
    probe(size, (uintptr_t)r);
    return r;
}

void free(void *p)
{
    probe((uintptr_t)p, 0);
    __libc_free(p);
}

void *calloc(size_t n, size_t size)
{
    void *r = __libc_calloc(n, size);
    probe(n * size, (uintptr_t)r);
    return r;
}

void *realloc(void *p, size_t size)
{
    void *r = __libc_realloc(p, size);
    probe((uintptr_t)p ^ size, (uintptr_t)r);
    return r;
}
