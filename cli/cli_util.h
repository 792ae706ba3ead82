/* Helpers shared by the mtrace front end's commands. */
#ifndef MTRACE_CLI_UTIL_H
#define MTRACE_CLI_UTIL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "mtrace/json_writer.h"
#include "mtrace/trace_reader.h"

/* Prints the error as the one line a user sees and returns the exit status for bad input. */
static inline int mt_fail(const mt_error_t *err)
{
    fprintf(stderr, "mtrace: %s\n", err->msg);
    return 1;
}

/* The verdict rule, as the help of replay, compare and sweep states it (analysis/spread.c). */
#define MT_VERDICT_HELP                                                                                      \
    "  Verdicts (faster/slower, less/more memory) compare the medians of CPU time (user+sys of the replay)\n" \
    "  and of peak RSS, and say \"within noise\" when the two spreads overlap: min..max, or q1..q3 from 4\n"   \
    "  runs; with one run on either side they add \"(1 run: noise unknown)\".\n"

/* A decimal option value from min to max into *out (when out is not NULL), else a message naming the
 * command and the option, and -1. strtoul alone would take " 7", "+7" and "-1" (as ULONG_MAX). */
static inline int mt_uint_option(const char *cmd, const char *name, const char *v, unsigned long min,
                                 unsigned long max, unsigned long *out)
{
    char *end;
    errno = 0;
    const unsigned long n = strtoul(v, &end, 10);
    if (!*v || *end || errno || n < min || n > max || v[0] == '-' || v[0] == '+' || v[0] == ' ') {
        fprintf(stderr, "%s: %s %s: expected a number from %lu to %lu\n", cmd, name, v, min, max);
        return -1;
    }
    if (out)
        *out = n;
    return 0;
}

#endif
