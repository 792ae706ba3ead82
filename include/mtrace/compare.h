/* The allocator comparison table: replay results side by side, with the change against the first. */
#ifndef MTRACE_COMPARE_H
#define MTRACE_COMPARE_H

#include <stdio.h>

#include "mtrace/json_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* MT_TABLE_HTML: the text table's rows and cells as an HTML <table> (for report --html). */
typedef enum { MT_TABLE_TEXT, MT_TABLE_CSV, MT_TABLE_JSON, MT_TABLE_HTML } mt_table_fmt_t;

/* mt_compare_print's flags. RECORDINGS: results of different workloads, recordings of one program,
 * are runs of one row when their allocator, settings, timing and touch agree: a row's spread then
 * holds the program's own variation from one recording to the next, and no warning is given. */
#define MT_COMPARE_RECORDINGS 1u

/* Loads the result files (mtrace-sim --json) and prints the table. 0, or a negative errno on bad
 * input, before anything is printed, with the message in err naming the file and offset. Results
 * of different workloads are compared all the same, with a warning on stderr (unless flags has
 * MT_COMPARE_RECORDINGS). */
int mt_compare_print(FILE *f, const char *const *results, int n, mt_table_fmt_t fmt, unsigned flags, mt_error_t *err);

/* Checks that `r`, loaded from `path`, is a replay result whose figures (wall and CPU time, RSS,
 * cycles) are numbers, finite and not negative where present: a damaged or hand-edited file is
 * refused rather than shown as a change of -300 % or a bar of 1e308. 0, or -EINVAL with the message
 * in err naming the file and the figure. */
int mt_replay_result_check(const char *path, const mt_jval_t *r, mt_error_t *err);

/* A replay result's peak RSS in KiB, the one compare, sweep and the plots judge: the program's peak as
 * predicted on that allocator (predicted_peak_rss_kb: the replay's anonymous peak and the traced
 * program's file-backed and shared pages), else, for a trace without RSS samples, the replay's own max RSS. */
double mt_replay_peak_kb(const mt_jval_t *r);

/* A replay result's RSS growth in KiB: the replay's max RSS less its RSS at its start (rss_growth_kb;
 * max_rss_kb less start_rss_kb in results written before it). The replay's start is its own code and
 * libraries, not the program's: the growth is the allocator's heap, the program's own mappings and
 * the replay's bookkeeping. */
double mt_replay_growth_kb(const mt_jval_t *r);

/* mt_replay_growth_kb over the ideal (ideal_pages_kb: the peak of live requested bytes, in whole
 * pages); 0 without an ideal. A reader checks it from the growth and the ideal printed beside it. */
double mt_replay_growth_over_ideal(const mt_jval_t *r);

#ifdef __cplusplus
}
#endif
#endif
