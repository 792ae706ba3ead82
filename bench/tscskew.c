/* tscskew: whether two CPUs' time-stamp counters agree, as the trace's cross-thread order assumes.
 * Two threads, pinned to CPUs 0 and 1, hand a token back and forth; each hand-over carries the
 * sender's rdtsc, and the receiver compares its own, read after it saw the token: a reading behind
 * the sender's is a disagreement between the two counters (by at least that much).
 *   usage: tscskew [HANDOFFS]   (default 2000000 per thread)
 * Output, one line: handoffs, how many read behind, and the worst, in ticks. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>

static _Atomic uint64_t sent;
static _Atomic int turn;
static long rounds = 2000000;

typedef struct side {
    int cpu;
    long behind, handoffs;
    uint64_t worst;
} side_t;

static void *run(void *arg)
{
    side_t *s = arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(s->cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
        fprintf(stderr, "tscskew: cannot pin to CPU %d; measuring unpinned\n", s->cpu);
    for (long i = 0; i < rounds; i++) {
        while (atomic_load_explicit(&turn, memory_order_acquire) != s->cpu)
            ;
        const uint64_t now = __rdtsc(), then = atomic_load_explicit(&sent, memory_order_relaxed);
        if (then && now < then) {
            s->behind++;
            if (then - now > s->worst)
                s->worst = then - now;
        }
        s->handoffs++;
        atomic_store_explicit(&sent, __rdtsc(), memory_order_relaxed);
        atomic_store_explicit(&turn, !s->cpu, memory_order_release);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = atol(argv[1]);
    side_t s[2] = { { .cpu = 0 }, { .cpu = 1 } };
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&th[i], NULL, run, &s[i]) != 0)
            return 1;
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    printf("handoffs=%ld behind=%ld worst_ticks=%llu\n", s[0].handoffs + s[1].handoffs, s[0].behind + s[1].behind,
           (unsigned long long)(s[0].worst > s[1].worst ? s[0].worst : s[1].worst));
    return 0;
}
