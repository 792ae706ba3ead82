/* The recorder's clock policy: which time source the recorded calls read (the time-stamp counter
 * where there is one: mt_clock), how often, and what one read costs on this machine, measured once
 * at start and stated in the trace header (MT_STR_CLOCK), where `mtrace info` shows it. A counter
 * that the hypervisor traps or emulates can cost a microsecond a read instead of nanoseconds: the
 * statement tells a trace taken on such a machine from one whose figures are the program's own.
 *
 * How often. While the process has one thread, its calls are in order by their place in the
 * thread's stream, and no other thread's records need their times to be put in order with them.
 * The recorder then reads the clock every CLOCK_EVERY_ONE_THREAD calls (MTRACE_CLOCK_EVERY=K sets
 * K, 1 a read per call) while they come densely (less
 * than CLOCK_DENSE_NS apart on average since the previous read), and the calls in between take the
 * time of the latest read (mt_now_of); calls further apart read it each, as the read is then cheap
 * beside the time between calls, and a program that makes few calls would lose their lifetimes in
 * a read period. From the moment a second thread is made or seen (mt_clock_shared), every call
 * reads the clock: the readers merge the threads' records by time, and the converter's order of a
 * free and the malloc in another thread that gets the same address back starts from those times.
 * What the coarser times cost: the readers spread the times of the calls that share a read evenly up
 * to the next read (format/trace_reader.c, "shared clock reads"), so a block's lifetime is known to
 * within the spread of call times in a read period (calls less than 1 us apart on average), and
 * the stored times to within one period (bench/RESULTS.md, "Where the time goes on a large
 * working set"). */
#define _GNU_SOURCE
#include <stdio.h>

#include "shim.h"

/* Back-to-back reads per round, and rounds: the fastest round is the one least disturbed by
 * preemption or another tenant. 3 x 128 reads of each clock: about 30 us at start here. */
#define CLOCK_PROBE_READS 128
#define CLOCK_PROBE_ROUNDS 3

/* Calls per clock read while the process has one thread. A read of the time-stamp counter costs 11
 * to 12 ns in a loop on the 2-vCPU AMD VM, and more between the loads of a program whose working set
 * is larger than the caches: on churn's 100 MB working set, a read every 8 calls takes the recorder
 * from +54 to +30 ns per call, on its cache-sized default from +23 to +18 (bench/RESULTS.md, "Where
 * the time goes on a large working set"); on a 16-vCPU Intel VM a read was most of +60 ns per call. */
#define CLOCK_EVERY_ONE_THREAD 8
#define CLOCK_DENSE_NS 1000u

/* ns per read of the recorder's clock (tsc nonzero: mt_clock) or of CLOCK_MONOTONIC; inlined with a
 * constant `tsc`, so that each loop holds its clock's read and nothing else. */
static inline __attribute__((always_inline)) double per_read_ns(int tsc)
{
    double best = 0;
    for (int r = 0; r < CLOCK_PROBE_ROUNDS; r++) {
        uint64_t sink = 0;
        const uint64_t t0 = mt_mono_ns();
        for (int i = 0; i < CLOCK_PROBE_READS; i++)
            sink += tsc ? mt_clock() : mt_mono_ns();
        const uint64_t t1 = mt_mono_ns();
        __asm__ volatile("" : : "r"(sink)); /* the reads are kept */
        const double ns = (double)(t1 - t0) / CLOCK_PROBE_READS;
        if (r == 0 || ns < best)
            best = ns;
    }
    return best;
}

/* Chooses how often calls read the clock (mt_g.clock_skip) and writes the header's statement of it
 * into buf; returns its length. At start, and again in a forked child, whose only thread is the one
 * that forked: a process that has had a second thread keeps reading at every call. */
size_t mt_clock_choose(char *buf, size_t cap)
{
    const double mono = per_read_ns(0), own = MT_CLOCK_IS_TSC ? per_read_ns(1) : mono;
    unsigned every = mt_g.opt.clock_every;
    if (!every)
        every = CLOCK_EVERY_ONE_THREAD;
    if (atomic_load(&mt_g.next_thread) > 1) /* a second thread has been seen */
        every = 1;
    /* The counter's rate is not known yet (it is measured over the whole run, at the end): 3 GHz is
     * close enough for a threshold. */
    mt_g.clock_dense = MT_CLOCK_IS_TSC ? (3u * CLOCK_DENSE_NS) >> MT_TIME_SHIFT : CLOCK_DENSE_NS;
    atomic_store_explicit(&mt_g.clock_skip, every - 1, memory_order_relaxed);
    char reads[48] = "per-call";
    if (every > 1)
        snprintf(reads, sizeof reads, "every-%u-calls-while-one-thread", every);
    int n;
    if (MT_CLOCK_IS_TSC)
        n = snprintf(buf, cap, "source=tsc reads=%s tsc_ns=%.1f monotonic_ns=%.1f", reads, own, mono);
    else
        n = snprintf(buf, cap, "source=monotonic reads=%s monotonic_ns=%.1f", reads, mono);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

void mt_clock_shared(void)
{
    atomic_store_explicit(&mt_g.clock_skip, 0, memory_order_relaxed);
    mt_self.clock_left = 0;
}
