/* mtrace diff: the change per allocating function between two reports, biggest movers first. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/json_writer.h"
#include "mtrace/report_diff.h"
#include "mtrace/file_io.h"
#include "xml_escape.h"

typedef struct row {
    const mt_caller_node_t *a, *b; /* NULL where the function is absent */
    int64_t d_calls, d_bytes, d_peak, d_leaked;
} row_t;

static int cmp_name(const void *x, const void *y)
{
    const mt_caller_node_t *const *p = x, *const *q = y;
    return strcmp((*p)->sym->function, (*q)->sym->function);
}

static uint64_t mag(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

static int cmp_row(const void *x, const void *y)
{
    const row_t *p = x, *q = y;
    const int64_t kp[] = { p->d_bytes, p->d_calls, p->d_peak, p->d_leaked };
    const int64_t kq[] = { q->d_bytes, q->d_calls, q->d_peak, q->d_leaked };
    for (int k = 0; k < 4; k++)
        if (mag(kp[k]) != mag(kq[k]))
            return mag(kp[k]) > mag(kq[k]) ? -1 : 1;
    const mt_caller_node_t *np = p->b ? p->b : p->a, *nq = q->b ? q->b : q->a;
    return strcmp(np->sym->function, nq->sym->function);
}

static int64_t delta(uint64_t a, uint64_t b)
{
    return (int64_t)(b - a); /* two's complement: exact for any change below 2^63 */
}

/* The roots of a report's bottom-up tree, sorted by name; NULL with *n = 0 when none. */
static const mt_caller_node_t **roots(const mt_report_t *r, size_t *n)
{
    const mt_caller_tree_t *t = &r->callers.bottom_up;
    *n = 0;
    if (!r->callers.leaf)
        return NULL;
    size_t count = 0;
    for (uint32_t i = t->node[0].first_child; i; i = t->node[i].next_sibling)
        count++;
    const mt_caller_node_t **v = count ? malloc(count * sizeof *v) : NULL;
    if (!v)
        return NULL;
    for (uint32_t i = t->node[0].first_child; i; i = t->node[i].next_sibling)
        v[(*n)++] = &t->node[i];
    qsort(v, *n, sizeof *v, cmp_name);
    return v;
}

/* The functions whose figures changed, biggest movers first. */
static row_t *diff_rows(const mt_report_t *a, const mt_report_t *b, size_t *nrows, size_t *unchanged)
{
    size_t na, nb;
    const mt_caller_node_t **ra = roots(a, &na), **rb = roots(b, &nb);
    row_t *rows = malloc((na + nb + 1) * sizeof *rows);
    size_t n = 0, i = 0, j = 0;
    *unchanged = 0;
    while (rows && (i < na || j < nb)) {
        const int c = i == na ? 1 : j == nb ? -1 : strcmp(ra[i]->sym->function, rb[j]->sym->function);
        row_t r = { c <= 0 ? ra[i] : NULL, c >= 0 ? rb[j] : NULL, 0, 0, 0, 0 };
        i += c <= 0;
        j += c >= 0;
        const mt_figures_t zero = { 0 }, *fa = r.a ? &r.a->fig : &zero, *fb = r.b ? &r.b->fig : &zero;
        r.d_calls = delta(fa->calls, fb->calls);
        r.d_bytes = delta(fa->bytes, fb->bytes);
        r.d_peak = delta(fa->peak_bytes, fb->peak_bytes);
        r.d_leaked = delta(fa->leaked_bytes, fb->leaked_bytes);
        if (r.d_calls || r.d_bytes || r.d_peak || r.d_leaked)
            rows[n++] = r;
        else
            (*unchanged)++;
    }
    free(ra);
    free(rb);
    if (rows)
        qsort(rows, n, sizeof *rows, cmp_row);
    *nrows = rows ? n : 0;
    return rows;
}

static const char *signed_bytes(char *buf, size_t cap, int64_t v)
{
    if (cap < 2)
        return buf;
    buf[0] = v < 0 ? '-' : '+';
    mt_human_bytes(buf + (v != 0), cap - 1, (double)mag(v));
    return buf;
}

static void json_figures(mt_json_t *j, const char *key, const mt_figures_t *f)
{
    mt_json_key(j, key);
    mt_json_begin_object(j);
    mt_json_kv_u64(j, "calls", f->calls);
    mt_json_kv_u64(j, "bytes", f->bytes);
    mt_json_kv_u64(j, "peak_bytes", f->peak_bytes);
    mt_json_kv_u64(j, "leaked_blocks", f->leaked_blocks);
    mt_json_kv_u64(j, "leaked_bytes", f->leaked_bytes);
    mt_json_end_object(j);
}

static void json_totals(mt_json_t *j, const char *key, const mt_report_t *r)
{
    mt_json_key(j, key);
    mt_json_begin_object(j);
    mt_json_kv_cstr(j, "file", r->path);
    mt_json_kv_u64(j, "allocations", r->allocations);
    mt_json_kv_u64(j, "peak_live_bytes", r->peak_live_bytes);
    mt_json_kv_u64(j, "leaked_blocks", r->leaked_blocks);
    mt_json_kv_u64(j, "leaked_bytes", r->leaked_bytes);
    mt_json_kv_bool(j, "has_stacks", r->has_stacks);
    mt_json_end_object(j);
}

static void print_json(const mt_report_t *a, const mt_report_t *b, FILE *f, const row_t *rows, size_t n,
                       size_t unchanged, unsigned top)
{
    mt_json_t j;
    mt_json_init(&j, f);
    mt_json_begin_object(&j);
    mt_json_kv_cstr(&j, "kind", "diff");
    json_totals(&j, "a", a);
    json_totals(&j, "b", b);
    mt_json_kv_u64(&j, "unchanged_functions", unchanged);
    mt_json_key(&j, "functions");
    mt_json_begin_array(&j);
    for (size_t i = 0; i < n && (!top || i < top); i++) {
        const row_t *r = &rows[i];
        const mt_caller_node_t *x = r->b ? r->b : r->a;
        const mt_figures_t zero = { 0 };
        mt_json_begin_object(&j);
        mt_json_kv_cstr(&j, "function", x->sym->function);
        if (x->sym->file)
            mt_json_kv_cstr(&j, "file", x->sym->file);
        else {
            mt_json_key(&j, "file");
            mt_json_null(&j);
        }
        mt_json_kv_u64(&j, "line", x->sym->line);
        mt_json_kv_cstr(&j, "module", x->sym->module ? x->sym->module : "??");
        json_figures(&j, "a", r->a ? &r->a->fig : &zero);
        json_figures(&j, "b", r->b ? &r->b->fig : &zero);
        mt_json_key(&j, "change");
        mt_json_begin_object(&j);
        mt_json_kv_i64(&j, "calls", r->d_calls);
        mt_json_kv_i64(&j, "bytes", r->d_bytes);
        mt_json_kv_i64(&j, "peak_bytes", r->d_peak);
        mt_json_kv_i64(&j, "leaked_bytes", r->d_leaked);
        mt_json_end_object(&j);
        mt_json_end_object(&j);
    }
    mt_json_end_array(&j);
    mt_json_end_object(&j);
    mt_json_finish(&j);
}

void mt_report_diff_print(const mt_report_t *a, const mt_report_t *b, FILE *f, mt_table_fmt_t fmt, unsigned top)
{
    size_t n, unchanged;
    row_t *rows = diff_rows(a, b, &n, &unchanged);
    if (fmt == MT_TABLE_JSON) {
        print_json(a, b, f, rows, n, unchanged, top);
        free(rows);
        return;
    }
    char x[32], y[32], d[32];
    fputs("mtrace diff: ", f);
    mt_put_safe(f, a->path, strlen(a->path));
    fputs(" -> ", f);
    mt_put_safe(f, b->path, strlen(b->path));
    fprintf(f, "\nallocations    %" PRIu64 " -> %" PRIu64 " (%+" PRId64 ")\n", a->allocations, b->allocations,
            delta(a->allocations, b->allocations));
    fprintf(f, "peak live      %s -> %s (%s)\n", mt_human_bytes(x, sizeof x, (double)a->peak_live_bytes),
            mt_human_bytes(y, sizeof y, (double)b->peak_live_bytes),
            signed_bytes(d, sizeof d, delta(a->peak_live_bytes, b->peak_live_bytes)));
    fprintf(f, "leaked         %s -> %s (%s)\n", mt_human_bytes(x, sizeof x, (double)a->leaked_bytes),
            mt_human_bytes(y, sizeof y, (double)b->leaked_bytes),
            signed_bytes(d, sizeof d, delta(a->leaked_bytes, b->leaked_bytes)));
    if (!a->has_stacks || !b->has_stacks) {
        fprintf(f, "\n(no per-function changes: %s recorded without stacks; record with --stacks N)\n",
                !a->has_stacks && !b->has_stacks ? "both traces were"
                : !a->has_stacks                 ? "the first was"
                                                 : "the second was");
        free(rows);
        return;
    }
    fputs("\nwrappers skipped in both:", f);
    size_t shown = 0;
    for (int k = 0; k < 2; k++) {
        const mt_report_t *r = k ? b : a;
        for (size_t i = 0; i < r->callers.nskipped; i++) {
            const char *fn = r->callers.skipped[i].function;
            int dup = 0;
            for (size_t m = 0; k && m < a->callers.nskipped && !dup; m++)
                dup = !strcmp(a->callers.skipped[m].function, fn);
            if (dup)
                continue;
            fputs(shown++ ? ", " : " ", f);
            mt_put_safe(f, fn, strlen(fn));
        }
    }
    fputs(shown ? "\n" : " none\n", f);
    fprintf(f, "\nchanges per allocating function, biggest movers first (%zu changed, %zu unchanged)\n", n, unchanged);
    fprintf(f, "  %12s %12s %12s %12s  %s\n", "calls", "bytes", "at peak", "leaked", "function  where");
    for (size_t i = 0; i < n && i < (top ? top : 20); i++) {
        const row_t *r = &rows[i];
        const mt_caller_node_t *node = r->b ? r->b : r->a;
        char p[32], l[32], where[600];
        fprintf(f, "  %+12" PRId64 " %12s %12s %12s  ", r->d_calls, signed_bytes(d, sizeof d, r->d_bytes),
                signed_bytes(p, sizeof p, r->d_peak), signed_bytes(l, sizeof l, r->d_leaked));
        mt_put_safe(f, node->sym->function, strlen(node->sym->function));
        mt_frame_where(node->sym, where, sizeof where);
        fputs("  ", f);
        mt_put_safe(f, where, strlen(where));
        fputs(!r->a ? "  (new)\n" : !r->b ? "  (gone)\n" : "\n", f);
    }
    free(rows);
}

/* ---- the page ---------------------------------------------------------------------------------- */

static void html_total(FILE *f, const char *what, uint64_t a, uint64_t b, int bytes)
{
    char x[32], y[32], d[32];
    if (bytes)
        fprintf(f, "<tr><td class=\"l\">%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", what,
                mt_human_bytes(x, sizeof x, (double)a), mt_human_bytes(y, sizeof y, (double)b),
                signed_bytes(d, sizeof d, delta(a, b)));
    else
        fprintf(f, "<tr><td class=\"l\">%s</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%+" PRId64 "</td></tr>\n",
                what, a, b, delta(a, b));
}

int mt_report_diff_html(const mt_report_t *a, const mt_report_t *b, const char *out, unsigned top, mt_error_t *err)
{
    mt_out_t page;
    int rc = mt_out_open(&page, out, err);
    if (rc < 0)
        return rc;
    FILE *f = page.f;
    size_t n, unchanged;
    row_t *rows = diff_rows(a, b, &n, &unchanged);
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>mtrace diff</title><style>"
          "body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse}"
          "td,th{padding:.2em .7em;border-bottom:1px solid #eee;text-align:right}.l{text-align:left}"
          "code{background:#f4f4f4}</style></head><body>\n<h1>mtrace diff</h1>\n<p><code>",
          f);
    mt_xml_escape(f, a->path, MT_XML_ALL);
    fputs("</code> &rarr; <code>", f);
    mt_xml_escape(f, b->path, MT_XML_ALL);
    fputs("</code></p>\n<table><tr><th></th><th>before</th><th>after</th><th>change</th></tr>\n", f);
    html_total(f, "allocations", a->allocations, b->allocations, 0);
    html_total(f, "peak live", a->peak_live_bytes, b->peak_live_bytes, 1);
    html_total(f, "leaked", a->leaked_bytes, b->leaked_bytes, 1);
    fprintf(f,
            "</table>\n<h2>Changes per allocating function, biggest movers first</h2>\n"
            "<p>%zu changed, %zu unchanged.</p>\n<table><tr><th>calls</th><th>bytes</th><th>at peak</th>"
            "<th>leaked</th><th class=\"l\">function</th><th class=\"l\">where</th></tr>\n",
            n, unchanged);
    for (size_t i = 0; rows && i < n && (!top || i < top); i++) {
        const row_t *r = &rows[i];
        const mt_caller_node_t *node = r->b ? r->b : r->a;
        char by[32], pk[32], lk[32], where[600];
        fprintf(f, "<tr><td>%+" PRId64 "</td><td>%s</td><td>%s</td><td>%s</td><td class=\"l\"><code>", r->d_calls,
                signed_bytes(by, sizeof by, r->d_bytes), signed_bytes(pk, sizeof pk, r->d_peak),
                signed_bytes(lk, sizeof lk, r->d_leaked));
        mt_xml_escape(f, node->sym->function, MT_XML_ALL);
        mt_frame_where(node->sym, where, sizeof where);
        fputs("</code></td><td class=\"l\">", f);
        mt_xml_escape(f, where, MT_XML_ALL);
        fputs(!r->a ? " (new)" : !r->b ? " (gone)" : "", f);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n</body></html>\n", f);
    free(rows);
    rc = mt_out_commit(&page, err);
    mt_out_abort(&page);
    return rc;
}

/* ---- building both ----------------------------------------------------------------------------- */

static int detected_in(const mt_report_t *r, const char *fn)
{
    for (size_t i = 0; i < r->callers.nskipped; i++)
        if (!r->callers.skipped[i].pattern && !strcmp(r->callers.skipped[i].function, fn))
            return 1;
    return 0;
}

static int same_detection(const mt_report_t *a, const mt_report_t *b)
{
    for (size_t i = 0; i < a->callers.nskipped; i++)
        if (!a->callers.skipped[i].pattern && !detected_in(b, a->callers.skipped[i].function))
            return 0;
    for (size_t i = 0; i < b->callers.nskipped; i++)
        if (!b->callers.skipped[i].pattern && !detected_in(a, b->callers.skipped[i].function))
            return 0;
    return 1;
}

/* fnmatch's special characters escaped, so that the pattern matches the name alone. */
static char *literal_pattern(const char *name)
{
    char *p = malloc(2 * strlen(name) + 1), *q = p;
    for (; p && *name; name++) {
        if (strchr("*?[]\\", *name))
            *q++ = '\\';
        *q++ = *name;
    }
    if (p)
        *q = 0;
    return p;
}

/* Both or neither: a failed build frees what it made. */
static int build_both(mt_report_t *a, mt_report_t *b, const char *pa, const char *pb, const mt_report_opts_t *o,
                      mt_error_t *err)
{
    int rc = mt_report_build(a, pa, o, err);
    if (rc < 0) {
        mt_report_free(a);
        return rc;
    }
    if ((rc = mt_report_build(b, pb, o, err)) < 0) {
        mt_report_free(b);
        mt_report_free(a);
    }
    return rc;
}

int mt_report_diff_build(mt_report_t *a, mt_report_t *b, const char *pa, const char *pb, const mt_report_opts_t *o,
                         mt_error_t *err)
{
    const mt_report_opts_t none = { 0 };
    if (!o)
        o = &none;
    int rc = build_both(a, b, pa, pb, o, err);
    if (rc < 0 || same_detection(a, b))
        return rc;
    const size_t cap = o->nskip + a->callers.nskipped + b->callers.nskipped;
    const char **skip = calloc(cap + 1, sizeof *skip);
    size_t n = 0;
    rc = skip ? 0 : -ENOMEM;
    for (size_t i = 0; rc == 0 && i < o->nskip; i++)
        skip[n++] = o->skip[i];
    const size_t own = n;
    for (int k = 0; k < 2 && rc == 0; k++) {
        const mt_report_t *r = k ? b : a;
        for (size_t i = 0; rc == 0 && i < r->callers.nskipped; i++) {
            if (r->callers.skipped[i].pattern)
                continue;
            if (!(skip[n] = literal_pattern(r->callers.skipped[i].function)))
                rc = -ENOMEM;
            else
                n++;
        }
    }
    mt_report_free(a);
    mt_report_free(b);
    if (rc == 0) {
        mt_report_opts_t again = *o;
        again.skip = skip;
        again.nskip = n;
        again.no_auto_skip = 1;
        rc = build_both(a, b, pa, pb, &again, err);
    } else {
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", pa);
    }
    for (size_t i = own; skip && i < n; i++)
        free((void *)skip[i]);
    free(skip);
    return rc;
}
