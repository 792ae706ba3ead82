/* Internal state of the preload shim (libmtrace.so). Not a public header.
 *
 * Everything the hot path touches is either thread-local (initial-exec TLS, so access is one
 * %fs-relative load) or a global that is written once at start-up and then only read.
 */
#ifndef MTRACE_SHIM_H
#define MTRACE_SHIM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "mtrace/clock.h"
#include "mtrace/trace_format.h"

/* Everything declared below is the shim's own: hidden, so that code in one file reaches data and
 * functions of another directly (one RIP-relative access), not through the GOT. */
#pragma GCC visibility push(hidden)

#define MT_LIKELY(x) __builtin_expect(!!(x), 1)
#define MT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MT_EXPORT __attribute__((visibility("default")))
#define MT_TLS __attribute__((tls_model("initial-exec"))) __thread

typedef int (*mt_pthread_create_fn_t)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef void (*mt_exit_fn_t)(int) __attribute__((noreturn));

/* The one table of the functions the shim forwards to, resolved with dlsym(RTLD_NEXT) at start-up
 * (shim_resolve.c): the allocator's first (read by every call), then those of the process. */
typedef struct mt_real_api {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*reallocarray)(void *, size_t, size_t);
    void *(*memalign)(size_t, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*malloc_usable_size)(void *);
    int (*mallopt)(int, int);
    int (*malloc_trim)(size_t);
    /* shim_vm.c: NULL until resolved (a raw system call stands in) */
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    int (*munmap)(void *, size_t);
    void *(*mremap)(void *, size_t, size_t, int, ...);
    int (*madvise)(void *, size_t, int);
    /* shim_process.c, shim_stacks.c */
    pid_t (*fork)(void);
    int (*execve)(const char *, char *const[], char *const[]);
    int (*execv)(const char *, char *const[]);
    int (*execvp)(const char *, char *const[]);
    int (*execvpe)(const char *, char *const[], char *const[]);
    int (*fexecve)(int, char *const[], char *const[]);
    int (*execveat)(int, const char *, char *const[], char *const[], int); /* NULL before glibc 2.34 */
    mt_pthread_create_fn_t pthread_create; /* NULL until libpthread is loaded, before glibc 2.34 */
    mt_exit_fn_t exit_, Exit_;
    int (*dlclose)(void *);
} mt_real_api_t;

/* Options, read once from the environment (shim_options.c holds the one table). */
typedef struct mt_options {
    char out[4096];       /* MTRACE_OUT, '%p' expanded at open */
    char index[4096];     /* MTRACE_INDEX: file that gets one line per trace written */
    unsigned stacks;      /* MTRACE_STACKS: frames per call record */
    unsigned rss_ms;      /* MTRACE_RSS_MS: RSS sampling period, 0 = off */
    unsigned paused;      /* MTRACE_PAUSED: start with recording paused */
    unsigned follow_fork; /* MTRACE_FOLLOW_FORK: trace forked children into their own files */
    uint64_t max_bytes;   /* MTRACE_MAX_SIZE (MiB): stop tracing past this file size */
    unsigned quiet;       /* MTRACE_QUIET: no diagnostics on stderr */
    unsigned clock_every; /* MTRACE_CLOCK_EVERY: calls per clock read with one thread (0: as 8) */
    int secure;           /* secure-execution mode (setuid): no tracing */
} mt_options_t;

/* Entries for the home chunks of ended threads not yet gone (mt_global_t.ended): threads exiting at
 * the same time, so a few; one that finds them all taken keeps its chunk's last pages resident. */
#define MT_ENDED_MAX 64

/* mt_thread_t.busy while the start-up probe calls the program's malloc (shim_file.c, note_bypass):
 * our malloc, reached, turns PROBE into PROBED; an allocator before us in the lookup order does not. */
enum { MT_BUSY_PROBE = 3, MT_BUSY_PROBED = 4 };

/* Per-thread writer state. */
typedef struct mt_thread {
    uint8_t *pos;        /* next record byte in the current chunk; NULL before the first chunk */
    uint8_t *end;        /* the hot path's limit (shim_record.h): the end of the space for call records
                          * (mt_records_end), or NULL when every call takes the general path
                          * (mt_g.hot_path off); NULL before the first chunk */
    uint8_t *chunk;      /* start of the current chunk */
    mt_enc_t enc;        /* delta bases, reset at every chunk */
    uint64_t clock_last; /* the time of this thread's latest clock read (mt_now_of), or of a later
                          * record (an event's), in recorded units */
    uint32_t clock_left; /* calls that take clock_last before the next read */
    uint32_t clock_span; /* calls the latest read's time stood for: clock_left + 1 when made */
    uint32_t thread_no;  /* sequential thread number, 0 until assigned */
    uint32_t tid;
    uint32_t seq;     /* next chunk number of this thread */
    uint32_t creator; /* thread number of the pthread_create caller, if known */
    uint64_t lost;    /* calls not recorded by this thread */
    uint8_t busy;     /* inside the shim: nested calls pass through. 1: writing a record (a nested call
                       * is a signal handler's, counted as lost); 2: the shim's own libc calls;
                       * MT_BUSY_PROBE, MT_BUSY_PROBED: the start-up probe of who answers malloc */
    uint8_t exited;   /* THREAD_EXIT written */
    uint8_t started;  /* THREAD_START written */
    /* page evidence's cost (shim_pages.c): counts made, time they took, from when; the same for the
     * counts of watched blocks, on a budget of their own */
    uint32_t pages_counted, watch_counted;
    uint64_t pages_spent, pages_epoch, watch_spent;
} mt_thread_t;

typedef struct mt_global {
    /* Read by every recorded call and written only at start-up, stop, pause and resume, or once
     * per RSS period (next_rss_time). Fields that change often live on cache lines of their own
     * below: a write to one of them would otherwise evict these from every other CPU's cache. */
    mt_real_api_t real;
    mt_options_t opt;
    int fd;         /* the trace file */
    dev_t file_dev; /* its identity, to tell it from a file the program opened on the same */
    ino_t file_ino; /* descriptor number after closing ours */
    uint8_t *base;  /* reserved address range; chunk i lives at base + i * MT_CHUNK_SIZE */
    uint64_t reserved_chunks;
    _Atomic uint64_t next_rss_time;
    uint64_t rss_period; /* in recorded time units */
    /* Calls after a clock read that take its time (shim_clock.c): the chosen period less one while
     * the process has one thread, 0 from the moment it has two (mt_clock_shared). */
    _Atomic uint32_t clock_skip;
    uint32_t clock_dense; /* recorded time units per call under which calls are dense (1 us) */
    void *const *curbrk;  /* glibc's __curbrk, what sbrk(0) returns without the call; else a word
                           * that stays 0 (never NULL: the hot path reads it unchecked) */
    uint32_t page_size;
    int glibc;              /* the next allocator is glibc's: chunk headers and brk are meaningful */
    int hot_path;           /* calls may be recorded on the hot path: glibc's allocator, __curbrk found,
                             * no stacks. Off, every thread's end is NULL (open_chunk) */
    const void *alloc_base; /* load address of the object that defines that malloc */
    atomic_int off;         /* nonzero: calls pass through unrecorded (stopped, paused, truncated) */
    atomic_int stopped;     /* tracing ended for this process (stop, truncation, finish) */
    int paused;
    atomic_int truncated; /* stopped by a write failure: later calls count as lost (read by every thread) */
    pid_t pid;
    /* Written once per chunk claimed, thread started or call lost. */
    _Alignas(128) _Atomic uint64_t next_chunk; /* chunks claimed so far (the header chunk is 0) */
    _Atomic uint64_t mapped_chunks;
    _Atomic uint32_t next_thread;
    _Atomic uint64_t lost;
    atomic_int grow_lock;
    /* Home chunks of threads that have ended, each as its chunk index << 32 | its tid (0: a free
     * entry), until the kernel thread is gone and its pages can leave the RSS for good
     * (shim_chunks.c, mt_release_ended()). Written once per thread exit and per release. */
    _Alignas(128) _Atomic uint64_t ended[MT_ENDED_MAX];
    _Atomic uint32_t nended;
    /* Cold. */
    _Alignas(128) pthread_key_t exit_key; /* its destructor writes THREAD_EXIT */
    int exit_key_ok;
    char path[4096]; /* the trace file's path */
} mt_global_t;

extern mt_global_t mt_g;
extern MT_TLS mt_thread_t mt_self;

/* shim_start.c: dlsym may allocate before the real allocator is known: those requests are served
 * from the boot pool and never freed. */
#define MT_BOOT_POOL_SIZE (64u * 1024u)
/* The word before every boot-pool block, where glibc keeps a chunk's header: it reads as a block of
 * page-evidence size (mt_pages_wanted), so that free's hot path, which reads that word of every
 * block it records, sends a boot block to free's general path and its boot test; every call saves
 * the test. The block's size is the word before. */
#define MT_BOOT_CHUNK_WORD (~(size_t)7)
extern uint8_t mt_boot_pool[MT_BOOT_POOL_SIZE];
void *mt_boot_alloc(size_t size, size_t align);
size_t mt_boot_size(const void *p);
static inline int mt_is_boot(const void *p)
{
    /* One compare: below the pool, the difference wraps to a huge value. */
    return (uintptr_t)p - (uintptr_t)mt_boot_pool < MT_BOOT_POOL_SIZE;
}
/* Nonzero once the real functions are known (resolving them, and starting tracing, the first time);
 * zero while this thread is inside dlsym, when its allocations come from the boot pool. */
int mt_init(void);

/* shim_resolve.c: fills mt_g.real; aborts when no allocator follows ours. */
void mt_resolve_real(void);

/* shim_options.c */
void mt_options_read(mt_options_t *opt);

/* shim_stacks.c */
int mt_stacks_init(void);
void mt_stacks_after_fork_child(void);
uint32_t mt_stack_id(mt_thread_t *t);

/* shim_stack_table.c: a stack's hash to its id; `number` numbers a stack met for the first time (or
 * again), 0 if it cannot */
int mt_stack_table_init(void);
void mt_stack_table_clear(void);
uint32_t mt_stack_table_id(uint64_t hash, uint32_t (*number)(void *), void *arg);

/* shim_pages.c */
/* Writes an MT_EV_PAGES event for block p of `usable` bytes: its resident whole pages (none without
 * asking the kernel when `fresh`: a chunk glibc has just mapped). */
void mt_pages_event(uint64_t now, const void *p, size_t usable, unsigned when, int fresh);
/* An edge block (mt_edge_wanted, chunk header word h) made; one about to end at time `now`. */
void mt_edge_made(const void *p, size_t h);
void mt_edge_ended(uint64_t now, const void *p);
/* At the process's end: an event AT_EXIT for each large block still live (their pages were never
 * counted at an end). */
void mt_pages_at_exit(void);
/* Right after an RSS sample in t's stream: the pages of the large blocks of fresh memory counted again. */
void mt_pages_sample(mt_thread_t *t, uint64_t now);

/* A spin lock of the shim's own tables (taken around a system call's worth of work at most). */
static inline void mt_spin_take(atomic_int *lock)
{
    while (atomic_exchange_explicit(lock, 1, memory_order_acquire))
        while (atomic_load_explicit(lock, memory_order_relaxed))
            mt_cpu_relax();
}

/* Takes it only if it is free (at exit: a signal handler may have interrupted its holder); 1 if it did. */
static inline int mt_spin_try(atomic_int *lock)
{
    return !atomic_exchange_explicit(lock, 1, memory_order_acquire);
}

static inline void mt_spin_give(atomic_int *lock)
{
    atomic_store_explicit(lock, 0, memory_order_release);
}

/* How many of the n pages from lo are resident (mincore); with `narrow`, those in the process's RSS
 * (pagemap leaves out the pages only read: shim_pages.c). A range not all mapped: UINT64_MAX, or
 * with `holes`, the resident pages of its mapped parts. */
uint64_t mt_resident_pages(uintptr_t lo, uint64_t n_pages, int holes, int narrow);
/* How many of the n pages from lo are anonymous and present (pagemap): in a private file mapping,
 * those the program wrote, copied from the file; UINT64_MAX where pagemap cannot be read. */
uint64_t mt_copied_pages(uintptr_t lo, uint64_t n_pages);
extern atomic_int mt_pages_forked; /* the process has forked or was forked: pages may be shared */

/* shim_loaded.c: the writable segments of libraries loaded while tracing, as the program's mappings.
 * mt_loaded_check at each RSS sample, with t->busy held; around a dlclose, before (1 if it counted
 * their pages) and after. */
void mt_loaded_check(mt_thread_t *t);
int mt_loaded_before_dlclose(void);
void mt_loaded_after_dlclose(int counted);
void mt_loaded_after_fork_child(void);
/* shim_vm.c: a loaded library's segment written as mapped (`made`: no page copied yet, listed) or as
 * unmapped with `pages` copied, in t's stream, t->busy held. */
void mt_vm_loaded(mt_thread_t *t, uintptr_t a, uint64_t len, int made, uint64_t pages);

/* shim_vmlive.c: the program's mappings still live, and the pages of its own at exit */
typedef enum mt_vl_kind {
    MT_VL_ANON,   /* private anonymous: the program's own, counted by its resident pages */
    MT_VL_COPIED, /* a private file mapping opened for writing, a loaded library's writable segment:
                   * the program's own where written, counted by its pages copied on write */
    MT_VL_OTHER,  /* a file mapping or shared memory: listed to be known, never counted */
} mt_vl_kind_t;
void mt_vmlive_mapped(uintptr_t a, uint64_t len, mt_vl_kind_t kind);
void mt_vmlive_unmapped(uintptr_t a, uint64_t len);
/* The kind of the mapping listed as starting at a, or -1. */
int mt_vmlive_kind(uintptr_t a);
void mt_vmlive_after_fork_child(void);
/* At the process's end: an MT_VM_AT_EXIT event for each mapping of the program's still live. */
void mt_vm_at_exit(void);
void mt_pages_after_fork_child(void);

/* glibc's chunk header word before block p: its size and flag bits (2: mmapped). */
static inline size_t mt_glibc_chunk_word(const void *p)
{
    return ((const size_t *)p)[-1];
}

/* The usable bytes of a glibc block from its chunk header word. */
static inline size_t mt_glibc_usable(size_t h)
{
    /* Less one header word, two for a mapped chunk: (h & 2) * 4 is the second, without a branch. */
    return (h & ~(size_t)7) - sizeof(size_t) - (h & 2) * (sizeof(size_t) / 2);
}

/* Whether a glibc block with chunk header word h gets page evidence (MT_PAGES_MIN usable bytes). */
static inline int mt_pages_wanted(size_t h)
{
    return h >= MT_PAGES_MIN + 2 * sizeof(size_t) && mt_glibc_usable(h) >= MT_PAGES_MIN;
}

/* Whether a glibc block with chunk header word h is an edge block (trace_format.h, MT_PAGES_EDGE): a
 * chunk of 4 KiB to 64 KiB, not mapped, whose size is a multiple of 4096 or 16 more (the mask keeps
 * IS_MMAPPED and the size's bits 3 and 5 to 11). */
static inline int mt_edge_wanted(size_t h)
{
    return (h & 0xfeau) == 0 && h - MT_PAGES_EDGE_PAGE < MT_PAGES_MIN - MT_PAGES_EDGE_PAGE + 8;
}

/* Whether such a block has evidence of either kind: the hot paths' test. */
static inline int mt_evidence_wanted(size_t h)
{
    return MT_UNLIKELY(mt_pages_wanted(h)) || MT_UNLIKELY(mt_edge_wanted(h));
}

/* The end of the space for call records in a chunk that starts at c: the tail reserve (final
 * events) and room for one whole record lie beyond. */
static inline uint8_t *mt_records_end(uint8_t *c)
{
    return c + MT_CHUNK_SIZE - MT_CHUNK_TAIL_RESERVE - MT_MAX_CALL_RECORD;
}

/* shim_clock.c: measures what one read of the clock costs here (tens of microseconds), chooses how
 * often calls read it (mt_g.clock_skip, clock_dense) and writes the header's MT_STR_CLOCK statement
 * of both into buf; returns its length. */
size_t mt_clock_choose(char *buf, size_t cap);

/* shim_file.c */
int mt_file_open(void);
void mt_file_finish(void);
void mt_file_after_fork_child(void);
void mt_file_note_exec(const char *path);
void mt_stop_tracing(int err, const char *why);
void mt_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether mt_g.fd is still the trace file (the program may have closed it and reused the number):
 * 0, else -EBADF when it cannot be had again by its path. */
int mt_file_fd_ours(void);
/* Maps more of the file, if need be, so that chunk idx exists: 0 or a negative errno. */
int mt_file_map_chunk(uint64_t idx);

/* shim_chunks.c */
uint8_t *mt_thread_reserve(mt_thread_t *t, uint64_t now);
void mt_thread_exit(mt_thread_t *t);
void mt_emit_event(mt_thread_t *t, unsigned op, const uint8_t *payload, size_t len);
void mt_emit_event_at(mt_thread_t *t, unsigned op, uint64_t now, const uint8_t *payload, size_t len);
/* An event in the chunk's tail reserve: it lands even when no new chunk can be had. */
void mt_emit_final(mt_thread_t *t, unsigned op, const uint8_t *payload, size_t len);
uint32_t mt_next_thread_no(void);
/* Drops the home chunks of ended threads that are gone (see shim_chunks.c). */
void mt_release_ended(void);

/* shim_rss.c */
void mt_sample_rss(mt_thread_t *t, uint64_t now);
void mt_sample_rss_at_exit(void);
/* A sample now, due or not, outside the period's schedule: before the program gives back a large
 * range of memory at once, while what may be its peak is still there. Called with t->busy held. */
void mt_sample_rss_now(mt_thread_t *t);

/* Recorded time is the clock shifted right by this much (the header's time_shift). Under the TSC, 4
 * ticks (1 to 2 ns at 2 to 4 GHz): a call's time delta then fits one byte where calls come less than
 * 256 ticks apart, as in a malloc-heavy loop (89 % of churn's deltas instead of 41 %). */
#define MT_TIME_SHIFT (MT_CLOCK_IS_TSC ? 2 : 0)

/* A fresh read of the clock, in recorded units: for start and end times, events and cost figures. */
static inline uint64_t mt_now(void)
{
    return mt_clock() >> MT_TIME_SHIFT;
}

/* The time of a call of thread t, under the clock policy (shim_clock.c): a fresh read, or while
 * the process has one thread, the policy says so and the thread's calls come less than 1 us apart,
 * the time of the thread's latest read for the calls up to the next one (mt_now_of). A read of the
 * time-stamp counter costs 11 to 12 ns here, about as much as the rest of a call's record
 * (bench/RESULTS.md, "A clock read every 8 calls"). mt_now_fresh reads the clock and starts the
 * count again: for the end of a large block, whose RSS sample, when one is due, must come before
 * the block goes. */
static inline uint64_t mt_now_fresh(mt_thread_t *t)
{
    const uint64_t now = mt_now();
    const uint32_t skip = atomic_load_explicit(&mt_g.clock_skip, memory_order_relaxed);
    uint32_t left = 0;
    if (skip && now - t->clock_last < (uint64_t)t->clock_span * mt_g.clock_dense)
        left = skip; /* the calls since the latest read came densely: the next `skip` take this time */
    t->clock_left = left;
    t->clock_span = left + 1;
    t->clock_last = now;
    return now;
}

static inline uint64_t mt_now_of(mt_thread_t *t)
{
    /* one test for the common case, a read per call: no count left and no skipping chosen (a
     * thread's count runs out within its next few calls once a second thread stops the skipping) */
    const uint32_t left = t->clock_left;
    if (MT_LIKELY(!(left | atomic_load_explicit(&mt_g.clock_skip, memory_order_relaxed))))
        return mt_now();
    if (left) {
        t->clock_left = left - 1;
        return t->clock_last;
    }
    return mt_now_fresh(t);
}

/* From the process's second thread on, every call reads the clock: the records of two threads are
 * put in order by their times. Called before the second thread exists where we make it. */
void mt_clock_shared(void);

#pragma GCC visibility pop

#endif
