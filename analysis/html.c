/* mtrace report --html: one self-contained page (no external file, script or font): the summary,
 * the plots as inline SVG (drawn by gnuplot into temporary files, then inlined), the flame graph and
 * the callsite tables, and the replay results beside them. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mtrace/compare.h"
#include "mtrace/json_reader.h"
#include "mtrace/leaks.h"
#include "mtrace/plot.h"
#include "mtrace/report.h"
#include "mtrace/file_io.h"
#include "mtrace/tmp_cleanup.h"
#include "xml_escape.h"

static void esc(FILE *f, const char *s)
{
    mt_xml_escape(f, s, MT_XML_ALL);
}

/* Writes an SVG line with every element id, and every reference to one (url(#X), href="#X"),
 * prefixed by "figN-": each picture's gnuplot names its parts alike (gnuplot_canvas, ...), and ids
 * must be unique within the page. */
static void put_svg_line(FILE *out, const char *s, int fig)
{
    static const char *const marks[] = { " id=\"", "url(#", "href=\"#" };
    while (*s) {
        const char *next = NULL;
        size_t len = 0;
        for (size_t k = 0; k < sizeof marks / sizeof marks[0]; k++) {
            const char *m = strstr(s, marks[k]);
            if (m && (!next || m < next))
                next = m, len = strlen(marks[k]);
        }
        if (!next) {
            fputs(s, out);
            return;
        }
        fwrite(s, 1, (size_t)(next - s) + len, out);
        fprintf(out, "fig%d-", fig);
        s = next + len;
    }
}

/* Copies an SVG file into the page, without its XML prolog (not allowed inside HTML); with
 * `own_ids`, its ids made the page's own (put_svg_line: gnuplot's pictures). The flame graph keeps
 * its ids, which its script looks up by name and no other picture uses. */
static int inline_svg(FILE *out, const char *path, int own_ids)
{
    static int figures;
    const int fig = own_ids ? ++figures : 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    int in_svg = 0;
    while (getline(&line, &cap, f) > 0) {
        if (!in_svg) {
            char *start = strstr(line, "<svg");
            if (!start)
                continue;
            in_svg = 1;
            if (fig)
                put_svg_line(out, start, fig);
            else
                fputs(start, out);
            continue;
        }
        if (fig)
            put_svg_line(out, line, fig);
        else
            fputs(line, out);
    }
    free(line);
    fclose(f);
    return in_svg ? 0 : -1;
}

static const char *human(char *buf, size_t cap, double v)
{
    return mt_human_bytes(buf, cap, v);
}

static const char *style =
    "body{font-family:sans-serif;margin:2em;max-width:1250px;color:#222}"
    "h1{font-size:1.4em}h2{font-size:1.15em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{padding:.2em .7em;border-bottom:1px solid #eee;text-align:right}"
    "td.l,th.l{text-align:left}code{background:#f4f4f4;padding:0 .3em}.kv td{text-align:left}"
    ".figure svg{max-width:100%;height:auto}.note{color:#666;font-size:.9em}"
    ".tree details,.tree .leaf{margin-left:1.2em}.tree summary{cursor:pointer}";

/* A frame as the trees show it: the function, then where it is. */
static void html_frame(FILE *f, const mt_symbol_t *sym)
{
    char where[600];
    mt_frame_where(sym, where, sizeof where);
    fprintf(f, "<code>");
    esc(f, sym->function);
    fprintf(f, "</code> ");
    esc(f, where);
}

/* A caller tree as nested <details>: a node's summary holds its figures, its children open under it.
 * The page shows the trees' first levels only (depth, width), as the text report does. */
static void html_node(FILE *f, const mt_caller_tree_t *t, uint32_t node, unsigned level, unsigned depth)
{
    enum { WIDTH = 20 };
    const mt_caller_node_t *x = &t->node[node];
    char by[32], pk[32], lk[32];
    human(by, sizeof by, (double)x->fig.bytes);
    human(pk, sizeof pk, (double)x->fig.peak_bytes);
    human(lk, sizeof lk, (double)x->fig.leaked_bytes);
    uint32_t n = 0;
    uint32_t *kids = level + 1 < depth ? mt_caller_children(t, node, &n) : NULL;
    fprintf(f, n ? "<details><summary>" : "<div class=\"leaf\">");
    fprintf(f, "%" PRIu64 " calls, %s, %s at peak, %s leaked: ", x->fig.calls, by, pk, lk);
    html_frame(f, x->sym);
    fprintf(f, n ? "</summary>\n" : "</div>\n");
    for (uint32_t i = 0; i < n && i < WIDTH; i++)
        html_node(f, t, kids[i], level + 1, depth);
    if (n > WIDTH)
        fprintf(f, "<div class=\"leaf\">(%u more)</div>\n", n - WIDTH);
    if (n)
        fprintf(f, "</details>\n");
    free(kids);
}

/* The leaks by stack, as the text report has them: a line per kind and one for the suppressed, then
 * the stacks, largest first, each closed on its innermost frame (the allocator's left out) and
 * opening on all of its frames. */
static void html_leaks(FILE *f, const mt_leaks_t *l)
{
    enum { STACKS = 50 };
    char a[32];
    fprintf(f, "<h2>Leaks by stack</h2>\n<table class=\"kv\">");
    for (int k = 0; k < MT_LEAK_KINDS; k++)
        if (l->kind_blocks[k])
            fprintf(f, "<tr><td>%s</td><td>%s in %" PRIu64 " blocks</td><td>%s</td></tr>",
                    mt_leak_kind_name((mt_leak_kind_t)k), human(a, sizeof a, (double)l->kind_bytes[k]),
                    l->kind_blocks[k], mt_leak_kind_why((mt_leak_kind_t)k));
    if (l->suppress_file) {
        fprintf(f,
                "<tr><td>suppressed</td><td>%s in %" PRIu64 " blocks from %" PRIu64
                " stacks</td><td>by %zu patterns of <code>",
                human(a, sizeof a, (double)l->suppressed_bytes), l->suppressed_blocks, l->suppressed_stacks,
                l->npatterns);
        esc(f, l->suppress_file);
        fprintf(f, "</code></td></tr>");
    }
    fprintf(f, "</table>\n");
    if (!l->n) {
        fprintf(f, "<p class=\"note\">No leaked block%s.</p>\n", l->suppress_file ? " left" : "");
        return;
    }
    fprintf(f, "<div class=\"tree\">\n");
    for (size_t i = 0; i < l->n && i < STACKS; i++) {
        const mt_leak_t *x = &l->v[i];
        fprintf(f, "<details><summary>%s in %" PRIu64 " blocks, %s: ", human(a, sizeof a, (double)x->bytes), x->blocks,
                mt_leak_kind_name(x->kind));
        html_frame(f, &l->frames[x->frame[0]].sym);
        fprintf(f, "</summary>\n");
        for (uint32_t k = 0; k < x->nframes; k++) {
            fprintf(f, "<div class=\"leaf\">");
            html_frame(f, &l->frames[x->frame[k]].sym);
            fprintf(f, "</div>\n");
        }
        fprintf(f, "</details>\n");
    }
    if (l->n > STACKS)
        fprintf(f, "<div class=\"leaf\">(%zu more stacks)</div>\n", l->n - STACKS);
    fprintf(f, "</div>\n");
}

static void html_tree(FILE *f, const mt_caller_tree_t *t, const char *title, unsigned depth)
{
    enum { ROOTS = 50 };
    fprintf(f, "<h2>%s</h2>\n<div class=\"tree\">\n", title);
    uint32_t n;
    uint32_t *top = mt_caller_children(t, 0, &n);
    for (uint32_t i = 0; i < n && i < ROOTS; i++)
        html_node(f, t, top[i], 0, depth);
    free(top);
    fprintf(f, "</div>\n");
}

/* A figure: its heading (none: NULL) and the SVG file inlined (own: inline_svg's own_ids). */
static void html_figure(FILE *f, const char *title, const char *svg, int own)
{
    if (title)
        fprintf(f, "<h2>%s</h2>\n", title);
    fprintf(f, "<div class=\"figure\">");
    inline_svg(f, svg, own);
    fprintf(f, "</div>\n");
}

/* Checks the replay results before anything is drawn: a bad one fails the page, once. 0, or a
 * negative errno with the first fault in err; *all_series: every result names an RSS series. */
static int check_results(const char *const *results, int nresults, int *all_series, mt_error_t *err)
{
    *all_series = 1;
    for (int i = 0; i < nresults; i++) {
        mt_jval_t *j;
        const int rc = mt_json_load(results[i], &j, err);
        if (rc < 0)
            return rc;
        /* The kind and the figures, by the rule compare and plot apply (mt_replay_result_check); a
         * series named but not readable as one (missing, a device, a FIFO) fails the page too:
         * drawn without it, the page would pass for whole. One message: the first fault. */
        const char *series = mt_json_str_at(j, "rss_series", NULL);
        char where[4096];
        const int ok = mt_replay_result_check(results[i], j, err) == 0 &&
                       (!series || mt_result_series(results[i], series, where, sizeof where, err));
        *all_series &= series != NULL;
        mt_json_free(j);
        if (!ok)
            return -EINVAL;
    }
    return 0;
}

/* Whether a figure was drawn (rc 0). One that cannot be (gnuplot missing, a trace with one point in
 * time) is left out and the page goes on without it: its reason is a warning, on stderr. */
static int drawn(int rc, const mt_error_t *why)
{
    if (rc < 0)
        fprintf(stderr, "mtrace: %s\n", why->msg);
    return rc == 0;
}

/* The page's head, the trace's figures and the table of calls. */
static void html_summary(FILE *f, const mt_report_t *r)
{
    char a[32], b[32];
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>mtrace: ");
    esc(f, r->command);
    fprintf(f, "</title><style>%s</style></head><body>\n<h1>mtrace report</h1>\n", style);
    fprintf(f, "<table class=\"kv\"><tr><td>trace</td><td><code>");
    esc(f, r->path);
    fprintf(f, "</code></td></tr><tr><td>command</td><td><code>");
    esc(f, r->command);
    human(a, sizeof a, (double)r->peak_live_bytes);
    fprintf(f,
            "</code></td></tr><tr><td>threads</td><td>%u</td></tr><tr><td>duration</td><td>%.3f s%s</td></tr>"
            "<tr><td>peak live</td><td>%s in %" PRIu64 " blocks at %.3f s</td></tr>",
            r->threads, r->duration_s,
            r->complete        ? ""
            : r->ended_at_exec ? " (the trace ended at an exec)"
                               : " (the trace did not finish)",
            a, r->peak_live_blocks, r->peak_time_s);
    human(a, sizeof a, (double)r->leaked_bytes);
    human(b, sizeof b, (double)r->temporary_bytes);
    fprintf(f,
            "<tr><td>leaked</td><td>%s in %" PRIu64 " blocks</td></tr><tr><td>temporary</td><td>%" PRIu64
            " allocations (%.1f %%), %s</td></tr></table>\n",
            a, r->leaked_blocks, r->temporary,
            r->allocations ? 100.0 * (double)r->temporary / (double)r->allocations : 0, b);

    fprintf(f, "<h2>Calls</h2>\n<table><tr><th class=\"l\">function</th><th>calls</th><th>%%</th>"
               "<th>bytes requested</th><th>failures</th></tr>\n");
    uint64_t total = 0;
    for (unsigned op = 1; op <= MT_OP_LAST_CALL; op++)
        total += r->calls[op];
    for (unsigned op = 1; op <= MT_OP_LAST_CALL; op++) {
        if (!r->calls[op])
            continue;
        human(a, sizeof a, (double)r->bytes[op]);
        fprintf(f, "<tr><td class=\"l\">%s</td><td>%" PRIu64 "</td><td>%.2f</td><td>%s</td><td>%" PRIu64 "</td></tr>\n",
                mt_op_name(op), r->calls[op], total ? 100.0 * (double)r->calls[op] / (double)total : 0, a,
                r->failures[op]);
    }
    fprintf(f, "</table>\n");
}

/* What the stacks give: the flame graph, the top callsites, the caller trees, the leaks by stack. */
static void html_stacks(FILE *f, const mt_report_t *r, const char *flame_svg)
{
    if (r->has_stacks) {
        if (flame_svg)
            html_figure(f, "Flame graph (bytes allocated)", flame_svg, 0);
        fprintf(f, "<h2>Top callsites</h2>\n<table><tr><th class=\"l\">function</th><th class=\"l\">where</th>"
                   "<th>calls</th><th>bytes</th><th>at peak</th><th>leaked</th></tr>\n");
        for (size_t i = 0; i < r->ncallsites && i < 50; i++) {
            const mt_callsite_t *c = &r->callsites[i];
            char where[600], by[32], pk[32], lk[32];
            mt_callsite_where(c, where, sizeof where);
            human(by, sizeof by, (double)c->bytes);
            human(pk, sizeof pk, (double)c->peak_bytes);
            human(lk, sizeof lk, (double)c->leaked_bytes);
            fprintf(f, "<tr><td class=\"l\"><code>");
            esc(f, c->function);
            fprintf(f, "</code></td><td class=\"l\">");
            esc(f, where);
            fprintf(f, "</td><td>%" PRIu64 "</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", c->calls, by, pk, lk);
        }
        fprintf(f, "</table>\n");
        if (r->callers.leaf) {
            fprintf(f, "<p class=\"note\">Wrappers skipped: ");
            for (size_t i = 0; i < r->callers.nskipped; i++) {
                const mt_skipped_frame_t *k = &r->callers.skipped[i];
                fprintf(f, "%s<code>", i ? ", " : "");
                esc(f, k->function);
                fprintf(f, "</code> (%s", k->pattern ? "matches <code>" : "detected: only allocates");
                if (k->pattern) {
                    esc(f, k->pattern);
                    fprintf(f, "</code>");
                }
                fprintf(f, ")");
            }
            fprintf(f, "%s.</p>\n", r->callers.nskipped ? "" : "none");
            html_tree(f, &r->callers.bottom_up, "Allocating functions and their callers (bottom-up)", r->tree_depth);
            html_tree(f, &r->callers.top_down, "Callers down to the allocating functions (top-down)", r->tree_depth);
            if (r->callers.entry_cut_stacks) {
                fprintf(f,
                        "<p class=\"note\">From main, the threads' start routines and constructors: left out "
                        "above them in %" PRIu64 " stacks:",
                        r->callers.entry_cut_stacks);
                for (size_t i = 0; i < r->callers.nentry_cut; i++) {
                    fprintf(f, "%s<code>", i ? ", " : " ");
                    esc(f, r->callers.entry_cut[i]);
                    fprintf(f, "</code>");
                }
                fprintf(f, ".</p>\n");
            }
        }
        html_leaks(f, &r->leaks);
    } else {
        fprintf(f, "<p class=\"note\">No callsites: record with <code>--stacks N</code> to get them.</p>\n");
    }
}

int mt_report_html(const mt_report_t *r, const char *out, const char *const *results, int nresults,
                   const char *flame_svg, mt_error_t *err)
{
    int all_series;
    int rc = check_results(results, nresults, &all_series, err);
    if (rc < 0)
        return rc;
    char tmp[PATH_MAX];
    mt_tmp_template(tmp, sizeof tmp, "html", "");
    if (!mkdtemp(tmp)) {
        const int e = errno;
        return mt_error_setf(err, -e, "cannot create a temporary directory %s: %s", tmp, strerror(e));
    }
    char live_svg[PATH_MAX + 16], sizes_svg[PATH_MAX + 16], rss_svg[PATH_MAX + 16], bars_svg[PATH_MAX + 16];
    snprintf(live_svg, sizeof live_svg, "%s/live.svg", tmp);
    snprintf(sizes_svg, sizeof sizes_svg, "%s/sizes.svg", tmp);
    snprintf(rss_svg, sizeof rss_svg, "%s/rss.svg", tmp);
    snprintf(bars_svg, sizeof bars_svg, "%s/bars.svg", tmp);
    const char *files[] = { live_svg, sizes_svg, rss_svg, bars_svg };
    char dats[4][80];
    /* What the plots leave in the directory: removed at the end, or by a stop signal (newest first:
     * the files, then the directory). */
    mt_cleanup_add(tmp, 1);
    for (size_t i = 0; i < 4; i++) {
        snprintf(dats[i], sizeof dats[i], "%.*s.dat", (int)(strlen(files[i]) - 4), files[i]);
        mt_cleanup_add(files[i], 0);
        mt_cleanup_add(dats[i], 0);
    }
    mt_error_t why;
    const int have_live = drawn(mt_plot_trace(r, live_svg, &why), &why);
    const int have_sizes = drawn(mt_plot_sizes(r, sizes_svg, &why), &why);
    int have_rss = 0, have_bars = 0;
    if (nresults) {
        have_bars = drawn(mt_plot_compare(results, nresults, bars_svg, &why), &why);
        if (all_series)
            have_rss = drawn(mt_plot_replays(results, nresults, rss_svg, &why), &why);
    }
    /* Written whole under a fresh name beside OUT (never one planted there), renamed into place. */
    mt_out_t page;
    rc = mt_out_open(&page, out, err);
    FILE *const f = page.f;
    if (rc < 0)
        goto cleanup;
    html_summary(f, r);

    if (have_live)
        html_figure(f, "Live bytes and RSS over time", live_svg, 1);
    if (have_sizes)
        html_figure(f, "Allocation sizes", sizes_svg, 1);
    if (nresults) {
        fprintf(f, "<h2>Replays</h2>\n");
        /* checked above (check_results): only a result changed since, or memory short, fails it */
        if ((rc = mt_compare_print(f, results, nresults, MT_TABLE_HTML, 0, err)) < 0) {
            mt_out_abort(&page);
            goto cleanup;
        }
        if (have_bars)
            html_figure(f, NULL, bars_svg, 1);
        if (have_rss)
            html_figure(f, NULL, rss_svg, 1);
    }
    html_stacks(f, r, flame_svg);
    fprintf(f, "<p class=\"note\">Written by mtrace.</p>\n</body></html>\n");
    rc = mt_out_commit(&page, err);
cleanup:
    for (size_t i = 0; i < 4; i++) {
        unlink(files[i]);
        unlink(dats[i]);
        mt_cleanup_del(files[i]);
        mt_cleanup_del(dats[i]);
    }
    rmdir(tmp);
    mt_cleanup_del(tmp);
    return rc;
}
