/* mtrace export: one pass over a trace in time order (threads merged as mtrace report merges them)
 * that writes its call records, RSS samples, stacks, threads and header as ClickHouse RowBinary
 * tables (doc/export.md).
 *
 * Which block a free ends is a question of the address map at that moment, which SQL cannot ask
 * cheaply; the pass answers it and writes the answer into the record's row (freed_*, replaced_*,
 * live_delta, temporary). Everything else, the peak included, is left to the queries. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mtrace/callers.h"
#include "mtrace/export.h"
#include "mtrace/merge_heap.h"
#include "mtrace/ordered_reader.h"
#include "mtrace/ptr_map.h"
#include "mtrace/symbolize.h"
#include "mtrace/file_io.h"
#include "causal.h"
#include "strset.h"

const char *const mt_export_table_names[MT_EXPORT_NTABLES] = {
    [MT_EXPORT_TRACES] = "mtrace_traces", [MT_EXPORT_RECORDS] = "mtrace_records",
    [MT_EXPORT_STACKS] = "mtrace_stacks", [MT_EXPORT_THREADS] = "mtrace_threads",
    [MT_EXPORT_RSS] = "mtrace_rss",
};

/* Stack ids are numbered from 1 as the shim meets stacks; mtrace report takes a larger one for
 * damage, and so does the export (its records get stack 0). */
#define MAX_STACK_ID (MT_STACK_ID_MAX + 1)

/* ---- RowBinary: little-endian fixed-width numbers, strings and arrays after a LEB128 length ---- */

/* Fixed-width columns gathered before one write: a record's row is 150 bytes, a stack's frames
 * array at most 10 + 64 * 8. */
typedef struct row {
    uint8_t b[1024];
    size_t n;
} row_t;

static void put_le(row_t *r, uint64_t v, unsigned bytes)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(r->b + r->n, &v, bytes); /* the low bytes first; the byte loop took 2.8-3.5 s of user time on
                                     * 11.4 M records, this 2.4-2.5 s */
    r->n += bytes;
#else
    for (unsigned i = 0; i < bytes; i++)
        r->b[r->n++] = (uint8_t)(v >> (8 * i));
#endif
}

static void put_u64(row_t *r, uint64_t v)
{
    put_le(r, v, 8);
}

static void put_u32(row_t *r, uint32_t v)
{
    put_le(r, v, 4);
}

static void put_u8(row_t *r, uint8_t v)
{
    r->b[r->n++] = v;
}

static void put_len(row_t *r, uint64_t n)
{
    r->n = (size_t)(mt_put_uvarint(r->b + r->n, n) - r->b);
}

/* Flushes the fixed-width part gathered so far. */
static void row_flush(FILE *f, row_t *r)
{
    fwrite(r->b, 1, r->n, f);
    r->n = 0;
}

static void put_str(FILE *f, row_t *r, const char *s, size_t len)
{
    put_len(r, len);
    row_flush(f, r);
    fwrite(s, 1, len, f);
}

static void put_cstr(FILE *f, row_t *r, const char *s)
{
    put_str(f, r, s ? s : "", s ? strlen(s) : 0);
}

/* ---- state ---------------------------------------------------------------------------------- */

typedef struct xblock {
    uint64_t seq, size, time;
    uint32_t stack, thread;
} xblock_t;

typedef struct xstack {
    uint64_t *frames; /* from the first STACK event of the id; NULL until then */
    uint32_t nframes;
    uint8_t used; /* a record names it */
    /* What mtrace report tells its callsites by (mt_callers_build): its allocations, frees, leaks. */
    mt_figures_t fig;
    uint64_t others;
} xstack_t;

typedef struct xthread {
    mt_thread_cursor_t cur;
    mt_record_t head;
    uint64_t last_alloc; /* its latest allocation's address, 0 once freed: for temporaries */
    uint64_t start_time, exit_time, lost;
    uint32_t creator;
} xthread_t;

typedef struct exporter {
    mt_trace_t *trace;
    uint64_t id;
    xthread_t *th;
    uint32_t nth;
    mt_merge_heap_t heap;
    uint64_t *key;
    mt_ptr_map_t live; /* address -> index into blk */
    xblock_t *blk;
    uint64_t nblk, capblk;
    uint64_t *spare; /* indices of blk free for reuse */
    uint64_t nspare, capspare;
    xstack_t *stacks;
    uint32_t capstacks;
    mt_module_def_t *modules; /* names copied: the event payloads live in cursor buffers */
    size_t nmodules, capmodules;
    uint64_t seq; /* records merged so far, events included */
    int stale;    /* the call being exported returns an address a block holds (export_apply) */
    mt_out_t out[MT_EXPORT_NTABLES];
    char path[MT_EXPORT_NTABLES][4096]; /* each table's target: out[k].path points here */
    mt_export_stats_t st;
} exporter_t;

static void exporter_fini(exporter_t *x)
{
    for (uint32_t i = 0; x->th && i < x->nth; i++)
        mt_thread_cursor_fini(&x->th[i].cur);
    free(x->th);
    free(x->heap.v);
    free(x->key);
    mt_ptr_map_fini(&x->live);
    free(x->blk);
    free(x->spare);
    for (uint32_t i = 0; i < x->capstacks; i++)
        free(x->stacks[i].frames);
    free(x->stacks);
    for (size_t i = 0; i < x->nmodules; i++)
        free((void *)x->modules[i].name);
    free(x->modules);
    for (int k = 0; k < MT_EXPORT_NTABLES; k++)
        mt_out_abort(&x->out[k]);
    if (x->trace)
        mt_trace_close(x->trace);
}

static int grow(void **p, uint64_t *cap, uint64_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint64_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    void *n = realloc(*p, c * elem);
    if (!n)
        return -ENOMEM;
    *p = n;
    *cap = c;
    return 0;
}

static xstack_t *stack_slot(exporter_t *x, uint32_t id)
{
    if (id == 0 || id >= MAX_STACK_ID)
        return NULL;
    if (id >= x->capstacks) {
        uint64_t cap = x->capstacks;
        xstack_t *old = x->stacks;
        if (grow((void **)&x->stacks, &cap, (uint64_t)id + 1, sizeof *x->stacks) < 0) {
            x->stacks = old;
            return NULL;
        }
        memset(x->stacks + x->capstacks, 0, (cap - x->capstacks) * sizeof *x->stacks);
        x->capstacks = (uint32_t)cap;
    }
    return &x->stacks[id];
}

/* ---- the live blocks ------------------------------------------------------------------------ */

static int block_put(exporter_t *x, uint64_t addr, const xblock_t *b)
{
    uint64_t i;
    if (x->nspare)
        i = x->spare[--x->nspare];
    else if (grow((void **)&x->blk, &x->capblk, x->nblk + 1, sizeof *x->blk) < 0)
        return -ENOMEM;
    else
        i = x->nblk++;
    x->blk[i] = *b;
    return mt_ptr_map_put(&x->live, addr, i);
}

/* The block at addr, taken out of the live set: 1, 0 when none is live there, or -ENOMEM. */
static int block_take(exporter_t *x, uint64_t addr, xblock_t *out)
{
    mt_ptr_entry_t *e = mt_ptr_map_find(&x->live, addr);
    if (!e)
        return 0;
    const uint64_t i = e->value;
    *out = x->blk[i];
    mt_ptr_map_del(&x->live, e);
    if (grow((void **)&x->spare, &x->capspare, x->nspare + 1, sizeof *x->spare) < 0)
        return -ENOMEM;
    x->spare[x->nspare++] = i;
    return 1;
}

/* ---- one call record ------------------------------------------------------------------------- */

/* mt_requested for the calls that allocate, 0 for free, malloc_usable_size and mallopt (whose size
 * field is no request). */
static uint64_t bytes_requested(const mt_record_t *r)
{
    if (!mt_op_allocates(r->op))
        return 0;
    return mt_requested(r->op, r->count, r->size);
}

static int export_call(exporter_t *x, uint32_t ti, const mt_record_t *r)
{
    xthread_t *th = &x->th[ti];
    const int failed = (r->flags & MT_FLAG_NULL) != 0;
    const uint64_t req = bytes_requested(r);
    const int allocates = mt_op_allocates(r->op); /* export_call sees calls only */
    const int resizes = r->op == MT_OP_REALLOC || r->op == MT_OP_REALLOCARRAY;
    uint32_t stack = (r->flags & MT_FLAG_STACK) && r->stack < MAX_STACK_ID ? r->stack : 0;
    if (stack) {
        xstack_t *s = stack_slot(x, stack);
        if (!s)
            return -ENOMEM;
        s->used = 1;
        if (r->op == MT_OP_FREE)
            s->others++;
        else if (allocates && !failed)
            s->fig.calls++, s->fig.bytes += req;
    }
    int64_t live_delta = 0, blocks_delta = 0;
    xblock_t freed = { 0 }, replaced = { 0 };
    int temporary = 0;
    /* The block the call ends: free's, and realloc's unless it failed (realloc(p, 0) returning NULL
     * freed p). */
    const uint64_t ends = r->op == MT_OP_FREE ? r->ptr : resizes && (!failed || req == 0) ? r->ptr : 0;
    if (ends) {
        const int had = block_take(x, ends, &freed);
        if (had < 0)
            return had;
        if (had) {
            live_delta -= (int64_t)freed.size;
            blocks_delta--;
            temporary = r->op == MT_OP_FREE && freed.thread == ti && th->last_alloc == ends;
        }
        if (th->last_alloc == ends)
            th->last_alloc = 0;
    }
    if (allocates && !failed) {
        /* An address handed out again while its block is live: a free the trace does not hold
         * (export_apply looked: x->stale). */
        const int had = x->stale ? block_take(x, r->result, &replaced) : 0;
        if (had < 0)
            return had;
        if (had) {
            live_delta -= (int64_t)replaced.size;
            blocks_delta--;
        }
        const xblock_t b = { .seq = x->seq, .size = req, .time = r->time, .stack = stack, .thread = ti };
        if (block_put(x, r->result, &b) < 0)
            return -ENOMEM;
        live_delta += (int64_t)req;
        blocks_delta++;
        th->last_alloc = r->result;
    }
    row_t w = { .n = 0 };
    put_u64(&w, x->id);
    put_u64(&w, x->seq);
    put_u32(&w, mt_trace_thread(x->trace, ti)->thread);
    put_u64(&w, r->time);
    put_u8(&w, r->op);
    put_u8(&w, (uint8_t)r->flags);
    put_u64(&w, r->ptr);
    put_u64(&w, r->size);
    put_u64(&w, r->count);
    put_u64(&w, r->align);
    put_u64(&w, r->result);
    put_u64(&w, r->usable);
    put_u32(&w, stack);
    put_u64(&w, req);
    put_u64(&w, (uint64_t)live_delta);
    put_u8(&w, (uint8_t)(int8_t)blocks_delta);
    put_u64(&w, freed.seq);
    put_u64(&w, freed.size);
    put_u64(&w, freed.time);
    put_u32(&w, freed.stack);
    put_u8(&w, (uint8_t)temporary);
    put_u64(&w, replaced.seq);
    put_u64(&w, replaced.size);
    put_u32(&w, replaced.stack);
    row_flush(x->out[MT_EXPORT_RECORDS].f, &w);
    x->st.records++;
    return 0;
}

/* ---- events ----------------------------------------------------------------------------------- */

static int note_stack(exporter_t *x, const mt_record_t *r)
{
    mt_stack_def_t d;
    if (mt_decode_stack(r, &d) < 0 || d.id == 0 || d.id >= MAX_STACK_ID)
        return 0; /* a damaged payload costs that stack's frames, as in mtrace report */
    xstack_t *s = stack_slot(x, d.id);
    if (!s)
        return -ENOMEM;
    if (s->frames)
        return 0;
    s->frames = malloc(d.nframes * sizeof *s->frames + 1);
    if (!s->frames)
        return -ENOMEM;
    memcpy(s->frames, d.frames, d.nframes * sizeof *s->frames);
    s->nframes = d.nframes;
    return 0;
}

static int note_module(exporter_t *x, const mt_record_t *r)
{
    mt_module_def_t m;
    if (mt_decode_module(r, &m) < 0)
        return 0;
    uint64_t cap = x->capmodules;
    if (grow((void **)&x->modules, &cap, x->nmodules + 1, sizeof *x->modules) < 0)
        return -ENOMEM;
    x->capmodules = cap;
    char *name = strndup(m.name, m.name_len);
    if (!name)
        return -ENOMEM;
    m.name = name;
    x->modules[x->nmodules++] = m;
    return 0;
}

static void export_rss(exporter_t *x, const mt_record_t *r)
{
    const mt_file_header_t *h = mt_trace_header(x->trace);
    const uint64_t page_kb = h->page_size / 1024 ? h->page_size / 1024 : 4; /* as mtrace report */
    row_t w = { .n = 0 };
    put_u64(&w, x->id);
    put_u64(&w, x->seq);
    put_u64(&w, r->time);
    put_u64(&w, (uint64_t)r->arg[0] * page_kb);
    put_u64(&w, (uint64_t)r->arg[1] * page_kb);
    put_u64(&w, r->nargs >= 3 ? (uint64_t)r->arg[2] * page_kb : 0);
    put_u64(&w, r->nargs >= 4 ? (uint64_t)r->arg[3] : 0);
    row_flush(x->out[MT_EXPORT_RSS].f, &w);
    x->st.rss++;
}

static int export_record(exporter_t *x, uint32_t ti, const mt_record_t *r)
{
    if (r->op <= MT_OP_LAST_CALL)
        return export_call(x, ti, r);
    xthread_t *th = &x->th[ti];
    switch (r->op) {
    case MT_EV_RSS:
        if (r->nargs >= 2) {
            mt_trace_note_rss(x->trace, r);
            export_rss(x, r);
        }
        return 0;
    case MT_EV_STACK:
        return note_stack(x, r);
    case MT_EV_MODULE:
        return note_module(x, r);
    case MT_EV_THREAD_START:
        th->start_time = r->time;
        th->creator = r->nargs ? (uint32_t)r->arg[0] : 0;
        return 0;
    case MT_EV_THREAD_EXIT:
        th->exit_time = r->time;
        th->lost = r->nargs ? (uint64_t)r->arg[0] : 0;
        return 0;
    default:
        return 0;
    }
}

/* ---- the tables written at the end ----------------------------------------------------------- */

/* ---- the stacks: symbolized, and each one's callsite as mtrace report names it -------------- */

/* Every distinct return address symbolized once, and the stacks report weighs (those that allocated,
 * leaked or freed) as mt_callers_build takes them. */
typedef struct symbolized {
    mt_strset_t strings; /* compared by pointer, as mt_callers_build compares frames */
    mt_frame_in_t *frames;
    size_t nframes, capframes;
    uint32_t *frame_of; /* per stack id's frames, concatenated: index into frames */
    size_t *first;      /* per stack id: where its frames start in frame_of */
    mt_stack_in_t *in;
    uint32_t *in_id; /* the stack id of each entry of in */
    size_t nin;
    mt_callers_t callers;
} symbolized_t;

static int symbolize_frame(symbolized_t *y, mt_symbolizer_t *sym, mt_ptr_map_t *seen, uint64_t ra, uint32_t *out)
{
    const mt_ptr_entry_t *e = mt_ptr_map_find(seen, ra ? ra : 1); /* key 0 is the map's "empty" */
    if (e) {
        *out = (uint32_t)e->value;
        return 0;
    }
    mt_symbol_t s;
    mt_symbolize(sym, ra, &s);
    char buf[MT_SYMBOL_LABEL_MAX];
    const char *label = mt_symbol_label(&s, buf, sizeof buf);
    uint64_t cap = y->capframes;
    if (grow((void **)&y->frames, &cap, y->nframes + 1, sizeof *y->frames) < 0)
        return -ENOMEM;
    y->capframes = cap;
    mt_frame_in_t *f = &y->frames[y->nframes];
    f->allocator = mt_symbol_is_allocator_frame(&s);
    f->unnamed = !strcmp(s.function, "??");
    f->cut = !ra; /* a frame 0 ends a stack cut at the frame limit */
    f->sym = (mt_symbol_t){ mt_strset_get(&y->strings, label),
                            mt_strset_get(&y->strings, s.file),
                            s.line,
                            mt_strset_get(&y->strings, s.module),
                            s.offset,
                            s.start };
    if (!f->sym.function || !f->sym.module || (s.file && !f->sym.file))
        return -ENOMEM;
    *out = (uint32_t)y->nframes;
    return mt_ptr_map_put(seen, ra ? ra : 1, y->nframes++);
}

static int symbolize_all(exporter_t *x, symbolized_t *y, const char *exe, const mt_callers_opts_t *co, mt_error_t *err)
{
    mt_symbolizer_t *sym;
    if (mt_symbolizer_open(&sym, exe, err) < 0)
        return -1;
    for (size_t i = 0; i < x->nmodules; i++)
        mt_symbolizer_add_module(sym, &x->modules[i]);
    mt_ptr_map_t seen;
    int rc = mt_ptr_map_init(&seen);
    size_t total = 0;
    for (uint32_t id = 1; id < x->capstacks; id++)
        total += x->stacks[id].nframes;
    y->frame_of = malloc((total + 1) * sizeof *y->frame_of);
    y->first = calloc(x->capstacks + 1, sizeof *y->first);
    y->in = malloc((x->capstacks + 1) * sizeof *y->in);
    y->in_id = malloc((x->capstacks + 1) * sizeof *y->in_id);
    if (!y->frame_of || !y->first || !y->in || !y->in_id)
        rc = -ENOMEM;
    size_t used = 0;
    for (uint32_t id = 1; rc == 0 && id < x->capstacks; id++) {
        const xstack_t *s = &x->stacks[id];
        y->first[id] = used;
        for (uint32_t k = 0; rc == 0 && k < s->nframes; k++)
            rc = symbolize_frame(y, sym, &seen, s->frames[k], &y->frame_of[used + k]);
        used += s->nframes;
    }
    /* The frames array is complete only now: the stacks point into frame_of, which does not move. */
    for (uint32_t id = 1; rc == 0 && id < x->capstacks; id++) {
        const xstack_t *s = &x->stacks[id];
        if (!s->fig.calls && !s->fig.leaked_bytes && !s->others)
            continue;
        y->in_id[y->nin] = id;
        y->in[y->nin++] = (mt_stack_in_t){
            .frame = y->frame_of + y->first[id], .nframes = s->nframes, .fig = s->fig, .others = s->others
        };
    }
    if (rc == 0) {
        /* Built in a local, then stored: given &y->callers beside y->in, clang's analyzer (scripts/scan.sh)
         * forgets the arrays y holds and reports them leaked. */
        mt_callers_t callers;
        rc = mt_callers_build(&callers, y->frames, y->in, y->nin, co);
        y->callers = callers;
    }
    mt_ptr_map_fini(&seen);
    mt_symbolizer_close(sym);
    return rc;
}

static void symbolized_fini(symbolized_t *y)
{
    mt_callers_free(&y->callers);
    mt_strset_fini(&y->strings);
    free(y->frames);
    free(y->frame_of);
    free(y->first);
    free(y->in);
    free(y->in_id);
}

static void put_stack_row(exporter_t *x, const symbolized_t *y, uint32_t id, const mt_symbol_t *site,
                          uint64_t site_offset)
{
    FILE *f = x->out[MT_EXPORT_STACKS].f;
    const xstack_t *s = &x->stacks[id];
    const uint32_t *fr = y->frame_of + y->first[id];
    row_t w = { .n = 0 };
    put_u64(&w, x->id);
    put_u32(&w, id);
    put_len(&w, s->nframes);
    for (uint32_t k = 0; k < s->nframes; k++)
        put_u64(&w, s->frames[k]);
    row_flush(f, &w);
    put_len(&w, s->nframes);
    for (uint32_t k = 0; k < s->nframes; k++)
        put_cstr(f, &w, y->frames[fr[k]].sym.function);
    put_len(&w, s->nframes);
    for (uint32_t k = 0; k < s->nframes; k++)
        put_cstr(f, &w, y->frames[fr[k]].sym.file);
    put_len(&w, s->nframes);
    for (uint32_t k = 0; k < s->nframes; k++)
        put_u32(&w, y->frames[fr[k]].sym.line);
    put_len(&w, s->nframes);
    for (uint32_t k = 0; k < s->nframes; k++)
        put_cstr(f, &w, y->frames[fr[k]].sym.module);
    put_cstr(f, &w, site->function);
    put_cstr(f, &w, site->file);
    put_u32(&w, site->line);
    put_cstr(f, &w, site->module);
    put_u64(&w, site_offset);
    row_flush(f, &w);
    x->st.stacks++;
}

/* A stack's callsite is its allocating function after the allocation machinery and wrappers
 * (mt_callers_build, as mtrace report finds it with the same options), "??" with the module offset where it has no
 * symbol; a stack that made no block and freed none names none. */
static int export_stacks(exporter_t *x, const char *exe, const mt_export_opts_t *o, mt_error_t *err)
{
    if (!x->capstacks)
        return 0;
    for (uint64_t i = 0; i < x->live.cap; i++) { /* what each stack leaves live at the end */
        if (!x->live.v[i].key)
            continue;
        const xblock_t *b = &x->blk[x->live.v[i].value];
        if (b->stack) {
            x->stacks[b->stack].fig.leaked_blocks++;
            x->stacks[b->stack].fig.leaked_bytes += b->size;
        }
    }
    symbolized_t y = { 0 };
    const mt_callers_opts_t co = { o->skip, o->nskip, o->no_auto_skip };
    int rc = symbolize_all(x, &y, exe, &co, err);
    const mt_symbol_t none = { .function = "??", .module = "??" };
    for (size_t i = 0, k = 0; rc == 0 && i < x->capstacks; i++) {
        const uint32_t id = (uint32_t)i;
        if (!id || (!x->stacks[id].frames && !x->stacks[id].used))
            continue;
        while (k < y.nin && y.in_id[k] < id)
            k++;
        if (k == y.nin || y.in_id[k] != id) {
            put_stack_row(x, &y, id, &none, 0);
            continue;
        }
        const mt_stack_in_t *in = &y.in[k];
        const uint32_t leaf = y.callers.leaf[k];
        mt_symbol_t site = leaf < in->nframes ? y.frames[in->frame[leaf]].sym : none;
        const int unknown = leaf >= in->nframes || y.frames[in->frame[leaf]].unnamed;
        if (unknown)
            site.function = "??";
        put_stack_row(x, &y, id, &site, unknown ? site.offset : 0);
    }
    symbolized_fini(&y);
    return rc;
}

static void export_threads(exporter_t *x)
{
    for (uint32_t i = 0; i < x->nth; i++) {
        const xthread_t *th = &x->th[i];
        row_t w = { .n = 0 };
        put_u64(&w, x->id);
        put_u32(&w, mt_trace_thread(x->trace, i)->thread);
        put_u32(&w, mt_trace_thread(x->trace, i)->tid);
        put_u32(&w, th->creator);
        put_u64(&w, th->start_time);
        put_u64(&w, th->exit_time);
        put_u64(&w, th->lost);
        row_flush(x->out[MT_EXPORT_THREADS].f, &w);
        x->st.threads++;
    }
}

/* A header string with control bytes (the command line's NUL separators) made spaces. */
static void put_header_str(exporter_t *x, row_t *w, unsigned tag)
{
    size_t len = 0;
    const char *s = mt_trace_string(x->trace, tag, 0, &len);
    FILE *f = x->out[MT_EXPORT_TRACES].f;
    put_len(w, s ? len : 0);
    row_flush(f, w);
    for (size_t i = 0; s && i < len; i++)
        putc((unsigned char)s[i] < ' ' ? ' ' : s[i], f);
}

static void export_header(exporter_t *x, const char *stopped)
{
    const mt_file_header_t *h = mt_trace_header(x->trace);
    FILE *f = x->out[MT_EXPORT_TRACES].f;
    row_t w = { .n = 0 };
    put_u64(&w, x->id);
    put_cstr(f, &w, mt_trace_path(x->trace));
    put_header_str(x, &w, MT_STR_HOST);
    put_u32(&w, h->pid);
    put_u32(&w, h->ppid);
    put_header_str(x, &w, MT_STR_CMDLINE);
    put_header_str(x, &w, MT_STR_EXE);
    put_header_str(x, &w, MT_STR_ALLOCATOR);
    put_u32(&w, h->version);
    put_u32(&w, h->flags);
    put_u8(&w, (h->flags & MT_HDR_COMPLETE) != 0);
    put_u8(&w, (h->flags & MT_HDR_TRUNCATED) != 0);
    put_u8(&w, (h->flags & MT_HDR_STACKS) != 0);
    put_u64(&w, h->start_realtime_ns);
    put_u64(&w, h->start_time);
    const double rate = mt_trace_ticks_per_sec(x->trace);
    uint64_t bits;
    memcpy(&bits, &rate, sizeof bits);
    put_u64(&w, bits);
    put_u32(&w, h->page_size);
    put_u32(&w, x->nth);
    put_u64(&w, h->lost_calls);
    put_u64(&w, x->st.records);
    put_cstr(f, &w, stopped);
    row_flush(f, &w);
}

/* ---- the pass --------------------------------------------------------------------------------- */

uint64_t mt_export_trace_id(const mt_trace_t *t)
{
    const mt_file_header_t *h = mt_trace_header(t);
    uint64_t v = 1469598103934665603ull;
    const uint64_t fields[] = { h->pid, h->ppid, h->start_realtime_ns, h->start_time, h->start_mono_ns };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        for (unsigned b = 0; b < 64; b += 8) /* each field's bytes, little-endian */
            v = (v ^ (uint8_t)(fields[i] >> b)) * 1099511628211ull;
    size_t len = 0;
    const char *host = mt_trace_string(t, MT_STR_HOST, 0, &len);
    for (size_t i = 0; host && i < len; i++)
        v = (v ^ (uint8_t)host[i]) * 1099511628211ull;
    return v ? v : 1;
}

/* The threads' cursors at their first records. 0, 1 when one of them is damaged (err says where),
 * or -ENOMEM. */
/* The per-thread table, the merge heap and the live blocks' map: 0 or -ENOMEM. */
static int exporter_tables(exporter_t *x, mt_error_t *err)
{
    (void)err;
    x->nth = (uint32_t)mt_trace_thread_count(x->trace);
    x->th = calloc(x->nth + 1, sizeof *x->th);
    x->heap.v = calloc(x->nth + 1, sizeof *x->heap.v);
    x->key = calloc(x->nth + 1, sizeof *x->key);
    x->heap.key = x->key;
    return !x->th || !x->heap.v || !x->key || mt_ptr_map_init(&x->live) < 0 ? -ENOMEM : 0;
}

static int exporter_init(exporter_t *x, mt_error_t *err)
{
    if (exporter_tables(x, err) < 0)
        return -ENOMEM;
    for (uint32_t i = 0; i < x->nth; i++) {
        if (mt_thread_cursor_init(&x->th[i].cur, x->trace, i) < 0)
            return -ENOMEM;
        const int rc = mt_thread_cursor_next(&x->th[i].cur, &x->th[i].head, err);
        if (rc < 0)
            return 1; /* a thread's first record is damaged: no record is known to come before it */
        x->key[i] = x->th[i].head.time;
        if (rc)
            mt_merge_push(&x->heap, i);
    }
    return 0;
}

/* Exports a record in causal.h's order (mt_causal_apply_fn): a call that returns an address a
 * block still holds, or ends one no block holds while another thread waits, waits instead. seq
 * counts the records exported, in that order (mtrace report's). */
static int export_apply(void *ctx, uint32_t ti, const mt_record_t *r, unsigned flags)
{
    exporter_t *x = ctx;
    x->stale = 0;
    if (r->op <= MT_OP_LAST_CALL) {
        const uint64_t ends = mt_record_ends(r);
        if (mt_op_allocates(r->op) && !(r->flags & MT_FLAG_NULL) && r->result != ends &&
            mt_ptr_map_find(&x->live, r->result)) {
            if (!(flags & MT_CAUSAL_FORCE))
                return MT_CAUSAL_WAIT_LIVE;
            x->stale = 1;
        }
        if ((flags & MT_CAUSAL_OTHERS_WAIT) && !(flags & MT_CAUSAL_FORCE) && ends && !mt_ptr_map_find(&x->live, ends))
            return MT_CAUSAL_WAIT_UNKNOWN;
    }
    x->seq++;
    return export_record(x, ti, r);
}

/* The next merged record through causal.h, applied here when nothing waits. */
static inline int export_feed(exporter_t *x, mt_causal_t *cz, uint32_t ti, const mt_record_t *r)
{
    if (!mt_causal_direct(cz, ti, r))
        return mt_causal_feed(cz, ti, r);
    const int rc = export_apply(x, ti, r, mt_causal_direct_flags(cz));
    return rc > 0 ? mt_causal_applied(cz, ti, r, rc) : rc;
}

/* Merges the threads in time order, ties by thread index (mtrace report's order), through causal.h.
 * 0 at the end, 1 when a thread's records are damaged (err says where: every record before it was
 * exported), negative on failure. */
static int export_pass(exporter_t *x, mt_causal_t *cz, mt_error_t *err)
{
    while (x->heap.n) {
        const uint32_t i = mt_merge_pop(&x->heap);
        int rc = export_feed(x, cz, i, &x->th[i].head);
        if (rc < 0)
            return rc;
        /* The payload of the head points into the cursor's buffer, used (or copied) above before it
         * moves on. */
        rc = mt_thread_cursor_next(&x->th[i].cur, &x->th[i].head, err);
        if (rc < 0)
            return 1;
        x->key[i] = x->th[i].head.time;
        if (rc)
            mt_merge_push(&x->heap, i);
    }
    return 0;
}

/* export_pass with `jobs` threads (2 or more) reading: the ordered reader's batches, in the same order
 * and with the same damage as the serial merge. */
static int export_pass_jobs(exporter_t *x, mt_causal_t *cz, unsigned jobs, mt_error_t *err)
{
    mt_ordered_t *m;
    int rc = mt_ordered_open(&m, x->trace, jobs, err);
    if (rc < 0)
        return rc;
    const mt_record_t *rec;
    const uint32_t *thread;
    size_t n;
    int failed = 0; /* export_record's error */
    while (!failed && (rc = mt_ordered_batch(m, &rec, &thread, &n, err)) > 0)
        for (size_t k = 0; k < n && !failed; k++)
            failed = export_feed(x, cz, thread[k], &rec[k]);
    mt_ordered_close(m);
    return failed < 0 ? failed : rc < 0 ? 1 : 0; /* the reader's error: damage, err says where */
}

static int open_outputs(exporter_t *x, const char *dir, mt_error_t *err)
{
    for (int k = 0; k < MT_EXPORT_NTABLES; k++) {
        char *path = x->path[k]; /* mt_out_t keeps the target's path as given */
        if (snprintf(path, sizeof x->path[k], "%s/%s.rowbinary", dir, mt_export_table_names[k]) >=
            (int)sizeof x->path[k]) {
            snprintf(err->msg, sizeof err->msg, "%s: path too long", dir);
            return -ENAMETOOLONG;
        }
        const int rc = mt_out_open(&x->out[k], path, err);
        if (rc < 0)
            return rc;
        setvbuf(x->out[k].f, NULL, _IOFBF, 1 << 20);
    }
    return 0;
}

int mt_export_trace(const char *path, const mt_export_opts_t *o, mt_export_stats_t *st, mt_error_t *err)
{
    exporter_t x = { 0 };
    memset(st, 0, sizeof *st);
    int rc = mt_trace_open(&x.trace, path, err);
    if (rc < 0)
        return rc;
    x.id = o->trace_id ? o->trace_id : mt_export_trace_id(x.trace);
    x.st.trace_id = x.id;
    int made_dir = 0;
    if (mkdir(o->dir, 0777) == 0)
        made_dir = 1;
    else if (errno != EEXIST) {
        rc = -errno;
        snprintf(err->msg, sizeof err->msg, "%s: cannot make the directory: %s", o->dir, strerror(errno));
        exporter_fini(&x);
        return rc;
    }
    int damaged = 0;
    char stopped[sizeof err->msg] = "";
    mt_causal_t cz = { 0 };
    if ((rc = open_outputs(&x, o->dir, err)) == 0 &&
        (rc = mt_causal_init(&cz, (uint32_t)mt_trace_thread_count(x.trace), mt_causal_window(x.trace), export_apply,
                             &x)) < 0)
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", path);
    else if (rc == 0 && o->jobs > 1)
        rc = exporter_tables(&x, err) < 0 ? -ENOMEM : export_pass_jobs(&x, &cz, o->jobs, err);
    else if (rc == 0 && (rc = exporter_init(&x, err)) == 0)
        rc = export_pass(&x, &cz, err);
    /* at the end, or at damage: the records that waited go too (every record before it is exported) */
    if (rc >= 0 && cz.t && mt_causal_finish(&cz) < 0) {
        rc = -ENOMEM;
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", path);
    }
    mt_causal_fini(&cz);
    if (rc == 1) {
        damaged = 1;
        snprintf(stopped, sizeof stopped, "%s", err->msg);
        rc = 0;
    }
    /* A file cut short after it was written reads as a prefix without damage: its records are
     * exported, and it stops there as damage does (exit 1, where in the traces table). */
    mt_error_t cut;
    if (rc == 0 && !damaged && mt_trace_check_whole(x.trace, &cut) < 0) {
        damaged = 1;
        snprintf(stopped, sizeof stopped, "%s", cut.msg);
    }
    size_t len = 0;
    const char *exe = rc == 0 ? mt_trace_string(x.trace, MT_STR_EXE, 0, &len) : NULL;
    char exe_path[4096] = "";
    if (exe)
        snprintf(exe_path, sizeof exe_path, "%.*s", (int)len, exe);
    if (rc == 0)
        rc = export_stacks(&x, exe_path, o, err);
    if (rc == 0) {
        export_threads(&x);
        export_header(&x, stopped);
        int committed = 0;
        while (committed < MT_EXPORT_NTABLES && (rc = mt_out_commit(&x.out[committed], err)) == 0)
            committed++;
        while (rc < 0 && committed > 0) /* the tables in place go again: the set is whole or absent */
            unlink(x.out[--committed].path);
    }
    if (rc == -ENOMEM)
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", path);
    *st = x.st;
    exporter_fini(&x);
    if (rc < 0) {
        if (made_dir)
            rmdir(o->dir);
        return rc;
    }
    if (damaged)
        snprintf(err->msg, sizeof err->msg, "%s", stopped);
    return damaged;
}
