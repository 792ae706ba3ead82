/* mtrace diff: two reports of the same program (before and after a change) compared per allocating
 * function, the roots of their bottom-up caller trees (mtrace/callers.h), matched by name. */
#ifndef MTRACE_REPORT_DIFF_H
#define MTRACE_REPORT_DIFF_H

#include <stdio.h>

#include "mtrace/report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Builds the reports of traces pa and pb (options as mt_report_build's) so that they skip the same
 * wrappers: when detection finds different ones in each, both are built again skipping every wrapper
 * found in either. 0, or negative with the message in err (both reports freed). */
int mt_report_diff_build(mt_report_t *a, mt_report_t *b, const char *pa, const char *pb, const mt_report_opts_t *o,
                         mt_error_t *err);

/* Prints the totals of both and, per allocating function whose figures changed, its figures in each
 * and the change, the biggest movers first (by the change of bytes, then of calls, of bytes at the
 * peak and of leaked bytes, in absolute value); `top` rows at most (0: all). Text or JSON. */
void mt_report_diff_print(const mt_report_t *a, const mt_report_t *b, FILE *f, mt_table_fmt_t fmt, unsigned top);

/* The same as one self-contained HTML page, written whole under a fresh name and renamed to `out`.
 * 0, or negative with the message in err (nothing left at out). */
int mt_report_diff_html(const mt_report_t *a, const mt_report_t *b, const char *out, unsigned top, mt_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
