/* The merged records of a trace applied so that a block is made before it is freed and freed
 * before its address is made again, also where the records' times say otherwise.
 *
 * Readers merge the threads' records by time. A call that gets an address another thread has just
 * given back can still be stamped before the record that gave it back: a realloc that moved its
 * block gives the old address back inside the call, before its stamp (doc/trace-format.md, "Call
 * records"), and an earlier recorder stamped every call at entry, before any wait for the
 * allocator's lock. Applied in time order, such an allocation finds its address live, and the
 * record that ends the old block comes later, from the other thread, and ends the new one instead:
 * a free the trace seems to lack, and one of a block it never saw. trace2wl holds such records back
 * until what they depend on comes (its `inversions`); this stage does the same for the readers that
 * keep an address map of their own (mtrace report, mtrace export), with the same two rules:
 *
 *  - an allocation whose address is live waits, with its thread's later records, until another
 *    thread's record ends that address, or until the merged records pass its time by `window`, or
 *    the threads wait on one another (it is then applied with MT_CAUSAL_FORCE: a block whose free
 *    the trace lacks);
 *  - while some thread waits so, a record that ends an address nobody holds waits too, until an
 *    allocation of that address is applied (it may be in the waiting thread's records), or until no
 *    thread waits on a live address (it is then applied with MT_CAUSAL_FORCE: an unknown free).
 *
 * Records are applied in the same order with any number of reading jobs: the stage sits after the
 * merge, and what it decides depends on the merged records alone. */
#ifndef MTRACE_CAUSAL_H
#define MTRACE_CAUSAL_H

#include <stdint.h>

#include "mtrace/trace_reader.h"

/* What an apply function answers instead of applying a record. */
enum {
    MT_CAUSAL_WAIT_LIVE = 1,    /* it returns r->result, which a block holds */
    MT_CAUSAL_WAIT_UNKNOWN = 2, /* it ends mt_record_ends(r), which no block holds (only with MT_CAUSAL_OTHERS_WAIT) */
};
/* The apply function's flags. */
enum {
    MT_CAUSAL_FORCE = 1,       /* apply it whatever the addresses say */
    MT_CAUSAL_OTHERS_WAIT = 2, /* another thread waits on a live address: an unknown end may wait */
};

/* Applies record r of thread `thread`: 0, a wait (never with MT_CAUSAL_FORCE), or a negative errno. */
typedef int (*mt_causal_apply_fn)(void *ctx, uint32_t thread, const mt_record_t *r, unsigned flags);

typedef struct mt_causal {
    struct mt_causal_thread *t;
    uint32_t n;
    uint64_t *last;    /* per thread: the time of its latest record fed (0: none yet) */
    uint32_t *waiting; /* the threads that wait, nwaiting of them, nlive of them on a live address */
    uint32_t nwaiting, nlive;
    uint64_t window;
    mt_causal_apply_fn apply;
    void *ctx;
    uint64_t repaired; /* waits ended by the record waited for */
    uint64_t forced;   /* waits ended without it */
} mt_causal_t;

/* How long an allocation waits for the record that ends its address's block: 10 ms of trace t's time,
 * in its recorded units. That record comes microseconds later (a realloc that moved its block), or in
 * a trace of an earlier recorder as late as the longest wait for the allocator's lock. While threads
 * wait on one another (every thread that made a record in the last window / 64 waits: one of them
 * waits for a record the trace lacks, a free made while recording was paused), the earliest goes on
 * at once. A thread's records wait in memory. */
uint64_t mt_causal_window(const mt_trace_t *t);
/* window: in the trace's recorded time units (mt_causal_window). 0, or -ENOMEM. */
int mt_causal_init(mt_causal_t *c, uint32_t nthreads, uint64_t window, mt_causal_apply_fn apply, void *ctx);
void mt_causal_fini(mt_causal_t *c);
/* The next record in merge order; it (and records that waited) may be applied before this returns. */
int mt_causal_feed(mt_causal_t *c, uint32_t thread, const mt_record_t *r);
/* At the end of the merged records: every record still waiting is applied, the earliest first. */
int mt_causal_finish(mt_causal_t *c);

/* The common case, inline in the reader's loop: no thread waits. Notes r's time and returns 1 when
 * the reader applies r itself, with flags mt_causal_direct_flags(c), and passes a wait its apply
 * function answered to mt_causal_applied; 0 when r goes to mt_causal_feed. */
static inline int mt_causal_direct(mt_causal_t *c, uint32_t thread, const mt_record_t *r)
{
    c->last[thread] = r->time;
    return c->nwaiting == 0;
}

static inline unsigned mt_causal_direct_flags(const mt_causal_t *c)
{
    return c->n < 2 ? MT_CAUSAL_FORCE : 0; /* one thread: nobody else can end or make its addresses */
}

/* rc: what the apply function answered for r, applied directly: a wait starts there (0: after r). */
int mt_causal_applied(mt_causal_t *c, uint32_t thread, const mt_record_t *r, int rc);

/* The address a record ends: free's, and a realloc's unless it failed (realloc(p, 0) that returned
 * NULL freed p); 0 if none. */
static inline uint64_t mt_record_ends(const mt_record_t *r)
{
    if (r->op == MT_OP_FREE)
        return r->ptr;
    if ((r->op == MT_OP_REALLOC || r->op == MT_OP_REALLOCARRAY) && r->ptr &&
        (!(r->flags & MT_FLAG_NULL) || mt_requested(r->op, r->count, r->size) == 0))
        return r->ptr;
    return 0;
}

#endif
