/* mtrace report: one pass over the trace in time order (threads merged with a heap), live blocks in
 * an address map; a second pass up to the moment of the peak when stacks are recorded, to tell each
 * callsite's share of it. The output is report_print.c's. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mtrace/callers.h"
#include "mtrace/flamegraph.h"
#include "mtrace/merge_heap.h"
#include "mtrace/ordered_reader.h"
#include "mtrace/ptr_map.h"
#include "mtrace/report.h"
#include "mtrace/suppress.h"
#include "mtrace/symbolize.h"
#include "mtrace/file_io.h"
#include "causal.h"
#include "live_set.h"
#include "strset.h"
#include "mtrace/vmap.h"

/* A live block, as the passes read it (live_set.h keeps them). */
typedef mt_live_block_t block_t;

typedef struct stack_stat {
    uint64_t calls, bytes, leaked_blocks, leaked_bytes, peak_bytes;
    uint64_t others;        /* records with this stack that made no block: frees, failed calls ... */
    uint64_t added, shrunk; /* bytes added (allocations, realloc growth) and given back by realloc */
    uint64_t *frames;       /* from its STACK event; NULL until seen */
    uint32_t nframes;
    uint8_t leak_quarters; /* bit q: a block of it still live at the end was made in quarter q of the run */
} stack_stat_t;

typedef struct rthread {
    mt_thread_cursor_t cur;
    mt_record_t head;
    int has_head;
    uint64_t last_alloc; /* for temporaries: the thread's latest allocation, 0 once freed or superseded */
    uint64_t last_time;  /* and its time: the block at that address is that one if its time is this */
} rthread_t;

typedef struct pass {
    mt_trace_t *trace;
    rthread_t *t;
    uint32_t n;
    mt_ordered_t *ordered;    /* with jobs > 1: the records in order from worker threads, t[].cur unused */
    const mt_record_t *batch; /* the ordered reader's records being used, batch_thread[k] the thread of batch[k] */
    const uint32_t *batch_thread;
    size_t batch_n, batch_pos;
    mt_merge_heap_t heap; /* threads by the time of their next record */
    uint64_t *key;
    mt_live_set_t live;
    uint64_t last_any; /* heaptrack's temporaries: the latest allocation of any thread, 0 after a free */
    mt_record_t rec;   /* the record pass_next hands out (jobs 1) */
    int damage;        /* jobs 1: the damage met after the record handed out, handed out next */
    mt_error_t damage_err;
    uint8_t **first_data; /* with many threads: each head's payload, kept while its cursor is rewound */
    uint8_t *payload;     /* a copy of the latest event's payload (see pass_next_serial) */
    size_t cap_payload;
} pass_t;

typedef struct priv {
    stack_stat_t *stacks;
    uint32_t nstacks; /* capacity, indexed by id */
    mt_module_def_t *modules;
    uint8_t **module_names; /* copies: module defs point into cursor buffers */
    size_t nmodules, cap_modules;
    char exe[4096];
    mt_strset_t strings;   /* interned callsite strings we own */
    mt_frame_in_t *frames; /* symbolized, distinct return addresses */
    size_t nframes;
    uint32_t *frame_ids;  /* the stacks' frames as indices into frames */
    mt_stack_in_t *input; /* the stacks with something to show, for the caller trees */
    uint32_t *input_id;   /* their stack ids */
    size_t ninput;
    mt_suppressions_t supp;
} priv_t;

static void pass_fini(pass_t *p)
{
    for (uint32_t i = 0; p->t && i < p->n; i++) {
        mt_thread_cursor_fini(&p->t[i].cur);
        if (p->first_data)
            free(p->first_data[i]);
    }
    free(p->first_data);
    free(p->t);
    free(p->heap.v);
    free(p->key);
    free(p->payload);
    mt_ordered_close(p->ordered);
    mt_live_fini(&p->live);
}

/* With many threads: thread i's first record is kept, its payload copied, and its cursor rewound
 * past it until its turn (MT_PARK_THREADS). 0, or -ENOMEM. */
static int park(pass_t *p, uint32_t i)
{
    rthread_t *th = &p->t[i];
    if (th->head.data && th->head.len) {
        if (!p->first_data && !(p->first_data = calloc(p->n, sizeof *p->first_data)))
            return -ENOMEM;
        if (!(p->first_data[i] = malloc(th->head.len)))
            return -ENOMEM;
        memcpy(p->first_data[i], th->head.data, th->head.len);
        th->head.data = p->first_data[i];
    }
    mt_thread_cursor_rewind(&th->cur, 1);
    return 0;
}

/* jobs: threads reading the trace, the caller's included (1: the caller alone). */
static int pass_init(pass_t *p, mt_trace_t *t, unsigned jobs, mt_error_t *err)
{
    memset(p, 0, sizeof *p);
    p->trace = t;
    p->n = (uint32_t)mt_trace_thread_count(t);
    p->t = calloc(p->n + 1, sizeof *p->t);
    p->heap.v = calloc(p->n + 1, sizeof *p->heap.v);
    p->key = calloc(p->n + 1, sizeof *p->key);
    p->heap.key = p->key;
    if (!p->t || !p->heap.v || !p->key || mt_live_init(&p->live) < 0)
        goto oom;
    if (jobs > 1)
        return mt_ordered_open(&p->ordered, t, jobs, err);
    for (uint32_t i = 0; i < p->n; i++) {
        if (mt_thread_cursor_init(&p->t[i].cur, t, i) < 0)
            goto oom;
        const int rc = mt_thread_cursor_next(&p->t[i].cur, &p->t[i].head, err);
        if (rc < 0)
            return rc;
        p->t[i].has_head = rc;
        p->key[i] = p->t[i].head.time;
        if (rc)
            mt_merge_push(&p->heap, i);
        if (!rc)
            mt_thread_cursor_fini(&p->t[i].cur);
        else if (p->n > MT_PARK_THREADS && park(p, i) < 0)
            goto oom;
    }
    return 0;
oom:
    snprintf(err->msg, sizeof err->msg, "%s: out of memory", mt_trace_path(t));
    return -ENOMEM;
}

/* pass_next with the caller's thread alone: the threads' cursors merged here. */
static int pass_next_serial(pass_t *p, uint32_t *thread, const mt_record_t **r, mt_error_t *err)
{
    if (p->damage < 0) { /* met reading past the record handed out last */
        *err = p->damage_err;
        return p->damage;
    }
    if (!p->heap.n)
        return 0;
    const uint32_t i = p->heap.v[0];
    *thread = i;
    mt_record_t *x = &p->rec;
    *x = p->t[i].head;
    *r = x;
    /* The payload of x points into the cursor's buffer, which the read below replaces when the
     * thread's next record is in another chunk: it is copied first (every event's: a VM event's
     * fifth field is read from it), and lives until the next call. */
    if (x->data && x->len) {
        if (x->len > p->cap_payload) {
            uint8_t *n = realloc(p->payload, x->len);
            if (!n)
                return -ENOMEM;
            p->payload = n;
            p->cap_payload = x->len;
        }
        memcpy(p->payload, x->data, x->len);
        x->data = p->payload;
    }
    const int rc = mt_thread_cursor_next(&p->t[i].cur, &p->t[i].head, &p->damage_err);
    if (rc < 0) { /* x came before the damage, in order: it is handed out, the damage next time */
        p->damage = rc;
        return 1;
    }
    p->t[i].has_head = rc;
    p->key[i] = p->t[i].head.time;
    if (rc) {
        mt_merge_top_changed(&p->heap);
    } else {
        mt_merge_pop(&p->heap);
        mt_thread_cursor_fini(&p->t[i].cur); /* its records are done: its buffer goes */
        if (p->first_data) {
            free(p->first_data[i]);
            p->first_data[i] = NULL;
        }
    }
    return 1;
}

/* The next record in time order, in *r until the next call: 1, 0 at the end, negative on damage. */
static inline int pass_next(pass_t *p, uint32_t *thread, const mt_record_t **r, mt_error_t *err)
{
    if (!p->ordered)
        return pass_next_serial(p, thread, r, err);
    if (p->batch_pos == p->batch_n) {
        const int rc = mt_ordered_batch(p->ordered, &p->batch, &p->batch_thread, &p->batch_n, err);
        if (rc <= 0)
            return rc;
        p->batch_pos = 0;
    }
    *thread = p->batch_thread[p->batch_pos];
    *r = &p->batch[p->batch_pos++];
    return 1;
}

/* Stack ids are numbered from 1 as stacks are met: a larger id than this is damage, not a stack. */
#define MAX_STACK_ID (MT_STACK_ID_MAX + 1)

static int block_add(pass_t *p, uint64_t ptr, const block_t *b)
{
    block_t x = *b;
    x.addr = ptr;
    return mt_live_add(&p->live, &x);
}

/* Removes the block at ptr; returns it in *out. 0 if it was not live. */
static int block_remove(pass_t *p, uint64_t ptr, block_t *out)
{
    return mt_live_remove(&p->live, ptr, out);
}

static unsigned log2_bucket(uint64_t v)
{
    const unsigned b = v ? (unsigned)(64 - __builtin_clzll(v)) : 0;
    return b < MT_HIST_BUCKETS ? b : MT_HIST_BUCKETS - 1; /* sizes of 2^63 and more share the last */
}

static uint64_t requested(const mt_record_t *r)
{
    return mt_requested(r->op, r->count, r->size);
}

/* Byte totals stop at UINT64_MAX instead of wrapping (only a damaged trace gets there). */
static uint64_t add_bytes(uint64_t a, uint64_t b)
{
    uint64_t sum;
    return __builtin_add_overflow(a, b, &sum) ? UINT64_MAX : sum;
}

static stack_stat_t *stack_at(priv_t *pv, uint32_t id)
{
    if (id >= MAX_STACK_ID)
        return NULL;
    if (id >= pv->nstacks) {
        uint32_t cap = pv->nstacks ? pv->nstacks : 1024;
        while (cap <= id)
            cap *= 2;
        stack_stat_t *n = realloc(pv->stacks, cap * sizeof *n);
        if (!n)
            return NULL;
        memset(n + pv->nstacks, 0, (cap - pv->nstacks) * sizeof *n);
        pv->stacks = n;
        pv->nstacks = cap;
    }
    return &pv->stacks[id];
}

static int add_point(mt_report_t *rep, size_t *cap, double t, uint64_t live, uint64_t rss_kb, uint64_t vm_kb)
{
    if (rep->nseries == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        struct mt_report_point *n = realloc(rep->series, *cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        rep->series = n;
    }
    rep->series[rep->nseries++] = (struct mt_report_point){ t, live, rss_kb, vm_kb };
    return 0;
}

/* Live bytes at the records' own times, for a trace with fewer than two RSS samples (a program that
 * ran briefly, or MTRACE_RSS_MS=0): a point every `step` calls, at most CALL_POINTS_MAX of them (when
 * full, every other point goes and the step doubles), then the last call's. */
#define CALL_POINTS_MAX 4096
typedef struct call_points {
    struct mt_report_point *v;
    size_t n;
    uint64_t step, count;
} call_points_t;

static inline __attribute__((always_inline)) int call_point(call_points_t *c, double t, uint64_t live)
{
    if (!c->v && !(c->v = malloc((CALL_POINTS_MAX + 1) * sizeof *c->v)))
        return -ENOMEM;
    if (!c->step)
        c->step = 1;
    const uint64_t k = c->count++;
    if (k % c->step)
        return 0;
    if (c->n == CALL_POINTS_MAX) {
        for (size_t i = 0; i < c->n / 2; i++)
            c->v[i] = c->v[2 * i];
        c->n /= 2;
        c->step *= 2;
        if (k % c->step)
            return 0;
    }
    c->v[c->n++] = (struct mt_report_point){ t, live, 0, 0 };
    return 0;
}

static int note_stack_event(priv_t *pv, const mt_record_t *r)
{
    mt_stack_def_t def;
    if (mt_decode_stack(r, &def) < 0)
        return 0; /* a damaged payload costs us that stack's names, nothing more */
    stack_stat_t *s = stack_at(pv, def.id);
    if (!s)
        return -ENOMEM;
    if (s->frames)
        return 0;
    s->frames = malloc(def.nframes * sizeof *s->frames + 1);
    if (!s->frames)
        return -ENOMEM;
    memcpy(s->frames, def.frames, def.nframes * sizeof *s->frames);
    s->nframes = def.nframes;
    return 0;
}

static int note_module_event(priv_t *pv, const mt_record_t *r)
{
    mt_module_def_t m;
    if (mt_decode_module(r, &m) < 0)
        return 0;
    if (pv->nmodules == pv->cap_modules) {
        const size_t cap = pv->cap_modules ? pv->cap_modules * 2 : 64;
        mt_module_def_t *nm = realloc(pv->modules, cap * sizeof *nm);
        uint8_t **nn = realloc(pv->module_names, cap * sizeof *nn);
        if (nm)
            pv->modules = nm;
        if (nn)
            pv->module_names = nn;
        if (!nm || !nn)
            return -ENOMEM;
        pv->cap_modules = cap;
    }
    uint8_t *name = malloc(m.name_len + 1);
    if (!name)
        return -ENOMEM;
    memcpy(name, m.name, m.name_len);
    name[m.name_len] = 0;
    m.name = (const char *)name;
    pv->module_names[pv->nmodules] = name;
    pv->modules[pv->nmodules++] = m;
    return 0;
}

/* ---- callsites ------------------------------------------------------------------------------- */

/* One copy per distinct string, so that callsites compare by pointer (s itself when out of memory). */
static const char *intern(priv_t *pv, const char *s)
{
    const char *c = mt_strset_get(&pv->strings, s);
    return c ? c : s;
}

static int cmp_callsite(const void *a, const void *b)
{
    const mt_callsite_t *x = a, *y = b;
    if (x->calls != y->calls)
        return x->calls > y->calls ? -1 : 1;
    return x->bytes > y->bytes ? -1 : x->bytes < y->bytes;
}

static uint64_t flame_weight(const stack_stat_t *s, const char *w)
{
    if (!w || !strcmp(w, "bytes"))
        return s->bytes;
    if (!strcmp(w, "calls"))
        return s->calls;
    if (!strcmp(w, "leaked"))
        return s->leaked_bytes;
    return s->peak_bytes;
}

/* A writer's own failure (out of memory, bad arguments); a failed write is left to mt_out_commit,
 * which names its reason. */
static int writer_failed(const mt_out_t *out, int wrc, mt_error_t *err)
{
    if (wrc >= 0 || ferror(out->f))
        return 0;
    snprintf(err->msg, sizeof err->msg, "%s: cannot write: %s", out->path, strerror(-wrc));
    return wrc;
}

/* Every distinct return address of the stacks with something to show becomes one frame (strings
 * interned by the report, so frames compare by pointer and outlive the symbolizer); each such stack
 * becomes a list of frame indices. */
static int symbolize_stacks(priv_t *pv, mt_error_t *err)
{
    mt_symbolizer_t *sym;
    if (mt_symbolizer_open(&sym, pv->exe, err) < 0)
        return -1;
    for (size_t i = 0; i < pv->nmodules; i++)
        mt_symbolizer_add_module(sym, &pv->modules[i]);
    mt_ptr_map_t seen;
    int rc = mt_ptr_map_init(&seen);
    size_t cap_frames = 0, cap_stacks = 0, total = 0;
    for (uint32_t id = 1; id < pv->nstacks; id++)
        total += pv->stacks[id].nframes;
    pv->frame_ids = malloc((total + 1) * sizeof *pv->frame_ids);
    if (!pv->frame_ids)
        rc = -ENOMEM;
    size_t used = 0;
    for (uint32_t id = 1; id < pv->nstacks && rc == 0; id++) {
        const stack_stat_t *s = &pv->stacks[id];
        if (!s->calls && !s->leaked_bytes && !s->others)
            continue;
        uint32_t *ids = pv->frame_ids + used;
        for (uint32_t k = 0; k < s->nframes && rc == 0; k++) {
            const uint64_t ra = s->frames[k] ? s->frames[k] : 1; /* the map's key 0 is "empty" */
            mt_ptr_entry_t *e = mt_ptr_map_find(&seen, ra);
            if (e) {
                ids[k] = (uint32_t)e->value;
                continue;
            }
            mt_symbol_t y = { .function = MT_TRUNCATED_FRAME, .module = MT_TRUNCATED_FRAME };
            char buf[MT_SYMBOL_LABEL_MAX];
            if (s->frames[k]) /* a frame 0 ends a stack cut at the frame limit */
                mt_symbolize(sym, s->frames[k], &y);
            const char *label = mt_symbol_label(&y, buf, sizeof buf);
            if (pv->nframes == cap_frames) {
                cap_frames = cap_frames ? cap_frames * 2 : 1024;
                mt_frame_in_t *n = realloc(pv->frames, cap_frames * sizeof *n);
                if (!n) {
                    rc = -ENOMEM;
                    break;
                }
                pv->frames = n;
            }
            mt_frame_in_t *f = &pv->frames[pv->nframes];
            f->allocator = mt_symbol_is_allocator_frame(&y);
            f->unnamed = !strcmp(y.function, "??");
            f->cut = !s->frames[k];
            f->sym =
                (mt_symbol_t){ intern(pv, label), intern(pv, y.file), y.line, intern(pv, y.module), y.offset, y.start };
            if (!f->sym.function || !f->sym.module || (y.file && !f->sym.file))
                rc = -ENOMEM;
            ids[k] = (uint32_t)pv->nframes;
            if (rc == 0)
                rc = mt_ptr_map_put(&seen, ra, pv->nframes++);
        }
        if (rc == 0 && pv->ninput == cap_stacks) {
            cap_stacks = cap_stacks ? cap_stacks * 2 : 1024;
            mt_stack_in_t *n = realloc(pv->input, cap_stacks * sizeof *n);
            uint32_t *m = realloc(pv->input_id, cap_stacks * sizeof *m);
            if (n)
                pv->input = n;
            if (m)
                pv->input_id = m;
            if (!n || !m)
                rc = -ENOMEM;
        }
        if (rc < 0)
            break;
        pv->input_id[pv->ninput] = id;
        pv->input[pv->ninput++] = (mt_stack_in_t){
            .frame = ids,
            .nframes = s->nframes,
            .others = s->others,
            .fig = { s->calls, s->bytes, s->peak_bytes, s->leaked_blocks, s->leaked_bytes },
        };
        used += s->nframes;
    }
    mt_ptr_map_fini(&seen);
    mt_symbolizer_close(sym);
    if (rc == -ENOMEM)
        snprintf(err->msg, sizeof err->msg, "symbolizer: out of memory");
    return rc;
}

static int collect_leaks(mt_report_t *rep, priv_t *pv)
{
    uint8_t *quarters = malloc(pv->ninput + 1);
    if (!quarters)
        return -ENOMEM;
    for (size_t i = 0; i < pv->ninput; i++)
        quarters[i] = pv->stacks[pv->input_id[i]].leak_quarters;
    /* A trace that ended at an exec ended as the program chose, as at an exit: its blocks went with
     * the image it replaced, and their kinds are read as an exit's. */
    const int rc = mt_leaks_collect(&rep->leaks, pv->frames, pv->input, quarters, pv->ninput, &pv->supp,
                                    rep->complete || rep->ended_at_exec);
    free(quarters);
    return rc;
}

/* The files resolve_callsites writes, and the folded stacks that two of them draw. */
enum { OUT_FOLDED, OUT_FLAME, OUT_CSV, NOUT };
typedef struct site_outputs {
    const char *path[NOUT];
    mt_out_t out[NOUT];
    mt_folded_t *fl;
    size_t nfl;
} site_outputs_t;

/* Opens the outputs asked for, in order, up to the first that cannot be made (its reason in err). */
static int site_outputs_open(site_outputs_t *so, mt_error_t *err)
{
    int rc = 0;
    for (int k = 0; k < NOUT && rc == 0; k++)
        if (so->path[k])
            rc = mt_out_open(&so->out[k], so->path[k], err);
    return rc;
}

static void free_folded(mt_folded_t *fl, size_t n)
{
    for (size_t k = 0; k < n; k++)
        free((void *)fl[k].frames);
    free(fl);
}

/* Renames the outputs into place, in order, while rc is 0; removes those not renamed, and when one
 * cannot be renamed those renamed before it (none of a half-done set stays); frees the folded
 * stacks. Returns rc, or the first rename's failure. */
static int site_outputs_close(site_outputs_t *so, int rc, mt_error_t *err)
{
    int done = 0; /* outputs renamed, and the one whose rename failed */
    for (; done < NOUT && rc == 0; done++)
        if (so->path[done])
            rc = mt_out_commit(&so->out[done], err);
    for (int j = 0; rc < 0 && j < done - 1; j++)
        if (so->path[j])
            unlink(so->path[j]);
    for (int k = 0; k < NOUT; k++)
        mt_out_abort(&so->out[k]);
    free_folded(so->fl, so->nfl);
    return rc;
}

/* Appends stack si to the folded stacks, its functions outermost first, weighed as `weight` says. */
static int add_folded(const mt_report_t *rep, const priv_t *pv, size_t si, const char *weight, site_outputs_t *so)
{
    const mt_stack_in_t *in = &pv->input[si];
    const stack_stat_t *s = &pv->stacks[pv->input_id[si]];
    /* From main or the thread's start routine, as the top-down tree: the C runtime's frames above
     * them would root every flame graph at _start */
    const uint32_t nshown =
        rep->callers.top && rep->callers.top[si] < s->nframes ? rep->callers.top[si] + 1 : s->nframes;
    const char **names = calloc(nshown + 1, sizeof *names);
    if (!names) /* a flame graph without this stack would pass for the whole one */
        return -ENOMEM;
    for (uint32_t k = 0; k < nshown; k++)
        names[nshown - 1 - k] = pv->frames[in->frame[k]].sym.function;
    mt_folded_t *g = realloc(so->fl, (so->nfl + 1) * sizeof *g);
    if (!g) {
        free(names);
        return -ENOMEM;
    }
    so->fl = g;
    so->fl[so->nfl++] = (mt_folded_t){ .frames = names, .nframes = nshown, .weight = flame_weight(s, weight) };
    return 0;
}

/* The report's callsite with these fields, or NULL. */
static mt_callsite_t *find_callsite(mt_report_t *rep, const char *fn, const char *file, uint32_t line, const char *mod,
                                    uint64_t off)
{
    for (size_t k = 0; k < rep->ncallsites; k++) {
        mt_callsite_t *x = &rep->callsites[k];
        if (x->function == fn && x->file == file && x->line == line && x->module == mod && x->offset == off)
            return x;
    }
    return NULL;
}

/* Room for one more callsite at the end of the report's (*cap: what its array holds): the new one,
 * not yet filled in, or NULL when out of memory. */
static mt_callsite_t *new_callsite(mt_report_t *rep, size_t *cap)
{
    if (rep->ncallsites == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        mt_callsite_t *n = realloc(rep->callsites, *cap * sizeof *n);
        if (!n)
            return NULL;
        rep->callsites = n;
    }
    return &rep->callsites[rep->ncallsites++];
}

/* Adds stack si's figures to the callsite of its leaf (the frame mt_callers_build chose), which is
 * made the first time it is met. */
static int add_to_callsite(mt_report_t *rep, priv_t *pv, size_t si, size_t *cap)
{
    const mt_stack_in_t *in = &pv->input[si];
    const stack_stat_t *s = &pv->stacks[pv->input_id[si]];
    const uint32_t leaf = rep->callers.leaf[si];
    const mt_symbol_t none = { .function = "??", .module = "??" };
    const mt_symbol_t site = leaf < in->nframes ? pv->frames[in->frame[leaf]].sym : none;
    /* Without a symbol the function is "??" and the return address in its module tells sites
     * apart (and symbolizes later). */
    const int unknown = leaf >= in->nframes || pv->frames[in->frame[leaf]].unnamed;
    const char *fn = unknown ? intern(pv, "??") : site.function;
    const uint64_t off = unknown ? site.offset : 0;
    mt_callsite_t *c = find_callsite(rep, fn, site.file, site.line, site.module, off);
    if (!c) {
        if (!(c = new_callsite(rep, cap)))
            return -ENOMEM;
        *c = (mt_callsite_t){
            .function = fn, .file = site.file, .module = site.module, .line = site.line, .offset = off
        };
    }
    c->calls += s->calls;
    c->bytes += s->bytes;
    c->leaked_blocks += s->leaked_blocks;
    c->leaked_bytes += s->leaked_bytes;
    c->peak_bytes += s->peak_bytes;
    c->added += s->added;
    c->shrunk += s->shrunk;
    return 0;
}

/* Every stack with calls or leaks: into its callsite, and into the folded stacks when the folded
 * stacks or the flame graph is asked for. */
static int add_callsites(mt_report_t *rep, priv_t *pv, const mt_report_opts_t *o, site_outputs_t *so)
{
    const int want_flame = o && (o->folded || o->flamegraph || o->keep_folded);
    size_t cap = 0;
    for (size_t si = 0; si < pv->ninput; si++) {
        const stack_stat_t *s = &pv->stacks[pv->input_id[si]];
        if (!s->calls && !s->leaked_bytes)
            continue;
        int rc = want_flame ? add_folded(rep, pv, si, o->flame_weight, so) : 0;
        if (rc == 0)
            rc = add_to_callsite(rep, pv, si, &cap);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The callsites as CSV, one a line under a header line. */
static void write_callsites_csv(FILE *f, const mt_report_t *rep)
{
    fprintf(f, MT_CALLSITE_CSV_HEADER "\n");
    for (size_t k = 0; k < rep->ncallsites; k++) {
        mt_callsite_csv_fields(f, &rep->callsites[k]);
        fputc('\n', f);
    }
}

/* Writes the folded stacks, the flame graph and the callsites' CSV, those asked for. */
static int write_site_outputs(const mt_report_t *rep, const mt_report_opts_t *o, site_outputs_t *so, mt_error_t *err)
{
    int rc = 0;
    if (so->out[OUT_FOLDED].f)
        rc = writer_failed(&so->out[OUT_FOLDED], mt_folded_write(so->out[OUT_FOLDED].f, so->fl, so->nfl), err);
    if (rc == 0 && so->out[OUT_FLAME].f) {
        const char *weight = o->flame_weight ? o->flame_weight : "bytes";
        char title[700];
        snprintf(title, sizeof title, "mtrace: %s (%s)", rep->command, weight);
        rc = writer_failed(&so->out[OUT_FLAME], mt_flamegraph_svg(so->out[OUT_FLAME].f, title, weight, so->fl, so->nfl),
                           err);
    }
    if (rc == 0 && so->out[OUT_CSV].f)
        write_callsites_csv(so->out[OUT_CSV].f, rep);
    return rc;
}

static int resolve_callsites(mt_report_t *rep, priv_t *pv, const mt_report_opts_t *o, mt_error_t *err)
{
    int rc = symbolize_stacks(pv, err);
    if (rc < 0)
        return rc;
    const mt_callers_opts_t co = { o ? o->skip : NULL, o ? o->nskip : 0, o ? o->no_auto_skip : 0 };
    if ((rc = mt_callers_build(&rep->callers, pv->frames, pv->input, pv->ninput, &co)) < 0) {
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", rep->path);
        return rc;
    }
    /* The outputs are made before the work (a name that cannot be written fails at once) and are
     * renamed into place together at the end: a failure leaves none of them, never a partial one. */
    site_outputs_t so = { .path = { o ? o->folded : NULL, o ? o->flamegraph : NULL, o ? o->callsites_csv : NULL } };
    rc = site_outputs_open(&so, err);
    if (rc == 0)
        rc = add_callsites(rep, pv, o, &so);
    if (rep->ncallsites)
        qsort(rep->callsites, rep->ncallsites, sizeof *rep->callsites, cmp_callsite);
    if (rc == 0)
        rc = collect_leaks(rep, pv);
    if (rc == -ENOMEM)
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", rep->path);
    if (rc == 0)
        rc = write_site_outputs(rep, o, &so, err);
    if (rc == 0 && o && o->keep_folded) { /* the report's now, freed with it */
        rep->folded = so.fl;
        rep->nfolded = so.nfl;
        so.fl = NULL;
        so.nfl = 0;
    }
    return site_outputs_close(&so, rc, err);
}

/* ---- the passes ---------------------------------------------------------------------------------- */

/* The program's own memory: a VM event applied to its mappings. */
static int note_vm_event(struct mt_report_own *own, mt_vmap_t *v, mt_vmap_cut_t **cuts, size_t *cap,
                         const mt_record_t *r)
{
    if (r->nargs < 4 || !r->arg[2] || (uint64_t)r->arg[1] + (uint64_t)r->arg[2] < (uint64_t)r->arg[1])
        return 0;
    const uint64_t a = (uint64_t)r->arg[1], len = (uint64_t)r->arg[2];
    uint64_t fifth = 0;
    const int has_fifth = mt_vmap_event_fifth(r, &fifth);
    size_t ncuts;
    int rc = 0;
    if (r->arg[0] == MT_VM_ADVISE) {
        if ((rc = mt_vmap_parts(v, a, a + len, cuts, &ncuts, cap)) == 0 && ncuts)
            own->advises++;
    } else if (r->arg[0] == MT_VM_MAP || r->arg[0] == MT_VM_UNMAP) {
        rc = mt_vmap_cut(v, a, a + len, cuts, &ncuts, cap);
        for (size_t k = 0; k < ncuts && rc == 0; k++)
            if (!v->map[(*cuts)[k].map].left)
                mt_vmap_release(v, (*cuts)[k].map);
        const int brk = has_fifth && fifth == MT_VM_VIA_BRK;
        if (rc == 0 && r->arg[0] == MT_VM_MAP && (rc = (int)mt_vmap_add(v, a, len, 0, 0, 0, brk)) >= 0) {
            rc = 0;
            own->brk_maps += brk;
        }
    }
    own->maps = v->made;
    own->peak_mapped = v->peak_mapped;
    own->peak_brk = v->peak_brk;
    return rc < 0 ? rc : 0;
}

/* An RSS sample: the program's anonymous memory (resident less file-backed), and at its peak how
 * much of it the program's own mappings and malloc's live blocks could be. */
static void note_anon_sample(struct mt_report_own *own, const mt_vmap_t *v, const mt_record_t *r, uint64_t page_kb,
                             uint64_t live_bytes)
{
    if (r->nargs < 3 || r->arg[1] < r->arg[2])
        return;
    const uint64_t anon_kb = (uint64_t)(r->arg[1] - r->arg[2]) * page_kb;
    if (!own->anon_peak_kb)
        own->anon_start_kb = anon_kb;
    if (anon_kb <= own->anon_peak_kb)
        return;
    own->anon_peak_kb = anon_kb;
    own->mapped_at_anon_peak = v->mapped;
    own->live_at_anon_peak = live_bytes;
}

/* The trace's time unit as the pass knows it so far: the rate changes only when an RSS sample is
 * noted (clock_update after each), and finding it once per record cost 4 % of the pass. */
typedef struct trace_clock {
    uint64_t t0;
    double rate; /* mt_trace_ticks_per_sec */
} trace_clock_t;

static void clock_update(trace_clock_t *c, const mt_trace_t *t)
{
    c->t0 = mt_trace_header(t)->start_time;
    c->rate = mt_trace_ticks_per_sec(t);
}

static uint64_t lifetime_ns(const trace_clock_t *c, uint64_t from, uint64_t to)
{
    return to > from ? mt_ticks_ns(to - from, c->rate) : 0;
}

static double seconds(const trace_clock_t *c, uint64_t time)
{
    return time > c->t0 ? mt_ticks_seconds(time - c->t0, c->rate) : 0;
}

/* What the first pass keeps beside the report: the times, the step of the peak, the call points
 * (for a trace too short for an RSS curve) and the program's own mappings. */
typedef struct build {
    mt_report_t *rep;
    priv_t *pv;
    pass_t p;
    mt_trace_t *trace;
    trace_clock_t clk;
    uint64_t applied;   /* records applied so far, in causal.h's order */
    uint64_t peak_step; /* records applied when the peak was reached */
    uint64_t first_time, last_time;
    unsigned last_op; /* of the latest record */
    size_t series_cap;
    call_points_t cpoints;
    uint64_t page_kb;
    mt_vmap_t own; /* the program's own mappings */
    mt_vmap_cut_t *own_cuts;
    size_t own_cap;
} build_t;

/* Opens the trace and fills what its header says: the state, the command, the threads, the
 * suppressions (read first: a file that cannot be used fails before the long pass). */
static int report_open(mt_report_t *rep, priv_t *pv, const char *path, const mt_report_opts_t *o, mt_trace_t **tp,
                       mt_error_t *err)
{
    mt_trace_t *t;
    int rc = mt_trace_open(&t, path, err);
    if (rc < 0)
        return rc;
    /* A report of a trace cut short would pass part of the run off as all of it. */
    if ((rc = mt_trace_check_whole(t, err)) < 0) {
        mt_trace_close(t);
        return rc;
    }
    const mt_file_header_t *h = mt_trace_header(t);
    rep->truncated = (h->flags & MT_HDR_TRUNCATED) != 0;
    rep->complete = (h->flags & MT_HDR_COMPLETE) != 0;
    rep->has_stacks = (h->flags & MT_HDR_STACKS) != 0;
    rep->pid = h->pid;
    rep->tree_depth = o && o->tree_depth ? o->tree_depth : MT_TREE_DEPTH;
    rep->temporary_rule = o ? o->temporary_rule : MT_TEMP_THREAD;
    if (o && o->suppress && (rc = mt_suppressions_load(&pv->supp, o->suppress, err)) < 0) {
        mt_trace_close(t);
        return rc;
    }
    rep->leaks.suppress_file = o ? o->suppress : NULL;
    size_t len;
    const char *s = mt_trace_string(t, MT_STR_CMDLINE, 0, &len);
    /* Arguments joined by spaces, on one line: a script given with -c may hold newlines. */
    for (size_t i = 0; s && i < len && i + 1 < sizeof rep->command; i++)
        rep->command[i] = (unsigned char)s[i] < ' ' ? ' ' : s[i];
    s = mt_trace_string(t, MT_STR_EXE, 0, &len);
    if (s)
        snprintf(pv->exe, sizeof pv->exe, "%.*s", (int)len, s);
    rep->threads = (uint32_t)mt_trace_thread_count(t);
    rep->thread = calloc(rep->threads + 1, sizeof *rep->thread);
    if (!rep->thread) {
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", path);
        mt_trace_close(t);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < rep->threads; i++) {
        rep->thread[i].thread = mt_trace_thread(t, i)->thread;
        rep->thread[i].tid = mt_trace_thread(t, i)->tid;
        rep->thread[i].start_s = -1;
    }
    *tp = t;
    return 0;
}

/* A call of thread ti in the first pass: the counts, the block it ended, the block it made, the
 * live peak; `stale`: a block lives at the address it returns (first_apply looked). 0, or -ENOMEM. */
static inline __attribute__((always_inline)) int count_call(build_t *bs, uint32_t ti, const mt_record_t *r, int stale)
{
    mt_report_t *rep = bs->rep;
    pass_t *p = &bs->p;
    struct mt_report_thread *th = &rep->thread[ti];
    if (r->time < bs->first_time)
        bs->first_time = r->time;
    if (r->time > bs->last_time)
        bs->last_time = r->time;
    th->calls++;
    if (th->start_s < 0)
        th->start_s = seconds(&bs->clk, r->time);
    th->end_s = seconds(&bs->clk, r->time);
    rep->calls[r->op]++;
    stack_stat_t *st = (r->flags & MT_FLAG_STACK) ? stack_at(bs->pv, r->stack) : NULL;
    if (st && r->op == MT_OP_FREE)
        st->others++;
    const int nul = (r->flags & MT_FLAG_NULL) != 0;
    uint64_t freed_ptr = 0;
    if (r->op == MT_OP_FREE)
        freed_ptr = r->ptr;
    else if ((r->op == MT_OP_REALLOC || r->op == MT_OP_REALLOCARRAY) && r->ptr && (!nul || requested(r) == 0))
        freed_ptr = r->ptr;
    uint64_t old_size = 0; /* of the block a realloc resized */
    if (freed_ptr) {
        block_t b;
        const int had = block_remove(p, freed_ptr, &b);
        if (had < 0)
            return -ENOMEM;
        if (!had) {
            rep->unknown_frees++;
        } else {
            old_size = b.size;
            rep->life_hist[log2_bucket(lifetime_ns(&bs->clk, b.time, r->time))]++;
            if (r->op == MT_OP_FREE)
                th->frees++;
            const int temp =
                rep->temporary_rule == MT_TEMP_HEAPTRACK
                    ? p->last_any == freed_ptr
                    : r->op == MT_OP_FREE && p->t[ti].last_alloc == freed_ptr && p->t[ti].last_time == b.time;
            if (temp) {
                rep->temporary++;
                rep->temporary_bytes += b.size;
                th->temporary++;
            }
            p->last_any = 0;
        }
        if (p->t[ti].last_alloc == freed_ptr)
            p->t[ti].last_alloc = 0;
    }
    if (!mt_op_allocates(r->op))
        return 0;
    const uint64_t req = requested(r);
    if (nul) {
        rep->failures[r->op] += mt_call_failed(r->op, r->flags, req);
        return 0;
    }
    /* Bytes requested: by the calls that returned a block. A failed call got nothing, and its size
     * (malloc(SIZE_MAX), calloc(SIZE_MAX / 2, 4)) would swamp, or wrap, the total. */
    rep->bytes[r->op] = add_bytes(rep->bytes[r->op], req);
    th->bytes = add_bytes(th->bytes, req);
    rep->allocations++;
    th->allocations++;
    rep->size_hist[log2_bucket(req)]++;
    uint64_t grown = req, shrunk = 0;
    if (r->op == MT_OP_REALLOC || r->op == MT_OP_REALLOCARRAY) {
        grown = req > old_size ? req - old_size : 0;
        shrunk = old_size > req ? old_size - req : 0;
        rep->realloc_growth = add_bytes(rep->realloc_growth, grown);
        rep->realloc_shrink = add_bytes(rep->realloc_shrink, shrunk);
    }
    if (st) {
        st->calls++;
        st->bytes += req;
        st->added = add_bytes(st->added, grown);
        st->shrunk = add_bytes(st->shrunk, shrunk);
    }
    block_t old;
    if (stale && block_remove(p, r->result, &old) < 0) /* given again while we think it live: forced */
        return -ENOMEM;
    const block_t b = { .size = req, .time = r->time, .stack = st ? r->stack : 0 };
    if (block_add(p, r->result, &b) < 0)
        return -ENOMEM;
    p->t[ti].last_alloc = r->result;
    p->t[ti].last_time = r->time;
    p->last_any = r->result;
    if (p->live.bytes > rep->peak_live_bytes) {
        rep->peak_live_bytes = p->live.bytes;
        rep->peak_live_blocks = p->live.n;
        rep->peak_time_s = seconds(&bs->clk, r->time);
        bs->peak_step = bs->applied;
    }
    return 0;
}

/* Whether call r of a pass must wait (causal.h): MT_CAUSAL_WAIT_LIVE when it returns an address a
 * block still holds (not the one it ends itself), MT_CAUSAL_WAIT_UNKNOWN when it ends one no block
 * holds while another thread waits; 0 when it is applied, *stale then 1 if it returns a live address
 * (forced). The first test is the one probe of the map that applying an allocation needs anyway. */
static inline __attribute__((always_inline)) int call_waits(const pass_t *p, const mt_record_t *r, unsigned flags,
                                                            int *stale)
{
    *stale = 0;
    if (r->op > MT_OP_LAST_CALL)
        return 0;
    if (mt_op_allocates(r->op) && !(r->flags & MT_FLAG_NULL) && mt_live_has(&p->live, r->result) &&
        r->result != mt_record_ends(r)) {
        if (!(flags & MT_CAUSAL_FORCE))
            return MT_CAUSAL_WAIT_LIVE;
        *stale = 1;
    }
    if (__builtin_expect((flags & (MT_CAUSAL_OTHERS_WAIT | MT_CAUSAL_FORCE)) == MT_CAUSAL_OTHERS_WAIT, 0)) {
        const uint64_t ends = mt_record_ends(r);
        if (ends && !mt_live_has(&p->live, ends))
            return MT_CAUSAL_WAIT_UNKNOWN;
    }
    return 0;
}

/* Applies one record of the first pass (mt_causal_apply_fn): the events (RSS samples, the program's
 * mappings, stacks, modules) and the calls, or says what the call waits for (call_waits). */
static inline __attribute__((always_inline)) int first_apply(void *ctx, uint32_t ti, const mt_record_t *r,
                                                             unsigned flags)
{
    build_t *bs = ctx;
    mt_report_t *rep = bs->rep;
    int stale;
    int rc = call_waits(&bs->p, r, flags, &stale);
    if (rc)
        return rc;
    bs->applied++;
    bs->last_op = r->op;
    if (r->op == MT_EV_RSS && r->nargs >= 2) {
        mt_trace_note_rss(bs->trace, r);
        clock_update(&bs->clk, bs->trace);
        if ((rc = add_point(rep, &bs->series_cap, seconds(&bs->clk, r->time), bs->p.live.bytes,
                            (uint64_t)r->arg[1] * bs->page_kb, (uint64_t)r->arg[0] * bs->page_kb)) < 0)
            return rc;
        note_anon_sample(&rep->own, &bs->own, r, bs->page_kb, bs->p.live.bytes);
    }
    if (r->op == MT_EV_VM && (rc = note_vm_event(&rep->own, &bs->own, &bs->own_cuts, &bs->own_cap, r)) < 0)
        return rc;
    if (r->op <= MT_OP_LAST_CALL && (rc = call_point(&bs->cpoints, seconds(&bs->clk, r->time), bs->p.live.bytes)) < 0)
        return rc;
    if (r->op == MT_EV_STACK && (rc = note_stack_event(bs->pv, r)) < 0)
        return rc;
    if (r->op == MT_EV_MODULE && (rc = note_module_event(bs->pv, r)) < 0)
        return rc;
    if (r->op <= MT_OP_LAST_CALL && (rc = count_call(bs, ti, r, stale)) < 0)
        return rc;
    return 0;
}

/* The first pass over every record, in time order as causal.h applies it. rc of the pass. */
static int first_pass(build_t *bs, mt_trace_t *t, mt_error_t *err)
{
    mt_report_t *rep = bs->rep;
    uint32_t ti;
    const mt_record_t *r;
    mt_causal_t cz;
    bs->trace = t;
    int rc = mt_causal_init(&cz, bs->p.n, mt_causal_window(t), first_apply, bs);
    while (rc == 0 && (rc = pass_next(&bs->p, &ti, &r, err)) > 0) {
        if (!mt_causal_direct(&cz, ti, r))
            rc = mt_causal_feed(&cz, ti, r);
        else if ((rc = first_apply(bs, ti, r, mt_causal_direct_flags(&cz))) > 0)
            rc = mt_causal_applied(&cz, ti, r, rc);
    }
    if (rc == 0)
        rc = mt_causal_finish(&cz);
    mt_causal_fini(&cz);
    /* Fewer than two RSS samples draw no curve: the live bytes at the records' times instead, up to
     * the last call's. */
    if (rc >= 0 && rep->nseries < 2 && bs->cpoints.n) {
        bs->cpoints.v[bs->cpoints.n++] =
            (struct mt_report_point){ seconds(&bs->clk, bs->last_time), bs->p.live.bytes, 0, 0 };
        free(rep->series);
        rep->series = bs->cpoints.v;
        rep->nseries = bs->cpoints.n;
        bs->cpoints.v = NULL;
    }
    return rc;
}

/* Leaks: what is live at the end of the trace, in total and per stack. */
static void count_leaks(build_t *bs)
{
    mt_report_t *rep = bs->rep;
    for (uint64_t i = 0; i < bs->p.live.nslots; i++) {
        block_t b;
        if (!mt_live_slot(&bs->p.live, i, &b))
            continue;
        rep->leaked_blocks++;
        rep->leaked_bytes += b.size;
        if (b.stack) {
            stack_stat_t *st = stack_at(bs->pv, b.stack);
            if (st) {
                st->leaked_blocks++;
                st->leaked_bytes += b.size;
                st->leak_quarters |= (uint8_t)(1u << mt_leak_quarter(b.time, bs->first_time, bs->last_time));
            }
        }
    }
}

/* The second pass, up to the peak: the live blocks then, with their stacks. */
typedef struct peak_walk {
    pass_t p;
    uint64_t applied, until;
} peak_walk_t;

/* Applies a call of the second pass (mt_causal_apply_fn) in the first pass's order, up to the peak. */
static int peak_apply(void *ctx, uint32_t ti, const mt_record_t *r, unsigned flags)
{
    (void)ti;
    peak_walk_t *w = ctx;
    if (w->applied == w->until)
        return 0;
    int stale;
    const int rc = call_waits(&w->p, r, flags, &stale);
    if (rc)
        return rc;
    w->applied++;
    if (r->op > MT_OP_LAST_CALL)
        return 0;
    block_t b;
    const uint64_t ends = mt_record_ends(r);
    if (ends)
        block_remove(&w->p, ends, &b);
    if (mt_op_allocates(r->op) && !(r->flags & MT_FLAG_NULL)) {
        if (stale)
            block_remove(&w->p, r->result, &b);
        const block_t nb = { .size = requested(r), .stack = (r->flags & MT_FLAG_STACK) ? r->stack : 0 };
        if (block_add(&w->p, r->result, &nb) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* The callsites' shares of the peak: walk again up to the peak and add up the live blocks. */
static int peak_shares(build_t *bs, mt_trace_t *t, unsigned jobs, mt_error_t *err)
{
    peak_walk_t w = { .until = bs->peak_step };
    int rc = pass_init(&w.p, t, jobs, err);
    if (rc < 0) {
        pass_fini(&w.p); /* what it set up before it failed */
        return rc;
    }
    mt_causal_t cz;
    rc = mt_causal_init(&cz, w.p.n, mt_causal_window(t), peak_apply, &w);
    uint32_t ti;
    const mt_record_t *r;
    while (rc == 0 && w.applied < w.until && (rc = pass_next(&w.p, &ti, &r, err)) > 0) {
        if (!mt_causal_direct(&cz, ti, r))
            rc = mt_causal_feed(&cz, ti, r);
        else if ((rc = peak_apply(&w, ti, r, mt_causal_direct_flags(&cz))) > 0)
            rc = mt_causal_applied(&cz, ti, r, rc);
    }
    if (rc == 0)
        rc = mt_causal_finish(&cz);
    mt_causal_fini(&cz);
    for (uint64_t i = 0; rc >= 0 && i < w.p.live.nslots; i++) {
        block_t b;
        if (!mt_live_slot(&w.p.live, i, &b))
            continue;
        stack_stat_t *st = b.stack ? stack_at(bs->pv, b.stack) : NULL;
        if (st)
            st->peak_bytes += b.size;
    }
    pass_fini(&w.p);
    if (rc == -ENOMEM)
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", mt_trace_path(t));
    return rc;
}

int mt_report_build(mt_report_t *rep, const char *path, const mt_report_opts_t *o, mt_error_t *err)
{
    memset(rep, 0, sizeof *rep);
    rep->path = path;
    priv_t *pv = calloc(1, sizeof *pv);
    if (!pv) {
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", path);
        return -ENOMEM;
    }
    rep->priv = pv;
    mt_trace_t *t;
    int rc = report_open(rep, pv, path, o, &t, err);
    if (rc < 0)
        return rc;
    const unsigned jobs = o && o->jobs ? o->jobs : 1;
    const mt_file_header_t *h = mt_trace_header(t);
    build_t bs = {
        .rep = rep, .pv = pv, .first_time = UINT64_MAX, .page_kb = h->page_size / 1024 ? h->page_size / 1024 : 4
    };
    if ((rc = pass_init(&bs.p, t, jobs, err)) < 0) {
        pass_fini(&bs.p);
        mt_trace_close(t);
        return rc;
    }
    clock_update(&bs.clk, t);
    rc = first_pass(&bs, t, err);
    mt_vmap_fini(&bs.own);
    free(bs.own_cuts);
    free(bs.cpoints.v);
    if (rc < 0) {
        if (rc == -ENOMEM)
            snprintf(err->msg, sizeof err->msg, "%s: out of memory", path);
        pass_fini(&bs.p);
        mt_trace_close(t);
        return rc;
    }
    count_leaks(&bs);
    pass_fini(&bs.p);
    rep->ended_at_exec = mt_trace_ended_at_exec(h, bs.last_op);
    char next[4096];
    if (rep->ended_at_exec && mt_trace_continuation(path, h, next, sizeof next))
        rep->continued_in = strdup(next); /* out of memory: the report does not name it */
    if (rep->has_stacks && bs.peak_step && (rc = peak_shares(&bs, t, jobs, err)) < 0) {
        mt_trace_close(t);
        return rc;
    }
    rep->duration_s =
        bs.last_time > bs.first_time ? seconds(&bs.clk, bs.last_time) - seconds(&bs.clk, bs.first_time) : 0;
    mt_trace_close(t);
    /* with stacks and not one recorded (no call), the outputs asked for are still written, empty:
     * a missing file with exit 0 would read as a success whose file went missing */
    if (rep->has_stacks && (rc = resolve_callsites(rep, pv, o, err)) < 0)
        return rc;
    return 0;
}

void mt_report_free(mt_report_t *rep)
{
    priv_t *pv = rep->priv;
    if (pv) {
        for (uint32_t i = 0; i < pv->nstacks; i++)
            free(pv->stacks[i].frames);
        free(pv->stacks);
        for (size_t i = 0; i < pv->nmodules; i++)
            free(pv->module_names[i]);
        free(pv->module_names);
        free(pv->modules);
        mt_strset_fini(&pv->strings);
        free(pv->frames);
        free(pv->frame_ids);
        free(pv->input);
        free(pv->input_id);
        mt_suppressions_free(&pv->supp);
        free(pv);
    }
    free(rep->continued_in);
    free(rep->thread);
    free(rep->series);
    free(rep->callsites);
    free_folded(rep->folded, rep->nfolded);
    mt_callers_free(&rep->callers);
    mt_leaks_free(&rep->leaks);
    memset(rep, 0, sizeof *rep);
}
