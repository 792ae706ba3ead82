/* The trace2wl model check (t2w_model.h): random multithreaded traces from a seeded generator,
 * converted, then the workload checked against the trace.
 *
 * The generator runs a program in its head: threads that malloc, calloc, memalign, realloc, free,
 * pass blocks to each other through a shared pool, exit, and a thread that takes an exited thread's
 * tid. Every call takes effect at a point of a global clock (the true order); it is recorded, as the
 * shim records it, at its entry, a random while earlier (the jitter): never before the thread's
 * previous call, nor before the last call that made, moved or read the block it uses, nor before the
 * making of the block its address last held. A malloc that gets an address another thread is
 * freeing can so be stamped before that free: the converter must repair these inversions.
 *
 * Checks, by level (see check_model):
 *   counts  every call of the trace is an op (per op: the generator's counts), nothing dropped,
 *           repaired by force or counted as unknown; a reference merge of the trace's records,
 *           written here apart from the converter (earliest timestamp first among the records whose
 *           dependency is met), has after every record as many live blocks as the workload has live
 *           slots when its ops run in that order; at the end the true program's live blocks;
 *           header.slots = the reference's peak of live blocks, peak_live_bytes its peak of bytes;
 *   replay  and every WAIT is met in the reference order, and the streams replay without deadlock,
 *           each free / realloc / malloc_usable_size naming a live slot and each allocation a free
 *           one, in an order the WAITs allow;
 *   strict  and every slot access is ordered after the slot's previous access in every interleaving
 *           the WAITs allow (vector clocks), checked also under random schedules. */
#define _GNU_SOURCE
#include "t2w_model.h"

#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/convert.h"
#include "mtrace/workload.h"
#include "t2w_util.h"
#include "test_util.h"

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        ck_abort_msg("out of memory");
    return p;
}

/* ---- the generator ------------------------------------------------------------------------------ */

#define GMAX_THREADS 8

typedef struct gblock {
    uint64_t addr, size;
    uint64_t made; /* effect time of the last call that made, moved or read it: the program orders
                    * the next use, in any thread, after it */
} gblock_t;

typedef struct gvec {
    gblock_t *v;
    size_t n, cap;
} gvec_t;

typedef struct gfreed {
    uint64_t addr, made;
} gfreed_t;

typedef struct gen {
    tb_t b;
    rng_t rng;
    gparams_t p;
    uint64_t T;                        /* the true clock */
    uint64_t last_T[GMAX_THREADS + 1]; /* effect time of each thread's previous call */
    gvec_t shared;                     /* blocks any thread may use */
    gvec_t priv[GMAX_THREADS + 1];     /* blocks only their maker uses */
    gfreed_t *freed;                   /* addresses for reuse, last freed first */
    size_t nfreed, capfreed;
    uint64_t bump;
    uint64_t live, peak_live; /* live blocks in the true order */
    uint64_t calls_by_op[MT_OP_LAST_CALL + 1];
    uint32_t active[GMAX_THREADS]; /* thread numbers running */
    uint32_t nactive;
    uint32_t next_thread;
} gen_t;

static void vpush(gvec_t *v, gblock_t b)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 256;
        v->v = xrealloc(v->v, v->cap * sizeof *v->v);
    }
    v->v[v->n++] = b;
}

static gblock_t vtake(gvec_t *v, size_t i)
{
    const gblock_t b = v->v[i];
    v->v[i] = v->v[--v->n];
    return b;
}

/* An address for a new block: most often the one freed last (so that another thread's free and this
 * malloc race for it), else a fresh one. *dep grows to the effect time of the call that made the
 * address's previous block: a call is not stamped before the making of what it replaces (the
 * converter holds a record back until the free it depends on, not until a malloc that precedes
 * that free). */
static uint64_t addr_new(gen_t *g, uint64_t *dep)
{
    if (g->nfreed && rng_below(&g->rng, 10) < 8) {
        const gfreed_t f = g->freed[--g->nfreed];
        if (f.made > *dep)
            *dep = f.made;
        return f.addr;
    }
    g->bump += 16 * (1 + rng_below(&g->rng, 64));
    return g->bump;
}

static void addr_release(gen_t *g, const gblock_t *blk)
{
    if (g->nfreed == g->capfreed) {
        g->capfreed = g->capfreed ? g->capfreed * 2 : 1024;
        g->freed = xrealloc(g->freed, g->capfreed * sizeof *g->freed);
    }
    g->freed[g->nfreed++] = (gfreed_t){ .addr = blk->addr, .made = blk->made };
}

static uint64_t rand_size(gen_t *g)
{
    switch (rng_below(&g->rng, 4)) {
    case 0:
        return 1 + rng_below(&g->rng, 16);
    case 1:
        return 1 + rng_below(&g->rng, 256);
    case 2:
        return 1 + rng_below(&g->rng, 4096);
    default:
        return 1 + rng_below(&g->rng, 200000);
    }
}

/* The next call of thread th takes effect now; its entry time is returned. `dep` is the effect time
 * of the call that made the block it uses (0: none). */
static uint64_t tick(gen_t *g, uint32_t th, uint64_t dep)
{
    g->T += 1 + rng_below(&g->rng, 20);
    uint64_t entry = g->T - (g->p.jitter ? rng_below(&g->rng, g->p.jitter) : 0);
    if (entry <= g->last_T[th])
        entry = g->last_T[th] + 1;
    if (dep && entry <= dep)
        entry = dep + 1;
    g->last_T[th] = g->T;
    return entry;
}

static void made(gen_t *g)
{
    if (++g->live > g->peak_live)
        g->peak_live = g->live;
}

enum { PICK_ANY, PICK_OWN, PICK_SHARED };

/* A block for thread th to use: from the shared pool, its own, or either at random; NULL if none. */
static gvec_t *pick_vec(gen_t *g, uint32_t th, int from)
{
    gvec_t *own = &g->priv[th];
    if (from == PICK_OWN)
        return own->n ? own : NULL;
    if (from == PICK_SHARED)
        return g->shared.n ? &g->shared : NULL;
    gvec_t *first = rng_below(&g->rng, 2) ? &g->shared : own, *second = first == own ? &g->shared : own;
    return first->n ? first : second->n ? second : NULL;
}

/* Producer / consumer traces: only thread 1 allocates; the workers free and realloc what it shares. */
static int consumer(const gen_t *g, uint32_t th)
{
    return g->p.one_producer && th != 1;
}

/* Where thread th takes the blocks it frees or reallocs, and those it only reads (usable size, a
 * failed realloc). */
static int pick_from(const gen_t *g, uint32_t th, int reader)
{
    if (g->p.one_producer)
        return th == 1 ? PICK_OWN : PICK_SHARED;
    return reader && !g->p.readers_shared ? PICK_OWN : PICK_ANY;
}

static void new_block(gen_t *g, uint32_t th, uint64_t addr, uint64_t size)
{
    gblock_t blk = { .addr = addr, .size = size, .made = g->T };
    vpush(rng_below(&g->rng, 10) < (g->p.one_producer ? 6u : 4u) ? &g->shared : &g->priv[th], blk);
    made(g);
}

static void do_alloc(gen_t *g, uint32_t th, unsigned op)
{
    uint64_t dep = 0;
    const uint64_t a = addr_new(g, &dep);
    const uint64_t t = tick(g, th, dep);
    uint64_t size = rand_size(g);
    switch (op) {
    case MT_OP_MALLOC:
        tb_malloc(&g->b, th, t, size, a);
        break;
    case MT_OP_CALLOC: {
        const uint64_t count = 1 + rng_below(&g->rng, 8);
        size = 1 + rng_below(&g->rng, 512);
        tb_calloc(&g->b, th, t, count, size, a);
        size *= count;
        break;
    }
    case MT_OP_MEMALIGN:
    case MT_OP_ALIGNED_ALLOC:
    case MT_OP_POSIX_MEMALIGN:
        tb_aligned(&g->b, op, th, t, 16ull << rng_below(&g->rng, 9), size, a);
        break;
    default:
        tb_valloc(&g->b, op, th, t, size, a);
        break;
    }
    g->calls_by_op[op]++;
    new_block(g, th, a, size);
}

static void do_mallopt(gen_t *g, uint32_t th)
{
    tb_mallopt(&g->b, th, tick(g, th, 0), -1 - (int64_t)rng_below(&g->rng, 8), (int64_t)rng_below(&g->rng, 1 << 20), 1);
    g->calls_by_op[MT_OP_MALLOPT]++;
}

/* A thread with no block to use allocates one, or (a consumer) calls mallopt. */
static void fallback(gen_t *g, uint32_t th)
{
    if (consumer(g, th))
        do_mallopt(g, th);
    else
        do_alloc(g, th, MT_OP_MALLOC);
}

static void do_free(gen_t *g, uint32_t th)
{
    gvec_t *v = pick_vec(g, th, pick_from(g, th, 0));
    if (!v) {
        fallback(g, th);
        return;
    }
    const gblock_t blk = vtake(v, rng_below(&g->rng, v->n));
    tb_free(&g->b, th, tick(g, th, blk.made), blk.addr);
    g->calls_by_op[MT_OP_FREE]++;
    addr_release(g, &blk);
    g->live--;
}

static void do_realloc(gen_t *g, uint32_t th, unsigned op)
{
    /* kind 0: realloc(NULL, n); 1: realloc(p, 0); 2: a failed realloc, which only reads its block;
     * else: moved or in place. A consumer neither allocates nor reads only. */
    const uint64_t kind = !consumer(g, th)                                     ? rng_below(&g->rng, 20)
                          : g->p.readers_shared && rng_below(&g->rng, 10) == 0 ? 2
                                                                               : 1 + 2 * rng_below(&g->rng, 10);
    gvec_t *v = kind == 0 ? NULL : pick_vec(g, th, pick_from(g, th, kind == 2));
    if (kind != 0 && !v) {
        fallback(g, th);
        return;
    }
    uint64_t count = op == MT_OP_REALLOCARRAY ? 1 + rng_below(&g->rng, 8) : 1;
    uint64_t size = rand_size(g);
    if (op == MT_OP_REALLOCARRAY)
        size = 1 + rng_below(&g->rng, 1024);
    g->calls_by_op[op]++;
    if (!v) { /* realloc(NULL, n) */
        uint64_t dep = 0;
        const uint64_t a = addr_new(g, &dep), t = tick(g, th, dep);
        if (op == MT_OP_REALLOC)
            tb_realloc(&g->b, th, t, 0, size, a);
        else
            tb_reallocarray(&g->b, th, t, 0, count, size, a);
        new_block(g, th, a, size * count);
        return;
    }
    const size_t i = rng_below(&g->rng, v->n);
    gblock_t *blk = &v->v[i];
    const int moved = kind > 2 && rng_below(&g->rng, 2);
    uint64_t dep = blk->made, a = blk->addr;
    if (moved)
        a = addr_new(g, &dep); /* (never blk->addr: a live address is not in the freed list) */
    const uint64_t t = tick(g, th, dep);
    if (kind == 1 && op == MT_OP_REALLOC) { /* realloc(p, 0): freed, NULL returned */
        const gblock_t old = vtake(v, i);
        tb_realloc(&g->b, th, t, old.addr, 0, 0);
        addr_release(g, &old);
        g->live--;
        return;
    }
    if (kind == 2) { /* failed: the block stays */
        if (op == MT_OP_REALLOC)
            tb_realloc(&g->b, th, t, blk->addr, 1ull << 50, 0);
        else
            tb_reallocarray(&g->b, th, t, blk->addr, 1ull << 30, 1ull << 30, 0);
        blk->made = g->T;
        return;
    }
    if (moved) {
        ck_assert_uint_ne(a, blk->addr);
        addr_release(g, blk);
    }
    if (op == MT_OP_REALLOC)
        tb_realloc(&g->b, th, t, blk->addr, size, a);
    else
        tb_reallocarray(&g->b, th, t, blk->addr, count, size, a);
    blk->addr = a;
    blk->size = size * count;
    blk->made = g->T;
}

static void do_usable(gen_t *g, uint32_t th)
{
    gvec_t *v = consumer(g, th) && !g->p.readers_shared ? NULL : pick_vec(g, th, pick_from(g, th, 1));
    if (!v) {
        fallback(g, th);
        return;
    }
    gblock_t *blk = &v->v[rng_below(&g->rng, v->n)];
    tb_usable(&g->b, th, tick(g, th, blk->made), blk->addr, (blk->size + 15) & ~15ull);
    g->calls_by_op[MT_OP_USABLE_SIZE]++;
    blk->made = g->T; /* a later free, in any thread, comes after this read */
}

static void one_call(gen_t *g, uint32_t th)
{
    const uint64_t r = rng_below(&g->rng, 1000);
    if (consumer(g, th)) {
        if (r < 700)
            do_free(g, th);
        else if (r < 900)
            do_realloc(g, th, r < 850 ? MT_OP_REALLOC : MT_OP_REALLOCARRAY);
        else if (r < 950) {
            tb_free(&g->b, th, tick(g, th, 0), 0);
            g->calls_by_op[MT_OP_FREE]++;
        } else if (r < 980 && g->p.readers_shared) {
            do_usable(g, th);
        } else {
            do_mallopt(g, th);
        }
        return;
    }
    if (r < 300)
        do_alloc(g, th, MT_OP_MALLOC);
    else if (r < 350)
        do_alloc(g, th, MT_OP_CALLOC);
    else if (r < 356)
        do_alloc(g, th, MT_OP_MEMALIGN);
    else if (r < 362)
        do_alloc(g, th, MT_OP_ALIGNED_ALLOC);
    else if (r < 368)
        do_alloc(g, th, MT_OP_POSIX_MEMALIGN);
    else if (r < 374)
        do_alloc(g, th, MT_OP_VALLOC);
    else if (r < 380)
        do_alloc(g, th, MT_OP_PVALLOC);
    else if (r < 660)
        do_free(g, th);
    else if (r < 780)
        do_realloc(g, th, MT_OP_REALLOC);
    else if (r < 800)
        do_realloc(g, th, MT_OP_REALLOCARRAY);
    else if (r < 830)
        do_usable(g, th);
    else if (r < 840) {
        tb_free(&g->b, th, tick(g, th, 0), 0);
        g->calls_by_op[MT_OP_FREE]++;
    } else if (r < 845) {
        tb_malloc(&g->b, th, tick(g, th, 0), 1ull << 50, 0);
        g->calls_by_op[MT_OP_MALLOC]++;
    } else if (r < 850) {
        tb_aligned(&g->b, MT_OP_POSIX_MEMALIGN, th, tick(g, th, 0), 64, 1ull << 50, 0);
        g->calls_by_op[MT_OP_POSIX_MEMALIGN]++;
    } else if (r < 855) {
        do_mallopt(g, th);
    } else {
        do_alloc(g, th, MT_OP_MALLOC);
    }
}

/* Thread 1 creates a worker: CREATE at the creator, the worker's START a little later. */
static void spawn(gen_t *g, uint32_t tid)
{
    const uint32_t th = g->next_thread++;
    ck_assert_uint_le(th, GMAX_THREADS);
    tb_tid(&g->b, th, tid);
    const uint64_t t = tick(g, 1, 0);
    tb_create(&g->b, 1, t, th);
    g->T += 1 + rng_below(&g->rng, 50);
    tb_start(&g->b, th, g->T, 1);
    g->last_T[th] = g->T;
    g->active[g->nactive++] = th;
}

static void retire(gen_t *g, uint32_t slot_in_active)
{
    const uint32_t th = g->active[slot_in_active];
    g->T += 1 + rng_below(&g->rng, 20);
    tb_exit(&g->b, th, g->T > g->last_T[th] ? g->T : g->last_T[th] + 1);
    g->active[slot_in_active] = g->active[--g->nactive];
    /* Its private blocks stay live (leaked); shared ones go on being used by the others. */
}

/* Writes the trace. Returns the number of live blocks at the end of the true run. */
static void generate(gen_t *g, const char *path, const gparams_t *p)
{
    memset(g, 0, sizeof *g);
    g->p = *p;
    g->rng.s = p->seed;
    g->bump = 0x10000000;
    tb_open(&g->b, path);
    g->T = 1000;
    tb_start(&g->b, 1, g->T, 0);
    g->last_T[1] = g->T;
    g->active[g->nactive++] = 1;
    g->next_thread = 2;
    for (uint32_t k = 0; k < p->threads; k++)
        spawn(g, 5000 + k);
    const uint32_t exiter_tid = 5000 + p->threads - 1;
    for (uint64_t c = 0; c < p->calls; c++) {
        if (p->exits && c == p->calls / 2) {
            /* the last worker exits; a new one gets its tid */
            for (uint32_t k = 0; k < g->nactive; k++)
                if (g->b.tid[g->active[k]] == exiter_tid) {
                    retire(g, k);
                    break;
                }
            spawn(g, exiter_tid);
        }
        const uint32_t th = p->one_producer && rng_below(&g->rng, 2) ? 1 : g->active[rng_below(&g->rng, g->nactive)];
        one_call(g, th);
    }
    /* Workers exit, then thread 1 does a few more calls (after their joins). */
    while (g->nactive > 1) {
        for (uint32_t k = 0; k < g->nactive; k++)
            if (g->active[k] != 1) {
                retire(g, k);
                break;
            }
    }
    for (int k = 0; k < 10; k++)
        one_call(g, 1);
    tb_close(&g->b);
    free(g->shared.v);
    for (uint32_t i = 0; i <= GMAX_THREADS; i++)
        free(g->priv[i].v);
    free(g->freed);
}

/* ---- the reference merge ----------------------------------------------------------------------- */

/* Live blocks by address: open addressing, no deletes needed beyond tombstone-free linear probing
 * with backward shift. */
typedef struct amap {
    uint64_t *k, *v;
    size_t cap, n;
} amap_t;

static size_t ahash(uint64_t a, size_t cap)
{
    return (size_t)((a * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static uint64_t *aget(amap_t *m, uint64_t a)
{
    for (size_t i = ahash(a, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->k[i] == a)
            return &m->v[i];
        if (!m->k[i])
            return NULL;
    }
}

static void aput(amap_t *m, uint64_t a, uint64_t v)
{
    if ((m->n + 1) * 2 > m->cap) {
        amap_t n = { calloc(m->cap * 2, 8), calloc(m->cap * 2, 8), m->cap * 2, 0 };
        if (!n.k || !n.v)
            ck_abort_msg("out of memory");
        for (size_t i = 0; i < m->cap; i++)
            if (m->k[i])
                aput(&n, m->k[i], m->v[i]);
        free(m->k);
        free(m->v);
        *m = n;
    }
    size_t i = ahash(a, m->cap);
    while (m->k[i])
        i = (i + 1) & (m->cap - 1);
    m->k[i] = a;
    m->v[i] = v;
    m->n++;
}

static void adel(amap_t *m, uint64_t a)
{
    size_t i = ahash(a, m->cap);
    while (m->k[i] != a) {
        if (!m->k[i])
            ck_abort_msg("reference: deleting %#" PRIx64 ", not live", a);
        i = (i + 1) & (m->cap - 1);
    }
    for (size_t j = (i + 1) & (m->cap - 1); m->k[j]; j = (j + 1) & (m->cap - 1)) {
        const size_t home = ahash(m->k[j], m->cap);
        if (((j - home) & (m->cap - 1)) >= ((j - i) & (m->cap - 1))) {
            m->k[i] = m->k[j];
            m->v[i] = m->v[j];
            i = j;
        }
    }
    m->k[i] = 0;
    m->n--;
}

typedef struct ref {
    uint32_t *order; /* per record: its thread index, | ORDER_WAITS_ONLY if it makes no op */
    uint64_t *live;  /* live blocks after it */
    size_t n, cap;
    uint64_t ops; /* records that make an op */
    uint64_t peak_live, peak_bytes, end_live;
    uint64_t records, calls;
} ref_t;

static uint64_t req_bytes(const mt_record_t *r)
{
    return (r->op == MT_OP_CALLOC || r->op == MT_OP_REALLOCARRAY) ? r->count * r->size : r->size;
}

static int is_alloc(unsigned op)
{
    return op == MT_OP_MALLOC || op == MT_OP_CALLOC || op == MT_OP_MEMALIGN || op == MT_OP_ALIGNED_ALLOC ||
           op == MT_OP_POSIX_MEMALIGN || op == MT_OP_VALLOC || op == MT_OP_PVALLOC;
}

/* Can the record be applied now? */
static int ready(const amap_t *live, const mt_record_t *r, int created)
{
    if (r->op == MT_EV_THREAD_START)
        return created;
    if (r->op > MT_OP_LAST_CALL)
        return 1;
    amap_t *m = (amap_t *)live;
    const int null = (r->flags & MT_FLAG_NULL) != 0;
    if (is_alloc(r->op))
        return null || !aget(m, r->result);
    switch (r->op) {
    case MT_OP_FREE:
    case MT_OP_USABLE_SIZE:
        return !r->ptr || aget(m, r->ptr);
    case MT_OP_REALLOC:
    case MT_OP_REALLOCARRAY:
        if (r->ptr && !aget(m, r->ptr))
            return 0;
        return null || r->result == r->ptr || !aget(m, r->result);
    default:
        return 1;
    }
}

/* Merges the trace's threads: at each step the earliest record (ties: lowest thread index) among
 * those whose dependency is met. Every record of the generator's traces has one that will come. */
static void reference(const char *trace, ref_t *ref)
{
    memset(ref, 0, sizeof *ref);
    mt_trace_t *t;
    mt_error_t err;
    ck_assert_int_eq(mt_trace_open(&t, trace, &err), 0);
    const size_t n = mt_trace_thread_count(t);
    rec_list_t *recs = calloc(n, sizeof *recs);
    size_t *pos = calloc(n, sizeof *pos);
    int *created = calloc(n, sizeof *created);
    ck_assert(recs && pos && created);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(read_thread(t, i, &recs[i], &err), 0);
        /* a thread whose START names no creator in the trace needs no creation */
        const mt_record_t *s = &recs[i].v[0];
        ck_assert_int_eq(s->op, MT_EV_THREAD_START);
        created[i] = s->arg[0] == 0;
    }
    amap_t live = { calloc(1024, 8), calloc(1024, 8), 1024, 0 };
    uint64_t bytes = 0;
    for (;;) {
        size_t best = SIZE_MAX, remaining = 0;
        for (size_t i = 0; i < n; i++) {
            if (pos[i] >= recs[i].n)
                continue;
            remaining++;
            const mt_record_t *r = &recs[i].v[pos[i]];
            if (!ready(&live, r, created[i]))
                continue;
            if (best == SIZE_MAX || r->time < recs[best].v[pos[best]].time)
                best = i;
        }
        if (!remaining)
            break;
        ck_assert_msg(best != SIZE_MAX, "reference merge: every thread waits");
        const mt_record_t *r = &recs[best].v[pos[best]++];
        ref->records++;
        int op_made = 1;
        const int null = (r->flags & MT_FLAG_NULL) != 0;
        if (r->op <= MT_OP_LAST_CALL)
            ref->calls++;
        if (is_alloc(r->op)) {
            if (!null) {
                aput(&live, r->result, req_bytes(r));
                bytes += req_bytes(r);
            }
        } else if (r->op == MT_OP_FREE) {
            if (r->ptr) {
                bytes -= *aget(&live, r->ptr);
                adel(&live, r->ptr);
            }
        } else if (r->op == MT_OP_USABLE_SIZE) {
            op_made = r->ptr != 0;
        } else if (r->op == MT_OP_REALLOC || r->op == MT_OP_REALLOCARRAY) {
            if (r->ptr && (!null || req_bytes(r) == 0)) {
                bytes -= *aget(&live, r->ptr);
                adel(&live, r->ptr);
            }
            if (!null) {
                aput(&live, r->result, req_bytes(r));
                bytes += req_bytes(r);
            }
        } else if (r->op == MT_EV_THREAD_CREATE) {
            for (size_t k = 0; k < n; k++)
                if (mt_trace_thread(t, k)->thread == (uint32_t)r->arg[0])
                    created[k] = 1;
            op_made = 0;
        } else if (r->op != MT_EV_THREAD_START && r->op != MT_EV_THREAD_EXIT && r->op != MT_OP_MALLOPT &&
                   r->op != MT_EV_MARK) {
            op_made = 0;
        }
        if (live.n > ref->peak_live)
            ref->peak_live = live.n;
        if (bytes > ref->peak_bytes)
            ref->peak_bytes = bytes;
        if (op_made)
            ref->ops++;
        if (ref->n == ref->cap) {
            ref->cap = ref->cap ? ref->cap * 2 : 4096;
            ref->order = xrealloc(ref->order, ref->cap * sizeof *ref->order);
            ref->live = xrealloc(ref->live, ref->cap * sizeof *ref->live);
        }
        ref->order[ref->n] = (uint32_t)best | (op_made ? 0 : ORDER_WAITS_ONLY);
        ref->live[ref->n] = live.n;
        ref->n++;
    }
    ref->end_live = live.n;
    for (size_t i = 0; i < n; i++)
        rec_list_free(&recs[i]);
    free(recs);
    free(pos);
    free(created);
    free(live.k);
    free(live.v);
    mt_trace_close(t);
}

static void ref_free(ref_t *r)
{
    free(r->order);
    free(r->live);
}

/* ---- the checks --------------------------------------------------------------------------------- */

void check_model(const char *dir, const gparams_t *p, int level)
{
    char name[64];
    snprintf(name, sizeof name, "model-%" PRIu64 ".mtr", p->seed);
    char *trace = path_in(dir, name);
    snprintf(name, sizeof name, "model-%" PRIu64 ".mtw", p->seed);
    char *wlp = path_in(dir, name);
    gen_t *g = calloc(1, sizeof *g);
    ck_assert_ptr_nonnull(g);
    generate(g, trace, p);
    mt_convert_stats_t st;
    convert_ok(trace, wlp, &st);
    wl_mem_t m;
    wl_load(&m, wlp);
    const mt_wl_header_t *h = &m.h;

    /* Nothing lost, nothing repaired by force, nothing unknown: the generator's calls are all sound. */
    ck_assert_uint_eq(st.calls, g->b.calls);
    ck_assert_uint_eq(h->unknown_frees, 0);
    ck_assert_uint_eq(h->double_frees, 0);
    ck_assert_uint_eq(h->forced, 0);
    if (p->jitter)
        ck_assert_uint_gt(h->inversions, 0);
    else
        ck_assert_uint_eq(h->inversions, 0);
    uint64_t allocs_trace = 0, allocs_wl = 0;
    for (unsigned op = 1; op <= MT_OP_LAST_CALL; op++) {
        const uint64_t got = wl_count_op(&m, op);
        ck_assert_msg(got == g->calls_by_op[op], "%s: %" PRIu64 " ops, the trace has %" PRIu64 " calls", mt_op_name(op),
                      got, g->calls_by_op[op]);
        if (is_alloc(op)) {
            allocs_trace += g->calls_by_op[op];
            allocs_wl += got;
        }
    }
    ck_assert_uint_eq(allocs_wl, allocs_trace);
    const uint32_t nthreads = 1 + p->threads + (p->exits ? 1 : 0);
    ck_assert_uint_eq(h->threads, nthreads);
    ck_assert_uint_eq(wl_count_op(&m, MT_WL_THREAD_START), nthreads);
    ck_assert_uint_eq(wl_count_op(&m, MT_WL_THREAD_EXIT), nthreads - 1);

    /* The reference order: every WAIT met in it, live slots = live blocks after every record. */
    ref_t ref;
    reference(trace, &ref);
    ck_assert_uint_eq(ref.records, st.records);
    ck_assert_uint_eq(ref.end_live, g->live);
    ck_assert_uint_eq(h->slots, ref.peak_live);
    ck_assert_uint_eq(h->peak_live_bytes, ref.peak_bytes);
    ck_assert_uint_eq(ref.n, ref.records);
    ck_assert_uint_eq(ref.ops, h->ops - h->waits);
    uint64_t *live_after = calloc(ref.n + 1, sizeof *live_after);
    ck_assert_ptr_nonnull(live_after);
    replay_result_t res;
    /* In the reference order, the live slots follow the live blocks after every record; the WAITs
     * must be met in it from LEVEL_REPLAY on, and the slots race-free at LEVEL_STRICT. */
    replay_order_ok(&m, ref.order, ref.n, live_after, level, &res);
    for (size_t k = 0; k < ref.n; k++)
        if (live_after[k] != ref.live[k])
            ck_abort_msg("step %zu (thread %u): %" PRIu64 " live slots, the reference has %" PRIu64 " live blocks", k,
                         ref.order[k] & ~ORDER_WAITS_ONLY, live_after[k], ref.live[k]);
    ck_assert_uint_eq(res.live_end, g->live);
    ck_assert_uint_eq(res.max_live, ref.peak_live);
    if (level >= LEVEL_REPLAY) {
        /* Without race checks: some order the WAITs allow replays cleanly. */
        replay_ok(&m, SCHED_CAREFUL, 0, 0, &res);
        ck_assert_uint_eq(res.live_end, g->live);
        ck_assert_uint_le(res.max_live, h->slots);
    }
    if (level >= LEVEL_STRICT) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            replay_ok(&m, SCHED_RANDOM, seed, 1, &res);
            ck_assert_uint_eq(res.live_end, g->live);
        }
    }
    free(live_after);
    ref_free(&ref);
    wl_free(&m);
    free(g);
    free(trace);
    free(wlp);
}
