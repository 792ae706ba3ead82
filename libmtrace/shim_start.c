/* Start-up of libmtrace.so: the boot pool that serves dlsym's allocations before the allocator is
 * known, the one-time resolution of the real functions and start of tracing (from the first call
 * or the constructor), thread exit and fork-child hooks, and the destructor that finishes the trace. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

/* What heap_top() reads where glibc's __curbrk is not known: a top that never moves. */
static void *const no_curbrk;
mt_global_t mt_g = { .fd = -1, .off = 1, .curbrk = &no_curbrk };
MT_TLS mt_thread_t mt_self;

/* dlsym may allocate before the real allocator is known: those requests are served from here and
 * never freed. Each block carries its size so that realloc can move it out, and MT_BOOT_CHUNK_WORD
 * (start leaves at least 16 bytes after the previous block for the two words). */
_Alignas(64) uint8_t mt_boot_pool[MT_BOOT_POOL_SIZE];
static _Atomic size_t boot_used;

void *mt_boot_alloc(size_t size, size_t align)
{
    if (align < 16)
        align = 16;
    for (;;) {
        size_t used = atomic_load(&boot_used);
        size_t start = (used + 16 + align - 1) & ~(align - 1);
        if (start + size > sizeof mt_boot_pool || size > sizeof mt_boot_pool)
            return NULL;
        if (atomic_compare_exchange_weak(&boot_used, &used, start + size)) {
            const size_t word = MT_BOOT_CHUNK_WORD;
            memcpy(mt_boot_pool + start - 2 * sizeof size, &size, sizeof size);
            memcpy(mt_boot_pool + start - sizeof word, &word, sizeof word);
            return mt_boot_pool + start; /* static storage: already zeroed */
        }
    }
}

size_t mt_boot_size(const void *p)
{
    size_t n;
    memcpy(&n, (const uint8_t *)p - 2 * sizeof n, sizeof n);
    return n;
}

static void thread_key_destructor(void *arg)
{
    mt_thread_t *t = &mt_self;
    (void)arg;
    t->busy = 2;
    mt_thread_exit(t);
    t->busy = 0;
}

/* Before any fork: from now on pages may be shared with the child (mt_resident_pages). */
static void fork_prepare(void)
{
    atomic_store_explicit(&mt_pages_forked, 1, memory_order_relaxed);
}

static void fork_child(void)
{
    mt_self.busy = 2;
    mt_stacks_after_fork_child();
    mt_pages_after_fork_child();
    mt_vmlive_after_fork_child();
    mt_loaded_after_fork_child();
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
    pthread_atfork(fork_prepare, NULL, fork_child);
    if (mt_g.glibc) {
        sbrk(0); /* sets __curbrk if nothing did yet */
        void *const *curbrk = (void *const *)dlsym(RTLD_NEXT, "__curbrk");
        if (curbrk)
            mt_g.curbrk = curbrk;
    }
    if (mt_g.opt.stacks && mt_stacks_init() < 0)
        mt_g.opt.stacks = 0;
    mt_g.hot_path = mt_g.glibc && mt_g.curbrk != &no_curbrk && !mt_g.opt.stacks;
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

static _Atomic int resolve_state; /* 0 not started, 1 in progress, 2 done */
static MT_TLS int resolving_here;

/* Returns nonzero once the real allocator is known. Zero means this thread is inside dlsym and must
 * be served from the boot pool. */
int mt_init(void)
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
        mt_resolve_real();
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
    mt_init();
    start_once(1);
}

__attribute__((destructor(101))) static void mt_destructor(void)
{
    mt_thread_t *t = &mt_self;
    if (mt_g.base && getpid() == mt_g.pid) {
        mt_sample_rss_at_exit();
        mt_pages_at_exit();
        mt_vm_at_exit();
    }
    t->busy = 2;
    mt_file_finish();
    t->busy = 0;
}
