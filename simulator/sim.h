/* The simulator's shared state. All of it lives in memory the simulator maps itself (sim_map), never
 * in the allocator under test, which sees the workload's calls and nothing else. */
#ifndef MTRACE_SIM_H
#define MTRACE_SIM_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "mtrace/clock.h"
#include "mtrace/workload.h"

#define SIM_HIST_SUB 8u /* sub-buckets per power of two: about 9 % resolution */
#define SIM_HIST_BUCKETS (64u * SIM_HIST_SUB)
#define SIM_OPS (MT_WL_LAST_CALL + 1)
/* A replay thread's buffer for a frame's ops, decompressed */

/* How the replay writes a block it allocates. TOUCH_AUTO (the default) becomes TOUCH_EVIDENCE when
 * the workload carries the trace's page evidence, else TOUCH_PAGES. */
typedef enum { TOUCH_PAGES, TOUCH_ENDS, TOUCH_NONE, TOUCH_EVIDENCE, TOUCH_AUTO } sim_touch_t;
typedef enum { TIMING_ASAP, TIMING_RECORDED } sim_timing_t;

/* A call timed at SIM_DESCHED_CYCLES or more is taken as one during which its thread was off its
 * CPU, and left out of its op's average (not of its count, percentiles or maximum): 2^20 cycles is
 * 0.26-0.52 ms at 2-4 GHz, shorter than the slice the scheduler gives another thread (0.75-3 ms),
 * longer than an allocator's call that does not touch its memory. Measured on this 2-CPU machine
 * (syncbench nosync, 8 M calls), idle and with 3 busy loops beside it: no call between 2^18 and
 * 2^21 cycles, 11 to 25 from 2^21 to 2^26, which made the average malloc 160 and 427 cycles for a
 * median of 36 and 44. Unless the op's median is over SIM_DESCHED_MEDIAN_MAX: an op that slow by
 * nature (every call mapping memory) keeps all its calls in its average. */
#define SIM_DESCHED_CYCLES (UINT64_C(1) << 20)
#define SIM_DESCHED_MEDIAN_MAX (SIM_DESCHED_CYCLES >> 10)

typedef struct sim_opstat {
    uint64_t calls;
    uint64_t cycles;
    uint64_t max;
    uint64_t failed;                  /* the call returned NULL in the replay where the trace had a block */
    uint64_t slow_calls, slow_cycles; /* timed at SIM_DESCHED_CYCLES or more */
    uint64_t hist[SIM_HIST_BUCKETS];
} sim_opstat_t;

/* Where a replay thread is, as threads that wait on it see it: spinning for one pays only while the
 * thread waited for is on a CPU. */
typedef enum { SIM_NOT_STARTED, SIM_RUNNING, SIM_ASLEEP, SIM_DONE } sim_run_state_t;

/* What a replay thread counts, merged into the replay's totals when it ends. */
typedef struct sim_counts {
    uint64_t waits, wait_cycles, futex_sleeps;
    uint64_t far_slots;        /* blocks stored in slot_far */
    uint64_t touched_in_part;  /* blocks written in part, as their touch table entries said */
    uint64_t maps, map_failed; /* the program's own mappings replayed, and those mmap refused */
    uint64_t cpu_ns;           /* its CPU time from the start of its stream to its end */
    uint64_t busy_cycles;      /* its time from start to end less its waits and its pacing: replaying */
    uint64_t write_cycles;     /* writing the blocks the allocator handed out (their page faults) */
    /* voluntary context switches other than the replay's own sleeps (waits, pacing): calls that
     * blocked, whose time is not CPU time */
    uint64_t blocked_switches;
    sim_opstat_t stat[SIM_OPS];
} sim_counts_t;

/* What a replay thread needs only while it runs: its stream's decoding state, in mapped buffers, and
 * its counts. Taken from a pool when the thread starts and given back when it ends (sim_work.c), so
 * the replay's own memory follows the threads alive at once, not every thread of the workload: a
 * thread's decoding buffers, zstd context and statistics are 277 KiB mapped, 40 to 150 KiB
 * of it resident. */
typedef struct sim_work {
    /* Live requested bytes added by the threads that used this working set: never reset, so that
     * the sum over all working sets is the replay's live bytes at every instant, without a window
     * at a hand-over in which a thread's share counts twice or not at all. Written by the owner
     * at every allocation and free, read by the sampler: its own cache lines. */
    _Alignas(128) _Atomic int64_t live_bytes;
    /* the address window this thread stored into last, and its index (0: none yet): windows are
     * never removed, so the cache stays right for the next owner */
    uint64_t last_window;
    uint32_t last_window_index;
    uint8_t *raw, *z; /* the cursor's buffers (workload.h) */
    void *dctx;
    mt_wl_cursor_t cur; /* the thread's stream */
    struct sim_work *next_free;
    sim_counts_t c;
} sim_work_t;

/* One per thread of the workload, for the whole replay: what other threads look at (how far it is,
 * whether it was created) and its place in the creation plan; 128 bytes. */
typedef struct sim_thread {
    /* Written by the owner after every op, read by threads that wait on it: its own cache lines. */
    _Alignas(128) _Atomic uint64_t progress; /* ops completed */
    _Atomic uint64_t wake_at;                /* lowest count a sleeping waiter needs; UINT64_MAX: none */
    _Atomic uint32_t wake_seq;               /* futex word: bumped when waiters are woken */
    _Atomic uint32_t state;                  /* sim_run_state_t, written by the owner */
    _Atomic uint32_t created;                /* futex word: 0 until the OS thread exists */
    uint32_t index;
    struct sim *sim;  /* the replay it belongs to */
    sim_work_t *work; /* while it runs */
    /* children to create once this thread has completed so many ops: s->spawns[spawn_first ..
     * spawn_first + nspawn), ordered by that count */
    uint32_t spawn_first, nspawn, next_spawn;
    uint8_t spawned; /* created by its creator at its op, not at the start */
    uint8_t error;
    /* its touch table entries not yet reached (TOUCH_EVIDENCE) */
    const mt_wl_touch_entry_t *touch_next, *touch_end;
} sim_thread_t;

typedef struct sim_spawn {
    uint64_t at;
    uint32_t creator, child;
} sim_spawn_t;

/* The allocator under test as the replay calls it: its own functions, looked up past mtrace-sim,
 * which defines malloc and its family for the process's own blocks (sim_heap.c). malloc, free,
 * calloc and realloc are the allocator's: glibc requires a replacement malloc to define all four,
 * and sim_alloc_init() refuses one that does not. Every other function the workload may call is the allocator's own
 * where it defines it; where it does not, the name resolves to glibc's, whose block would come from glibc's heap and be
 * handed to the allocator's free (a crash, or worse), so the call is emulated with functions the allocator does define
 * (sim_alloc.c). */
typedef struct sim_alloc {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*memalign)(size_t, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    void *(*reallocarray)(void *, size_t, size_t);
    size_t (*usable_size)(void *);
    uint32_t emulated;    /* 1u << op for each op whose function is emulated */
    uint32_t unsupported; /* 1u << op for aligned ops that cannot be: no aligned allocation at all */
    int has_mallopt;      /* it defines mallopt: --mallopt settings reach it (else glibc's, unused) */
    char lib[PATH_MAX];   /* the file that defines malloc */
} sim_alloc_t;

typedef struct sim_series_row {
    double t;
    uint64_t rss_kb, vm_kb, ideal_kb, source_rss_kb;
    double done; /* the share of the workload's ops completed: a time axis common to every replay */
} sim_series_row_t;

typedef struct sim {
    mt_wl_t *wl;
    sim_alloc_t alloc;
    uint32_t nthreads;
    sim_thread_t *th;
    sim_spawn_t *spawns;
    /* Working sets: all made so far (work[0..nwork), in order: the sampler sums their live bytes),
     * and a list of those free. Taken and given back under work_lock, which also guards totals. */
    sim_work_t **work;
    _Atomic uint32_t nwork;
    sim_work_t *free_work;
    pthread_mutex_t work_lock;
    sim_counts_t *totals;
    _Atomic uint32_t threads_running; /* futex word: replay threads created and not yet ended */
    /* The error of the lowest-numbered thread that failed, as the replay reports it. */
    pthread_mutex_t error_lock;
    uint32_t error_thread;
    int has_error;
    char errmsg[1100];
    uint32_t *slots; /* each live block's address, compressed: see slot_store() in sim_thread.c */
    void **slot_far; /* blocks whose address does not fit in their entry */
    uint64_t nslots;
    /* The address windows slot entries refer to, window[1..nwindows]: set once each, under
     * window_lock, before nwindows counts it. */
    uint64_t window[64];
    _Atomic uint32_t nwindows;
    pthread_mutex_t window_lock;
    unsigned ncpus;    /* CPUs this process may run on */
    int light_publish; /* membarrier() serves the waiters: completed() needs no fence */
    sim_touch_t touch;
    sim_timing_t timing;
    uint64_t replay_start_ns; /* CLOCK_MONOTONIC */
    uint64_t first_op_ns;     /* workload time of the first op */
    /* --timing recorded: the latest time (CLOCK_MONOTONIC) a thread has slept toward, waiting for an
     * op's recorded time. The stall watch counts no stillness before it: a program idle for longer
     * than --stall-timeout between two calls is paced, not stalled. */
    _Atomic uint64_t paced_until;
    uint32_t page;
    _Atomic uint64_t source_rss_kb;
    _Atomic int running;
    _Atomic int failed;
    unsigned sample_ms;
    double stall_s;
    sim_series_row_t *series;
    uint64_t series_n, series_cap;
    uint64_t peak_rss_kb, peak_vm_kb;
    uint64_t peak_anon_kb; /* sampled: resident less file-backed pages */
    uint64_t mapped_bytes; /* bookkeeping, as mapped */
    struct {
        void *p;
        size_t len;
    } maps[4096];
    _Atomic uint32_t nmaps;
    /* Replay threads running (neither asleep in a wait nor finished), read by waiters deciding
     * whether to spin. Written whenever one sleeps or wakes: last, on a cache line of its own (the
     * alignment pads the struct's end), away from the fields every op reads. */
    /* the program's own mappings (sim_maps.c) */
    struct sim_mapping *maps_tab;
    uint64_t maps_cap, maps_n;
    pthread_mutex_t maps_lock;
    _Atomic int64_t maps_resident, maps_resident_peak; /* their resident pages, now and at most */
    _Atomic int64_t maps_writing;                      /* pages being written now, not yet counted in maps_resident */
    uint64_t peak_rss_less_maps_kb;                    /* sampled: the RSS less their resident pages, at most */
    _Alignas(128) _Atomic uint32_t runnable;
} sim_t;

/* A mapping the program made itself, as replayed (sim_maps.c). */
typedef struct sim_mapping {
    uint64_t slot; /* 0: an empty entry */
    void *p;       /* NULL: the replay's mmap failed */
    uint64_t len;
} sim_mapping_t;

/* sim_mem.c: memory for the simulator itself, counted as bookkeeping (resident pages, measured at the
 * end). */
void *sim_map(sim_t *s, size_t bytes);
uint64_t sim_resident_bytes(const sim_t *s);

/* glibc's memalign rule (aligned_alloc's too, in glibc 2.36): an alignment that is not a power of
 * two is rounded up to one, one below `least` raised to it. 0 (errno EINVAL) past the largest. */
static inline size_t sim_memalign_alignment(size_t align, size_t least)
{
    size_t a = least;
    while (a < align) {
        if (a > SIZE_MAX / 2) {
            errno = EINVAL;
            return 0;
        }
        a <<= 1;
    }
    return a;
}

/* sim_heap.c: the process's own heap (malloc and its family, defined in mtrace-sim), its mappings'
 * resident bytes as `resident` counts them. Weak: not built with a sanitizer, whose runtime has the
 * process's malloc; then NULL, and the process's own blocks are in the allocator's heap. */
uint64_t sim_heap_resident_bytes(int64_t (*resident)(const void *p, size_t len, void *arg), void *arg)
    __attribute__((weak));
/* Calls of malloc and its family made from the object at [lo, hi) (the allocator under test, when it
 * is not glibc) go to the allocator: one that calls its own malloc by name reaches mtrace-sim's
 * first. Weak, as above. */
void sim_heap_forward_from(uintptr_t lo, uintptr_t hi) __attribute__((weak));

/* sim_libs.c: what of this process's memory is not the replayed program's heap. allocator_file_kb:
 * resident file pages of the libraries loaded for the allocator alone (the one that defines
 * `malloc_fn` and those it needs that mtrace-sim does not; 0 for glibc). own_static_kb: mtrace-sim's
 * own counterpart of a program's anonymous pages at start: its stack and the anonymous pages of its
 * executable's and its libraries' segments (relocated data, .bss), the allocator's left out. */
typedef struct sim_lib_pages {
    uint64_t allocator_file_kb, own_static_kb;
} sim_lib_pages_t;
sim_lib_pages_t sim_lib_pages(const void *malloc_fn);
/* The address range of the loaded object whose segments hold addr: 0, or -1 if none does. */
int sim_object_range(const void *addr, uintptr_t *lo, uintptr_t *hi);

/* sim_alloc.c */
/* Fills `a` for the allocator that answers malloc in this process. `lib` (or NULL) is the library
 * that must be that allocator (mtrace replay preloads it): an error if it is not loaded or does not
 * define malloc. Also an error if the allocator lacks free, calloc or realloc. -1 with `why` set. */
int sim_alloc_init(sim_alloc_t *a, const char *lib, char *why, size_t why_cap);

/* sim_work.c */
/* A working set for thread t, ready for the first frame of its stream; NULL (errno set) if none can
 * be mapped. */
sim_work_t *sim_work_take(sim_t *s, const sim_thread_t *t);
/* Merges w's counts into the totals and puts it back in the pool. */
void sim_work_give_back(sim_t *s, sim_work_t *w);
/* The replay's live requested bytes now. */
int64_t sim_live_bytes(const sim_t *s);
/* Keeps msg as the replay's error if no thread numbered below t's has one. */
void sim_set_error(sim_t *s, sim_thread_t *t, const char *msg);

/* sim_maps.c: slot -> mapping for MT_WL_MMAP / MT_WL_MUNMAP; `most` bounds the live ones. */
int sim_maps_init(sim_t *s, uint64_t most);
int sim_maps_put(sim_t *s, uint64_t slot, void *p, uint64_t len);
/* Up to `pages` pages of the program's mappings are about to be written (negative: were written and
 * counted): the sampler counts them as the program's meanwhile, not the allocator's. */
void sim_maps_writing(sim_t *s, int64_t pages);
/* Unmaps [off, off + len) of the slot's mapping, forgetting it when `last`: -ENOENT for a slot that
 * holds no mapping, -ERANGE for a part past its end. */
int sim_maps_unmap(sim_t *s, uint64_t slot, uint64_t off, uint64_t len, int last);
/* Writes the first `pages` whole pages of [off, off + len) of the slot's mapping (those the program
 * had resident there), then gives madvise `advice` for it; errors as sim_maps_unmap. */
int sim_maps_advise(sim_t *s, uint64_t slot, uint64_t off, uint64_t len, int advice, uint64_t pages);
/* Resident pages of [p, p + len) by mincore() (sim_main.c). */
int64_t sim_mincore_pages(const void *p, size_t len, size_t page);

/* sim_spawn.c */
/* The creation plan: which thread creates which, at which of its ops (from each stream's first ops). */
int sim_plan_spawns(sim_t *s, mt_error_t *err);
/* Creates replay thread `child` now, once. */
void sim_spawn(sim_t *s, uint32_t child);

/* sim_thread.c */
/* Before any replay thread starts: the CPUs to count on, and membarrier() for the waits. */
void sim_sync_init(sim_t *s);
void sim_stop_all(sim_t *s);
void *sim_thread_main(void *arg);
void sim_thread_run(sim_t *s, sim_thread_t *t);

static inline uint64_t sim_cycles(void)
{
    return mt_clock();
}

#endif
