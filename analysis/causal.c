/* analysis/causal.h: merged records applied so that a block is made before it is freed and freed
 * before its address is made again. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "causal.h"

/* A thread's records from the one that waits on: copies, payloads included (the merge reuses its
 * buffers). q[head .. n) are not applied yet. */
struct mt_causal_thread {
    mt_record_t *q;
    uint32_t head, n, cap;
    uint8_t kind;      /* 0, MT_CAUSAL_WAIT_LIVE or MT_CAUSAL_WAIT_UNKNOWN */
    uint32_t at;       /* while it waits: its place in mt_causal_t.waiting */
    uint64_t key;      /* the address q[head] waits for */
    uint64_t deadline; /* a live wait: forced once a merged record is later than this */
};

/* The most records a thread keeps waiting: past them its wait is forced, whatever the times say (a
 * damaged trace's may never pass the deadline): 8 MiB of records, plus their payloads. */
#define QUEUE_MAX 65536u

/* The address a call record makes: its result, when it returned a block. */
static uint64_t record_makes(const mt_record_t *r)
{
    return r->op <= MT_OP_LAST_CALL && mt_op_allocates(r->op) && !(r->flags & MT_FLAG_NULL) ? r->result : 0;
}

uint64_t mt_causal_window(const mt_trace_t *t)
{
    const double w = mt_trace_ticks_per_sec(t) / 100;
    return w >= 1 ? (uint64_t)w : 1;
}

int mt_causal_init(mt_causal_t *c, uint32_t nthreads, uint64_t window, mt_causal_apply_fn apply, void *ctx)
{
    memset(c, 0, sizeof *c);
    c->n = nthreads;
    c->window = window;
    c->apply = apply;
    c->ctx = ctx;
    c->t = calloc(nthreads + 1, sizeof *c->t);
    c->last = calloc(nthreads + 1, sizeof *c->last);
    c->waiting = calloc(nthreads + 1, sizeof *c->waiting);
    return c->t && c->last && c->waiting ? 0 : -ENOMEM;
}

void mt_causal_fini(mt_causal_t *c)
{
    for (uint32_t i = 0; c->t && i < c->n; i++) {
        for (uint32_t k = c->t[i].head; k < c->t[i].n; k++)
            free((void *)c->t[i].q[k].data);
        free(c->t[i].q);
    }
    free(c->t);
    free(c->last);
    free(c->waiting);
    c->t = NULL;
    c->last = NULL;
    c->waiting = NULL;
}

static int enqueue(struct mt_causal_thread *h, const mt_record_t *r)
{
    if (h->n == h->cap) {
        if (h->head) { /* the applied ones make room */
            memmove(h->q, h->q + h->head, (h->n - h->head) * sizeof *h->q);
            h->n -= h->head;
            h->head = 0;
        }
        if (h->n == h->cap) {
            const uint32_t cap = h->cap ? 2 * h->cap : 16;
            mt_record_t *q = realloc(h->q, cap * sizeof *q);
            if (!q)
                return -ENOMEM;
            h->q = q;
            h->cap = cap;
        }
    }
    mt_record_t *x = &h->q[h->n];
    *x = *r;
    x->data = NULL;
    if (r->data && r->len) {
        uint8_t *d = malloc(r->len);
        if (!d)
            return -ENOMEM;
        memcpy(d, r->data, r->len);
        x->data = d;
    }
    h->n++;
    return 0;
}

/* Thread i's record r (q[head]) waits: `kind` says on what. */
static void wait_on(mt_causal_t *c, uint32_t i, int kind, const mt_record_t *r)
{
    struct mt_causal_thread *h = &c->t[i];
    h->kind = (uint8_t)kind;
    h->key = kind == MT_CAUSAL_WAIT_LIVE ? r->result : mt_record_ends(r);
    h->deadline = r->time + c->window;
    h->at = c->nwaiting;
    c->waiting[c->nwaiting++] = i;
    if (kind == MT_CAUSAL_WAIT_LIVE)
        c->nlive++;
}

static void stop_waiting(mt_causal_t *c, uint32_t i)
{
    struct mt_causal_thread *h = &c->t[i];
    const uint32_t last = c->waiting[--c->nwaiting];
    c->waiting[h->at] = last;
    c->t[last].at = h->at;
    if (h->kind == MT_CAUSAL_WAIT_LIVE)
        c->nlive--;
    h->kind = 0;
}

static unsigned flags_now(const mt_causal_t *c)
{
    return c->nlive ? MT_CAUSAL_OTHERS_WAIT : 0;
}

static int after(mt_causal_t *c, uint32_t thread, const mt_record_t *r);

/* Thread i stops waiting: its records are applied in order, the first with MT_CAUSAL_FORCE when
 * `force`, until one waits again or none is left. */
static int release(mt_causal_t *c, uint32_t i, int force)
{
    struct mt_causal_thread *h = &c->t[i];
    stop_waiting(c, i);
    if (force)
        c->forced++;
    else
        c->repaired++;
    while (h->head < h->n) {
        mt_record_t *x = &h->q[h->head];
        int rc = c->apply(c->ctx, i, x, force ? MT_CAUSAL_FORCE : flags_now(c));
        force = 0;
        if (rc == MT_CAUSAL_WAIT_LIVE || rc == MT_CAUSAL_WAIT_UNKNOWN) {
            wait_on(c, i, rc, x);
            return 0;
        }
        if (rc < 0)
            return rc;
        /* i waits on nothing now, so after() leaves its queue alone: x stays where it is */
        h->head++;
        rc = after(c, i, x);
        free((void *)x->data);
        x->data = NULL;
        if (rc < 0)
            return rc;
    }
    h->head = h->n = 0;
    return 0;
}

/* Whether waiting thread i goes on now that `r` (of thread `thread`) was applied, or the merged
 * records have reached r's time: 1 with the record it waited for, 2 without (forced), 0 not. */
static int goes_on(const mt_causal_t *c, uint32_t i, uint32_t thread, const mt_record_t *r, uint64_t ends,
                   uint64_t makes)
{
    const struct mt_causal_thread *h = &c->t[i];
    if (i == thread || !h->kind)
        return 0;
    if (h->kind == MT_CAUSAL_WAIT_LIVE)
        return ends && h->key == ends ? 1 : r->time > h->deadline ? 2 : 0;
    return makes && h->key == makes ? 1 : 0;
}

/* After record r of `thread` was applied (or, with thread UINT32_MAX, only reached in time): the
 * waiting threads it lets go on go on. */
static int after(mt_causal_t *c, uint32_t thread, const mt_record_t *r)
{
    if (!c->nwaiting)
        return 0;
    const int applied = thread != UINT32_MAX;
    const uint64_t ends = applied ? mt_record_ends(r) : 0, makes = applied ? record_makes(r) : 0;
    /* The ones that go on, chosen before any goes (a release applies records, and after() again). */
    uint32_t few[8], *go = few, ngo = 0;
    if (c->nwaiting > 8 && !(go = malloc(c->nwaiting * sizeof *go)))
        return -ENOMEM;
    for (uint32_t k = 0; k < c->nwaiting; k++)
        if (goes_on(c, c->waiting[k], thread, r, ends, makes))
            go[ngo++] = c->waiting[k];
    int rc = 0;
    for (uint32_t k = 0; k < ngo && rc >= 0; k++) {
        /* a release before may have applied this one's records and made it wait on something else */
        const int how = goes_on(c, go[k], thread, r, ends, makes);
        if (how)
            rc = release(c, go[k], how == 2);
    }
    if (go != few)
        free(go);
    return rc;
}

/* Once no thread waits on a live address, the unknown ends that waited for one are applied as such.
 * Only between records fed: while a thread's waiting records are applied, the next of them may make
 * the address another thread waits for. */
static int settle(mt_causal_t *c, int rc)
{
    while (rc >= 0 && !c->nlive && c->nwaiting)
        rc = release(c, c->waiting[0], 1);
    return rc;
}

/* The waiting thread whose first waiting record is the earliest (ties: the lowest index). */
static uint32_t earliest_waiting(const mt_causal_t *c)
{
    uint32_t first = c->waiting[0];
    for (uint32_t k = 1; k < c->nwaiting; k++) {
        const uint32_t i = c->waiting[k];
        const uint64_t ti = c->t[i].q[c->t[i].head].time, tf = c->t[first].q[c->t[first].head].time;
        if (ti < tf || (ti == tf && i < first))
            first = i;
    }
    return first;
}

/* The merged records have reached time `now` in a waiting thread's. When every thread that made a
 * record in the last window / 64 waits, they wait on one another (one of them waits for a record
 * the trace lacks): the earliest goes on, forced. */
static int break_stall(mt_causal_t *c, uint64_t now)
{
    const uint64_t recent = c->window / 64;
    for (uint32_t i = 0; i < c->n; i++)
        if (c->last[i] && !c->t[i].kind && c->last[i] + recent >= now)
            return 0;
    return release(c, earliest_waiting(c), 1);
}

int mt_causal_applied(mt_causal_t *c, uint32_t thread, const mt_record_t *r, int rc)
{
    if (rc == MT_CAUSAL_WAIT_LIVE || rc == MT_CAUSAL_WAIT_UNKNOWN) {
        const int kind = rc;
        if ((rc = enqueue(&c->t[thread], r)) < 0)
            return rc;
        wait_on(c, thread, kind, r);
        return 0;
    }
    if (rc < 0)
        return rc;
    return settle(c, after(c, thread, r));
}

int mt_causal_feed(mt_causal_t *c, uint32_t thread, const mt_record_t *r)
{
    struct mt_causal_thread *h = &c->t[thread];
    c->last[thread] = r->time;
    if (h->kind) { /* the thread waits: so does this record */
        int rc = enqueue(h, r);
        if (rc >= 0)
            rc = after(c, UINT32_MAX, r); /* the live waits whose window r's time has passed */
        if (rc >= 0 && c->nwaiting && h->kind)
            rc = h->n - h->head >= QUEUE_MAX ? release(c, thread, 1) : break_stall(c, r->time);
        return settle(c, rc);
    }
    return mt_causal_applied(c, thread, r, c->apply(c->ctx, thread, r, c->n < 2 ? MT_CAUSAL_FORCE : flags_now(c)));
}

int mt_causal_finish(mt_causal_t *c)
{
    int rc = 0;
    while (rc >= 0 && c->nwaiting)
        rc = release(c, earliest_waiting(c), 1);
    return rc;
}
