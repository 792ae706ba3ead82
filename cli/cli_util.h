/* Helpers shared by the mtrace front end's commands. */
#ifndef MTRACE_CLI_UTIL_H
#define MTRACE_CLI_UTIL_H

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_options.h"
#include "mtrace/json_writer.h"
#include "mtrace/replay.h"
#include "mtrace/trace_reader.h"
#include "mtrace/workload.h"

/* Prints the error as the one line a user sees and returns the exit status for bad input. */
static inline int mt_fail(const mt_error_t *err)
{
    fprintf(stderr, "mtrace: %s\n", err->msg);
    return 1;
}

/* The exit status of mtrace replay or sweep after mt_replay_run returned rc, with its message (if
 * any) printed: 0, or MT_EXIT_FAILED_CALLS when calls failed; 128 + a stop signal; a child's own
 * exit status (it said why itself: nothing printed); 1 for a child killed by a signal; 2 for a
 * replay that could not start (mtrace-sim or an allocator not found, fork failing). */
static inline int mt_replay_exit_status(int rc, const mt_replay_outcome_t *out, const mt_error_t *err)
{
    if (rc == 0)
        return out->failed_calls ? MT_EXIT_FAILED_CALLS : 0;
    if (out->child_status)
        return out->child_status;
    mt_fail(err);
    if (out->stop_signal)
        return 128 + out->stop_signal;
    return out->child_signal ? 1 : MT_EXIT_USAGE;
}

/* Whether setting (NAME=VALUE) is one the replays take (mt_mallopt_parse): 0, or -1 after one line
 * on stderr naming the option's text as given (arg, of which setting is one value), before any
 * replay runs. */
static inline int mt_mallopt_usage(const char *cmd, const char *arg, const char *setting)
{
    int param, value;
    const int rc = mt_mallopt_parse(setting, &param, &value);
    if (rc == 0)
        return 0;
    const int one = !strcmp(arg, setting);
    fprintf(stderr, "%s: --mallopt '%s': %s%s", cmd, arg, one ? "" : setting, one ? "" : ": ");
    char names[256];
    if (rc == MT_MALLOPT_RANGE)
        fprintf(stderr, "out of range (mallopt takes an int: %d to %d)\n", INT_MIN, INT_MAX);
    else if (rc == MT_MALLOPT_UNKNOWN)
        fprintf(stderr, "unknown setting: known are %s (or M_NAME, or mallopt's number)\n",
                mt_mallopt_names(names, sizeof names));
    else
        fprintf(stderr, "expected NAME=VALUE, VALUE a number with an optional k or m, e.g. mmap_threshold=64k\n");
    return -1;
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
