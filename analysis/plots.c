/* mtrace plot: the pictures, drawn by gnuplot from data files mtrace writes next to the output. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mtrace/json_reader.h"
#include "mtrace/compare.h"
#include "mtrace/plot.h"
#include "mtrace/report.h"
#include "mtrace/file_io.h"
#include "plot_internal.h"

/* OUT.png -> OUT.dat: the data stays beside the picture, so it can be re-plotted or inspected. */
static int data_path(char *buf, size_t cap, const char *out, const char *suffix, mt_error_t *err)
{
    const char *dot = strrchr(out, '.'), *slash = strrchr(out, '/');
    int n;
    if (!dot || (slash && dot < slash))
        n = snprintf(buf, cap, "%s%s", out, suffix);
    else
        n = snprintf(buf, cap, "%.*s%s", (int)(dot - out), out, suffix);
    if (n < 0 || (size_t)n >= cap) /* cut short, it would name another file */
        return mt_error_setf(err, -ENAMETOOLONG, "%s: the output path is too long", out);
    return 0;
}

/* A data file is written whole under a temporary name (file_io.h), which the script reads; it is
 * renamed into place with the picture, or removed with it when the plot fails (mt_gnuplot_data).
 * OUT's data file, OUT.dat, opened in *data (its name in dat). */
static int open_data(mt_out_t *data, char *dat, size_t cap, const char *out, mt_error_t *err)
{
    const int rc = data_path(dat, cap, out, ".dat", err);
    return rc < 0 ? rc : mt_out_open(data, dat, err);
}

/* A script is written into memory that grows with it (open_memstream): however many results and
 * however long their paths, all of it is there, never cut and never past a buffer's end. */
typedef struct script {
    FILE *f;
    char *text;
    size_t len;
} script_t;

static int script_open(script_t *s, mt_error_t *err)
{
    s->text = NULL;
    s->len = 0;
    s->f = open_memstream(&s->text, &s->len);
    return s->f ? 0 : mt_error_setf(err, -ENOMEM, "out of memory");
}

/* Closes the script; then, if rc (what writing it gave) is 0, draws it (data: see
 * mt_gnuplot_data). The data is aborted on any failure. */
static int script_draw(script_t *s, int rc, const char *out, mt_out_t *data, mt_error_t *err)
{
    if (fclose(s->f) != 0 && rc == 0)
        rc = mt_error_setf(err, -ENOMEM, "out of memory");
    if (rc == 0)
        rc = mt_gnuplot_data(s->text, out, data, err);
    else if (data)
        mt_out_abort(data);
    free(s->text);
    return rc;
}

const char *mt_result_series(const char *result_path, const char *series, char *buf, size_t cap, mt_error_t *err)
{
    if (!series) {
        mt_error_setf(err, -EINVAL, "%s: no RSS series (replay with --rss-series FILE)", result_path);
        return NULL;
    }
    const char *slash = strrchr(result_path, '/');
    int n;
    if (series[0] == '/' || !slash)
        n = snprintf(buf, cap, "%s", series);
    else
        n = snprintf(buf, cap, "%.*s/%s", (int)(slash - result_path), result_path, series);
    if (n < 0 || (size_t)n >= cap) { /* cut short, it would name another file */
        mt_error_setf(err, -ENAMETOOLONG, "%s: its RSS series path is too long (%zu bytes)", result_path,
                      strlen(series));
        return NULL;
    }
    /* gnuplot reads the series by its name: a device (/dev/zero, /dev/urandom) or a FIFO would keep
     * it reading, or waiting, for ever. A regular file of a bounded size only. */
    struct stat st;
    const char *why = NULL;
    int code = -EINVAL;
    if (stat(buf, &st) != 0 || access(buf, R_OK) != 0)
        code = -errno, why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        why = S_ISDIR(st.st_mode)    ? "expected a regular file, found a directory"
              : S_ISFIFO(st.st_mode) ? "expected a regular file, found a pipe"
                                     : "expected a regular file, found a device or socket";
    else if ((uint64_t)st.st_size > MT_SERIES_MAX_BYTES)
        code = -EFBIG, why = "expected a regular file under " MT_SERIES_MAX_TEXT;
    if (why) {
        /* the path comes from the result file: escaped, never raw to the terminal */
        char shown[sizeof err->msg];
        mt_error_setf(err, code, "%s: its RSS series %s: %s", result_path, mt_safe_str(shown, sizeof shown, buf), why);
        return NULL;
    }
    return buf;
}

int mt_plot_trace(const mt_report_t *r, const char *out, mt_error_t *err)
{
    int rc = mt_gp_check_output(out, err);
    if (rc < 0)
        return rc;
    /* gnuplot would only say "x range is invalid" */
    if (r->nseries < 2 || r->series[0].t == r->series[r->nseries - 1].t)
        return mt_error_setf(err, -EINVAL,
                             "cannot draw %s: the trace has %zu point%s in time (its RSS samples, or its calls "
                             "when it has fewer than two samples); --kind sizes draws its sizes",
                             out, r->nseries, r->nseries == 1 ? "" : "s");
    char dat[4096];
    mt_out_t data;
    if ((rc = open_data(&data, dat, sizeof dat, out, err)) < 0)
        return rc;
    FILE *const f = data.f;
    int has_rss = 0;
    fprintf(f, "# t_s live_mib rss_mib vmsize_mib\n");
    for (size_t i = 0; i < r->nseries; i++) {
        const struct mt_report_point *p = &r->series[i];
        has_rss |= p->rss_kb != 0;
        fprintf(f, "%.6f %.3f %.3f %.3f\n", p->t, (double)p->live_bytes / 1048576.0, (double)p->rss_kb / 1024.0,
                (double)p->vm_kb / 1024.0);
    }
    script_t s;
    if ((rc = script_open(&s, err)) < 0) {
        mt_out_abort(&data);
        return rc;
    }
    char title[1200];
    mt_gp_title(title, sizeof title, r->command, 90);
    fprintf(s.f,
            "set grid\nset key top left\nset xlabel 'time (s)'\nset ylabel 'MiB'\n"
            "set title '%s' noenhanced\nplot ",
            title);
    rc = mt_gp_put_file(s.f, data.tmp, err);
    fprintf(s.f, " using 1:2 with lines lw 2 title 'live bytes (requested)'%s\n",
            has_rss ? ", '' using 1:3 with lines lw 2 title 'RSS (VmRSS)'" : "");
    return script_draw(&s, rc, out, &data, err);
}

int mt_plot_sizes(const mt_report_t *r, const char *out, mt_error_t *err)
{
    int rc = mt_gp_check_output(out, err);
    if (rc < 0)
        return rc;
    char dat[4096];
    mt_out_t data;
    if ((rc = open_data(&data, dat, sizeof dat, out, err)) < 0)
        return rc;
    FILE *const f = data.f;
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
    script_t s;
    if ((rc = script_open(&s, err)) < 0) {
        mt_out_abort(&data);
        return rc;
    }
    char title[1200];
    mt_gp_title(title, sizeof title, r->command, 70);
    /* Counts span decades (millions of small blocks, a few large ones): a log scale shows both. */
    fprintf(s.f,
            "set grid ytics\nset style fill solid 0.7\nset boxwidth 0.8\nset logscale y\nset yrange [0.8:*]\n"
            "set xlabel 'requested size (from, bytes)'\nset ylabel 'allocations (log scale)'\n"
            "set xtics rotate by -45\n"
            "set title 'allocation sizes: %s' noenhanced\nplot ",
            title);
    rc = mt_gp_put_file(s.f, data.tmp, err);
    fprintf(s.f, " using 1:3:xtic(2) with boxes notitle\n");
    return script_draw(&s, rc, out, &data, err);
}

/* RSS, ideal and the traced program's RSS, one replay result per line colour, against the share of
 * the workload's ops done (the series' sixth column): a time axis common to every replay, where each
 * replay's own seconds would stretch one allocator's curve against another's. */
int mt_plot_replays(const char *const *results, int n, const char *out, mt_error_t *err)
{
    script_t s;
    int rc = mt_gp_check_output(out, err);
    if (rc < 0 || (rc = script_open(&s, err)) < 0)
        return rc;
    fprintf(s.f, "set grid\nset key top left\nset xlabel 'workload ops done (%%)'\nset xrange [0:100]\n"
                 "set ylabel 'MiB'\nset yrange [0:*]\nset title 'replay: RSS against ideal RSS'\nplot ");
    for (int i = 0; i < n; i++) {
        mt_jval_t *j;
        if ((rc = mt_json_load(results[i], &j, err)) < 0)
            break;
        /* The figures compare rejects are rejected here too, by the same rule. */
        if ((rc = mt_replay_result_check(results[i], j, err)) < 0) {
            mt_json_free(j);
            break;
        }
        char where[4096];
        const char *series =
            mt_result_series(results[i], mt_json_str_at(j, "rss_series", NULL), where, sizeof where, err);
        char title[256];
        mt_gp_text(title, sizeof title, mt_json_str_at(j, "allocator", "?"));
        mt_json_free(j);
        if (!series) {
            rc = -EINVAL;
            break;
        }
        if (i)
            fputs(", ", s.f);
        if ((rc = mt_gp_put_file(s.f, series, err)) < 0)
            break;
        fprintf(s.f,
                " using ($6*100):($2/1024) with lines lw 2 lc %d title '%s RSS' noenhanced, "
                "'' using ($6*100):($4/1024) with lines lw 1 dt 2 lc %d title '%s ideal' noenhanced",
                i + 1, title, i + 1, title);
        if (i == 0) { /* the traced program's own curve, once */
            fputs(", ", s.f);
            mt_gp_put_file(s.f, series, NULL); /* accepted just above */
            fputs(" using ($6*100):($5/1024) with lines lw 1 lc rgb 'black' dt 3 title 'traced program RSS'", s.f);
        }
    }
    fputc('\n', s.f);
    return script_draw(&s, rc, out, NULL, err);
}

/* Bars: wall time and peak RSS per result. */
int mt_plot_compare(const char *const *results, int n, const char *out, mt_error_t *err)
{
    int rc = mt_gp_check_output(out, err);
    if (rc < 0)
        return rc;
    char dat[4096];
    mt_out_t data;
    if ((rc = open_data(&data, dat, sizeof dat, out, err)) < 0)
        return rc;
    FILE *const f = data.f;
    for (int i = 0; i < n; i++) {
        mt_jval_t *j;
        if ((rc = mt_json_load(results[i], &j, err)) < 0) {
            mt_out_abort(&data);
            return rc;
        }
        if ((rc = mt_replay_result_check(results[i], j, err)) < 0) {
            mt_json_free(j);
            mt_out_abort(&data);
            return rc;
        }
        char name[256];
        mt_gp_data_text(name, sizeof name, mt_json_str_at(j, "allocator", "?"));
        fprintf(f, "%d \"%s\" %.3f %.3f %.3f\n", i, name, mt_json_num(j, "wall_us", 0) / 1e3,
                mt_replay_peak_kb(j) / 1024, mt_json_num(j, "ideal_pages_kb", 0) / 1024);
        mt_json_free(j);
    }
    script_t s;
    if ((rc = script_open(&s, err)) < 0) {
        mt_out_abort(&data);
        return rc;
    }
    /* the names under the bars as they are: no enhanced text, where _ and ^ would set an index or
     * an exponent and \377 would write a byte that is not UTF-8 */
    fprintf(s.f, "set style fill solid 0.7\nset boxwidth 0.6\nset grid ytics\nset xtics noenhanced\n"
                 "set multiplot layout 1,2 title 'allocator comparison'\n"
                 "set ylabel 'wall time (ms)'\nset yrange [0:*]\nplot ");
    rc = mt_gp_put_file(s.f, data.tmp, err);
    fprintf(s.f, " using 1:3:xtic(2) with boxes lc 1 notitle\nset ylabel 'peak RSS (MiB)'\nplot ");
    mt_gp_put_file(s.f, data.tmp, NULL); /* accepted just above */
    fprintf(s.f, " using 1:4:xtic(2) with boxes lc 2 title 'peak RSS', "
                 "'' using 1:5 with points pt 7 ps 1.5 lc rgb 'black' title 'ideal'\nunset multiplot\n");
    return script_draw(&s, rc, out, &data, err);
}
