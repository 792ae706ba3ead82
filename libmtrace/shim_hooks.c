/* The interposed functions of libmtrace.so and the shim's start-up.
 *
 * Hot path of every call: one TLS load for the thread's state, one read of a global flag, the
 * timestamp, the real call, and the record written into the thread's own chunk. No lock, no syscall,
 * no malloc, no write to memory another thread writes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mtrace.h"
#include "same_object.h"
#include "shim.h"

mt_global_t mt_g = { .fd = -1, .off = 1 };
MT_TLS mt_thread_t mt_self;

/* ---- start-up ---------------------------------------------------------------------------------- */

/* dlsym may allocate before the real allocator is known: those requests are served from here and
 * never freed. Each block carries its size so that realloc can move it out. */
static _Alignas(64) uint8_t boot_pool[64 * 1024];
static _Atomic size_t boot_used;

static void *boot_alloc(size_t size, size_t align)
{
    if (align < 16)
        align = 16;
    for (;;) {
        size_t used = atomic_load(&boot_used);
        size_t start = (used + 16 + align - 1) & ~(align - 1);
        if (start + size > sizeof boot_pool || size > sizeof boot_pool)
            return NULL;
        if (atomic_compare_exchange_weak(&boot_used, &used, start + size)) {
            memcpy(boot_pool + start - sizeof size, &size, sizeof size);
            return boot_pool + start; /* static storage: already zeroed */
        }
    }
}

static inline int is_boot(const void *p)
{
    return (const uint8_t *)p >= boot_pool && (const uint8_t *)p < boot_pool + sizeof boot_pool;
}

static size_t boot_size(const void *p)
{
    size_t n;
    memcpy(&n, (const uint8_t *)p - sizeof n, sizeof n);
    return n;
}

static void *(*real_fork_fn)(void);
static int (*real_execve)(const char *, char *const[], char *const[]);
static int (*real_execv)(const char *, char *const[]);
static int (*real_execvp)(const char *, char *const[]);
static int (*real_execvpe)(const char *, char *const[], char *const[]);
static int (*real_fexecve)(int, char *const[], char *const[]);
static int (*real_execveat)(int, const char *, char *const[], char *const[], int);
typedef int (*pthread_create_fn_t)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static pthread_create_fn_t real_pthread_create;
typedef void (*exit_fn_t)(int) __attribute__((noreturn));
static exit_fn_t real_exit_fn, real_Exit_fn;

/* Emulations used when the next allocator lacks an entry point that libc provides: calling libc's
 * version would hand a foreign block to glibc's allocator. */
static void *emu_memalign(size_t align, size_t size)
{
    void *p = NULL;
    return mt_g.real.posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size) ? NULL : p;
}

static void *emu_aligned_alloc(size_t align, size_t size)
{
    return mt_g.real.memalign(align, size);
}

static void *emu_valloc(size_t size)
{
    return mt_g.real.memalign((size_t)sysconf(_SC_PAGESIZE), size);
}

static void *emu_pvalloc(size_t size)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return mt_g.real.memalign(page, (size + page - 1) & ~(page - 1));
}

static void *emu_reallocarray(void *p, size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return mt_g.real.realloc(p, bytes);
}

static size_t emu_usable_size(void *p)
{
    (void)p;
    return 0;
}

/* Resolves `name` in the objects after ours; NULL unless it comes from the same object as malloc. */
static void *resolve_same(const char *name, const void *malloc_base)
{
    return mt_sym_in_object(RTLD_NEXT, name, malloc_base);
}

static _Atomic int resolve_state; /* 0 not started, 1 in progress, 2 done */
static MT_TLS int resolving_here;

static void resolve_real(void)
{
    mt_real_api_t *r = &mt_g.real;
    void *(*m)(size_t) = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    Dl_info info;
    const void *base = (m && dladdr((void *)m, &info)) ? info.dli_fbase : NULL;
    r->free = (void (*)(void *))resolve_same("free", base);
    r->calloc = (void *(*)(size_t, size_t))resolve_same("calloc", base);
    r->realloc = (void *(*)(void *, size_t))resolve_same("realloc", base);
    r->posix_memalign = (int (*)(void **, size_t, size_t))resolve_same("posix_memalign", base);
    r->memalign = (void *(*)(size_t, size_t))resolve_same("memalign", base);
    r->aligned_alloc = (void *(*)(size_t, size_t))resolve_same("aligned_alloc", base);
    r->valloc = (void *(*)(size_t))resolve_same("valloc", base);
    r->pvalloc = (void *(*)(size_t))resolve_same("pvalloc", base);
    /* Not the allocator's reallocarray: glibc's calls realloc through the PLT, that is our realloc,
     * and the call would be recorded twice. emu_reallocarray does what glibc's does. */
    r->reallocarray = NULL;
    r->malloc_usable_size = (size_t(*)(void *))resolve_same("malloc_usable_size", base);
    r->mallopt = (int (*)(int, int))dlsym(RTLD_NEXT, "mallopt");
    if (!m || !r->free || !r->calloc || !r->realloc)
        abort(); /* no allocator to forward to: the program could not run without us either */
    if (!r->memalign)
        r->memalign = emu_memalign;
    if (!r->aligned_alloc)
        r->aligned_alloc = emu_aligned_alloc;
    if (!r->valloc)
        r->valloc = emu_valloc;
    if (!r->pvalloc)
        r->pvalloc = emu_pvalloc;
    if (!r->reallocarray)
        r->reallocarray = emu_reallocarray;
    if (!r->malloc_usable_size)
        r->malloc_usable_size = emu_usable_size;
    /* glibc's chunk headers and brk are only ours to read when glibc's malloc answers: malloc comes
     * from libc itself. Not __libc_malloc: tcmalloc (and jemalloc, mimalloc when built so) define it
     * too, and their blocks have no glibc chunk header before them. */
    void *libc_sym = dlsym(RTLD_DEFAULT, "gnu_get_libc_version");
    Dl_info li;
    mt_g.glibc = libc_sym && dladdr(libc_sym, &li) && li.dli_fbase == base &&
                 !dlsym(RTLD_DEFAULT, "__malloc_debug_enable_mcheck");
    mt_g.alloc_base = base;
    r->mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
    r->munmap = (int (*)(void *, size_t))dlsym(RTLD_NEXT, "munmap");
    r->mremap = (void *(*)(void *, size_t, size_t, int, ...))dlsym(RTLD_NEXT, "mremap");
    r->madvise = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "madvise");
    real_fork_fn = (void *(*)(void))dlsym(RTLD_NEXT, "fork");
    real_execve = (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT, "execve");
    real_execv = (int (*)(const char *, char *const[]))dlsym(RTLD_NEXT, "execv");
    real_execvp = (int (*)(const char *, char *const[]))dlsym(RTLD_NEXT, "execvp");
    real_execvpe = (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT, "execvpe");
    real_fexecve = (int (*)(int, char *const[], char *const[]))dlsym(RTLD_NEXT, "fexecve");
    real_execveat = (int (*)(int, const char *, char *const[], char *const[], int))dlsym(RTLD_NEXT, "execveat");
    real_pthread_create = (pthread_create_fn_t)dlsym(RTLD_NEXT, "pthread_create");
    real_exit_fn = (exit_fn_t)dlsym(RTLD_NEXT, "_exit");
    real_Exit_fn = (exit_fn_t)dlsym(RTLD_NEXT, "_Exit");
    /* Published last: a thread that sees malloc set sees everything else. */
    atomic_store((_Atomic(void *) *)&r->malloc, (void *)m);
}

static void thread_key_destructor(void *arg)
{
    mt_thread_t *t = &mt_self;
    (void)arg;
    t->busy = 2;
    mt_thread_exit(t);
    t->busy = 0;
}

static void fork_child(void)
{
    mt_self.busy = 2;
    mt_stacks_after_fork_child();
    mt_file_after_fork_child();
    mt_self.busy = 0;
}

static void start_tracing(void)
{
    mt_thread_t *t = &mt_self;
    t->busy = 2;
    mt_options_read(&mt_g.opt);
    mt_g.paused = mt_g.opt.paused != 0;
    if (pthread_key_create(&mt_g.exit_key, thread_key_destructor) == 0)
        mt_g.exit_key_ok = 1;
    pthread_atfork(NULL, NULL, fork_child);
    if (mt_g.glibc) {
        sbrk(0); /* sets __curbrk if nothing did yet */
        mt_g.curbrk = (void *const *)dlsym(RTLD_NEXT, "__curbrk");
    }
    if (mt_g.opt.stacks && mt_stacks_init() < 0)
        mt_g.opt.stacks = 0;
    if (mt_g.opt.secure) {
        atomic_store(&mt_g.stopped, 1); /* calls pass through; no file is made */
    } else if (mt_file_open() == 0)
        atomic_store(&mt_g.off, mt_g.paused);
    t->busy = 0;
}

/* Starts tracing, once. The options come from the environment, which libc sets up in its own
 * initializer: a call made before that (from a preinit_array function) passes through unrecorded
 * rather than start with no options at all (the trace would go to ./mtrace.PID.mtr whatever
 * MTRACE_OUT says), and tracing starts with the first call after it, or with our constructor
 * (`force`). */
static _Atomic int start_state; /* 0 not started, 1 starting, 2 started */

static void start_once(int force)
{
    if (MT_LIKELY(atomic_load(&start_state) == 2) || (!force && !environ))
        return;
    int expected = 0;
    if (atomic_compare_exchange_strong(&start_state, &expected, 1)) {
        start_tracing();
        atomic_store(&start_state, 2);
    }
}

/* Returns nonzero once the real allocator is known. Zero means this thread is inside dlsym and must
 * be served from the boot pool. */
static int init(void)
{
    if (MT_LIKELY(atomic_load(&resolve_state) == 2)) {
        start_once(0);
        return 1;
    }
    if (resolving_here)
        return 0;
    int expected = 0;
    if (atomic_compare_exchange_strong(&resolve_state, &expected, 1)) {
        resolving_here = 1;
        resolve_real();
        resolving_here = 0;
        /* Published before start-up: a libc call made while starting (strerror for an error
         * message) may allocate and must reach the real allocator, not wait here for ever. Nothing
         * is recorded before start_tracing() clears mt_g.off. */
        atomic_store(&resolve_state, 2);
        start_once(0);
        return 1;
    }
    while (atomic_load(&resolve_state) != 2)
        sched_yield();
    return 1;
}

__attribute__((constructor(101))) static void mt_constructor(void)
{
    init();
    start_once(1);
}

__attribute__((destructor(101))) static void mt_destructor(void)
{
    mt_thread_t *t = &mt_self;
    t->busy = 2;
    mt_file_finish();
    t->busy = 0;
}

/* ---- the record writer ------------------------------------------------------------------------- */

/* Calls that are not recorded: before start-up, while paused or stopped, or nested in the shim. */
static inline int pass_through(const mt_thread_t *t)
{
    return t->busy | atomic_load_explicit(&mt_g.off, memory_order_relaxed);
}

static void count_lost(mt_thread_t *t)
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
 * other than glibc's) sends the call to its out-of-line writer (rec_block_slow, rec_plain_slow),
 * which does it all (rec_begin .. rec_end). Both write the same bytes. */

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
    if (MT_UNLIKELY(p >= t->end)) {
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

/* Begins a record on the hot path: enters the shim and returns where the record goes, or NULL when
 * the general path has to write it (it enters again, harmlessly). The tests come after entering:
 * a signal handler's call recorded before that may have moved pos. */
static inline uint8_t *rec_begin_fast(mt_thread_t *t, uint64_t now)
{
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint8_t *p = t->pos;
    if (MT_UNLIKELY(mt_g.opt.stacks || p >= t->end ||
                    now >= atomic_load_explicit(&mt_g.next_rss_time, memory_order_relaxed)))
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

/* glibc's heap top, what sbrk(0) returns, as one load of __curbrk (mt_g.curbrk, set only when
 * glibc's malloc answers; 0 otherwise): about 2 ns less than the call. Read before and after the real
 * call, it tells whether that call moved the top (MT_XF_HEAP_GREW). Nothing shared is written: a
 * top kept for the whole process, written by whichever thread saw it move, would be a cache line
 * that every call of every thread reads and some of them write. */
static inline uintptr_t heap_top(void)
{
    void *const *curbrk = mt_g.curbrk;
    return curbrk ? (uintptr_t)*curbrk : 0;
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
 * op, so that the encoder's per-op switch and tests fold away; `glibc` is constant 1 on the hot path. */
static inline __attribute__((always_inline)) uint8_t *enc_block(mt_thread_t *t, uint8_t *p, unsigned op,
                                                                uint64_t now, const void *arg, uint64_t n1,
                                                                uint64_t n2, void *r, int err, uint32_t stack,
                                                                int glibc, int moved)
{
    const uint64_t requested = requested_size(op, n1, n2);
    uint8_t ext = (stack ? MT_XF_STACK : 0) | (moved ? MT_XF_HEAP_GREW : 0);
    unsigned b0 = op;
    int64_t slack = 0;
    if (glibc) {
        if (r) {
            /* One load of the chunk header gives both the MMAPPED flag and the usable size. */
            const size_t h = mt_glibc_chunk_word(r);
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

/* After the call that made glibc block r: its page evidence, when it is large. A chunk glibc mapped
 * for it is fresh (no whole page resident), which spares the syscall on the common large case. */
static __attribute__((noinline)) void pages_at_alloc(uint64_t now, const void *r, size_t h)
{
    mt_pages_event(now, r, mt_glibc_usable(h), MT_PAGES_AT_ALLOC, (h & 2) != 0);
}

/* Before the call that ends glibc block p (free, realloc): its page evidence, when it is large. */
static inline void pages_at_end(uint64_t now, const void *p)
{
    if (MT_UNLIKELY(p && mt_g.glibc)) {
        const size_t h = mt_glibc_chunk_word(p);
        if (MT_UNLIKELY(mt_pages_wanted(h)))
            mt_pages_event(now, p, mt_glibc_usable(h), MT_PAGES_AT_END, 0);
    }
}

/* Passes "the call moved the heap top" to rec_block_slow in its op argument, above the first byte. */
#define REC_MOVED 0x100u

/* The general writer of a call that returns a block. `op_flags` is the op, with MT_RF_NULL when the
 * call failed and REC_MOVED when it moved the heap top; `result` the block, or posix_memalign's error
 * when it failed (six arguments: the hot path's call here is a jump). Returns the block. */
static __attribute__((noinline)) void *rec_block_slow(unsigned op_flags, uint64_t now, const void *arg,
                                                      uint64_t n1, uint64_t n2, uint64_t result)
{
    mt_thread_t *t = &mt_self;
    const unsigned op = op_flags & MT_RF_OPMASK;
    void *r = (op_flags & MT_RF_NULL) ? NULL : (void *)(uintptr_t)result;
    const int err = r ? 0 : (int)result;
    uint32_t stack = 0;
    uint8_t *p = rec_begin(t, now, &stack);
    if (p)
        rec_end(t, enc_block(t, p, op, now, arg, n1, n2, r, err, stack, mt_g.glibc, (op_flags & REC_MOVED) != 0),
                now);
    if (r && mt_g.glibc && mt_pages_wanted(mt_glibc_chunk_word(r)))
        pages_at_alloc(now, r, mt_glibc_chunk_word(r));
    return r;
}

/* Records a call that returns a block, and returns r; `top` is the heap top read before the call. */
static inline __attribute__((always_inline)) void *rec_block(mt_thread_t *t, unsigned op, uint64_t now,
                                                             uintptr_t top, const void *arg, uint64_t n1,
                                                             uint64_t n2, void *r, int err)
{
    const int moved = heap_top() != top;
    uint8_t *p = rec_begin_fast(t, now);
    if (MT_UNLIKELY(!p || !mt_g.curbrk)) /* curbrk: set only for glibc's malloc */
        return rec_block_slow((r ? op : op | MT_RF_NULL) | (moved ? REC_MOVED : 0), now, arg, n1, n2,
                              r ? (uint64_t)(uintptr_t)r : (uint64_t)(int64_t)err);
    rec_end_fast(t, enc_block(t, p, op, now, arg, n1, n2, r, err, 0, 1, moved));
    if (MT_UNLIKELY(r && mt_pages_wanted(mt_glibc_chunk_word(r))))
        pages_at_alloc(now, r, mt_glibc_chunk_word(r));
    return r;
}

/* The general writer of a call that returns no block (free, malloc_usable_size, mallopt). */
static __attribute__((noinline)) void rec_plain_slow(unsigned op, uint64_t now, const void *ptr, uint64_t n1,
                                                     uint64_t n2, uint64_t result)
{
    mt_thread_t *t = &mt_self;
    uint32_t stack = 0;
    uint8_t *p = rec_begin(t, now, &stack);
    if (!p)
        return;
    uint8_t *q = mt_enc_call(&t->enc, p, MT_TRACE_VERSION, op, stack ? MT_XF_STACK : 0, now, (uint64_t)(uintptr_t)ptr, n1, n2,
                             result, 0, stack);
    rec_end(t, q, now);
}

/* Records a call that returns no block on the hot path; 0 when the general path has to. */
static inline __attribute__((always_inline)) int rec_plain_fast(mt_thread_t *t, unsigned op, uint64_t now,
                                                                const void *ptr, uint64_t n1, uint64_t n2,
                                                                uint64_t result)
{
    uint8_t *p = rec_begin_fast(t, now);
    if (MT_UNLIKELY(!p))
        return 0;
    rec_end_fast(t, mt_enc_call(&t->enc, p, MT_TRACE_VERSION, op, 0, now, (uint64_t)(uintptr_t)ptr, n1, n2, result, 0, 0));
    return 1;
}

/* free's general path: the record, then the real free. */
static __attribute__((noinline)) void free_slow(uint64_t now, void *ptr)
{
    rec_plain_slow(MT_OP_FREE, now, ptr, 0, 0, 0);
    mt_g.real.free(ptr);
}

/* free when pass_through() holds, out of line like free_slow: free then saves no register. */
static __attribute__((noinline)) void free_unrecorded(void *ptr)
{
    mt_thread_t *t = &mt_self;
    if (MT_UNLIKELY(!init()))
        return;
    if (pass_through(t)) {
        count_lost(t);
        mt_g.real.free(ptr);
        return;
    }
    free_slow(mt_now(), ptr); /* this call started tracing: it is the first one recorded */
}

/* ---- the interposed API ------------------------------------------------------------------------ */

MT_EXPORT void *malloc(size_t size)
{
    mt_thread_t *t = &mt_self;
    if (MT_UNLIKELY(pass_through(t))) {
        if (t->busy == MT_BUSY_PROBE)
            t->busy = MT_BUSY_PROBED;
        if (MT_UNLIKELY(!init()))
            return boot_alloc(size, 16);
        if (pass_through(t)) { /* else this call started tracing: it is the first one recorded */
            count_lost(t);
            return mt_g.real.malloc(size);
        }
    }
    const uint64_t now = mt_now();
    const uintptr_t top = heap_top();
    void *r = mt_g.real.malloc(size);
    return rec_block(t, MT_OP_MALLOC, now, top, NULL, size, 0, r, 0);
}

MT_EXPORT void free(void *ptr)
{
    mt_thread_t *t = &mt_self;
    if (MT_UNLIKELY(is_boot(ptr)))
        return;
    if (MT_UNLIKELY(pass_through(t))) {
        free_unrecorded(ptr);
        return;
    }
    const uint64_t now = mt_now();
    pages_at_end(now, ptr);
    /* Recorded before the real free: once free returns, another thread may get the same address,
     * and its record must not be able to precede ours in the file of this thread's events. */
    if (MT_UNLIKELY(!rec_plain_fast(t, MT_OP_FREE, now, ptr, 0, 0, 0))) {
        free_slow(now, ptr);
        return;
    }
    mt_g.real.free(ptr);
}

MT_EXPORT void *calloc(size_t n, size_t size)
{
    mt_thread_t *t = &mt_self;
    if (MT_UNLIKELY(pass_through(t))) {
        if (MT_UNLIKELY(!init())) {
            size_t bytes;
            return __builtin_mul_overflow(n, size, &bytes) ? NULL : boot_alloc(bytes, 16);
        }
        if (pass_through(t)) {
            count_lost(t);
            return mt_g.real.calloc(n, size);
        }
    }
    const uint64_t now = mt_now();
    const uintptr_t top = heap_top();
    void *r = mt_g.real.calloc(n, size);
    return rec_block(t, MT_OP_CALLOC, now, top, NULL, n, size, r, 0);
}

MT_EXPORT void *realloc(void *ptr, size_t size)
{
    mt_thread_t *t = &mt_self;
    if (MT_UNLIKELY(is_boot(ptr))) {
        void *r = malloc(size);
        if (r)
            memcpy(r, ptr, boot_size(ptr) < size ? boot_size(ptr) : size);
        return r;
    }
    if (MT_UNLIKELY(pass_through(t))) {
        if (MT_UNLIKELY(!init()))
            return ptr ? NULL : boot_alloc(size, 16);
        if (pass_through(t)) {
            count_lost(t);
            return mt_g.real.realloc(ptr, size);
        }
    }
    const uint64_t now = mt_now();
    pages_at_end(now, ptr);
    const uintptr_t top = heap_top();
    void *r = mt_g.real.realloc(ptr, size);
    return rec_block(t, MT_OP_REALLOC, now, top, ptr, size, 0, r, 0);
}

MT_EXPORT void *reallocarray(void *ptr, size_t n, size_t size)
{
    mt_thread_t *t = &mt_self;
    if (MT_UNLIKELY(is_boot(ptr) || pass_through(t))) {
        size_t bytes;
        if (__builtin_mul_overflow(n, size, &bytes)) {
            errno = ENOMEM;
            return NULL;
        }
        if (is_boot(ptr) || !init())
            return realloc(ptr, bytes);
        if (pass_through(t)) {
            count_lost(t);
            return mt_g.real.reallocarray(ptr, n, size);
        }
    }
    const uint64_t now = mt_now();
    pages_at_end(now, ptr);
    const uintptr_t top = heap_top();
    void *r = mt_g.real.reallocarray(ptr, n, size);
    return rec_block(t, MT_OP_REALLOCARRAY, now, top, ptr, n, size, r, 0);
}

/* The aligned family: memalign, aligned_alloc, valloc, pvalloc share one shape. */
#define ALIGNED_HOOK(name, op, boot_align, args, call_args, n1, n2)                           \
    MT_EXPORT void *name args                                                                    \
    {                                                                                            \
        mt_thread_t *t = &mt_self;                                                               \
        if (MT_UNLIKELY(pass_through(t))) {                                                      \
            if (MT_UNLIKELY(!init()))                                                            \
                return boot_alloc(size, boot_align);                                             \
            if (pass_through(t)) {                                                               \
                count_lost(t);                                                                   \
                return mt_g.real.name call_args;                                                 \
            }                                                                                    \
        }                                                                                        \
        const uint64_t now = mt_now();                                                           \
        const uintptr_t top = heap_top();                                                        \
        void *r = mt_g.real.name call_args;                                                      \
        return rec_block(t, op, now, top, NULL, n1, n2, r, 0);                                   \
    }

ALIGNED_HOOK(memalign, MT_OP_MEMALIGN, align, (size_t align, size_t size), (align, size), align, size)
ALIGNED_HOOK(aligned_alloc, MT_OP_ALIGNED_ALLOC, align, (size_t align, size_t size), (align, size), align,
             size)
ALIGNED_HOOK(valloc, MT_OP_VALLOC, 4096, (size_t size), (size), size, 0)
ALIGNED_HOOK(pvalloc, MT_OP_PVALLOC, 4096, (size_t size), (size), size, 0)

MT_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
    mt_thread_t *t = &mt_self;
    if (MT_UNLIKELY(pass_through(t))) {
        if (MT_UNLIKELY(!init())) {
            *out = boot_alloc(size, align);
            return *out ? 0 : ENOMEM;
        }
        if (pass_through(t)) {
            count_lost(t);
            return mt_g.real.posix_memalign(out, align, size);
        }
    }
    const uint64_t now = mt_now();
    const uintptr_t top = heap_top();
    const int rc = mt_g.real.posix_memalign(out, align, size);
    rec_block(t, MT_OP_POSIX_MEMALIGN, now, top, NULL, align, size, rc == 0 ? *out : NULL, rc);
    return rc;
}

MT_EXPORT size_t malloc_usable_size(void *ptr)
{
    mt_thread_t *t = &mt_self;
    if (MT_UNLIKELY(is_boot(ptr)))
        return boot_size(ptr);
    if (MT_UNLIKELY(pass_through(t))) {
        if (MT_UNLIKELY(!init()))
            return 0;
        if (pass_through(t))
            return mt_g.real.malloc_usable_size(ptr);
    }
    const uint64_t now = mt_now();
    const size_t n = mt_g.real.malloc_usable_size(ptr);
    if (MT_UNLIKELY(!rec_plain_fast(t, MT_OP_USABLE_SIZE, now, ptr, n, 0, 0)))
        rec_plain_slow(MT_OP_USABLE_SIZE, now, ptr, n, 0, 0);
    return n;
}

MT_EXPORT int mallopt(int param, int value)
{
    mt_thread_t *t = &mt_self;
    if (!init() || !mt_g.real.mallopt)
        return 0;
    const uint64_t now = mt_now();
    const int rc = mt_g.real.mallopt(param, value);
    if (pass_through(t))
        return rc;
    rec_plain_slow(MT_OP_MALLOPT, now, NULL, (uint64_t)(int64_t)param, (uint64_t)(int64_t)value,
                   (uint64_t)(int64_t)rc);
    return rc;
}

/* ---- processes and threads --------------------------------------------------------------------- */

static void emit_u64_event(unsigned op, uint64_t now, uint64_t v)
{
    mt_thread_t *t = &mt_self;
    if (pass_through(t))
        return;
    t->busy = 2;
    uint8_t payload[16], *q = mt_put_uvarint(payload, v);
    mt_emit_event_at(t, op, now, payload, (size_t)(q - payload));
    t->busy = 0;
}

MT_EXPORT pid_t fork(void)
{
    init();
    const uint64_t now = mt_now();
    const pid_t pid = (pid_t)(intptr_t)real_fork_fn();
    if (pid > 0)
        emit_u64_event(MT_EV_FORK, now, (uint64_t)pid);
    return pid;
}

static void note_exec(const char *path)
{
    mt_thread_t *t = &mt_self;
    /* A vfork child runs on its parent's memory: the exec is its own, not the parent's. */
    if (pass_through(t) || getpid() != mt_g.pid)
        return;
    t->busy = 2;
    mt_file_note_exec(path);
    t->busy = 0;
}

MT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    init();
    note_exec(path);
    return real_execve(path, argv, envp);
}

MT_EXPORT int execv(const char *path, char *const argv[])
{
    init();
    note_exec(path);
    return real_execv(path, argv);
}

MT_EXPORT int execvp(const char *file, char *const argv[])
{
    init();
    note_exec(file);
    return real_execvp(file, argv);
}

MT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    init();
    note_exec(file);
    return real_execvpe(file, argv, envp);
}

MT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    init();
    note_exec("");
    return real_fexecve(fd, argv, envp);
}

MT_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
    init();
    note_exec(path);
    if (!real_execveat) { /* glibc before 2.34 */
        errno = ENOSYS;
        return -1;
    }
    return real_execveat(dirfd, path, argv, envp, flags);
}

/* _exit and _Exit end the process without running destructors, ours included, which finish the
 * trace (end time, the clock rate, COMPLETE): a worker of Python's multiprocessing, a shell's
 * child or a forking server's would otherwise leave a trace that reads as "not finished", whose clock
 * rate rests on its RSS samples alone (none with MTRACE_RSS_MS=0: no rate, no time span). They are
 * finished here, with care for what _exit may be called from:
 * - a vfork child (or posix_spawn's) runs on its parent's memory, mt_g included: its pid is not
 *   the one that opened the trace, and it leaves everything alone;
 * - a signal handler (_exit is async-signal-safe) may have interrupted this thread inside the shim,
 *   with a record half written: then no THREAD_EXIT is written over it, and the record, whose
 *   first byte is stored last, stays unpublished. Finishing makes system calls only. */
static void finish_before_exit(void)
{
    mt_thread_t *t = &mt_self;
    if (!mt_g.base || getpid() != mt_g.pid)
        return;
    if (t->busy)
        t->exited = 1;
    t->busy = 2;
    mt_file_finish();
}

MT_EXPORT void _exit(int status)
{
    finish_before_exit();
    if (real_exit_fn)
        real_exit_fn(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

MT_EXPORT void _Exit(int status)
{
    finish_before_exit();
    if (real_Exit_fn)
        real_Exit_fn(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

/* execl, execle and execlp call execve inside libc, past the wrappers above: they are wrapped
 * themselves. Their argument lists become arrays without malloc (which would be traced between the
 * EXEC event and the exec): on the stack, or in a private mapping for very long lists. */
typedef struct exec_args {
    char **v;
    size_t map_bytes; /* 0: v is the local array */
    char *local[64];
} exec_args_t;

/* Collects arg0 and the arguments after it up to and including the terminating NULL; NULL when
 * no memory is left (errno set). */
static char **exec_args_collect(exec_args_t *a, const char *arg0, va_list *ap)
{
    va_list c;
    va_copy(c, *ap);
    size_t n = 2; /* arg0 and the NULL */
    while (va_arg(c, char *))
        n++;
    va_end(c);
    a->v = a->local;
    a->map_bytes = 0;
    if (n > sizeof a->local / sizeof *a->local) {
        a->map_bytes = n * sizeof(char *);
        void *m = mmap(NULL, a->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            errno = E2BIG;
            return NULL;
        }
        a->v = m;
    }
    a->v[0] = (char *)arg0;
    for (size_t i = 1; i < n; i++)
        a->v[i] = va_arg(*ap, char *);
    return a->v;
}

/* After a failed exec: gives back the mapping, keeping the exec's errno. */
static int exec_args_done(exec_args_t *a, int rc)
{
    const int e = errno;
    if (a->map_bytes)
        munmap(a->v, a->map_bytes);
    errno = e;
    return rc;
}

MT_EXPORT int execl(const char *path, const char *arg0, ...)
{
    exec_args_t a;
    va_list ap;
    va_start(ap, arg0);
    char **argv = exec_args_collect(&a, arg0, &ap);
    va_end(ap);
    return argv ? exec_args_done(&a, execv(path, argv)) : -1;
}

MT_EXPORT int execlp(const char *file, const char *arg0, ...)
{
    exec_args_t a;
    va_list ap;
    va_start(ap, arg0);
    char **argv = exec_args_collect(&a, arg0, &ap);
    va_end(ap);
    return argv ? exec_args_done(&a, execvp(file, argv)) : -1;
}

MT_EXPORT int execle(const char *path, const char *arg0, ...)
{
    exec_args_t a;
    va_list ap;
    va_start(ap, arg0);
    char **argv = exec_args_collect(&a, arg0, &ap);
    char *const *envp = argv ? va_arg(ap, char *const *) : NULL; /* after the terminating NULL */
    va_end(ap);
    return argv ? exec_args_done(&a, execve(path, argv, envp)) : -1;
}

typedef struct thread_start {
    void *(*fn)(void *);
    void *arg;
    uint32_t thread_no;
    uint32_t creator;
} thread_start_t;

static void *thread_trampoline(void *arg)
{
    thread_start_t s = *(thread_start_t *)arg;
    mt_g.real.free(arg);
    mt_thread_t *t = &mt_self;
    t->thread_no = s.thread_no;
    t->creator = s.creator;
    /* Claim the chunk now, so the thread's start is on record even if it never allocates. */
    if (!pass_through(t)) {
        t->busy = 2;
        mt_thread_reserve(t, mt_now());
        t->busy = 0;
    }
    return s.fn(s.arg);
}

/* The real pthread_create; NULL if it was not found at start-up (before glibc 2.34 it lives in
 * libpthread, which a program may load later with dlopen): looked up again then. */
static pthread_create_fn_t real_pthread_create_now(void)
{
    pthread_create_fn_t f = __atomic_load_n(&real_pthread_create, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (pthread_create_fn_t)dlsym(RTLD_NEXT, "pthread_create");
        __atomic_store_n(&real_pthread_create, f, __ATOMIC_RELEASE);
    }
    return f;
}

MT_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    init();
    const pthread_create_fn_t real = real_pthread_create_now();
    if (!real)
        return EAGAIN; /* no thread can be made: pthread_create's error for "not now" */
    mt_thread_t *t = &mt_self;
    if (pass_through(t))
        return real(th, attr, fn, arg);
    thread_start_t *s = mt_g.real.malloc(sizeof *s);
    if (!s)
        return real(th, attr, fn, arg);
    const uint64_t now = mt_now();
    if (!t->started) { /* the creator needs a number before it can be named as one */
        t->busy = 2;
        mt_thread_reserve(t, now);
        t->busy = 0;
    }
    const uint32_t thread_no = mt_next_thread_no();
    s->fn = fn;
    s->arg = arg;
    s->thread_no = thread_no;
    s->creator = t->thread_no;
    const int rc = real(th, attr, thread_trampoline, s);
    if (rc != 0) {
        mt_g.real.free(s);
        return rc;
    }
    /* Not s->thread_no: the new thread may have freed s already, and its memory been reused. */
    emit_u64_event(MT_EV_THREAD_CREATE, now, thread_no);
    return rc;
}

/* ---- the control API (include/mtrace.h) -------------------------------------------------------- */

MT_EXPORT int mtrace_control(int cmd, const char *label)
{
    init();
    mt_thread_t *t = &mt_self;
    if (mt_g.fd < 0 || !mt_g.base || atomic_load(&mt_g.stopped))
        return -ENODEV;
    const int was_busy = t->busy;
    t->busy = 2;
    int rc = 0;
    uint8_t payload[8], *q = mt_put_uvarint(payload, (uint64_t)cmd);
    switch (cmd) {
    case MT_CTL_START:
    case MT_CTL_RESUME:
        mt_g.paused = 0;
        atomic_store(&mt_g.off, 0);
        mt_emit_event(t, MT_EV_CONTROL, payload, (size_t)(q - payload));
        break;
    case MT_CTL_PAUSE:
        mt_emit_event(t, MT_EV_CONTROL, payload, (size_t)(q - payload));
        mt_g.paused = 1;
        atomic_store(&mt_g.off, 1);
        break;
    case MT_CTL_STOP:
        mt_emit_event(t, MT_EV_CONTROL, payload, (size_t)(q - payload));
        mt_file_finish();
        break;
    case MT_CTL_SYNC:
        rc = msync(mt_g.base, atomic_load(&mt_g.mapped_chunks) * MT_CHUNK_SIZE, MS_SYNC) ? -errno : 0;
        break;
    case MT_CTL_MARK:
        mt_emit_event(t, MT_EV_MARK, (const uint8_t *)(label ? label : ""), label ? strnlen(label, 1024) : 0);
        break;
    default:
        rc = -EINVAL;
    }
    t->busy = (uint8_t)was_busy;
    return rc;
}
