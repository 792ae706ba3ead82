/* A trace's figures in one pass over its records (mtrace info): analysis/trace_scan.c. */
#ifndef MTRACE_TRACE_SCAN_H
#define MTRACE_TRACE_SCAN_H

#include <stdint.h>

#include "mtrace/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_trace_stats {
    uint64_t records, calls, events;
    uint64_t per_op[MT_OP_MAX + 1];
    uint64_t first_time, last_time;
    unsigned last_op;         /* the op of the latest record (of the last one read at that time) */
    uint64_t bytes_requested; /* by the calls that returned a block, as mtrace report counts them */
    uint64_t failed;          /* mt_call_failed() */
} mt_trace_stats_t;

/* The trace's figures through its threads' chunk lists (a chunk present twice in the file counts
 * once), split into `jobs` runs scanned by as many threads and added in the list's order: the same
 * figures as one scan. 0, or negative with err naming the first damage in that order. */
int mt_trace_scan(mt_trace_t *t, mt_trace_stats_t *s, unsigned jobs, mt_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
