/* mtrace compare: replay results in one table. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/compare.h"
#include "mtrace/json_reader.h"
#include "mtrace/json_writer.h"
#include "file_io.h"

typedef struct column {
    const char *title; /* text table header */
    const char *key;   /* JSON key (CSV and JSON output) */
    double scale;
    int change;        /* show % change against the first */
} column_t;

static const column_t columns[] = {
    { "wall ms", "wall_ms", 1e-3, 1 },       { "cpu ms", "cpu_ms", 1e-3, 1 },
    { "max RSS MiB", "max_rss_mib", 1.0 / 1024, 1 }, { "ideal MiB", "ideal_mib", 1.0 / 1024, 0 },
    { "RSS/ideal", "fragmentation", 1, 0 },  { "malloc cyc", "avg_malloc_cycles", 1, 1 },
    { "free cyc", "avg_free_cycles", 1, 1 }, { "p99 malloc", "p99_malloc_cycles", 1, 0 },
};
#define NCOL (sizeof columns / sizeof columns[0])

static double value(const mt_jval_t *r, size_t c)
{
    switch (c) {
    case 0: return mt_json_num(r, "wall_us", 0);
    case 1: return mt_json_num(r, "cpu_us", 0);
    case 2: return mt_json_num(r, "max_rss_kb", 0);
    case 3: return mt_json_num(r, "ideal_pages_kb", 0);
    case 4: return mt_json_num(r, "fragmentation", 0);
    case 5: return mt_json_num(mt_json_get(r, "avg_cycles"), "malloc", 0);
    case 6: return mt_json_num(mt_json_get(r, "avg_cycles"), "free", 0);
    default: return mt_json_num(mt_json_get(r, "p99_cycles"), "malloc", 0);
    }
}

int mt_replay_result_check(const char *path, const mt_jval_t *r)
{
    if (strcmp(mt_json_str_at(r, "kind", ""), "replay") != 0) {
        fprintf(stderr, "mtrace: %s: offset 0: expected a replay result (\"kind\": \"replay\")\n", path);
        return -1;
    }
    static const char *const figs[][2] = {
        { NULL, "wall_us" },        { NULL, "cpu_us" },         { NULL, "max_rss_kb" },
        { NULL, "ideal_pages_kb" }, { NULL, "fragmentation" },  { "avg_cycles", "malloc" },
        { "avg_cycles", "free" },   { "p99_cycles", "malloc" },
    };
    for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++) {
        const char *group = figs[i][0], *key = figs[i][1];
        const mt_jval_t *obj = group ? mt_json_get(r, group) : r;
        if (!obj)
            continue;
        if (obj->type != MT_JOBJ) {
            fprintf(stderr, "mtrace: %s: \"%s\" is not an object: not a replay result as mtrace replay writes it\n",
                    path, group);
            return -1;
        }
        const mt_jval_t *v = mt_json_get(obj, key);
        if (v && (v->type != MT_JNUM || !isfinite(v->num) || v->num < 0)) {
            fprintf(stderr, "mtrace: %s: \"%s%s%s\" is not a number of at least 0: not a replay result as mtrace "
                            "replay writes it\n",
                    path, group ? group : "", group ? "." : "", key);
            return -1;
        }
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

int mt_compare_print(FILE *f, const char *const *paths, int n, mt_table_fmt_t fmt)
{
    mt_jval_t **r = calloc((size_t)n + 1, sizeof *r);
    if (!r)
        return 1;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        mt_error_t err;
        if (mt_json_load(paths[i], &r[i], &err) < 0) {
            fprintf(stderr, "mtrace: %s\n", err.msg);
            rc = 1;
        } else if (mt_replay_result_check(paths[i], r[i]) < 0) {
            rc = 1;
        }
    }
    if (rc)
        goto done;
    /* Changes against the first result mean something only for one workload: say when it is not. */
    for (int i = 1; i < n; i++) {
        const char *w0 = mt_json_str_at(r[0], "workload", ""), *wi = mt_json_str_at(r[i], "workload", "");
        char a[PATH_MAX], b[PATH_MAX];
        const int same = !strcmp(w0, wi) || (realpath(w0, a) && realpath(wi, b) && !strcmp(a, b));
        if (!same) {
            char s0[4 * 256], si[4 * 256];
            fprintf(stderr, "mtrace: warning: %s replayed %s, the first result %s: the changes compare different "
                            "workloads\n", paths[i], mt_safe_str(si, sizeof si, wi), mt_safe_str(s0, sizeof s0, w0));
        }
    }
    char name[512];
    if (fmt == MT_TABLE_CSV) {
        fprintf(f, "name");
        for (size_t c = 0; c < NCOL; c++)
            fprintf(f, ",%s", columns[c].key);
        fprintf(f, "\n");
        for (int i = 0; i < n; i++) {
            row_name(r[i], name, sizeof name);
            mt_put_csv_field(f, name);
            for (size_t c = 0; c < NCOL; c++)
                fprintf(f, ",%.6g", value(r[i], c) * columns[c].scale);
            fprintf(f, "\n");
        }
    } else if (fmt == MT_TABLE_JSON) {
        mt_json_t j;
        mt_json_init(&j, f);
        mt_json_begin_array(&j);
        for (int i = 0; i < n; i++) {
            row_name(r[i], name, sizeof name);
            mt_json_begin_object(&j);
            mt_json_kv_cstr(&j, "name", name);
            mt_json_kv_cstr(&j, "file", paths[i]);
            for (size_t c = 0; c < NCOL; c++) {
                mt_json_kv_double(&j, columns[c].key, value(r[i], c) * columns[c].scale);
                if (columns[c].change) {
                    char key[64];
                    snprintf(key, sizeof key, "%s_change_pct", columns[c].key);
                    const double base = value(r[0], c);
                    mt_json_kv_double(&j, key, base ? 100.0 * (value(r[i], c) - base) / base : 0);
                }
            }
            mt_json_end_object(&j);
        }
        mt_json_end_array(&j);
        mt_json_finish(&j);
    } else {
        fprintf(f, "%-28s", "allocator");
        for (size_t c = 0; c < NCOL; c++)
            fprintf(f, " %*s", columns[c].change ? 18 : 11, columns[c].title);
        fprintf(f, "\n");
        for (int i = 0; i < n; i++) {
            /* the allocator and settings strings come from the result file: never raw to a terminal */
            char shown[4 * sizeof name];
            row_name(r[i], name, sizeof name);
            fprintf(f, "%-28.28s", mt_safe_str(shown, sizeof shown, name));
            for (size_t c = 0; c < NCOL; c++) {
                const double v = value(r[i], c) * columns[c].scale, base = value(r[0], c) * columns[c].scale;
                char cell[48];
                if (columns[c].change && i > 0 && base != 0)
                    snprintf(cell, sizeof cell, "%.1f (%+.1f%%)", v, 100.0 * (v - base) / base);
                else
                    snprintf(cell, sizeof cell, c == 4 ? "%.2f" : "%.1f", v);
                fprintf(f, " %*s", columns[c].change ? 18 : 11, cell);
            }
            fprintf(f, "\n");
        }
    }
done:
    for (int i = 0; i < n; i++)
        mt_json_free(r[i]);
    free(r);
    return rc;
}
