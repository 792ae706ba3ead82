/* The record writer's general path: what the hot path (shim_record.h) hands over, a stack id to
 * take, a new chunk to claim, an RSS sample due, an allocator other than glibc's; and the page
 * evidence of large blocks. Writes the same bytes as the hot path. */
#define _GNU_SOURCE
#include "shim_record.h"

/* Begins a record on the general path: returns where its first byte goes, or NULL if the call goes
 * unrecorded. With stacks on, the caller's stack id goes to *stack; a new stack's definition is
 * written first. */
static inline uint8_t *rec_begin(mt_thread_t *t, uint64_t now, uint32_t *stack)
{
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (MT_UNLIKELY(mt_g.opt.stacks))
        *stack = mt_stack_id(t);
    uint8_t *p = t->pos;
    if (MT_UNLIKELY(!p || p >= mt_records_end(t->chunk))) {
        p = mt_thread_reserve(t, now);
        if (!p) {
            t->lost++;
            t->busy = 0;
        }
    }
    return p;
}

/* Ends a record: moves past it, takes an RSS sample when one is due, leaves the shim. */
static inline void rec_end(mt_thread_t *t, uint8_t *end, uint64_t now)
{
    t->pos = end;
    if (MT_UNLIKELY(now >= atomic_load_explicit(&mt_g.next_rss_time, memory_order_relaxed)))
        mt_sample_rss(t, now);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
}

/* After the call that made glibc block r: its page evidence, when it is large. A chunk glibc mapped
 * for it is fresh (no whole page resident), which spares the syscall on the common large case.
 * Returns r. */
void *mt_pages_at_alloc(uint64_t now, void *r, size_t h)
{
    if (mt_pages_wanted(h))
        mt_pages_event(now, r, mt_glibc_usable(h), MT_PAGES_AT_ALLOC, (h & 2) != 0);
    else
        mt_edge_made(r, h);
    return r;
}

/* The general writer of a call that returns a block. `op_flags` is the op, with MT_RF_NULL when the
 * call failed and REC_MOVED when it moved the heap top; `result` the block, or posix_memalign's error
 * when it failed (six arguments: the hot path's call here is a jump). Returns the block. */
void *mt_rec_block_slow(unsigned op_flags, uint64_t now, const void *arg, uint64_t n1, uint64_t n2, uint64_t result)
{
    mt_thread_t *t = &mt_self;
    const unsigned op = op_flags & MT_RF_OPMASK;
    void *r = (op_flags & MT_RF_NULL) ? NULL : (void *)(uintptr_t)result;
    const int err = r ? 0 : (int)result;
    uint32_t stack = 0;
    uint8_t *p = rec_begin(t, now, &stack);
    const size_t h = r && mt_g.glibc ? mt_glibc_chunk_word(r) : 0;
    if (p)
        rec_end(t, enc_block(t, p, op, now, arg, n1, n2, r, err, stack, mt_g.glibc, h, (op_flags & REC_MOVED) != 0),
                now);
    if (mt_evidence_wanted(h))
        mt_pages_at_alloc(now, r, h);
    return r;
}

/* The general writer of a call that returns no block (free, malloc_usable_size, mallopt, malloc_trim). */
void mt_rec_plain_slow(unsigned op, uint64_t now, const void *ptr, uint64_t n1, uint64_t n2, uint64_t result)
{
    mt_thread_t *t = &mt_self;
    uint32_t stack = 0;
    uint8_t *p = rec_begin(t, now, &stack);
    if (!p)
        return;
    uint8_t *q = mt_enc_call(&t->enc, p, MT_TRACE_VERSION, op, stack ? MT_XF_STACK : 0, now, (uint64_t)(uintptr_t)ptr,
                             n1, n2, result, 0, stack);
    rec_end(t, q, now);
}
