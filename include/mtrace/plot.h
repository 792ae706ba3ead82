/* Plots through gnuplot: mtrace writes the data and a script, gnuplot draws PNG or SVG. */
#ifndef MTRACE_PLOT_H
#define MTRACE_PLOT_H

#ifdef __cplusplus
extern "C" {
#endif

/* Runs gnuplot on `script` (text, without `set terminal` or `set output`: the terminal follows
 * `out`'s extension and the picture goes to a temporary renamed over `out` on success). 0, or -1
 * with a message on stderr (gnuplot missing: the Debian package to install is named) and `out`
 * untouched. */
int mt_gnuplot(const char *script, const char *out);
/* 0 when OUT names a picture gnuplot draws here (.png or .svg, any case); else one line on stderr
 * and -1. Tools check it before reading their inputs. */
int mt_gp_check_output(const char *out);

/* A replay result's RSS series file: its recorded path, relative to the result's own directory
 * when not absolute. NULL (and a message on stderr) when the result names none, or it is missing,
 * not a regular file (a device or FIFO would keep gnuplot reading for ever) or over the bound. */
#define MT_SERIES_MAX_BYTES (256ull << 20) /* 18 hours of samples every 10 ms */
#define MT_SERIES_MAX_TEXT "256 MiB"
const char *mt_result_series(const char *result_path, const char *series, char *buf, size_t cap);

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
int mt_plot_sweep(const char *dat, int ngroups, const char *const *names, const char *xlabel, int logx,
                  const char *out);

struct mt_report;
/* Live bytes and the program's RSS over time, from a report. */
int mt_plot_trace(const struct mt_report *r, const char *out);
/* The requested-size histogram, from a report. */
int mt_plot_sizes(const struct mt_report *r, const char *out);
/* RSS and ideal RSS over time for replay results (mtrace-sim --json with --rss-series), with the
 * traced program's own RSS curve beside them. */
int mt_plot_replays(const char *const *results, int n, const char *out);
/* Wall time and peak RSS bars for replay results. */
int mt_plot_compare(const char *const *results, int n, const char *out);

#ifdef __cplusplus
}
#endif
#endif
