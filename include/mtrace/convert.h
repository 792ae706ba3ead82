/* trace2wl as a library call: a trace into a workload (doc/workload-format.md). */
#ifndef MTRACE_CONVERT_H
#define MTRACE_CONVERT_H

#include <stdint.h>

#include "mtrace/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_convert_opts {
    int force;    /* replace an existing output */
    int progress; /* show progress on stderr */
    /* Threads reading the trace, the caller's included (0 or 1: the caller alone): with more, jobs - 1
     * workers decode the trace's threads ahead (mtrace/ordered_reader.h) while the caller converts.
     * The workload is the same bytes with any number. */
    unsigned jobs;
} mt_convert_opts_t;

typedef struct mt_convert_stats {
    uint64_t records; /* read from the trace */
    uint64_t calls;   /* call records among them */
    uint64_t ops;     /* written to the workload */
    uint32_t threads;
    uint64_t slots;         /* peak live blocks */
    uint64_t waits;         /* cross-thread sync points */
    uint64_t inversions;    /* records applied later than their timestamp said, to respect causality */
    uint64_t unknown_frees; /* frees and reallocs of blocks allocated before tracing began: dropped */
    uint64_t double_frees;
    uint64_t forced; /* inconsistencies got past by dropping a live block */
    uint64_t peak_live_bytes;
    uint64_t first_double_free_offset; /* trace offset of the first double free, for the report */
    uint64_t first_unknown_free_offset;
    /* page evidence (trace format 3): large blocks, how many were made of fresh memory (their pages
     * written are known) or estimated, their whole pages and those written; the touch table's
     * entries (blocks written in part, and the later writes of blocks written over their life) */
    uint64_t large_blocks, large_exact, large_estimated, large_pages, large_touched;
    uint64_t large_printed; /* of the estimated, decided by their pages' prints */
    /* edge blocks (trace_format.h, MT_PAGES_EDGE) with evidence, and of those, the ones whose last
     * bytes the program left unwritten (a touch entry each: among touch_entries) */
    uint64_t edge_blocks, edge_unwritten;
    uint64_t touch_entries, large_later, later_entries;
    /* the program's own mappings: made, the most mapped at once (bytes), their whole pages and
     * those written */
    uint64_t program_maps, program_peak_bytes, program_pages, program_touched;
    /* of those, the most the program's brk/sbrk held at once (bytes); its madvise calls that drop
     * pages of its mappings, as ops */
    uint64_t program_brk_peak_bytes, program_advises;
    /* the trace ended at an exec (mt_trace_ended_at_exec): the workload is the program up to it, and
     * continued_in names the trace of what followed ("" if it was not found beside this one) */
    int ended_at_exec;
    char continued_in[4096];
} mt_convert_stats_t;

int mt_convert(const char *trace, const char *workload, const mt_convert_opts_t *opts, mt_convert_stats_t *stats,
               mt_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
