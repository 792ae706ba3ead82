/* mtrace plot: the pictures, drawn by gnuplot from data files mtrace writes next to the output. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mtrace/json_reader.h"
#include "mtrace/plot.h"
#include "mtrace/report.h"
#include "file_io.h"

/* OUT.png -> OUT.dat: the data stays beside the picture, so it can be re-plotted or inspected. */
static void data_path(char *buf, size_t cap, const char *out, const char *suffix)
{
    const char *dot = strrchr(out, '.'), *slash = strrchr(out, '/');
    if (!dot || (slash && dot < slash))
        snprintf(buf, cap, "%s%s", out, suffix);
    else
        snprintf(buf, cap, "%.*s%s", (int)(dot - out), out, suffix);
}

/* A data file is written whole under a temporary name and renamed into place (file_io.h). */
static FILE *open_data(mt_out_t *out, const char *dat)
{
    mt_error_t err;
    if (mt_out_open(out, dat, &err) < 0) {
        fprintf(stderr, "mtrace: %s\n", err.msg);
        return NULL;
    }
    return out->f;
}

static int commit_data(mt_out_t *out)
{
    mt_error_t err;
    if (mt_out_commit(out, &err) < 0) {
        fprintf(stderr, "mtrace: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* A name for a gnuplot data file's quoted column: no quotes, no line breaks. */
static void data_name(char *buf, size_t cap, const char *s)
{
    size_t n = 0;
    for (; *s && n + 1 < cap; s++)
        buf[n++] = (*s == '"' || (unsigned char)*s < ' ') ? ' ' : *s;
    buf[n] = 0;
}

const char *mt_result_series(const char *result_path, const char *series, char *buf, size_t cap)
{
    if (!series) {
        fprintf(stderr, "mtrace: %s: no RSS series (replay with --rss-series FILE)\n", result_path);
        return NULL;
    }
    const char *slash = strrchr(result_path, '/');
    if (series[0] == '/' || !slash)
        snprintf(buf, cap, "%s", series);
    else
        snprintf(buf, cap, "%.*s/%s", (int)(slash - result_path), result_path, series);
    if (access(buf, R_OK) != 0) {
        fprintf(stderr, "mtrace: %s: its RSS series %s: %s\n", result_path, buf, strerror(errno));
        return NULL;
    }
    return buf;
}

int mt_plot_trace(const mt_report_t *r, const char *out)
{
    char dat[4096];
    data_path(dat, sizeof dat, out, ".dat");
    mt_out_t data;
    FILE *const f = open_data(&data, dat);
    if (!f)
        return -1;
    int has_rss = 0;
    fprintf(f, "# t_s live_mib rss_mib vmsize_mib\n");
    for (size_t i = 0; i < r->nseries; i++) {
        const struct mt_report_point *p = &r->series[i];
        has_rss |= p->rss_kb != 0;
        fprintf(f, "%.4f %.3f %.3f %.3f\n", p->t, (double)p->live_bytes / 1048576.0, (double)p->rss_kb / 1024.0,
                (double)p->vm_kb / 1024.0);
    }
    if (commit_data(&data) < 0)
        return -1;
    if (r->nseries < 2) { /* gnuplot would only say "x range is invalid" */
        fprintf(stderr, "mtrace: cannot draw %s: the trace has %zu point%s in time (one per RSS sample: it was "
                "recorded with MTRACE_RSS_MS=0 or ran too briefly); --kind sizes draws its sizes\n",
                out, r->nseries, r->nseries == 1 ? "" : "s");
        return -1;
    }
    char title[1200], d[4096], script[16384];
    mt_gp_text(title, sizeof title, r->command);
    snprintf(script, sizeof script,
             "set grid\nset key top left\nset xlabel 'time (s)'\nset ylabel 'MiB'\n"
             "set title '%s' noenhanced\n"
             "plot '%s' using 1:2 with lines lw 2 title 'live bytes (requested)'%s\n",
             title, mt_gp_file(d, sizeof d, dat),
             has_rss ? ", '' using 1:3 with lines lw 2 title 'RSS (VmRSS)'" : "");
    return mt_gnuplot(script, out);
}

int mt_plot_sizes(const mt_report_t *r, const char *out)
{
    char dat[4096];
    data_path(dat, sizeof dat, out, ".dat");
    mt_out_t data;
    FILE *const f = open_data(&data, dat);
    if (!f)
        return -1;
    static const char *const units[] = { "", "K", "M", "G", "T" };
    for (unsigned k = 0; k < MT_HIST_BUCKETS; k++) {
        if (!r->size_hist[k])
            continue;
        uint64_t lo = k ? 1ull << (k - 1) : 0;
        unsigned u = 0;
        while (lo >= 1024 && u < 4)
            lo /= 1024, u++;
        fprintf(f, "%u \"%" PRIu64 "%s\" %" PRIu64 "\n", k, lo, units[u], r->size_hist[k]);
    }
    if (commit_data(&data) < 0)
        return -1;
    char title[1200], d[4096], script[16384];
    mt_gp_text(title, sizeof title, r->command);
    snprintf(script, sizeof script,
             "set grid ytics\nset style fill solid 0.7\nset boxwidth 0.8\n"
             "set xlabel 'requested size (from, bytes)'\nset ylabel 'allocations'\nset xtics rotate by -45\n"
             "set title 'allocation sizes: %s' noenhanced\nplot '%s' using 1:3:xtic(2) with boxes notitle\n",
             title, mt_gp_file(d, sizeof d, dat));
    return mt_gnuplot(script, out);
}

/* RSS, ideal and the traced program's RSS over time, one replay result per line colour. */
int mt_plot_replays(const char *const *results, int n, const char *out)
{
    char script[16384], sp[4096];
    size_t len = (size_t)snprintf(script, sizeof script,
                                  "set grid\nset key top left\nset xlabel 'time (s)'\n"
                                  "set ylabel 'MiB'\nset title 'replay: RSS against ideal RSS'\nplot ");
    int plotted = 0;
    for (int i = 0; i < n && len < sizeof script - 1024; i++) {
        mt_jval_t *j;
        mt_error_t err;
        if (mt_json_load(results[i], &j, &err) < 0) {
            fprintf(stderr, "mtrace: %s\n", err.msg);
            return -1;
        }
        char where[4096];
        const char *series = mt_result_series(results[i], mt_json_str_at(j, "rss_series", NULL), where, sizeof where);
        const char *name = mt_json_str_at(j, "allocator", "?");
        if (!series) {
            mt_json_free(j);
            return -1;
        }
        char title[256];
        mt_gp_text(title, sizeof title, name);
        mt_gp_file(sp, sizeof sp, series);
        len += (size_t)snprintf(script + len, sizeof script - len,
                                "%s'%s' using 1:($2/1024) with lines lw 2 lc %d title '%s RSS' noenhanced, "
                                "'' using 1:($4/1024) with lines lw 1 dt 2 lc %d title '%s ideal' noenhanced",
                                plotted ? ", " : "", sp, i + 1, title, i + 1, title);
        if (!plotted) /* the traced program's own curve, once */
            len += (size_t)snprintf(script + len, sizeof script - len,
                                    ", '%s' using 1:($5/1024) with lines lw 1 lc rgb 'black' dt 3 title 'traced program RSS'",
                                    sp);
        plotted++;
        mt_json_free(j);
    }
    snprintf(script + len, sizeof script - len, "\n");
    return mt_gnuplot(script, out);
}

/* Bars: wall time and peak RSS per result. */
int mt_plot_compare(const char *const *results, int n, const char *out)
{
    char dat[4096];
    data_path(dat, sizeof dat, out, ".dat");
    mt_out_t data;
    FILE *const f = open_data(&data, dat);
    if (!f)
        return -1;
    for (int i = 0; i < n; i++) {
        mt_jval_t *j;
        mt_error_t err;
        if (mt_json_load(results[i], &j, &err) < 0) {
            fprintf(stderr, "mtrace: %s\n", err.msg);
            mt_out_abort(&data);
            return -1;
        }
        char name[256];
        data_name(name, sizeof name, mt_json_str_at(j, "allocator", "?"));
        fprintf(f, "%d \"%s\" %.3f %.3f %.3f\n", i, name, mt_json_num(j, "wall_us", 0) / 1e3,
                mt_json_num(j, "max_rss_kb", 0) / 1024, mt_json_num(j, "ideal_pages_kb", 0) / 1024);
        mt_json_free(j);
    }
    if (commit_data(&data) < 0)
        return -1;
    char script[16384], d[4096];
    snprintf(script, sizeof script,
             "set style fill solid 0.7\nset boxwidth 0.6\nset grid ytics\n"
             "set multiplot layout 1,2 title 'allocator comparison'\n"
             "set ylabel 'wall time (ms)'\nset yrange [0:*]\nplot '%s' using 1:3:xtic(2) with boxes lc 1 notitle\n"
             "set ylabel 'peak RSS (MiB)'\nplot '%s' using 1:4:xtic(2) with boxes lc 2 title 'peak RSS', "
             "'' using 1:5 with points pt 7 ps 1.5 lc rgb 'black' title 'ideal'\nunset multiplot\n",
             mt_gp_file(d, sizeof d, dat), d);
    return mt_gnuplot(script, out);
}
