/* The recorder's clock policy: which time source every recorded call reads (one read per call, the
 * time-stamp counter where there is one: mt_clock), and what one read costs on this machine,
 * measured once at start and stated in the trace header (MT_STR_CLOCK), where `mtrace info` shows
 * it. A counter that the hypervisor traps or emulates can cost a microsecond a read instead of
 * nanoseconds: the statement tells a trace taken on such a machine from one whose figures are
 * the program's own. */
#define _GNU_SOURCE
#include <stdio.h>

#include "shim.h"

/* Back-to-back reads per round, and rounds: the fastest round is the one least disturbed by
 * preemption or another tenant. 3 x 128 reads of each clock: about 30 us at start here. */
#define CLOCK_PROBE_READS 128
#define CLOCK_PROBE_ROUNDS 3

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

size_t mt_clock_statement(char *buf, size_t cap)
{
    const double mono = per_read_ns(0);
    int n;
    if (MT_CLOCK_IS_TSC)
        n = snprintf(buf, cap, "source=tsc reads=per-call tsc_ns=%.1f monotonic_ns=%.1f", per_read_ns(1), mono);
    else
        n = snprintf(buf, cap, "source=monotonic reads=per-call monotonic_ns=%.1f", mono);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}
