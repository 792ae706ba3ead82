/* mtrace export: a trace as tables that ClickHouse loads as they are (its RowBinary format), with the
 * schema and the queries that reproduce mtrace report in doc/export.md. */
#ifndef MTRACE_EXPORT_H
#define MTRACE_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "mtrace/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The tables, one file each in the output directory: "<table>.rowbinary". */
enum { MT_EXPORT_TRACES, MT_EXPORT_RECORDS, MT_EXPORT_STACKS, MT_EXPORT_THREADS, MT_EXPORT_RSS, MT_EXPORT_NTABLES };
extern const char *const mt_export_table_names[MT_EXPORT_NTABLES];

typedef struct mt_export_opts {
    const char *dir;   /* made if missing */
    uint64_t trace_id; /* the key of every row; 0: derived from the trace's header (mt_export_trace_id) */
    /* How callsites are found, as mtrace report's --skip-frames and --no-auto-skip (callers.h). */
    const char *const *skip;
    size_t nskip;
    int no_auto_skip;
    /* Threads reading the trace, the caller's included (0 or 1: the caller alone): with more, the
     * ordered reader's workers decode and merge the records (mtrace/ordered_reader.h). The tables are
     * the same bytes with any number. */
    unsigned jobs;
} mt_export_opts_t;

typedef struct mt_export_stats {
    uint64_t records; /* call records written */
    uint64_t stacks, threads, rss;
    uint64_t trace_id;
} mt_export_stats_t;

/* Writes the tables of one trace in one pass, in time order, with memory proportional to the live
 * blocks and the stacks (never to the trace's length). Each file is written under a temporary name
 * and renamed into place only at the end.
 * 0: the whole trace was exported. 1: the trace is damaged: every record before the damage was
 * exported (the traces table says where it stopped) and err holds the reader's message, with the
 * file and the offset. Negative: nothing was written, the message is in err. */
int mt_export_trace(const char *path, const mt_export_opts_t *o, mt_export_stats_t *st, mt_error_t *err);

/* The default trace id: a hash of the header's pid, start times and host, the same on every export
 * of one trace and different between the processes of a fleet. Never 0. */
uint64_t mt_export_trace_id(const mt_trace_t *t);

#ifdef __cplusplus
}
#endif
#endif
