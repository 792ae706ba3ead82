/* Plots through gnuplot: mtrace writes the data and a script, gnuplot draws PNG or SVG. Errors as
 * the trace reader's: a negative errno and the message in err (its caller prints it), the output
 * left untouched. */
#ifndef MTRACE_PLOT_H
#define MTRACE_PLOT_H

#include <stddef.h>

#include "mtrace/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs gnuplot on `script` (text, without `set terminal` or `set output`: the terminal follows
 * `out`'s extension and the picture goes to a temporary renamed over `out` on success). 0, or a
 * negative errno with the message in err (gnuplot missing: the Debian package to install is named;
 * gnuplot failing: the lines of its own that say why) and `out` untouched. */
int mt_gnuplot(const char *script, const char *out, mt_error_t *err);
/* 0 when OUT names a picture gnuplot draws here (.png or .svg, any case); else -EINVAL and the
 * message in err: a .jpg must not silently hold a PNG. Tools check it before reading their
 * inputs. */
int mt_gp_check_output(const char *out, mt_error_t *err);

/* A replay result's RSS series file: its recorded path, relative to the result's own directory
 * when not absolute. NULL (and the message in err) when the result names none, or it is missing,
 * not a regular file (a device or FIFO would keep gnuplot reading for ever) or over the bound. */
#define MT_SERIES_MAX_BYTES (256ull << 20) /* 18 hours of samples every 10 ms */
#define MT_SERIES_MAX_TEXT "256 MiB"
const char *mt_result_series(const char *result_path, const char *series, char *buf, size_t cap, mt_error_t *err);

/* Quoting for gnuplot's single-quoted strings: text that comes from files can neither end the
 * string nor add a command. Controls become spaces and each byte that starts no character XML
 * allows '?' (an SVG picture must stay XML). Return buf. (File names: analysis/plot_internal.h,
 * mt_gp_put_file.) */
const char *mt_gp_text(char *buf, size_t cap, const char *s);

/* The terminal line for an output file by its extension: .svg gives SVG, .png PNG (mt_gp_check_output
 * refuses any other before a plot is drawn). */
const char *mt_gnuplot_terminal(const char *out);

/* Sweep plot: peak RSS and CPU time against the swept value, one line per group (allocator and the
 * other settings) with the runs' noise interval as bars and the group's default (no setting) as a
 * dashed line; both y axes start at zero. `dat` holds one gnuplot data block per group, rows of: x,
 * RSS median, low, high, default (MiB), CPU median, low, high, default (ms). */
int mt_plot_sweep(const char *dat, int ngroups, const char *const *names, const char *xlabel, int logx, const char *out,
                  mt_error_t *err);

/* The plots below draw OUT and write the data beside it (OUT.dat), both or neither: 0, or a
 * negative errno with the message in err. */
struct mt_report;
/* Live bytes and the program's RSS over time, from a report. */
int mt_plot_trace(const struct mt_report *r, const char *out, mt_error_t *err);
/* The requested-size histogram, from a report. */
int mt_plot_sizes(const struct mt_report *r, const char *out, mt_error_t *err);
/* RSS and ideal RSS over time for replay results (mtrace-sim --json with --rss-series), with the
 * traced program's own RSS curve beside them (the series files, no OUT.dat). */
int mt_plot_replays(const char *const *results, int n, const char *out, mt_error_t *err);
/* Wall time and peak RSS bars for replay results. */
int mt_plot_compare(const char *const *results, int n, const char *out, mt_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
