/* The record writer's hot path, inlined into every interposed call (shim_alloc.c): it only encodes
 * into the thread's chunk and makes no call, so the hooks keep their state in scratch registers.
 * Anything more goes to the general path in shim_record.c. Internal to libmtrace.so. */
#ifndef MTRACE_SHIM_RECORD_H
#define MTRACE_SHIM_RECORD_H

#include "shim.h"

#pragma GCC visibility push(hidden)

/* Calls that are not recorded: before start-up, while paused or stopped, or nested in the shim. */
static inline int pass_through(const mt_thread_t *t)
{
    return t->busy | atomic_load_explicit(&mt_g.off, memory_order_relaxed);
}

static inline void count_lost(mt_thread_t *t)
{
    /* Calls nested in a record being written (a signal handler's) and calls after truncation are
     * losses; the shim's own calls (busy 2), pauses and stops are not. */
    if (t->busy >= 2) /* the shim's own calls, the start-up probe's included */
        return;
    if (t->busy || atomic_load_explicit(&mt_g.truncated, memory_order_relaxed))
        t->lost++;
}

/* Every record is written by one of two paths. The hot path (rec_begin_fast .. rec_end_fast) only
 * encodes: it makes no call, so the interposed functions keep their state in scratch registers and
 * save none. Anything more (a stack id to take, a new chunk to claim, an RSS sample due, an allocator
 * other than glibc's) sends the call to its out-of-line writer (mt_rec_block_slow, mt_rec_plain_slow),
 * which does it all (rec_begin .. rec_end). Both write the same bytes. */

/* Begins a record on the hot path: enters the shim and returns where the record goes, or NULL when
 * the general path has to write it (it enters again, harmlessly). The tests come after entering:
 * a signal handler's call recorded before that may have moved pos. One test covers a full chunk,
 * no chunk yet, and a process whose every call takes the general path (stacks, an allocator other
 * than glibc's): t->end is NULL then (open_chunk). */
static inline uint8_t *rec_begin_fast(mt_thread_t *t, uint64_t now)
{
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint8_t *p = t->pos;
    if (MT_UNLIKELY(p >= t->end || now >= atomic_load_explicit(&mt_g.next_rss_time, memory_order_relaxed)))
        return NULL;
    if (!p) /* cannot be: pos and end are set together, and are NULL only together */
        __builtin_unreachable();
    return p;
}

static inline void rec_end_fast(mt_thread_t *t, uint8_t *end)
{
    t->pos = end;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
}

/* glibc's heap top, what sbrk(0) returns, as one load of __curbrk (mt_g.curbrk, which points at a
 * word that stays 0 unless glibc's malloc answers): about 2 ns less than the call. Read before and
 * after the real call, it tells whether that call moved the top (MT_XF_HEAP_GREW). Nothing shared is
 * written: a top kept for the whole process, written by whichever thread saw it move, would be a
 * cache line that every call of every thread reads and some of them write. */
static inline uintptr_t heap_top(void)
{
    return (uintptr_t)*mt_g.curbrk;
}

/* The size a block call asked for (mt_requested), from the hooks' arguments: calloc's and
 * reallocarray's count and size are n1 and n2, the aligned calls' alignment and size too, the others'
 * size is n1. */
static inline uint64_t requested_size(unsigned op, uint64_t n1, uint64_t n2)
{
    const int size_second = op == MT_OP_CALLOC || op == MT_OP_REALLOCARRAY || op == MT_OP_MEMALIGN ||
                            op == MT_OP_ALIGNED_ALLOC || op == MT_OP_POSIX_MEMALIGN;
    return mt_requested(op, n1, size_second ? n2 : n1);
}

/* Encodes at p the record of a call that returned block r (NULL: failed; `err` is posix_memalign's
 * error) and returns its end; `moved`: the call moved the heap top. Always inlined with a constant
 * op, so that the encoder's per-op switch and tests fold away; `glibc` is constant 1 on the hot path.
 * With glibc, h is r's chunk header word (read once by the caller, which needs it for the page
 * evidence too): it gives both the MMAPPED flag and the usable size. */
static inline __attribute__((always_inline)) uint8_t *enc_block(mt_thread_t *t, uint8_t *p, unsigned op, uint64_t now,
                                                                const void *arg, uint64_t n1, uint64_t n2, void *r,
                                                                int err, uint32_t stack, int glibc, size_t h, int moved)
{
    const uint64_t requested = requested_size(op, n1, n2);
    uint8_t ext = (stack ? MT_XF_STACK : 0) | (moved ? MT_XF_HEAP_GREW : 0);
    unsigned b0 = op;
    int64_t slack = 0;
    if (glibc) {
        if (r) {
            b0 |= (h & 2) ? MT_RF_MMAPPED : 0;
            slack = (int64_t)(mt_glibc_usable(h) - requested);
        }
    } else if (r) {
        slack = (int64_t)(mt_g.real.malloc_usable_size(r) - requested);
    }
    if (!r)
        b0 |= MT_RF_NULL;
    return mt_enc_call(&t->enc, p, MT_TRACE_VERSION, b0, ext, now, (uint64_t)(uintptr_t)arg, n1, n2,
                       r ? (uint64_t)(uintptr_t)r : (uint64_t)err, slack, stack);
}

/* Before the call that ends glibc block p (free, realloc): its page evidence, when it is large or an
 * edge block.
 * Returns the time of the call: `now`, or for a large block a fresh read (mt_now_fresh), so that an
 * RSS sample due is taken while the block is still there, also where calls share the time of a
 * read made several calls ago. */
static inline uint64_t pages_at_end(mt_thread_t *t, uint64_t now, const void *p)
{
    if (MT_UNLIKELY(p && mt_g.glibc)) {
        const size_t h = mt_glibc_chunk_word(p);
        if (MT_UNLIKELY(mt_pages_wanted(h))) {
            now = mt_now_fresh(t);
            mt_pages_event(now, p, mt_glibc_usable(h), MT_PAGES_AT_END, 0);
        } else if (MT_UNLIKELY(mt_edge_wanted(h))) {
            mt_edge_ended(now, p);
        }
    }
    return now;
}

/* Before realloc's real call on glibc block p: its page evidence, when it is large (at a fresh read)
 * or an edge block.
 * The call's record takes its time after the real call, as every call that makes a block does. */
static inline void pages_before_end(mt_thread_t *t, const void *p)
{
    if (MT_UNLIKELY(p && mt_g.glibc)) {
        const size_t h = mt_glibc_chunk_word(p);
        if (MT_UNLIKELY(mt_pages_wanted(h)))
            mt_pages_event(mt_now_fresh(t), p, mt_glibc_usable(h), MT_PAGES_AT_END, 0);
        else if (MT_UNLIKELY(mt_edge_wanted(h)))
            mt_edge_ended(mt_now_of(t), p);
    }
}

/* Passes "the call moved the heap top" to mt_rec_block_slow in its op argument, above the first byte. */
#define REC_MOVED 0x100u

/* The general path (shim_record.c): writers of a call's record when the hot path cannot, and the page
 * evidence of a large block just made. */
__attribute__((noinline)) void *mt_rec_block_slow(unsigned op_flags, uint64_t now, const void *arg, uint64_t n1,
                                                  uint64_t n2, uint64_t result);
__attribute__((noinline)) void mt_rec_plain_slow(unsigned op, uint64_t now, const void *ptr, uint64_t n1, uint64_t n2,
                                                 uint64_t result);
__attribute__((noinline)) void *mt_pages_at_alloc(uint64_t now, void *r, size_t h);

/* Records a call that returns a block, and returns r; `top` is the heap top read before the call. */
static inline __attribute__((always_inline)) void *rec_block(mt_thread_t *t, unsigned op, uint64_t now, uintptr_t top,
                                                             const void *arg, uint64_t n1, uint64_t n2, void *r,
                                                             int err)
{
    const int moved = heap_top() != top;
    uint8_t *p = rec_begin_fast(t, now);
    if (MT_UNLIKELY(!p)) /* p: only where glibc's malloc answers (mt_g.hot_path) */
        return mt_rec_block_slow((r ? op : op | MT_RF_NULL) | (moved ? REC_MOVED : 0), now, arg, n1, n2,
                                 r ? (uint64_t)(uintptr_t)r : (uint64_t)(int64_t)err);
    const size_t h = r ? mt_glibc_chunk_word(r) : 0;
    rec_end_fast(t, enc_block(t, p, op, now, arg, n1, n2, r, err, 0, 1, h, moved));
    if (mt_evidence_wanted(h))               /* h 0: no block */
        return mt_pages_at_alloc(now, r, h); /* returns r: a jump, so r needs no saved register */
    return r;
}

/* Records a call that returns no block on the hot path; 0 when the general path has to. */
static inline __attribute__((always_inline)) int
rec_plain_fast(mt_thread_t *t, unsigned op, uint64_t now, const void *ptr, uint64_t n1, uint64_t n2, uint64_t result)
{
    uint8_t *p = rec_begin_fast(t, now);
    if (MT_UNLIKELY(!p))
        return 0;
    rec_end_fast(t,
                 mt_enc_call(&t->enc, p, MT_TRACE_VERSION, op, 0, now, (uint64_t)(uintptr_t)ptr, n1, n2, result, 0, 0));
    return 1;
}

#pragma GCC visibility pop

#endif
