/* The interposed allocation API of libmtrace.so: malloc, free, calloc, realloc, reallocarray, the
 * aligned family, malloc_usable_size, mallopt and malloc_trim.
 *
 * Hot path of every call: one TLS load for the thread's state, one read of a global flag, the real
 * call, the timestamp, and the record written into the thread's own chunk (shim_record.h). No lock,
 * no syscall, no malloc, no write to memory another thread writes.
 *
 * When. A call that returns a block takes its time after the real call, every other call before:
 * the block it got may be one another thread freed while this call waited for the allocator's lock,
 * and that free's record must come first by time. Taken at entry, 11 to 28 of 600 000 records of two
 * threads freeing each other's blocks on 2 CPUs (`bench/churn -x -t 2 -n 300000`) came before the
 * free that gave them their block; taken at return, 4 to 6, all of them reallocs that moved their
 * block (doc/trace-format.md, "Call records").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "shim_record.h"

/* free's general path: a boot-pool block (kept), the page evidence of a large block, the record,
 * then the real free. */
static __attribute__((noinline)) void free_slow(uint64_t now, void *ptr)
{
    if (MT_UNLIKELY(mt_is_boot(ptr)))
        return;
    now = pages_at_end(&mt_self, now, ptr);
    mt_rec_plain_slow(MT_OP_FREE, now, ptr, 0, 0, 0);
    mt_g.real.free(ptr);
}

/* free when pass_through() holds, out of line like free_slow: free then saves no register. */
static __attribute__((noinline)) void free_unrecorded(void *ptr)
{
    mt_thread_t *t = &mt_self;
    if (MT_UNLIKELY(mt_is_boot(ptr) || !mt_init()))
        return;
    if (pass_through(t)) {
        count_lost(t);
        mt_g.real.free(ptr);
        return;
    }
    free_slow(mt_now_of(t), ptr); /* this call started tracing: it is the first one recorded */
}

/* ---- the interposed API ------------------------------------------------------------------------ */

MT_EXPORT void *malloc(size_t size)
{
    mt_thread_t *t = &mt_self;
    if (MT_UNLIKELY(pass_through(t))) {
        if (t->busy == MT_BUSY_PROBE)
            t->busy = MT_BUSY_PROBED;
        if (MT_UNLIKELY(!mt_init()))
            return mt_boot_alloc(size, 16);
        if (pass_through(t)) { /* else this call started tracing: it is the first one recorded */
            count_lost(t);
            return mt_g.real.malloc(size);
        }
    }
    const uintptr_t top = heap_top();
    void *r = mt_g.real.malloc(size);
    return rec_block(t, MT_OP_MALLOC, mt_now_of(t), top, NULL, size, 0, r, 0);
}

MT_EXPORT void free(void *ptr)
{
    mt_thread_t *t = &mt_self;
    /* A boot-pool block is not glibc's: every path out of here tests for one, the hot path by the
     * word before it (MT_BOOT_CHUNK_WORD), which sends it to free_slow. */
    if (MT_UNLIKELY(pass_through(t))) {
        free_unrecorded(ptr);
        return;
    }
    const uint64_t now = mt_now_of(t);
    /* Recorded before the real free: once free returns, another thread may get the same address,
     * and its record must not be able to precede ours in the file of this thread's events. A large
     * block's page evidence (pages_at_end) comes first, on the general path: free's hot path then
     * makes no call before its last jump and saves no register. A hot path implies glibc's malloc,
     * whose chunk header ptr has. */
    uint8_t *p = rec_begin_fast(t, now);
    if (MT_UNLIKELY(!p || (ptr && mt_evidence_wanted(mt_glibc_chunk_word(ptr))))) {
        t->busy = 0; /* left as it was found: the general path enters again */
        free_slow(now, ptr);
        return;
    }
    rec_end_fast(
        t, mt_enc_call(&t->enc, p, MT_TRACE_VERSION, MT_OP_FREE, 0, now, (uint64_t)(uintptr_t)ptr, 0, 0, 0, 0, 0));
    mt_g.real.free(ptr);
}

MT_EXPORT void *calloc(size_t n, size_t size)
{
    mt_thread_t *t = &mt_self;
    if (MT_UNLIKELY(pass_through(t))) {
        if (MT_UNLIKELY(!mt_init())) {
            size_t bytes;
            return __builtin_mul_overflow(n, size, &bytes) ? NULL : mt_boot_alloc(bytes, 16);
        }
        if (pass_through(t)) {
            count_lost(t);
            return mt_g.real.calloc(n, size);
        }
    }
    const uintptr_t top = heap_top();
    void *r = mt_g.real.calloc(n, size);
    return rec_block(t, MT_OP_CALLOC, mt_now_of(t), top, NULL, n, size, r, 0);
}

MT_EXPORT void *realloc(void *ptr, size_t size)
{
    mt_thread_t *t = &mt_self;
    if (MT_UNLIKELY(mt_is_boot(ptr))) {
        void *r = malloc(size);
        if (r)
            memcpy(r, ptr, mt_boot_size(ptr) < size ? mt_boot_size(ptr) : size);
        return r;
    }
    if (MT_UNLIKELY(pass_through(t))) {
        if (MT_UNLIKELY(!mt_init()))
            return ptr ? NULL : mt_boot_alloc(size, 16);
        if (pass_through(t)) {
            count_lost(t);
            return mt_g.real.realloc(ptr, size);
        }
    }
    pages_before_end(t, ptr);
    const uintptr_t top = heap_top();
    void *r = mt_g.real.realloc(ptr, size);
    return rec_block(t, MT_OP_REALLOC, mt_now_of(t), top, ptr, size, 0, r, 0);
}

MT_EXPORT void *reallocarray(void *ptr, size_t n, size_t size)
{
    mt_thread_t *t = &mt_self;
    if (MT_UNLIKELY(mt_is_boot(ptr) || pass_through(t))) {
        size_t bytes;
        if (__builtin_mul_overflow(n, size, &bytes)) {
            errno = ENOMEM;
            return NULL;
        }
        if (mt_is_boot(ptr) || !mt_init())
            return realloc(ptr, bytes);
        if (pass_through(t)) {
            count_lost(t);
            return mt_g.real.reallocarray(ptr, n, size);
        }
    }
    pages_before_end(t, ptr);
    const uintptr_t top = heap_top();
    void *r = mt_g.real.reallocarray(ptr, n, size);
    return rec_block(t, MT_OP_REALLOCARRAY, mt_now_of(t), top, ptr, n, size, r, 0);
}

/* The aligned family: memalign, aligned_alloc, valloc, pvalloc share one shape. */
#define ALIGNED_HOOK(name, op, boot_align, args, call_args, n1, n2)                                                    \
    MT_EXPORT void *name args                                                                                          \
    {                                                                                                                  \
        mt_thread_t *t = &mt_self;                                                                                     \
        if (MT_UNLIKELY(pass_through(t))) {                                                                            \
            if (MT_UNLIKELY(!mt_init()))                                                                               \
                return mt_boot_alloc(size, boot_align);                                                                \
            if (pass_through(t)) {                                                                                     \
                count_lost(t);                                                                                         \
                return mt_g.real.name call_args;                                                                       \
            }                                                                                                          \
        }                                                                                                              \
        const uintptr_t top = heap_top();                                                                              \
        void *r = mt_g.real.name call_args;                                                                            \
        return rec_block(t, op, mt_now_of(t), top, NULL, n1, n2, r, 0);                                                \
    }

ALIGNED_HOOK(memalign, MT_OP_MEMALIGN, align, (size_t align, size_t size), (align, size), align, size)
ALIGNED_HOOK(aligned_alloc, MT_OP_ALIGNED_ALLOC, align, (size_t align, size_t size), (align, size), align, size)
ALIGNED_HOOK(valloc, MT_OP_VALLOC, 4096, (size_t size), (size), size, 0)
ALIGNED_HOOK(pvalloc, MT_OP_PVALLOC, 4096, (size_t size), (size), size, 0)

MT_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
    mt_thread_t *t = &mt_self;
    if (MT_UNLIKELY(pass_through(t))) {
        if (MT_UNLIKELY(!mt_init())) {
            *out = mt_boot_alloc(size, align);
            return *out ? 0 : ENOMEM;
        }
        if (pass_through(t)) {
            count_lost(t);
            return mt_g.real.posix_memalign(out, align, size);
        }
    }
    const uintptr_t top = heap_top();
    const int rc = mt_g.real.posix_memalign(out, align, size);
    rec_block(t, MT_OP_POSIX_MEMALIGN, mt_now_of(t), top, NULL, align, size, rc == 0 ? *out : NULL, rc);
    return rc;
}

MT_EXPORT size_t malloc_usable_size(void *ptr)
{
    mt_thread_t *t = &mt_self;
    if (MT_UNLIKELY(mt_is_boot(ptr)))
        return mt_boot_size(ptr);
    if (MT_UNLIKELY(pass_through(t))) {
        if (MT_UNLIKELY(!mt_init()))
            return 0;
        if (pass_through(t))
            return mt_g.real.malloc_usable_size(ptr);
    }
    const uint64_t now = mt_now_of(t);
    const size_t n = mt_g.real.malloc_usable_size(ptr);
    if (MT_UNLIKELY(!rec_plain_fast(t, MT_OP_USABLE_SIZE, now, ptr, n, 0, 0)))
        mt_rec_plain_slow(MT_OP_USABLE_SIZE, now, ptr, n, 0, 0);
    return n;
}

MT_EXPORT int mallopt(int param, int value)
{
    mt_thread_t *t = &mt_self;
    if (!mt_init() || !mt_g.real.mallopt)
        return 0;
    const uint64_t now = mt_now_of(t);
    const int rc = mt_g.real.mallopt(param, value);
    if (pass_through(t))
        return rc;
    mt_rec_plain_slow(MT_OP_MALLOPT, now, NULL, (uint64_t)(int64_t)param, (uint64_t)(int64_t)value,
                      (uint64_t)(int64_t)rc);
    return rc;
}

/* Rare and slow (glibc walks every arena and gives free pages back): the general path. */
MT_EXPORT int malloc_trim(size_t pad)
{
    mt_thread_t *t = &mt_self;
    if (!mt_init() || !mt_g.real.malloc_trim)
        return 0;
    const uint64_t now = mt_now_of(t);
    const int rc = mt_g.real.malloc_trim(pad);
    if (pass_through(t))
        return rc;
    mt_rec_plain_slow(MT_OP_MALLOC_TRIM, now, NULL, pad, 0, (uint64_t)(int64_t)rc);
    return rc;
}
