/* Helpers shared by the mtrace front end's commands. */
#ifndef MTRACE_CLI_UTIL_H
#define MTRACE_CLI_UTIL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli_options.h"
#include "mtrace/json_writer.h"
#include "mtrace/trace_reader.h"
#include "mtrace/workload.h"

/* Prints the error as the one line a user sees and returns the exit status for bad input. */
static inline int mt_fail(const mt_error_t *err)
{
    fprintf(stderr, "mtrace: %s\n", err->msg);
    return 1;
}

/* A workload's ops, per op and in all (mtrace info, mtrace dump). */
typedef struct mt_wl_stats {
    uint64_t per_op[MT_WL_OP_MAX + 1];
    uint64_t ops;
} mt_wl_stats_t;

/* Walks every thread's stream: counts ops and checks that the workload decodes to its end; with
 * `dump`, prints each op a line as mtrace dump does. 0, or negative with the message in err.
 * dump_cmd.c. */
int mt_scan_workload(const mt_wl_t *w, mt_wl_stats_t *s, int dump, mt_error_t *err);

#endif
