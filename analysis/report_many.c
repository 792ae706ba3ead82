/* Several traces as one (mtrace report TRACE TRACE ..., a process tree's files): the figures that add
 * up across processes, summed trace by trace as each report is built and freed, so that memory holds
 * one trace's report at a time, and beside it the callsites merged so far: one entry per distinct
 * callsite, however many traces and records there are. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mtrace/file_io.h" /* mt_put_safe: a file name is shown as \xNN where not printable */
#include "mtrace/json_writer.h"
#include "mtrace/ptr_map.h"
#include "mtrace/report.h"
#include "strset.h"

/* The total's own copies of the callsites' strings (a trace's die with its report), so that a key
 * compares by pointer, and the callsites by their key's hash. */
typedef struct total_priv {
    mt_strset_t strings;
    mt_ptr_map_t by_hash; /* a key's hash (rehashed past a collision, never 0) -> its callsite */
    size_t cap_sites;
    struct failed_trace {
        char *path, *error;
    } * failed; /* the traces that could not be read, in order: t->failed of them */
    /* The files met, by identity (their "dev:ino" in file_ids, whose copy's address is the key):
     * FILE_READ, FILE_CONTINUES an exec of a trace read, or both. */
    mt_strset_t file_ids;
    mt_ptr_map_t files;
} total_priv_t;

enum { FILE_READ = 1, FILE_CONTINUES = 2, FILE_BOTH = FILE_READ | FILE_CONTINUES };

/* a + b, stopping at UINT64_MAX */
static uint64_t add_sat(uint64_t a, uint64_t b)
{
    uint64_t s;
    return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

/* The key's hash, never 0 (the map's empty key): its strings are the total's copies, so their
 * addresses stand for their text. */
static uint64_t site_hash(const mt_callsite_t *c)
{
    uint64_t h = mt_ptr_hash((uintptr_t)c->function);
    h = mt_ptr_hash(h ^ (uintptr_t)c->file);
    h = mt_ptr_hash(h ^ (uintptr_t)c->module);
    h = mt_ptr_hash(h ^ c->line);
    return mt_ptr_hash(h ^ c->offset) | 1;
}

static int same_site(const mt_callsite_t *a, const mt_callsite_t *b)
{
    return a->function == b->function && a->file == b->file && a->module == b->module && a->line == b->line &&
           a->offset == b->offset;
}

/* Room for one more callsite. 0, or -ENOMEM. */
static int grow_sites(total_priv_t *p, mt_report_total_t *t)
{
    if (t->ncallsites < p->cap_sites)
        return 0;
    const size_t cap = p->cap_sites ? p->cap_sites * 2 : 256;
    mt_callsite_t *c = realloc(t->callsites, cap * sizeof *c);
    if (c)
        t->callsites = c;
    struct mt_site_traces *n = realloc(t->site_traces, cap * sizeof *n);
    if (n)
        t->site_traces = n;
    if (!c || !n)
        return -ENOMEM;
    p->cap_sites = cap;
    return 0;
}

/* The total's callsite for a trace's (its key with the total's strings), made on first sight; NULL
 * when out of memory. */
static mt_callsite_t *total_site(mt_report_total_t *t, const mt_callsite_t *c)
{
    total_priv_t *p = t->priv;
    mt_callsite_t key = {
        .function = mt_strset_get(&p->strings, c->function),
        .file = mt_strset_get(&p->strings, c->file),
        .module = mt_strset_get(&p->strings, c->module),
        .line = c->line,
        .offset = c->offset,
    };
    if (!key.function || !key.module || (c->file && !key.file))
        return NULL;
    /* two keys of one 64-bit hash: the second one's hash is hashed again, until it is its own */
    uint64_t h = site_hash(&key);
    for (const mt_ptr_entry_t *e; (e = mt_ptr_map_find(&p->by_hash, h)); h = mt_ptr_hash(h) | 1)
        if (same_site(&t->callsites[e->value], &key))
            return &t->callsites[e->value];
    if (grow_sites(p, t) < 0 || mt_ptr_map_put(&p->by_hash, h, t->ncallsites) < 0)
        return NULL;
    const size_t i = t->ncallsites++;
    t->callsites[i] = key;
    t->site_traces[i] = (struct mt_site_traces){ 0 };
    return &t->callsites[i];
}

/* The total's private part, made on first use; NULL when out of memory. */
static total_priv_t *total_priv(mt_report_total_t *t)
{
    if (!t->priv) {
        total_priv_t *p = calloc(1, sizeof *p);
        if (!p || mt_ptr_map_init(&p->by_hash) < 0 || mt_ptr_map_init(&p->files) < 0) {
            if (p)
                mt_ptr_map_fini(&p->by_hash);
            free(p);
            return NULL;
        }
        t->priv = p;
    }
    return t->priv;
}

/* Adds a trace's callsites to the merged ones. 0, or -ENOMEM. */
static int add_callsites(mt_report_total_t *t, const mt_report_t *r)
{
    if (!total_priv(t))
        return -ENOMEM;
    for (size_t i = 0; i < r->ncallsites; i++) {
        const mt_callsite_t *c = &r->callsites[i];
        mt_callsite_t *s = total_site(t, c);
        if (!s)
            return -ENOMEM;
        s->calls = add_sat(s->calls, c->calls);
        s->bytes = add_sat(s->bytes, c->bytes);
        s->leaked_blocks = add_sat(s->leaked_blocks, c->leaked_blocks);
        s->leaked_bytes = add_sat(s->leaked_bytes, c->leaked_bytes);
        s->peak_bytes = add_sat(s->peak_bytes, c->peak_bytes);
        s->added = add_sat(s->added, c->added);
        s->shrunk = add_sat(s->shrunk, c->shrunk);
        struct mt_site_traces *n = &t->site_traces[s - t->callsites];
        n->traces++; /* a trace's callsites are distinct: it counts once */
        n->leaking += c->leaked_bytes != 0;
    }
    return 0;
}

/* Marks the file at path (by identity: a directory's listing and a continuation's name, found
 * beside its trace, may spell one file two ways) with `bit`; a trace read that continues another
 * read is counted once, whichever comes first. A file gone since is not counted. 0, or -ENOMEM. */
static int mark_file(mt_report_total_t *t, total_priv_t *p, const char *path, unsigned bit)
{
    struct stat st;
    char id[48];
    if (stat(path, &st) != 0)
        return 0;
    snprintf(id, sizeof id, "%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
    const char *const key = mt_strset_get(&p->file_ids, id);
    if (!key)
        return -ENOMEM;
    mt_ptr_entry_t *const e = mt_ptr_map_find(&p->files, (uintptr_t)key);
    const unsigned was = e ? (unsigned)e->value : 0;
    t->continuing += was != FILE_BOTH && (was | bit) == FILE_BOTH;
    if (e)
        e->value = was | bit;
    return e ? 0 : mt_ptr_map_put(&p->files, (uintptr_t)key, bit);
}

/* Notes the trace read, and the trace its process went on in after an exec, if found. */
static int add_exec_links(mt_report_total_t *t, const mt_report_t *r)
{
    total_priv_t *p = total_priv(t);
    if (!p)
        return -ENOMEM;
    const int rc = mark_file(t, p, r->path, FILE_READ);
    return rc < 0 || !r->continued_in ? rc : mark_file(t, p, r->continued_in, FILE_CONTINUES);
}

/* "COMMAND (pid N)", COMMAND the base name of the command's first word: the frame that a process's
 * stacks stand on in the one flame graph of several traces. */
static void process_frame(const mt_report_t *r, char *buf, size_t cap)
{
    const char *name = r->command;
    size_t len = strcspn(name, " ");
    for (const char *slash; (slash = memchr(name, '/', len)) != NULL;) {
        len -= (size_t)(slash + 1 - name);
        name = slash + 1;
    }
    snprintf(buf, cap, "%.*s (pid %" PRIu32 ")", (int)len, len ? name : "?", r->pid);
}

/* Adds a trace's folded stacks (r->folded: built with keep_folded) to the total's, each under its
 * process's frame, with the total's copies of the names. 0, or -ENOMEM. */
static int add_folded(mt_report_total_t *t, total_priv_t *p, const mt_report_t *r)
{
    char frame[600];
    process_frame(r, frame, sizeof frame);
    const char *const root = mt_strset_get(&p->strings, frame);
    if (!r->nfolded)
        return 0;
    mt_folded_t *g = realloc(t->folded, (t->nfolded + r->nfolded) * sizeof *g);
    if (g)
        t->folded = g;
    if (!root || !g)
        return -ENOMEM;
    for (size_t i = 0; i < r->nfolded; i++) {
        const mt_folded_t *in = &r->folded[i];
        if (!in->weight)
            continue; /* drawn nowhere (mt_folded_write) */
        const char **names = calloc(in->nframes + 2, sizeof *names);
        if (!names)
            return -ENOMEM;
        names[0] = root;
        for (uint32_t k = 0; k < in->nframes; k++)
            if (in->frames[k] && !(names[k + 1] = mt_strset_get(&p->strings, in->frames[k]))) {
                free(names);
                return -ENOMEM;
            }
        t->folded[t->nfolded++] = (mt_folded_t){ .frames = names, .nframes = in->nframes + 1, .weight = in->weight };
    }
    return 0;
}

int mt_report_total_add(mt_report_total_t *t, const mt_report_t *r)
{
    t->traces++;
    t->threads += r->threads;
    for (unsigned op = 1; op <= MT_OP_LAST_CALL; op++) {
        t->calls[op] = add_sat(t->calls[op], r->calls[op]);
        t->bytes[op] = add_sat(t->bytes[op], r->bytes[op]);
        t->failures[op] = add_sat(t->failures[op], r->failures[op]);
    }
    t->allocations = add_sat(t->allocations, r->allocations);
    t->leaked_blocks = add_sat(t->leaked_blocks, r->leaked_blocks);
    t->leaked_bytes = add_sat(t->leaked_bytes, r->leaked_bytes);
    t->temporary = add_sat(t->temporary, r->temporary);
    t->peak_sum = add_sat(t->peak_sum, r->peak_live_bytes);
    if (r->peak_live_bytes > t->peak_max)
        t->peak_max = r->peak_live_bytes;
    t->ended_at_exec += r->ended_at_exec != 0;
    t->incomplete += !r->complete && !r->ended_at_exec;
    t->truncated += r->truncated != 0;
    t->with_stacks += r->has_stacks != 0;
    int rc = add_exec_links(t, r);
    if (rc == 0)
        rc = add_folded(t, t->priv, r);
    return rc < 0 ? rc : add_callsites(t, r);
}

int mt_report_total_fail(mt_report_total_t *t, const char *path, const char *error)
{
    total_priv_t *p = total_priv(t);
    struct failed_trace *f = p ? realloc(p->failed, (t->failed + 1) * sizeof *f) : NULL;
    if (!f)
        return -ENOMEM;
    p->failed = f;
    f[t->failed] = (struct failed_trace){ .path = strdup(path), .error = strdup(error) };
    if (!f[t->failed].path || !f[t->failed].error) {
        free(f[t->failed].path);
        free(f[t->failed].error);
        return -ENOMEM;
    }
    t->failed++;
    return 0;
}

void mt_report_total_free(mt_report_total_t *t)
{
    total_priv_t *p = t->priv;
    if (p) {
        for (uint64_t i = 0; i < t->failed; i++) {
            free(p->failed[i].path);
            free(p->failed[i].error);
        }
        free(p->failed);
        mt_strset_fini(&p->file_ids);
        mt_ptr_map_fini(&p->files);
        mt_strset_fini(&p->strings);
        mt_ptr_map_fini(&p->by_hash);
        free(p);
    }
    free(t->callsites);
    free(t->site_traces);
    for (size_t i = 0; i < t->nfolded; i++)
        free((void *)t->folded[i].frames);
    free(t->folded);
    memset(t, 0, sizeof *t);
}

/* The two rankings the totals show: by bytes requested, by leaked bytes. */
static const mt_site_key_t shown_keys[2] = { MT_SITE_BYTES, MT_SITE_LEAKED };

/* The merged callsites in JSON: "callsites" by bytes, "leaking_callsites" (those that leaked) by
 * leaked bytes, `top` of each (0: all), each as one trace's callsite with "traces" and
 * "leaking_traces". order[k]: the ranking by shown_keys[k]. */
static void json_callsites(mt_json_t *j, const mt_report_total_t *t, size_t *const order[2], unsigned top)
{
    static const char *const names[] = { "callsites", "leaking_callsites" };
    for (int k = 0; k < 2; k++) {
        mt_json_key(j, names[k]);
        mt_json_begin_array(j);
        for (size_t i = 0; i < t->ncallsites && (!top || i < top); i++) {
            const size_t at = order[k][i];
            if (shown_keys[k] == MT_SITE_LEAKED && !t->callsites[at].leaked_bytes)
                break;
            mt_report_json_callsite(j, &t->callsites[at]);
            mt_json_kv_u64(j, "traces", t->site_traces[at].traces);
            mt_json_kv_u64(j, "leaking_traces", t->site_traces[at].leaking);
            mt_json_end_object(j);
        }
        mt_json_end_array(j);
    }
}

/* "failed_traces": the traces that could not be read, each its file and its error; empty when the
 * total is the whole that was asked for. */
static void json_failed(mt_json_t *j, const mt_report_total_t *t)
{
    const total_priv_t *p = t->priv;
    mt_json_key(j, "failed_traces");
    mt_json_begin_array(j);
    for (uint64_t i = 0; i < t->failed; i++) {
        mt_json_begin_object(j);
        mt_json_kv_cstr(j, "file", p->failed[i].path);
        mt_json_kv_cstr(j, "error", p->failed[i].error);
        mt_json_end_object(j);
    }
    mt_json_end_array(j);
}

/* The totals' first lines: the traces they cover, and, when some could not be read, how many of
 * those given and which (their errors went to stderr as each was met). */
static void print_total_head(const mt_report_total_t *t, FILE *f)
{
    if (!t->failed)
        fprintf(f, "\nall %" PRIu64 " traces", t->traces);
    else
        fprintf(f, "\n%" PRIu64 " of %" PRIu64 " traces", t->traces, add_sat(t->traces, t->failed));
    const uint64_t processes = t->traces - t->continuing, threads = t->threads - t->continuing;
    fprintf(f, " (%" PRIu64 " process%s): %" PRIu64 " thread%s\n", processes, processes == 1 ? "" : "es", threads,
            threads == 1 ? "" : "s");
    if (t->ended_at_exec)
        fprintf(f, "ended at exec  %" PRIu64 " trace%s: the process went on in the program it ran\n", t->ended_at_exec,
                t->ended_at_exec == 1 ? "" : "s");
    if (t->incomplete)
        fprintf(f,
                "not finished   %" PRIu64 " trace%s: the process was killed or crashed, or left by a bare exit_group "
                "system call\n",
                t->incomplete, t->incomplete == 1 ? "" : "s");
    if (!t->failed)
        return;
    const total_priv_t *p = t->priv;
    fprintf(f, "not read       %" PRIu64 " trace%s, in no figure below:", t->failed, t->failed == 1 ? "" : "s");
    for (uint64_t i = 0; i < t->failed; i++) {
        fputs(i ? ", " : " ", f);
        mt_put_safe(f, p->failed[i].path, strlen(p->failed[i].path));
    }
    fputc('\n', f);
}

/* The merged callsites' tables by bytes requested and by leaks, each row with how many traces
 * allocated or leaked there. */
static void print_callsites(const mt_report_total_t *t, FILE *f, size_t *const order[2], unsigned top)
{
    if (!t->with_stacks)
        return; /* each report said how to get callsites */
    char traces[80];
    if (t->with_stacks == t->traces)
        snprintf(traces, sizeof traces, "all %" PRIu64 " traces", t->traces);
    else
        snprintf(traces, sizeof traces, "the %" PRIu64 " of %" PRIu64 " traces recorded with stacks", t->with_stacks,
                 t->traces);
    for (int k = 0; k < 2; k++) {
        const int leaks = shown_keys[k] == MT_SITE_LEAKED;
        fprintf(f, "\ntop callsites by %s, %s\n", leaks ? "leaks" : "bytes requested", traces);
        for (size_t i = 0; i < t->ncallsites && i < (top ? top : 10); i++) {
            const size_t at = order[k][i];
            if (!mt_callsite_key(&t->callsites[at], shown_keys[k]))
                break;
            const uint64_t in = leaks ? t->site_traces[at].leaking : t->site_traces[at].traces;
            mt_callsite_row(f, &t->callsites[at], shown_keys[k]);
            fprintf(f, "  %s in %" PRIu64 " trace%s\n", leaks ? "leaked" : "allocated", in, in == 1 ? "" : "s");
        }
    }
}

int mt_report_total_callsites_csv(const mt_report_total_t *t, FILE *f)
{
    size_t *order = malloc((t->ncallsites + 1) * sizeof *order);
    if (!order || mt_callsites_rank(t->callsites, t->ncallsites, MT_SITE_CALLS, order) < 0) {
        free(order);
        return -ENOMEM;
    }
    fprintf(f, MT_CALLSITE_CSV_HEADER ",traces,leaking_traces\n");
    for (size_t i = 0; i < t->ncallsites; i++) {
        mt_callsite_csv_fields(f, &t->callsites[order[i]]);
        fprintf(f, ",%" PRIu64 ",%" PRIu64 "\n", t->site_traces[order[i]].traces, t->site_traces[order[i]].leaking);
    }
    free(order);
    return 0;
}

int mt_report_total_print(const mt_report_total_t *t, FILE *f, mt_table_fmt_t fmt, unsigned top)
{
    /* the rankings, made before anything is printed: out of memory prints nothing */
    size_t *both = malloc((2 * t->ncallsites + 1) * sizeof *both);
    size_t *const order[2] = { both, both ? both + t->ncallsites : NULL };
    if (!both || mt_callsites_rank(t->callsites, t->ncallsites, shown_keys[0], order[0]) < 0 ||
        mt_callsites_rank(t->callsites, t->ncallsites, shown_keys[1], order[1]) < 0) {
        free(both);
        return -ENOMEM;
    }
    if (fmt == MT_TABLE_JSON) {
        mt_json_t j;
        mt_json_init(&j, f);
        mt_json_begin_object(&j);
        mt_json_kv_u64(&j, "traces", t->traces);
        json_failed(&j, t);
        mt_json_kv_u64(&j, "processes", t->traces - t->continuing);
        mt_json_kv_u64(&j, "threads", t->threads - t->continuing);
        mt_report_json_calls(&j, t->calls, t->bytes, t->failures);
        mt_json_kv_u64(&j, "allocations", t->allocations);
        mt_json_kv_u64(&j, "leaked_blocks", t->leaked_blocks);
        mt_json_kv_u64(&j, "leaked_bytes", t->leaked_bytes);
        mt_json_kv_u64(&j, "temporary", t->temporary);
        mt_json_kv_u64(&j, "peak_live_bytes_sum", t->peak_sum);
        mt_json_kv_u64(&j, "peak_live_bytes_max", t->peak_max);
        mt_json_kv_u64(&j, "ended_at_exec_traces", t->ended_at_exec);
        mt_json_kv_u64(&j, "incomplete_traces", t->incomplete);
        mt_json_kv_u64(&j, "truncated_traces", t->truncated);
        mt_json_kv_u64(&j, "traces_with_stacks", t->with_stacks);
        json_callsites(&j, t, order, top);
        mt_json_end_object(&j);
        mt_json_finish(&j);
        free(both);
        return 0;
    }
    print_total_head(t, f);
    mt_report_calls_table(f, t->calls, t->bytes, t->failures);
    fprintf(f,
            "peak live      %" PRIu64 " bytes at most in one process; %" PRIu64
            " bytes summed over the processes (their peaks, not at one time)\n",
            t->peak_max, t->peak_sum);
    fprintf(f, "leaked         %" PRIu64 " bytes in %" PRIu64 " blocks\n", t->leaked_bytes, t->leaked_blocks);
    fprintf(f, "temporary      %" PRIu64 " allocations of %" PRIu64 "\n", t->temporary, t->allocations);
    print_callsites(t, f, order, top);
    free(both);
    return 0;
}
