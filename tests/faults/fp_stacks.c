/* Many distinct stacks from several threads at once, for the shim's stack table.
 *
 *   fp_stacks THREADS: each thread, one after another in a different order, goes down a chain of
 *   calls that branches at every level on one bit of a pattern number, so that each pattern has a
 *   stack of its own and the program's stacks are as many as its patterns:
 *     - few stacks: 3 rounds over the 2^13 patterns p, each ending in malloc(p + 1) (fewer stacks
 *       than the table holds at once: a stack met again is found, not numbered again);
 *     - many stacks: 2 rounds over the 2^16 patterns p, each ending in calloc(p + 1, 0) (more
 *       stacks than the table holds at once: it starts over while the threads run);
 *   each block is freed at once, from one place. Rounds and threads take the patterns in different
 *   orders. No thread starts the many stacks before every thread is done with the few (a barrier):
 *   a thread that ran ahead would fill the table and have the others' few stacks numbered again, as
 *   one run in a dozen did under load.
 *
 * stdout: a summary that does not depend on the run. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "fp_util.h"

#define FEW_BITS 13
#define MANY_BITS 16

static volatile unsigned sink;
static pthread_barrier_t phase;

static __attribute__((noinline)) void *leaf(unsigned p, int many)
{
    void *b = many ? calloc(p + 1, 0) : malloc(p + 1);
    if (!b)
        abort();
    return b;
}

/* Two call sites per level, told apart by the work after the call (which also keeps the calls from
 * becoming jumps): the return addresses on the stack spell the pattern's bits. */
static __attribute__((noinline)) void *descend(unsigned level, unsigned bits, unsigned p, int many)
{
    void *b;
    if (level == bits) {
        b = leaf(p, many);
    } else if (p >> level & 1) {
        b = descend(level + 1, bits, p, many);
        sink += 1;
    } else {
        b = descend(level + 1, bits, p, many);
        sink += 2;
    }
    return b;
}

/* Every pattern below 2^bits once, in an order set by `seed` (an odd multiplier is a bijection). */
static void round_over(unsigned bits, uint32_t seed, int many)
{
    const uint32_t mask = (1u << bits) - 1, mul = (seed * 2 + 1) * 40503u;
    for (uint32_t i = 0; i <= mask; i++)
        free(descend(0, bits, (i * mul + seed * 7919u) & mask, many));
}

static void *worker(void *arg)
{
    const uint32_t k = (uint32_t)(uintptr_t)arg;
    for (uint32_t r = 0; r < 3; r++)
        round_over(FEW_BITS, k * 3 + r, 0);
    pthread_barrier_wait(&phase);
    for (uint32_t r = 0; r < 2; r++)
        round_over(MANY_BITS, k * 2 + r + 100, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    const unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 2;
    if (n < 1 || n > 16)
        return 2;
    pthread_t t[16];
    if (pthread_barrier_init(&phase, NULL, n) != 0)
        return 1;
    for (unsigned k = 0; k < n; k++)
        if (pthread_create(&t[k], NULL, worker, (void *)(uintptr_t)k) != 0)
            return 1;
    for (unsigned k = 0; k < n; k++)
        pthread_join(t[k], NULL);
    fp_say("stacks: %u threads, %u and %u patterns\n", n, 1u << FEW_BITS, 1u << MANY_BITS);
    return 0;
}
