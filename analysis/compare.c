/* mtrace compare: replay results in one table, one row per allocator and settings, the runs of one
 * row (mtrace replay --repeat) summed up as their median and spread, with a verdict against the
 * first row. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/compare.h"
#include "mtrace/json_reader.h"
#include "mtrace/json_writer.h"
#include "mtrace/report.h"
#include "mtrace/spread.h"
#include "mtrace/file_io.h"
#include "xml_escape.h"

typedef struct column {
    const char *title; /* text table header */
    const char *key;   /* JSON key (CSV and JSON output) */
    double scale;
    int change; /* show % change against the first */
} column_t;

static const column_t columns[] = {
    { "wall ms", "wall_ms", 1e-3, 1 },
    { "cpu ms", "cpu_ms", 1e-3, 1 },
    { "peak RSS MiB", "peak_rss_mib", 1.0 / 1024, 1 }, /* mt_replay_peak_kb: the program's, predicted */
    { "growth MiB", "rss_growth_mib", 1.0 / 1024, 0 },
    { "ideal MiB", "ideal_mib", 1.0 / 1024, 0 },
    { "growth/ideal", "rss_growth_over_ideal", 1, 0 },
    { "malloc cyc", "avg_malloc_cycles", 1, 1 },
    { "free cyc", "avg_free_cycles", 1, 1 },
    { "p99 malloc", "p99_malloc_cycles", 1, 0 },
};
#define NCOL (sizeof columns / sizeof columns[0])
enum { COL_WALL = 0, COL_CPU = 1, COL_RSS = 2 }; /* the columns whose spread is shown and judged */
enum { COL_GROWTH_OVER_IDEAL = 5 };              /* a ratio: two decimals */
static const size_t spread_cols[] = { COL_CPU, COL_WALL, COL_RSS };
#define NSPREAD (sizeof spread_cols / sizeof spread_cols[0])

double mt_replay_peak_kb(const mt_jval_t *r)
{
    const double predicted = mt_json_num(r, "predicted_peak_rss_kb", 0);
    return predicted > 0 ? predicted : mt_json_num(r, "max_rss_kb", 0);
}

double mt_replay_growth_kb(const mt_jval_t *r)
{
    if (mt_json_get(r, "rss_growth_kb"))
        return mt_json_num(r, "rss_growth_kb", 0);
    const double max = mt_json_num(r, "max_rss_kb", 0), start = mt_json_num(r, "start_rss_kb", 0);
    return max > start ? max - start : 0;
}

double mt_replay_growth_over_ideal(const mt_jval_t *r)
{
    const double ideal = mt_json_num(r, "ideal_pages_kb", 0);
    return ideal > 0 ? mt_replay_growth_kb(r) / ideal : 0;
}

/* A column's width in the text table: a change beside the figure takes more room, and a long title
 * its own length. */
static int col_width(size_t c)
{
    const int title = (int)strlen(columns[c].title);
    return columns[c].change ? 18 : title > 11 ? title : 11;
}

static double value(const mt_jval_t *r, size_t c)
{
    switch (c) {
    case 0:
        return mt_json_num(r, "wall_us", 0);
    case 1:
        return mt_json_num(r, "cpu_us", 0);
    case 2:
        return mt_replay_peak_kb(r);
    case 3:
        return mt_replay_growth_kb(r);
    case 4:
        return mt_json_num(r, "ideal_pages_kb", 0);
    case 5:
        return mt_replay_growth_over_ideal(r);
    case 6:
        return mt_json_num(mt_json_get(r, "avg_cycles"), "malloc", 0);
    case 7:
        return mt_json_num(mt_json_get(r, "avg_cycles"), "free", 0);
    default:
        return mt_json_num(mt_json_get(r, "p99_cycles"), "malloc", 0);
    }
}

int mt_replay_result_check(const char *path, const mt_jval_t *r, mt_error_t *err)
{
    if (strcmp(mt_json_str_at(r, "kind", ""), "replay") != 0)
        return mt_errorf(err, -EINVAL, path, 0, "expected a replay result (\"kind\": \"replay\")");
    static const char *const figs[][2] = {
        { NULL, "wall_us" },        { NULL, "cpu_us" },
        { NULL, "max_rss_kb" },     { NULL, "predicted_peak_rss_kb" },
        { NULL, "ideal_pages_kb" }, { NULL, "start_rss_kb" },
        { NULL, "rss_growth_kb" },  { NULL, "rss_growth_over_ideal" },
        { "avg_cycles", "malloc" }, { "avg_cycles", "free" },
        { "p99_cycles", "malloc" },
    };
    for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++) {
        const char *group = figs[i][0], *key = figs[i][1];
        const mt_jval_t *obj = group ? mt_json_get(r, group) : r;
        if (!obj)
            continue;
        if (obj->type != MT_JOBJ)
            return mt_error_setf(err, -EINVAL,
                                 "%s: \"%s\" is not an object: not a replay result as mtrace replay writes it", path,
                                 group);
        const mt_jval_t *v = mt_json_get(obj, key);
        if (v && (v->type != MT_JNUM || !isfinite(v->num) || v->num < 0))
            return mt_error_setf(err, -EINVAL,
                                 "%s: \"%s%s%s\" is not a number of at least 0: not a replay result as mtrace "
                                 "replay writes it",
                                 path, group ? group : "", group ? "." : "", key);
    }
    return 0;
}

/* The row's name: the allocator, with its settings if any. */
static void row_name(const mt_jval_t *r, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "%s", mt_json_str_at(r, "allocator", "?"));
    const mt_jval_t *set = mt_json_get(r, "settings");
    for (size_t i = 0; set && set->type == MT_JARR && i < set->n && n < cap; i++)
        if (set->items[i].type == MT_JSTR)
            n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? "," : " ", set->items[i].str);
    const char *tun = mt_json_str_at(r, "glibc_tunables", NULL);
    if (tun && n < cap)
        snprintf(out + n, cap - n, " %s", tun);
}

/* Results of one row: the same allocator, settings and tunables (row_name), replayed from the same
 * workload (any workload with MT_COMPARE_RECORDINGS) in the same way. */
static void row_key(const mt_jval_t *r, unsigned flags, char *out, size_t cap)
{
    char name[512];
    row_name(r, name, sizeof name);
    snprintf(out, cap, "%s\x1f%s\x1f%s\x1f%s", name,
             flags & MT_COMPARE_RECORDINGS ? "" : mt_json_str_at(r, "workload", ""), mt_json_str_at(r, "timing", ""),
             mt_json_str_at(r, "touch", ""));
}

/* The distinct workloads among a row's results: the recordings its runs come from. */
static int row_recordings(const mt_jval_t *const *r, const int *members, int n)
{
    int distinct = 0;
    for (int m = 0; m < n; m++) {
        const char *w = mt_json_str_at(r[members[m]], "workload", "");
        int seen = 0;
        for (int k = 0; k < m && !seen; k++)
            seen = !strcmp(w, mt_json_str_at(r[members[k]], "workload", ""));
        distinct += !seen;
    }
    return distinct;
}

typedef struct row {
    int first;             /* its first result */
    int n;                 /* its results (runs) */
    int *members;          /* their indexes, n of them */
    int recordings;        /* the distinct workloads they replayed (row_recordings) */
    int not_applied;       /* a run's allocator did not take its settings (settings_not_applied) */
    mt_spread_t fig[NCOL]; /* per column: median and spread over the runs, scaled as shown */
} row_t;

/* Groups the results into rows in the order of their first result. Returns the number of rows. */
static int group_rows(mt_jval_t *const *r, int n, unsigned flags, row_t *rows, int *members)
{
    int nrows = 0, used = 0;
    char ki[2048], kj[2048];
    for (int i = 0; i < n; i++) {
        row_key(r[i], flags, ki, sizeof ki);
        int k = 0;
        for (; k < nrows; k++) {
            row_key(r[rows[k].first], flags, kj, sizeof kj);
            if (!strcmp(ki, kj))
                break;
        }
        if (k == nrows)
            rows[nrows++] = (row_t){ .first = i };
        rows[k].n++;
    }
    for (int k = 0; k < nrows; k++) { /* members laid out row by row */
        rows[k].members = members + used;
        used += rows[k].n;
        rows[k].n = 0;
    }
    for (int i = 0; i < n; i++) {
        row_key(r[i], flags, ki, sizeof ki);
        for (int k = 0; k < nrows; k++) {
            row_key(r[rows[k].first], flags, kj, sizeof kj);
            if (!strcmp(ki, kj)) {
                rows[k].members[rows[k].n++] = i;
                break;
            }
        }
    }
    return nrows;
}

/* Row i's verdicts against the first row, in words: time, memory, and both as the text table's
 * phrase (into buf). A row whose settings the allocator did not take is a replay of its default:
 * no verdict on the settings. */
static const char *time_verdict(const row_t *rows, int i)
{
    return i == 0                ? "baseline"
           : rows[i].not_applied ? "not applied"
                                 : mt_time_verdict_name(mt_verdict(&rows[i].fig[COL_CPU], &rows[0].fig[COL_CPU]));
}

static const char *memory_verdict(const row_t *rows, int i)
{
    return i == 0                ? "baseline"
           : rows[i].not_applied ? "not applied"
                                 : mt_memory_verdict_name(mt_verdict(&rows[i].fig[COL_RSS], &rows[0].fig[COL_RSS]));
}

static const char *verdict_phrase(char *buf, size_t cap, const row_t *rows, int i)
{
    if (i == 0)
        return "baseline";
    if (rows[i].not_applied)
        return "not applied: the allocator did not take the settings (its default replayed)";
    return mt_verdict_text(buf, cap, &rows[i].fig[COL_CPU], &rows[0].fig[COL_CPU], &rows[i].fig[COL_RSS],
                           &rows[0].fig[COL_RSS]);
}

static int row_not_applied(const mt_jval_t *const *r, const row_t *row)
{
    for (int m = 0; m < row->n; m++) {
        const mt_jval_t *na = mt_json_get(r[row->members[m]], "settings_not_applied");
        if (na && na->type == MT_JARR && na->n)
            return 1;
    }
    return 0;
}

static void row_figures(row_t *row, mt_jval_t *const *r, double *scratch)
{
    for (size_t c = 0; c < NCOL; c++) {
        for (int m = 0; m < row->n; m++)
            scratch[m] = value(r[row->members[m]], c) * columns[c].scale;
        mt_spread_of(&row->fig[c], scratch, (size_t)row->n);
    }
}

static void put_csv(FILE *f, mt_jval_t *const *r, const row_t *rows, int nrows)
{
    char name[512];
    fprintf(f, "name");
    for (size_t c = 0; c < NCOL; c++)
        fprintf(f, ",%s", columns[c].key);
    fprintf(f, ",runs");
    for (size_t s = 0; s < NSPREAD; s++) {
        const char *k = columns[spread_cols[s]].key;
        fprintf(f, ",%s_min,%s_q1,%s_q3,%s_max", k, k, k, k);
    }
    fprintf(f, ",time_verdict,memory_verdict,noise_measured,recordings\n");
    for (int i = 0; i < nrows; i++) {
        const row_t *w = &rows[i];
        row_name(r[w->first], name, sizeof name);
        mt_put_csv_field(f, name);
        for (size_t c = 0; c < NCOL; c++)
            fprintf(f, ",%.6g", w->fig[c].median);
        fprintf(f, ",%d", w->n);
        for (size_t s = 0; s < NSPREAD; s++) {
            const mt_spread_t *sp = &w->fig[spread_cols[s]];
            fprintf(f, ",%.6g,%.6g,%.6g,%.6g", sp->min, sp->q1, sp->q3, sp->max);
        }
        fprintf(f, ",%s,%s,%d,%d\n", time_verdict(rows, i), memory_verdict(rows, i),
                i == 0 ? w->n >= 2 : mt_noise_measured(&w->fig[COL_CPU], &rows[0].fig[COL_CPU]), w->recordings);
    }
}

/* The text table's cells: column c of row i (with its change against the first row). */
static void cell_text(char *cell, size_t cap, const row_t *rows, int i, size_t c)
{
    const double v = rows[i].fig[c].median, base = rows[0].fig[c].median;
    if (columns[c].change && i > 0 && base != 0)
        snprintf(cell, cap, "%.1f (%+.1f%%)", v, mt_change_pct(v, base));
    else
        snprintf(cell, cap, c == COL_GROWTH_OVER_IDEAL ? "%.2f" : "%.1f", v);
}

/* The same rows as put_text, as an HTML table: names escaped, one cell per figure. */
static void put_html(FILE *f, mt_jval_t *const *r, const row_t *rows, int nrows)
{
    char name[512];
    fprintf(f, "<table><tr><th class=\"l\">allocator</th><th>runs</th>");
    for (size_t c = 0; c < NCOL; c++)
        fprintf(f, "<th>%s</th>", columns[c].title);
    row_name(r[rows[0].first], name, sizeof name);
    fprintf(f, "<th class=\"l\">verdict against ");
    mt_xml_escape(f, name, MT_XML_ALL);
    fprintf(f, "</th></tr>\n");
    for (int i = 0; i < nrows; i++) {
        const row_t *w = &rows[i];
        row_name(r[w->first], name, sizeof name);
        fprintf(f, "<tr><td class=\"l\">");
        mt_xml_escape(f, name, MT_XML_ALL);
        fprintf(f, "</td><td>%d</td>", w->n);
        for (size_t c = 0; c < NCOL; c++) {
            char cell[48];
            cell_text(cell, sizeof cell, rows, i, c);
            fprintf(f, "<td>%s</td>", cell);
        }
        char verdict[128];
        fprintf(f, "<td class=\"l\">%s</td></tr>\n", verdict_phrase(verdict, sizeof verdict, rows, i));
    }
    fprintf(f, "</table>\n");
}

static void put_json(FILE *f, mt_jval_t *const *r, const char *const *paths, const row_t *rows, int nrows)
{
    char name[512];
    mt_json_t j;
    mt_json_init(&j, f);
    mt_json_begin_array(&j);
    for (int i = 0; i < nrows; i++) {
        const row_t *w = &rows[i];
        row_name(r[w->first], name, sizeof name);
        mt_json_begin_object(&j);
        mt_json_kv_cstr(&j, "name", name);
        mt_json_kv_cstr(&j, "file", paths[w->first]);
        mt_json_key(&j, "files");
        mt_json_begin_array(&j);
        for (int m = 0; m < w->n; m++)
            mt_json_str(&j, paths[w->members[m]], strlen(paths[w->members[m]]));
        mt_json_end_array(&j);
        mt_json_kv_u64(&j, "runs", (uint64_t)w->n);
        mt_json_kv_u64(&j, "recordings", (uint64_t)w->recordings);
        for (size_t c = 0; c < NCOL; c++) {
            mt_json_kv_double(&j, columns[c].key, w->fig[c].median);
            if (columns[c].change) {
                char key[64];
                snprintf(key, sizeof key, "%s_change_pct", columns[c].key);
                mt_json_kv_double(&j, key, mt_change_pct(w->fig[c].median, rows[0].fig[c].median));
            }
        }
        for (size_t s = 0; s < NSPREAD; s++) {
            static const char *const part[] = { "min", "q1", "q3", "max" };
            const mt_spread_t *sp = &w->fig[spread_cols[s]];
            const double v[] = { sp->min, sp->q1, sp->q3, sp->max };
            for (size_t p = 0; p < 4; p++) {
                char key[64];
                snprintf(key, sizeof key, "%s_%s", columns[spread_cols[s]].key, part[p]);
                mt_json_kv_double(&j, key, v[p]);
            }
        }
        mt_json_kv_cstr(&j, "time_verdict", time_verdict(rows, i));
        mt_json_kv_cstr(&j, "memory_verdict", memory_verdict(rows, i));
        mt_json_kv_bool(&j, "noise_measured", mt_noise_measured(&w->fig[COL_CPU], &rows[0].fig[COL_CPU]));
        mt_json_end_object(&j);
    }
    mt_json_end_array(&j);
    mt_json_finish(&j);
}

static void put_text(FILE *f, mt_jval_t *const *r, const row_t *rows, int nrows)
{
    char name[512], shown[4 * sizeof name];
    int repeated = 0;
    fprintf(f, "%-28s %4s", "allocator", "runs");
    for (size_t c = 0; c < NCOL; c++)
        fprintf(f, " %*s", col_width(c), columns[c].title);
    row_name(r[rows[0].first], name, sizeof name);
    fprintf(f, "  verdict against %s\n", mt_safe_str(shown, sizeof shown, name));
    for (int i = 0; i < nrows; i++) {
        const row_t *w = &rows[i];
        repeated |= w->n > 1;
        /* the allocator and settings strings come from the result file: never raw to a terminal */
        row_name(r[w->first], name, sizeof name);
        fprintf(f, "%-28.28s %4d", mt_safe_str(shown, sizeof shown, name), w->n);
        for (size_t c = 0; c < NCOL; c++) {
            char cell[48];
            cell_text(cell, sizeof cell, rows, i, c);
            fprintf(f, " %*s", col_width(c), cell);
        }
        char verdict[128];
        fprintf(f, "  %s\n", verdict_phrase(verdict, sizeof verdict, rows, i));
    }
    int most = 0;
    for (int i = 0; i < nrows; i++)
        most = rows[i].recordings > most ? rows[i].recordings : most;
    if (most > 1)
        fprintf(f,
                "\nA row's runs come from up to %d recordings (--recordings): its spread holds the program's own\n"
                "variation from one recording to the next.\n",
                most);
    if (!repeated)
        return;
    fprintf(f, "\n%-28s %4s", "spread over the runs", "runs");
    for (size_t s = 0; s < NSPREAD; s++)
        fprintf(f, " %21s", columns[spread_cols[s]].title);
    fprintf(f, "  (min..max; q1..q3 from %d runs)\n", MT_SPREAD_QUARTILES_FROM);
    for (int i = 0; i < nrows; i++) {
        const row_t *w = &rows[i];
        row_name(r[w->first], name, sizeof name);
        fprintf(f, "%-28.28s %4d", mt_safe_str(shown, sizeof shown, name), w->n);
        for (size_t s = 0; s < NSPREAD; s++) {
            double lo, hi;
            mt_spread_range(&w->fig[spread_cols[s]], &lo, &hi);
            char cell[48];
            snprintf(cell, sizeof cell, "%.1f..%.1f", lo, hi);
            fprintf(f, " %21s", cell);
        }
        fprintf(f, "\n");
    }
}

int mt_compare_print(FILE *f, const char *const *paths, int n, mt_table_fmt_t fmt, unsigned flags, mt_error_t *err)
{
    mt_jval_t **r = calloc((size_t)n + 1, sizeof *r);
    row_t *rows = calloc((size_t)n + 1, sizeof *rows);
    int *members = calloc((size_t)n + 1, sizeof *members);
    double *scratch = calloc((size_t)n + 1, sizeof *scratch);
    int rc = 0;
    if (!r || !rows || !members || !scratch) {
        rc = mt_error_setf(err, -ENOMEM, "out of memory");
        n = 0;
    }
    for (int i = 0; i < n && !rc; i++)
        if ((rc = mt_json_load(paths[i], &r[i], err)) == 0)
            rc = mt_replay_result_check(paths[i], r[i], err);
    if (rc)
        goto done;
    /* Changes against the first result mean something only for one workload, or for recordings of
     * one program that the caller says these are: say when it is neither. */
    for (int i = 1; i < n && !(flags & MT_COMPARE_RECORDINGS); i++) {
        const char *w0 = mt_json_str_at(r[0], "workload", ""), *wi = mt_json_str_at(r[i], "workload", "");
        char a[PATH_MAX], b[PATH_MAX];
        const int same = !strcmp(w0, wi) || (realpath(w0, a) && realpath(wi, b) && !strcmp(a, b));
        if (!same) {
            char s0[4 * 256], si[4 * 256];
            fprintf(stderr,
                    "mtrace: warning: %s replayed %s, the first result %s: the changes compare different "
                    "workloads\n",
                    paths[i], mt_safe_str(si, sizeof si, wi), mt_safe_str(s0, sizeof s0, w0));
        }
    }
    const int nrows = group_rows(r, n, flags, rows, members);
    for (int k = 0; k < nrows; k++) {
        row_figures(&rows[k], r, scratch);
        rows[k].recordings = row_recordings((const mt_jval_t *const *)r, rows[k].members, rows[k].n);
        rows[k].not_applied = row_not_applied((const mt_jval_t *const *)r, &rows[k]);
    }
    if (fmt == MT_TABLE_CSV)
        put_csv(f, r, rows, nrows);
    else if (fmt == MT_TABLE_JSON)
        put_json(f, r, paths, rows, nrows);
    else if (fmt == MT_TABLE_HTML)
        put_html(f, r, rows, nrows);
    else
        put_text(f, r, rows, nrows);
done:
    for (int i = 0; i < n; i++)
        mt_json_free(r[i]);
    free(r);
    free(rows);
    free(members);
    free(scratch);
    return rc;
}
