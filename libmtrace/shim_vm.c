/* Anonymous memory the program maps itself (MT_EV_VM): mmap, munmap, mremap, madvise, brk and sbrk,
 * interposed.
 *
 * Programs keep much of their memory outside malloc: Python's object arenas, a compiler's
 * garbage-collected pages, any custom pool allocator. A replay of the malloc calls alone then
 * reports a fraction of the program's RSS (a Python script: 8 of 47 MB, bench/RESULTS.md "Replay
 * fidelity"), and every comparison is relative to the wrong total. So the program's own anonymous
 * mappings are recorded with their resident pages when unmapped, and replayed as mappings; the
 * pages an madvise() drops, with those resident before it; and the pages the program's own brk()
 * and sbrk() add to or take from the break, as mappings of those pages.
 *
 * Private file mappings opened for writing are recorded too, counted by the pages the program
 * copied on write (its own memory; the rest are the file's); and the writable segments of libraries
 * loaded while tracing (shim_loaded.c).
 *
 * Not recorded: other file mappings and shared anonymous ones (shared memory, which the RSS counts
 * with the file pages), except that one made with MAP_FIXED unmaps what it replaces, nor a mremap()
 * of one (they are listed, shim_vmlive.c, to know it by); the shim's own
 * mappings (made while busy); the allocator's, when it calls mmap, madvise or sbrk through the PLT
 * (jemalloc, tcmalloc, mimalloc: the caller's object is the allocator's; glibc's malloc calls its
 * internal mmap, madvise and sbrk, which do not come here); madvise() advice other than
 * MADV_DONTNEED, MADV_FREE and MADV_REMOVE (the others drop no page: hints, or MADV_PAGEOUT and
 * MADV_POPULATE_*, which the replay does not imitate). These calls are system calls already: the
 * shim's work here, a dladdr() for non-glibc allocators and a mincore() before an unmap, an
 * madvise or a shrinking break, is of the same order.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

/* Whether this call is the program's to record: tracing on, the shim not busy, and (under an
 * allocator other than glibc's) the caller not the allocator. */
static int recordable(const void *caller)
{
    if (mt_self.busy || atomic_load_explicit(&mt_g.off, memory_order_relaxed) || !mt_g.real.malloc)
        return 0;
    if (mt_g.glibc || !mt_g.alloc_base)
        return 1;
    Dl_info info;
    return !(dladdr(caller, &info) && info.dli_fbase == mt_g.alloc_base);
}

/* Resident whole pages of [a, a + len); 0 when the range is not (all) mapped. Of a private file
 * mapping opened for writing, those copied on write: its other pages are the file's. */
static uint64_t resident(uintptr_t a, size_t len)
{
    uint64_t lo;
    const uint64_t whole = mt_whole_pages(a, len, mt_g.page_size, &lo);
    if (!whole)
        return 0;
    const uint64_t n = mt_vmlive_kind(a) == MT_VL_COPIED ? mt_copied_pages((uintptr_t)lo, whole)
                                                         : mt_resident_pages((uintptr_t)lo, whole, 0, 1);
    return n == UINT64_MAX ? 0 : n;
}

/* Ranges given back at once from this length on take an RSS sample before the call, due or not. */
#define SAMPLE_BEFORE_BYTES (1u << 20)

/* Takes the RSS sample that is due, if one is; before a call that gives back `len` bytes or more
 * (SAMPLE_BEFORE_BYTES), a sample whether one is due or not. A program that lives on memory it
 * manages itself makes few malloc calls, after whose records samples are taken otherwise; and its
 * peak comes just before it gives memory back, so each recorded call takes the sample before the
 * call. A peak reached less than a period after the last sample was missed, though, where no call
 * came between: ld.gold writes its 2 MB output into a shared file mapping and unmaps it, and its
 * traced peak RSS came out 10 % under the native one. */
static void sample_due(size_t len)
{
    const uint64_t now = mt_now();
    const int due = now >= atomic_load_explicit(&mt_g.next_rss_time, memory_order_relaxed);
    if (!due && len < SAMPLE_BEFORE_BYTES)
        return;
    mt_thread_t *t = &mt_self;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (due)
        mt_sample_rss(t, now);
    else
        mt_sample_rss_now(t);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
}

/* Writes a VM event into t's stream, t->busy held; `fifth` (the advice, or MT_VM_VIA_*) only when
 * `has_fifth`. A mapping made is listed as `listed` (shim_vmlive.c). */
static void emit_vm(mt_thread_t *t, uint64_t now, unsigned kind, const void *addr, size_t len, uint64_t pages,
                    int has_fifth, uint64_t fifth, mt_vl_kind_t listed)
{
    uint8_t payload[50], *q = payload;
    q = mt_put_uvarint(q, kind);
    q = mt_put_uvarint(q, (uint64_t)(uintptr_t)addr);
    q = mt_put_uvarint(q, len);
    q = mt_put_uvarint(q, pages);
    if (has_fifth)
        q = mt_put_uvarint(q, fifth);
    mt_emit_event_at(t, MT_EV_VM, now, payload, (size_t)(q - payload));
    if (kind == MT_VM_MAP)
        mt_vmlive_mapped((uintptr_t)addr, len, listed);
    else if (kind == MT_VM_UNMAP)
        mt_vmlive_unmapped((uintptr_t)addr, len);
}

static void vm_event5(uint64_t now, unsigned kind, const void *addr, size_t len, uint64_t pages, int has_fifth,
                      uint64_t fifth, mt_vl_kind_t listed)
{
    mt_thread_t *t = &mt_self;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    emit_vm(t, now, kind, addr, len, pages, has_fifth, fifth, listed);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
}

void mt_vm_loaded(mt_thread_t *t, uintptr_t a, uint64_t len, int made, uint64_t pages)
{
    emit_vm(t, mt_now(), made ? MT_VM_MAP : MT_VM_UNMAP, (const void *)a, len, pages, 0, 0, MT_VL_COPIED);
}

static void vm_event(uint64_t now, unsigned kind, const void *addr, size_t len, uint64_t pages)
{
    vm_event5(now, kind, addr, len, pages, 0, 0, MT_VL_ANON);
}

static void *real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (mt_g.real.mmap)
        return mt_g.real.mmap(addr, len, prot, flags, fd, off);
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static int real_munmap(void *addr, size_t len)
{
    if (mt_g.real.munmap)
        return mt_g.real.munmap(addr, len);
    return (int)syscall(SYS_munmap, addr, len);
}

/* Both names are exported under their own symbols: with _FILE_OFFSET_BITS=64 the headers turn a
 * definition of mmap into one of mmap64 (on x86-64 they are the same call). */
void *hook_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) __asm__("mmap");
void *hook_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) __asm__("mmap64");

/* Whether a mapping of these flags is anonymous memory as the RSS counts it: private anonymous
 * pages. A shared anonymous mapping (a server's shared buffers: postgres maps 143 MiB so) is shared
 * memory, which statm counts with the file pages, so the traced program's anonymous RSS leaves it
 * out and the replay's prediction takes it with the program's file-backed pages: replayed as a
 * private mapping too, it was counted twice (postgres --single: 1.35 of native). */
static int anonymous_private(int flags)
{
    return (flags & MAP_ANONYMOUS) && !(flags & MAP_SHARED); /* MAP_SHARED_VALIDATE has this bit too */
}

/* Whether a mapping is a file's, private and writable: the pages the program writes are copied from
 * the file into anonymous memory, its own, and the others stay the file's. A Java VM maps its class
 * data archive so and relocates it: 10 MB of anonymous pages that no malloc call and no anonymous
 * mapping showed (java -version: predicted 0.72 of native). Written as a mapping made with no page,
 * and counted at its end by its pages copied (MT_VL_COPIED). */
static int copied_private(int flags, int prot)
{
    return !(flags & (MAP_ANONYMOUS | MAP_SHARED)) && (prot & PROT_WRITE);
}

/* Lists a mapping that is not the program's anonymous memory (MT_VL_OTHER), made at addr or
 * moved there from `from` (NULL: made). */
static void list_other(const void *from, size_t from_len, const void *addr, size_t len)
{
    mt_thread_t *t = &mt_self;
    const int saved = errno;
    t->busy = 1; /* the list may map more memory for itself */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (from)
        mt_vmlive_unmapped((uintptr_t)from, from_len);
    mt_vmlive_mapped((uintptr_t)addr, len, MT_VL_OTHER);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
    errno = saved;
}

MT_EXPORT void *hook_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (!recordable(__builtin_return_address(0)))
        return real_mmap(addr, len, prot, flags, fd, off);
    /* MAP_FIXED_NOREPLACE replaces nothing: it fails where anything is mapped */
    const int fixed = (flags & MAP_FIXED) != 0, own = anonymous_private(flags), copied = copied_private(flags, prot);
    if (own || copied || fixed)
        sample_due(fixed ? len : 0);
    const uint64_t now = own || copied || fixed ? mt_now() : 0;
    if (fixed) /* what it replaces is unmapped, whatever takes its place (a file, shared memory) */
        vm_event(now, MT_VM_UNMAP, addr, len, resident((uintptr_t)addr, len));
    void *r = real_mmap(addr, len, prot, flags, fd, off);
    if (r == MAP_FAILED)
        return r;
    if (!own && !copied) {
        list_other(NULL, 0, r, len);
        return r;
    }
    const int saved = errno;
    if (own)
        vm_event(now, MT_VM_MAP, r, len, (flags & MAP_POPULATE) ? resident((uintptr_t)r, len) : 0);
    else /* none copied yet: MAP_POPULATE reads the file's pages in, and writes none */
        vm_event5(now, MT_VM_MAP, r, len, 0, 0, 0, MT_VL_COPIED);
    errno = saved;
    return r;
}

MT_EXPORT void *hook_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));

MT_EXPORT int munmap(void *addr, size_t len)
{
    if (!recordable(__builtin_return_address(0)))
        return real_munmap(addr, len);
    sample_due(len);
    const uint64_t now = mt_now();
    const uint64_t pages = resident((uintptr_t)addr, len);
    const int rc = real_munmap(addr, len);
    if (rc == 0) {
        const int saved = errno;
        vm_event(now, MT_VM_UNMAP, addr, len, pages);
        errno = saved;
    }
    return rc;
}

static void *real_mremap(void *old, size_t old_len, size_t new_len, int flags, void *want)
{
    if (mt_g.real.mremap)
        return mt_g.real.mremap(old, old_len, new_len, flags, want);
    return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, want);
}

MT_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    void *want = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    const int rec = recordable(__builtin_return_address(0));
    const int listed = rec ? mt_vmlive_kind((uintptr_t)old) : -1;
    if (listed == MT_VL_OTHER) {
        /* A file mapping or shared memory moved or resized is not the program's anonymous memory:
         * written as a mapping made, its pages were replayed as the program's own (a shared
         * mapping grown by mremap: counted twice, as postgres's buffers once were). It stays
         * listed as what it is, at its new place. */
        void *r = real_mremap(old, old_len, new_len, flags, want);
        if (r != MAP_FAILED)
            list_other(old, old_len, r, new_len);
        return r;
    }
    if (rec)
        sample_due(old_len > new_len ? old_len - new_len : 0);
    const uint64_t now = rec ? mt_now() : 0;
    const uint64_t pages = rec ? resident((uintptr_t)old, old_len) : 0;
    void *r = real_mremap(old, old_len, new_len, flags, want);
    if (rec && r != MAP_FAILED) {
        const int saved = errno;
        /* The pages moved with the mapping: resident in the new range as they were in the old (of
         * a private file mapping, those copied: the count before) */
        vm_event(now, MT_VM_UNMAP, old, old_len, pages);
        if (listed == MT_VL_COPIED)
            vm_event5(now, MT_VM_MAP, r, new_len, pages, 0, 0, MT_VL_COPIED);
        else
            vm_event(now, MT_VM_MAP, r, new_len, resident((uintptr_t)r, new_len));
        errno = saved;
    }
    return r;
}

/* ---- madvise ---------------------------------------------------------------------------------- */

/* The advice that takes pages out of the RSS (MADV_FREE: once the kernel reclaims them; the replay
 * gives the same advice, so it does as the kernel does). */
static int drops_pages(int advice)
{
    return advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE;
}

MT_EXPORT int madvise(void *addr, size_t len, int advice)
{
    const int rec = drops_pages(advice) && recordable(__builtin_return_address(0));
    if (rec)
        sample_due(len);
    const uint64_t now = rec ? mt_now() : 0;
    const uint64_t pages = rec ? resident((uintptr_t)addr, len) : 0;
    const int rc =
        mt_g.real.madvise ? mt_g.real.madvise(addr, len, advice) : (int)syscall(SYS_madvise, addr, len, advice);
    if (rec && rc == 0) {
        const int saved = errno;
        vm_event5(now, MT_VM_ADVISE, addr, len, pages, 1, (uint64_t)advice, MT_VL_ANON);
        errno = saved;
    }
    return rc;
}

/* ---- brk and sbrk ----------------------------------------------------------------------------- */

/* glibc's own sbrk, exported under this name too: it keeps the break libc caches (__curbrk), which a
 * raw system call would leave wrong for glibc's malloc. */
extern void *__sbrk(intptr_t increment);

static uintptr_t page_up(uintptr_t a)
{
    return (a + mt_g.page_size - 1) & ~(uintptr_t)(mt_g.page_size - 1);
}

/* Moves the break by `incr` for the program: the kernel maps or unmaps the whole pages between the
 * old break and the new one, rounded up, and those pages are what the event names. */
static void *move_break(intptr_t incr)
{
    sample_due(incr < 0 ? (size_t)-incr : 0);
    const uintptr_t old = (uintptr_t)__sbrk(0);
    const uintptr_t lo = page_up(incr < 0 ? old + (uintptr_t)incr : old);
    const uintptr_t hi = page_up(incr < 0 ? old : old + (uintptr_t)incr);
    const uint64_t now = mt_now();
    const uint64_t pages = incr < 0 && hi > lo ? resident(lo, hi - lo) : 0;
    void *r = __sbrk(incr);
    if (r != (void *)-1 && hi > lo) {
        const int saved = errno;
        vm_event5(now, incr < 0 ? MT_VM_UNMAP : MT_VM_MAP, (void *)lo, hi - lo, pages, 1, MT_VM_VIA_BRK, MT_VL_ANON);
        errno = saved;
    }
    return r;
}

MT_EXPORT void *sbrk(intptr_t incr)
{
    if (!incr || !recordable(__builtin_return_address(0)))
        return __sbrk(incr);
    return move_break(incr);
}

MT_EXPORT int brk(void *addr)
{
    const intptr_t incr = (intptr_t)((uintptr_t)addr - (uintptr_t)__sbrk(0));
    void *r = incr && recordable(__builtin_return_address(0)) ? move_break(incr) : __sbrk(incr);
    return r == (void *)-1 ? -1 : 0;
}
