/* mtrace report's output: a built report (report.c) as text tables or JSON, with the callsites
 * ranked, the histograms, the caller trees and the leaks. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/callers.h"
#include "mtrace/json_writer.h"
#include "mtrace/leaks.h"
#include "mtrace/report.h"
#include "mtrace/file_io.h"

void mt_callsite_where(const mt_callsite_t *c, char *buf, size_t cap)
{
    if (c->file)
        snprintf(buf, cap, "%s:%u", c->file, c->line);
    else if (!strcmp(c->function, "??") && strcmp(c->module, "??") != 0)
        snprintf(buf, cap, "%s+0x%" PRIx64, c->module, c->offset);
    else if (!strcmp(c->function, "??"))
        snprintf(buf, cap, "?? 0x%" PRIx64, c->offset);
    else
        snprintf(buf, cap, "%s", c->module);
}

static const char *human(char *buf, size_t cap, double v)
{
    return mt_human_bytes(buf, cap, v);
}

static void bucket_label(char *buf, size_t cap, unsigned k, int time)
{
    char a[32], b[32];
    const uint64_t lo = k ? (1ull << (k - 1)) : 0, hi = 1ull << k;
    if (!time) {
        snprintf(buf, cap, "%s - %s", human(a, sizeof a, (double)lo), human(b, sizeof b, (double)hi));
        return;
    }
    static const char *const units[] = { "ns", "us", "ms", "s" };
    double x = (double)lo;
    unsigned u = 0;
    while (x >= 1000 && u < 3)
        x /= 1000, u++;
    snprintf(buf, cap, ">= %.3g %s", x, units[u]);
}

static void print_hist(FILE *f, const char *title, const uint64_t *h, int time)
{
    uint64_t max = 0, total = 0;
    unsigned lo = MT_HIST_BUCKETS, hi = 0;
    for (unsigned k = 0; k < MT_HIST_BUCKETS; k++) {
        if (!h[k])
            continue;
        max = h[k] > max ? h[k] : max;
        total += h[k];
        lo = k < lo ? k : lo;
        hi = k;
    }
    fprintf(f, "\n%s\n", title);
    if (!total) {
        fprintf(f, "  (none)\n");
        return;
    }
    for (unsigned k = lo; k <= hi; k++) {
        char label[80];
        bucket_label(label, sizeof label, k, time);
        const int bar = (int)(40.0 * (double)h[k] / (double)max + 0.5);
        fprintf(f, "  %-22s %12" PRIu64 " %5.1f%% %.*s\n", label, h[k], 100.0 * (double)h[k] / (double)total, bar,
                "########################################");
    }
}

static void json_hist(mt_json_t *j, const char *key, const uint64_t *h)
{
    mt_json_key(j, key);
    mt_json_begin_array(j);
    for (unsigned k = 0; k < MT_HIST_BUCKETS; k++) {
        if (!h[k])
            continue;
        mt_json_begin_object(j);
        mt_json_kv_u64(j, "from", k ? 1ull << (k - 1) : 0);
        mt_json_kv_u64(j, "to", 1ull << k);
        mt_json_kv_u64(j, "count", h[k]);
        mt_json_end_object(j);
    }
    mt_json_end_array(j);
}

/* The program's own memory beside the heap's: which share of its anonymous RSS the allocator's can be. */
static void print_own_memory(const mt_report_t *r, FILE *f)
{
    const struct mt_report_own *o = &r->own;
    char a[32], b[32], c[32], d[32];
    if (o->maps)
        fprintf(f,
                "own mappings   %" PRIu64 " made by the program outside malloc (%" PRIu64
                " of them its brk/sbrk), at most "
                "%s of address space at once (its break: %s); %" PRIu64 " madvise calls dropped pages of them\n",
                o->maps, o->brk_maps, human(a, sizeof a, (double)o->peak_mapped),
                human(b, sizeof b, (double)o->peak_brk), o->advises);
    /* Only the first figure is resident. The trace counts the resident pages of the program's own
     * mappings when they end, not at the samples: what they spanned then is address space, which
     * can be many times the RSS (node's worker threads: 2.2 GiB mapped beside 115.8 MiB), and was
     * read as a part bigger than the whole when the line did not say so. */
    if (o->anon_peak_kb)
        fprintf(f,
                "anonymous RSS  %s at most (sampled; resident pages less file-backed ones): then %s live in "
                "malloc's blocks (bytes requested) and %s of address space mapped by the program itself "
                "(mapped, not resident: only the pages it touched count in that RSS); %s at its start "
                "(before main: relocated data, static variables, stack)\n",
                human(a, sizeof a, (double)o->anon_peak_kb * 1024), human(c, sizeof c, (double)o->live_at_anon_peak),
                human(b, sizeof b, (double)o->mapped_at_anon_peak),
                human(d, sizeof d, (double)o->anon_start_kb * 1024));
}

static void json_own_memory(mt_json_t *j, const mt_report_t *r)
{
    const struct mt_report_own *o = &r->own;
    mt_json_key(j, "own_memory");
    mt_json_begin_object(j);
    mt_json_kv_u64(j, "maps", o->maps);
    mt_json_kv_u64(j, "brk_maps", o->brk_maps);
    mt_json_kv_u64(j, "advises", o->advises);
    mt_json_kv_u64(j, "peak_mapped_bytes", o->peak_mapped);
    mt_json_kv_u64(j, "peak_brk_bytes", o->peak_brk);
    mt_json_kv_u64(j, "anon_peak_kb", o->anon_peak_kb);
    mt_json_kv_u64(j, "anon_start_kb", o->anon_start_kb);
    mt_json_kv_u64(j, "mapped_at_anon_peak_bytes", o->mapped_at_anon_peak);
    mt_json_kv_u64(j, "live_at_anon_peak_bytes", o->live_at_anon_peak);
    mt_json_end_object(j);
}

uint64_t mt_callsite_key(const mt_callsite_t *c, mt_site_key_t k)
{
    switch (k) {
    case MT_SITE_CALLS:
        return c->calls;
    case MT_SITE_BYTES:
        return c->bytes;
    case MT_SITE_ADDED:
        return c->added;
    case MT_SITE_PEAK:
        return c->peak_bytes;
    case MT_SITE_LEAKED:
        return c->leaked_bytes;
    }
    return 0;
}

typedef struct callsite_rank {
    uint64_t key;
    size_t at; /* in the report's callsites */
} callsite_rank_t;

static int cmp_callsite_rank(const void *pa, const void *pb)
{
    const callsite_rank_t *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key > b->key ? -1 : 1;
    return a->at < b->at ? -1 : a->at > b->at;
}

/* qsort on (key, position): a program with many callsites made the insertion sort that was here
 * quadratic. */
int mt_callsites_rank(const mt_callsite_t *c, size_t n, mt_site_key_t k, size_t *order)
{
    callsite_rank_t *rank = malloc((n + 1) * sizeof *rank);
    if (!rank)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        rank[i] = (callsite_rank_t){ mt_callsite_key(&c[i], k), i };
    qsort(rank, n, sizeof *rank, cmp_callsite_rank);
    for (size_t i = 0; i < n; i++)
        order[i] = rank[i].at;
    free(rank);
    return 0;
}

void mt_callsite_row(FILE *f, const mt_callsite_t *c, mt_site_key_t k)
{
    char a[32], where[600];
    const uint64_t v = mt_callsite_key(c, k);
    mt_callsite_where(c, where, sizeof where);
    fprintf(f, "  %12s  ",
            k == MT_SITE_CALLS ? (snprintf(a, sizeof a, "%" PRIu64, v), a) : human(a, sizeof a, (double)v));
    mt_put_safe(f, c->function, strlen(c->function));
    fputs("  ", f);
    mt_put_safe(f, where, strlen(where));
}

void mt_callsite_csv_fields(FILE *f, const mt_callsite_t *c)
{
    mt_put_csv_field(f, c->function);
    fputc(',', f);
    mt_put_csv_field(f, c->file);
    fprintf(f, ",%u,", c->line);
    mt_put_csv_field(f, c->module);
    fputc(',', f);
    if (!strcmp(c->function, "??"))
        fprintf(f, "0x%" PRIx64, c->offset);
    fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, c->calls, c->bytes, c->leaked_blocks,
            c->leaked_bytes, c->peak_bytes);
}

void mt_report_json_callsite(mt_json_t *j, const mt_callsite_t *c)
{
    mt_json_begin_object(j);
    mt_symbol_json(j, &(mt_symbol_t){ .function = c->function, .file = c->file, .line = c->line, .module = c->module });
    if (!strcmp(c->function, "??"))
        mt_json_kv_u64(j, "offset", c->offset);
    mt_json_kv_u64(j, "calls", c->calls);
    mt_json_kv_u64(j, "bytes", c->bytes);
    mt_json_kv_u64(j, "leaked_blocks", c->leaked_blocks);
    mt_json_kv_u64(j, "leaked_bytes", c->leaked_bytes);
    mt_json_kv_u64(j, "peak_bytes", c->peak_bytes);
    mt_json_kv_u64(j, "bytes_added", c->added);
    mt_json_kv_u64(j, "bytes_shrunk", c->shrunk);
}

static const char *temporary_rule_name(int rule)
{
    return rule == MT_TEMP_HEAPTRACK ? "heaptrack" : "thread";
}

/* The report as one JSON object. */
static void print_json(const mt_report_t *r, FILE *f, unsigned top)
{
    mt_json_t j;
    mt_json_init(&j, f);
    mt_json_begin_object(&j);
    mt_json_kv_cstr(&j, "kind", "report");
    mt_json_kv_cstr(&j, "file", r->path);
    mt_json_kv_cstr(&j, "command", r->command);
    mt_json_kv_u64(&j, "threads", r->threads);
    mt_json_kv_double(&j, "duration_s", r->duration_s);
    mt_json_kv_bool(&j, "complete", r->complete);
    mt_json_kv_bool(&j, "ended_at_exec", r->ended_at_exec);
    if (r->continued_in)
        mt_json_kv_cstr(&j, "continued_in", r->continued_in);
    mt_json_kv_bool(&j, "truncated", r->truncated);
    mt_report_json_calls(&j, r->calls, r->bytes, r->failures);
    mt_json_kv_u64(&j, "allocations", r->allocations);
    mt_json_kv_u64(&j, "peak_live_bytes", r->peak_live_bytes);
    mt_json_kv_u64(&j, "peak_live_blocks", r->peak_live_blocks);
    mt_json_kv_double(&j, "peak_time_s", r->peak_time_s);
    mt_json_kv_u64(&j, "leaked_blocks", r->leaked_blocks);
    mt_json_kv_u64(&j, "leaked_bytes", r->leaked_bytes);
    mt_json_kv_u64(&j, "temporary", r->temporary);
    mt_json_kv_u64(&j, "temporary_bytes", r->temporary_bytes);
    mt_json_kv_cstr(&j, "temporary_rule", temporary_rule_name(r->temporary_rule));
    mt_json_kv_u64(&j, "realloc_growth", r->realloc_growth);
    mt_json_kv_u64(&j, "realloc_shrink", r->realloc_shrink);
    mt_json_kv_u64(&j, "unknown_frees", r->unknown_frees);
    json_own_memory(&j, r);
    json_hist(&j, "size_histogram", r->size_hist);
    json_hist(&j, "lifetime_histogram_ns", r->life_hist);
    mt_json_key(&j, "thread_list");
    mt_json_begin_array(&j);
    for (uint32_t i = 0; i < r->threads; i++) {
        const struct mt_report_thread *t = &r->thread[i];
        mt_json_begin_object(&j);
        mt_json_kv_u64(&j, "thread", t->thread);
        mt_json_kv_u64(&j, "tid", t->tid);
        mt_json_kv_u64(&j, "calls", t->calls);
        mt_json_kv_u64(&j, "allocations", t->allocations);
        mt_json_kv_u64(&j, "bytes", t->bytes);
        mt_json_kv_u64(&j, "frees", t->frees);
        mt_json_kv_u64(&j, "temporary", t->temporary);
        mt_json_end_object(&j);
    }
    mt_json_end_array(&j);
    mt_json_key(&j, "callsites");
    mt_json_begin_array(&j);
    for (size_t i = 0; i < r->ncallsites && (!top || i < top); i++) {
        mt_report_json_callsite(&j, &r->callsites[i]);
        mt_json_end_object(&j);
    }
    mt_json_end_array(&j);
    if (r->has_stacks)
        mt_leaks_json(&r->leaks, &j, top);
    if (r->has_stacks && r->callers.leaf) {
        mt_callers_json_skipped(&r->callers, &j);
        mt_caller_tree_json(&r->callers.bottom_up, &j, "allocating_functions", "callers", top, r->tree_depth);
        mt_callers_json_entry_cut(&r->callers, &j);
        mt_caller_tree_json(&r->callers.top_down, &j, "top_down", "callees", top, r->tree_depth);
    }
    mt_json_end_object(&j);
    mt_json_finish(&j);
}

void mt_report_json_calls(mt_json_t *j, const uint64_t *calls, const uint64_t *bytes, const uint64_t *failures)
{
    static const char *const tables[] = { "calls", "bytes", "failures" };
    for (int k = 0; k < 3; k++) {
        const uint64_t *v = k == 0 ? calls : k == 1 ? bytes : failures;
        mt_json_key(j, tables[k]);
        mt_json_begin_object(j);
        for (unsigned op = 1; op <= MT_OP_LAST_CALL; op++)
            mt_json_kv_u64(j, mt_op_name(op), v[op]);
        mt_json_end_object(j);
    }
}

void mt_report_calls_table(FILE *f, const uint64_t *calls, const uint64_t *bytes, const uint64_t *failures)
{
    char a[32];
    uint64_t total = 0;
    for (unsigned op = 1; op <= MT_OP_LAST_CALL; op++)
        total += calls[op];
    fprintf(f, "%% calls        calls   bytes requested  failures  function\n");
    fprintf(f, "------- ------------ ----------------- --------- ------------------\n");
    for (unsigned op = 1; op <= MT_OP_LAST_CALL; op++) {
        if (!calls[op])
            continue;
        fprintf(f, "%7.2f %12" PRIu64 " %17s %9" PRIu64 "  %s\n", total ? 100.0 * (double)calls[op] / (double)total : 0,
                calls[op], human(a, sizeof a, (double)bytes[op]), failures[op], mt_op_name(op));
    }
    fprintf(f, "------- ------------ ----------------- --------- ------------------\n");
    fprintf(f, "%6s %13" PRIu64 "                                    total\n", total ? "100.00" : "0.00", total);
}

/* The text report's summary: the calls, the peak, leaks, temporaries, histograms, threads. */
static void print_text_summary(const mt_report_t *r, FILE *f)
{
    char a[32], b[32];
    /* Every string from the trace or the object files is escaped (\xNN): never raw to a terminal. */
    fputs("mtrace report: ", f);
    mt_put_safe(f, r->path, strlen(r->path));
    fputs("\ncommand: ", f);
    mt_put_safe(f, r->command, strlen(r->command));
    fputc('\n', f);
    fprintf(f, "%u thread%s, %.3f s of calls", r->threads, r->threads == 1 ? "" : "s", r->duration_s);
    if (r->ended_at_exec && r->continued_in) {
        fputs(" (the trace ended at an exec: the program went on in ", f);
        mt_put_safe(f, r->continued_in, strlen(r->continued_in));
        fputc(')', f);
    } else if (r->ended_at_exec) {
        fputs(" (the trace ended at an exec: no trace of what followed was found beside it)", f);
    } else if (!r->complete) {
        fputs(" (the trace did not finish: the process was killed or crashed, or left by a bare exit_group system "
              "call)",
              f);
    }
    fputs(r->truncated ? " (truncated)\n\n" : "\n\n", f);
    mt_report_calls_table(f, r->calls, r->bytes, r->failures);
    uint64_t calls = 0;
    for (unsigned op = 1; op <= MT_OP_LAST_CALL; op++)
        calls += r->calls[op];
    if (!calls) /* a program that did not allocate, or whose allocator is linked into it (rustc's) */
        fprintf(f,
                "no calls       the program made no malloc-family call while tracing was on (one whose allocator\n"
                "               is linked into it, as rustc's jemalloc is, makes none)%s\n",
                r->own.maps ? "; its own mappings are below" : "");
    fputc('\n', f);
    fprintf(f, "peak live      %s in %" PRIu64 " blocks at %.3f s\n", human(a, sizeof a, (double)r->peak_live_bytes),
            r->peak_live_blocks, r->peak_time_s);
    fprintf(f, "leaked         %s in %" PRIu64 " blocks (live when the trace ended)\n",
            human(a, sizeof a, (double)r->leaked_bytes), r->leaked_blocks);
    if (r->has_stacks)
        mt_leaks_print_kinds(&r->leaks, f);
    else if (r->leaks.suppress_file)
        fprintf(f, "  (suppressions apply to stacks: record with --stacks N to use them)\n");
    fprintf(f, "temporary      %" PRIu64 " allocations (%.1f %%), %s: %s\n", r->temporary,
            r->allocations ? 100.0 * (double)r->temporary / (double)r->allocations : 0,
            human(b, sizeof b, (double)r->temporary_bytes),
            r->temporary_rule == MT_TEMP_HEAPTRACK
                ? "freed right after they were made, no other allocation or free in between (heaptrack's rule)"
                : "freed before the thread's next allocation");
    if (r->calls[MT_OP_REALLOC] || r->calls[MT_OP_REALLOCARRAY])
        fprintf(f, "realloc        grew blocks by %s, shrank them by %s (bytes requested counts each new size whole)\n",
                human(a, sizeof a, (double)r->realloc_growth), human(b, sizeof b, (double)r->realloc_shrink));
    if (r->unknown_frees)
        fprintf(f, "unknown frees  %" PRIu64 " (blocks allocated before tracing began)\n", r->unknown_frees);
    print_own_memory(r, f);
    print_hist(f, "allocation sizes (requested)", r->size_hist, 0);
    print_hist(f, "lifetimes (allocation to free)", r->life_hist, 1);
    fprintf(f, "\nthread      tid        calls  allocations       bytes   temporary\n");
    for (uint32_t i = 0; i < r->threads; i++) {
        const struct mt_report_thread *t = &r->thread[i];
        fprintf(f, "%6u %8u %12" PRIu64 " %12" PRIu64 " %11s %11" PRIu64 "\n", t->thread, t->tid, t->calls,
                t->allocations, human(a, sizeof a, (double)t->bytes), t->temporary);
    }
}

/* The text report's callsite tables, leaks by stack and caller trees. */
static void print_text_callsites(const mt_report_t *r, FILE *f, unsigned top)
{
    static const char *const by[] = { "calls", "bytes requested", "bytes added (allocations and realloc growth)",
                                      "peak", "leaks" }; /* by mt_site_key_t */
    _Static_assert(sizeof by / sizeof *by == MT_SITE_LEAKED + 1, "a title for every key");
    const int reallocs = r->calls[MT_OP_REALLOC] || r->calls[MT_OP_REALLOCARRAY];
    size_t *order = malloc((r->ncallsites + 1) * sizeof *order);
    if (!order)
        return;
    for (mt_site_key_t k = MT_SITE_CALLS; k <= MT_SITE_LEAKED; k++) {
        if (k == MT_SITE_ADDED && !reallocs)
            continue; /* without realloc, bytes added are the bytes requested */
        if (mt_callsites_rank(r->callsites, r->ncallsites, k, order) < 0)
            break;
        fprintf(f, "\ntop callsites by %s\n", by[k]);
        for (size_t i = 0; i < r->ncallsites && i < (top ? top : 10); i++) {
            const mt_callsite_t *c = &r->callsites[order[i]];
            if (!mt_callsite_key(c, k))
                break;
            mt_callsite_row(f, c, k);
            fputc('\n', f);
        }
    }
    free(order);
    mt_leaks_print_stacks(&r->leaks, f, top ? top : 10);
    if (!r->callers.leaf)
        return;
    fputc('\n', f);
    mt_callers_print_skipped(&r->callers, f);
    fprintf(f, "\nallocating functions and their callers (bottom-up)\n");
    mt_caller_tree_print(&r->callers.bottom_up, f, "<-", top ? top : 10, top ? top : 5, r->tree_depth);
    fprintf(f, "\ncallers down to the allocating functions (top-down)\n");
    mt_callers_print_entry_cut(&r->callers, f);
    mt_caller_tree_print(&r->callers.top_down, f, "->", top ? top : 10, top ? top : 5, r->tree_depth);
}

void mt_report_print(const mt_report_t *r, FILE *f, mt_table_fmt_t fmt, unsigned top)
{
    uint64_t total = 0;
    for (unsigned op = 1; op <= MT_OP_LAST_CALL; op++)
        total += r->calls[op];
    if (fmt == MT_TABLE_CSV) {
        fprintf(f, "function,calls,share_pct,bytes_requested,failures\n");
        for (unsigned op = 1; op <= MT_OP_LAST_CALL; op++)
            fprintf(f, "%s,%" PRIu64 ",%.3f,%" PRIu64 ",%" PRIu64 "\n", mt_op_name(op), r->calls[op],
                    total ? 100.0 * (double)r->calls[op] / (double)total : 0, r->bytes[op], r->failures[op]);
        return;
    }
    if (fmt == MT_TABLE_JSON) {
        print_json(r, f, top);
        return;
    }
    print_text_summary(r, f);
    if (!r->has_stacks) {
        fprintf(f, "\n(no callsites: record with --stacks N to get them)\n");
        return;
    }
    print_text_callsites(r, f, top);
}
