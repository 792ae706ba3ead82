/* One replay thread: decodes its stream frame by frame into its own mapped buffers and makes every
 * call for real, timed with the TSC (not serialized: a call is hundreds of cycles, and cpuid would
 * cost more than it measures). Waits spin briefly while the awaited thread is on a CPU, then sleep
 * on the futex of its op counter. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <malloc.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mtrace/file_io.h"
#include "sim.h"

/* How long a wait spins before it sleeps, in clock ticks (about 50 us at 2 GHz): a futex wake-up
 * costs tens of microseconds in a VM, a handed-over block usually comes within microseconds. For
 * the first PAUSE_TICKS (about 5 us) it spins on the CPU; after that it yields the CPU between
 * looks, since a thread that has not answered yet may be waiting for one (other processes count
 * too, and the replay cannot see them). */
#define SPIN_TICKS 100000u
#define PAUSE_TICKS 10000u
/* A thread seen asleep may have been woken just now and not yet have marked itself running: a
 * futex wake-up takes microseconds to land. Sleeping at once on seeing it asleep made hand-overs
 * chain: A wakes B, finds B still marked asleep, sleeps too, B wakes A, and so on (on an idle
 * 16-CPU machine 14-20 % of the ping-pong waits slept, 1.0-1.6 us per wait). So a waiter keeps
 * looking for WAKE_TICKS (about 10 us) before it takes "asleep" for an answer. */
#define WAKE_TICKS 20000u

/* Helpers of the per-op path. One run for nearly every op is HOT: a call costs a dozen instructions
 * of register saves and restores against a few of work (window_index() below: 20 instructions a
 * store out of line, 5 inline), and GCC stops inlining a helper by itself once it has several
 * callers. A rare path (a failure's report, a search of the slot table's windows) is COLD: out of
 * the loop, whose registers it would otherwise share. */
#define HOT static inline __attribute__((always_inline))
#define COLD static __attribute__((cold, noinline))

static long futex(_Atomic uint32_t *word, int op, uint32_t val)
{
    return syscall(SYS_futex, (uint32_t *)word, op, val, NULL, NULL, 0);
}

static long membarrier(int cmd)
{
    return syscall(SYS_membarrier, cmd, 0, 0);
}

void sim_sync_init(sim_t *s)
{
    cpu_set_t set;
    s->ncpus = sched_getaffinity(0, sizeof set, &set) == 0 ? (unsigned)CPU_COUNT(&set) : 1;
    s->light_publish = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

/* The pair "publish progress, then read wake_at" (completed) and "lower wake_at, then re-read
 * progress" (wait_for) is a store followed by a load on each side: unless a full barrier separates
 * them on both sides, each can miss the other's store and the waiter sleeps through its wake-up.
 * completed() runs after every op, wait_for() sleeps rarely, so the waiter pays for both: a
 * membarrier() makes every running thread of the process execute a full barrier, and the publisher
 * needs only a compiler barrier (membarrier(2): it "turns the pair of memory barriers into a
 * compiler barrier and a system call"). Without membarrier, each side has its own fence. */
static inline void publish_barrier(const sim_t *s)
{
    if (__builtin_expect(s->light_publish, 1))
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
}

static void waiter_barrier(const sim_t *s)
{
    if (s->light_publish) {
        const long rc = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
        assert(rc == 0); /* membarrier(2): it cannot fail once the process has registered */
        (void)rc;
    } else {
        atomic_thread_fence(memory_order_seq_cst);
    }
}

static void wake_all(sim_thread_t *t)
{
    atomic_fetch_add(&t->wake_seq, 1);
    futex(&t->wake_seq, FUTEX_WAKE_PRIVATE, 0x7fffffff);
}

void sim_stop_all(sim_t *s)
{
    atomic_store(&s->failed, 1);
    for (uint32_t i = 0; i < s->nthreads; i++)
        wake_all(&s->th[i]);
}

/* A thread's failure that names no place in the file: the message follows the workload's path. */
static void thread_fail(sim_t *s, sim_thread_t *t, const char *msg)
{
    char full[sizeof s->errmsg];
    snprintf(full, sizeof full, "%s: %s", mt_wl_path(s->wl), msg);
    sim_set_error(s, t, full);
    sim_stop_all(s);
}

/* A thread's failure at a place in the file: the message is the reader's, path and offset first. */
static void thread_fail_at(sim_t *s, sim_thread_t *t, const mt_error_t *err)
{
    sim_set_error(s, t, err->msg);
    sim_stop_all(s);
}

/* A thread's failure at an op of its stream that the replay cannot follow. The message has the shape
 * of the workload reader's ("PATH: offset N: OP op at byte B of the frame's data (thread T) ..."),
 * then says what was wrong with the op. */
COLD __attribute__((format(printf, 4, 5))) void fail_at_op(sim_t *s, sim_thread_t *t, unsigned op, const char *fmt, ...)
{
    char what[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const mt_wl_cursor_t *cur = &t->work->cur;
    mt_error_t err;
    mt_errorf(&err, -EINVAL, mt_wl_path(s->wl), mt_wl_cursor_frame_offset(cur),
              "%s op at byte %zu of the frame's data (thread %u) %s", mt_wl_op_name(op) ? mt_wl_op_name(op) : "an",
              mt_wl_cursor_op_byte(cur), t->index, what);
    thread_fail_at(s, t, &err);
}

static unsigned hist_bucket(uint64_t v)
{
    if (v < SIM_HIST_SUB)
        return (unsigned)v;
    const unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    const unsigned sub = (unsigned)(v >> (msb - 3)) & (SIM_HIST_SUB - 1);
    return msb * SIM_HIST_SUB + sub;
}

static inline void account(sim_thread_t *t, unsigned op, uint64_t cycles)
{
    sim_opstat_t *st = &t->work->c.stat[op];
    st->calls++;
    st->cycles += cycles;
    if (cycles > st->max)
        st->max = cycles;
    if (__builtin_expect(cycles >= SIM_DESCHED_CYCLES, 0)) {
        st->slow_calls++;
        st->slow_cycles += cycles;
    }
    st->hist[hist_bucket(cycles)]++;
}

/* Writes the first frac/65536 of a block's whole pages, and the block's first byte (a mapping's
 * only with its pages: one written at none is not the program's): what the traced program wrote of
 * it, as the trace's page evidence tells (workload-format.md, "Touch table"). */
static __attribute__((noinline)) void touch_share(const sim_t *s, volatile uint8_t *b, uint64_t size, uint32_t frac,
                                                  int mapping)
{
    uint64_t lo;
    const uint64_t whole = mt_whole_pages((uintptr_t)b, size, s->page, &lo);
    const uint64_t n = (whole * frac + MT_WL_TOUCH_ONE / 2) / MT_WL_TOUCH_ONE;
    if (!mapping)
        b[0] = 1;
    for (uint64_t k = 0; k < n; k++)
        *(volatile uint8_t *)(uintptr_t)(lo + k * s->page) = 1;
}

/* Writes the block (or, with `mapping`, the program's own mapping) as the program did after
 * allocating it: with TOUCH_EVIDENCE, the share its entry in the touch table gives, or the bytes it
 * names (the op's number is the thread's count of completed ops + 1), every page when it has none. */
static inline void touch(const sim_t *s, sim_thread_t *t, void *p, uint64_t size, int mapping)
{
    if (!p || !size || s->touch == TOUCH_NONE)
        return;
    volatile uint8_t *b = p;
    if (s->touch == TOUCH_EVIDENCE && t->touch_next < t->touch_end) {
        const uint64_t op = atomic_load_explicit(&t->progress, memory_order_relaxed) + 1;
        while (t->touch_next < t->touch_end && t->touch_next->op < op)
            t->touch_next++;
        if (t->touch_next < t->touch_end && t->touch_next->op == op && !t->touch_next->slot) {
            const mt_wl_touch_entry_t *e = t->touch_next++;
            t->work->c.touched_in_part++;
            if (!e->size) {
                touch_share(s, b, size, e->frac, mapping);
                return;
            }
            if (e->size < size)
                size = e->size; /* its first bytes (version 7), written below as a whole block is */
        }
    }
    if (s->touch != TOUCH_ENDS)
        for (uint64_t off = 0; off < size; off += s->page)
            b[off] = 1;
    b[0] = 1;
    b[size - 1] = 1;
}

static void set_run_state(sim_t *s, sim_thread_t *t, sim_run_state_t state)
{
    const sim_run_state_t was = atomic_load_explicit(&t->state, memory_order_relaxed);
    if (was != SIM_RUNNING && state == SIM_RUNNING)
        atomic_fetch_add(&s->runnable, 1);
    else if (was == SIM_RUNNING && state != SIM_RUNNING)
        atomic_fetch_sub(&s->runnable, 1);
    atomic_store_explicit(&t->state, state, memory_order_relaxed);
}

/* One look's worth of spinning for thread o, `spun` ticks into the wait; 0: sleep now. Spinning helps
 * only if o is on a CPU meanwhile: it must be running (not asleep in a wait of its own, unless it
 * may be waking up, see WAKE_TICKS; not finished), and the running replay threads, the spinner
 * among them, must not outnumber the CPUs, or the spin takes the CPU o needs. When they do, the
 * waiter gives up its CPU (sched_yield) instead: the thread it waits for may be the one that gets
 * it. */
static inline int spin_once(const sim_t *s, const sim_thread_t *o, uint64_t spun)
{
    const uint32_t state = atomic_load_explicit(&o->state, memory_order_relaxed);
    if (state != SIM_RUNNING && !(state == SIM_ASLEEP && spun < WAKE_TICKS))
        return 0;
    if (spun < PAUSE_TICKS && atomic_load_explicit(&s->runnable, memory_order_relaxed) <= s->ncpus)
        mt_cpu_relax();
    else
        sched_yield();
    return 1;
}

static int wait_for(sim_t *s, sim_thread_t *t, uint32_t other, uint64_t n)
{
    if (other >= s->nthreads)
        return -EINVAL;
    sim_thread_t *o = &s->th[other];
    uint64_t cur = atomic_load_explicit(&o->progress, memory_order_acquire);
    if (cur >= n)
        return 0;
    if (n > mt_wl_thread(s->wl, other)->ops)
        return -EDEADLK; /* that thread never completes so many ops */
    t->work->c.waits++;
    const uint64_t c0 = sim_cycles();
    uint64_t spun;
    while (cur < n && (spun = sim_cycles() - c0) < SPIN_TICKS && spin_once(s, o, spun))
        cur = atomic_load_explicit(&o->progress, memory_order_acquire);
    /* Sleep until the other thread reaches the lowest count anyone sleeping on it needs: it then
     * bumps wake_seq and wakes them all, and those that need more go back to sleep. */
    while (cur < n && !atomic_load(&s->failed)) {
        const uint32_t seq = atomic_load(&o->wake_seq);
        uint64_t want = atomic_load(&o->wake_at);
        while (n < want && !atomic_compare_exchange_weak(&o->wake_at, &want, n)) {
        }
        waiter_barrier(s); /* pairs with publish_barrier() in completed() */
        cur = atomic_load_explicit(&o->progress, memory_order_acquire);
        if (cur >= n || atomic_load(&s->failed))
            break;
        t->work->c.futex_sleeps++;
        set_run_state(s, t, SIM_ASLEEP);
        futex(&o->wake_seq, FUTEX_WAIT_PRIVATE, seq);
        set_run_state(s, t, SIM_RUNNING);
        cur = atomic_load_explicit(&o->progress, memory_order_acquire);
    }
    t->work->c.wait_cycles += sim_cycles() - c0;
    return cur >= n ? 0 : -ECANCELED;
}

static inline void completed(sim_t *s, sim_thread_t *t)
{
    const uint64_t n = atomic_load_explicit(&t->progress, memory_order_relaxed) + 1;
    atomic_store_explicit(&t->progress, n, memory_order_release);
    publish_barrier(s); /* or a waiter that lowered wake_at just now could miss its wake-up */
    if (__builtin_expect(n >= atomic_load_explicit(&t->wake_at, memory_order_relaxed), 0)) {
        atomic_store(&t->wake_at, UINT64_MAX);
        wake_all(t);
    }
    while (t->next_spawn < t->nspawn && s->spawns[t->spawn_first + t->next_spawn].at <= n)
        sim_spawn(s, s->spawns[t->spawn_first + t->next_spawn++].child);
}

/* The calling thread's CPU time. A replay thread's time is its CPU time, not the wall time from its
 * start to its end: that counted the time it waited for other threads asleep, and the main thread's
 * wait at every join (on a loaded 2-CPU machine a 2-thread replay reported 3.6 s across its threads
 * for 1.8 s of wall time). */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The calling thread's voluntary context switches so far: its sleeps, and its calls that blocked. */
static uint64_t voluntary_switches(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? (uint64_t)ru.ru_nvcsw : 0;
}

/* --timing recorded: the replay may run ahead of the program's time by at most PACE_SLACK_NS. An
 * allocator's purging on a timer works in milliseconds and more (jemalloc's decay: seconds), so a
 * millisecond is close enough; and a clock read and a spin or a sleep before every op cost more than
 * the op (cc1's 1.2 M calls, the replay threads' CPU time, medians of 3 on a shared 2-CPU VM: 113 ms
 * asap, 210 ms paced so, 139 ms paced as here). So the clock is read once per PACE_SLACK_NS of the
 * ops' times, and the thread sleeps only when it is ahead. */
#define PACE_SLACK_NS 1000000u

/* Sleeps until op_ns's time in the replay, if that is ahead; its CPU time (the sleep's system calls)
 * goes to *cpu_ns, which the thread's time leaves out. */
static void pace(sim_t *s, uint64_t op_ns, uint64_t *cpu_ns, uint64_t *sleeps)
{
    const uint64_t due = s->replay_start_ns + (op_ns > s->first_op_ns ? op_ns - s->first_op_ns : 0);
    uint64_t now = mt_mono_ns();
    if (now >= due)
        return;
    uint64_t until = atomic_load_explicit(&s->paced_until, memory_order_relaxed);
    while (until < due && !atomic_compare_exchange_weak(&s->paced_until, &until, due))
        ;
    const uint64_t cpu0 = thread_cpu_ns();
    for (; now < due; now = mt_mono_ns()) {
        /* in seconds and nanoseconds: a tv_nsec of a second or more is refused, and the loop would spin */
        const uint64_t ns = due - now;
        const struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
        nanosleep(&ts, NULL);
        ++*sleeps;
    }
    *cpu_ns += thread_cpu_ns() - cpu0;
}

/* ---- the slot table ------------------------------------------------------------------------------
 * It holds one entry per live block, and workloads of a million tiny blocks are common (python),
 * so an entry is 4 bytes: the block's address and nothing else (the ops say how many bytes a freed
 * block had, for the live bytes). Allocators keep their blocks in a few stretches of the address
 * space (glibc: the heap and each arena's 64 MiB heaps; jemalloc, tcmalloc, mimalloc: the regions
 * they map), so an address is stored as the index (6 bits) of its 512 MiB "window" in a table of
 * up to 62 windows shared by all threads, and its offset there in 8-byte units (26 bits). Entry 0
 * is an empty slot or a NULL result. An address that is not 8-byte aligned, or in none of the
 * windows once all 62 are taken, is kept whole in slot_far[slot], and its entry says SLOT_FAR: that
 * table is mapped for every slot, but only the pages of slots that held such a block become
 * resident. Ops on a slot are ordered by the workload's WAITs (a release and an acquire), which
 * also order a window's creation before any reader of an entry in it: no lock but the one taken to
 * add a window. */
#define WINDOW_SHIFT 29u
#define ENTRY_OFFSET_BITS (WINDOW_SHIFT - 3u)
#define ENTRY_OFFSET_MASK ((UINT32_C(1) << ENTRY_OFFSET_BITS) - 1)
#define WINDOWS_MAX 62u
#define SLOT_FAR UINT32_MAX /* window index 63 */

static inline void *slot_ptr(const sim_t *s, uint64_t slot)
{
    const uint32_t e = s->slots[slot];
    if (e == 0)
        return NULL;
    if (e == SLOT_FAR)
        return s->slot_far[slot];
    const uint64_t base = s->window[e >> ENTRY_OFFSET_BITS] << WINDOW_SHIFT;
    return (void *)(uintptr_t)(base | (uint64_t)(e & ENTRY_OFFSET_MASK) << 3);
}

/* After an op that the touch table names with a slot: the large blocks the program had written more of
 * by then (counted as other large blocks came and went, at an RSS sample, or at their end) get those
 * pages written. The converter made whoever frees or reads them next wait for this op. */
static void touch_later(const sim_t *s, sim_thread_t *t)
{
    const uint64_t op = atomic_load_explicit(&t->progress, memory_order_relaxed) + 1;
    while (t->touch_next < t->touch_end && t->touch_next->op < op)
        t->touch_next++;
    for (; t->touch_next < t->touch_end && t->touch_next->op == op && t->touch_next->slot; t->touch_next++) {
        void *p = slot_ptr(s, t->touch_next->slot);
        if (p)
            touch_share(s, p, t->touch_next->size, t->touch_next->frac, 0);
    }
}

/* The index of address window w, looked up in the table and added to it if it is new; 0 if the
 * table is full. Run when a thread stores into another window than its last one. */
COLD uint32_t window_find(sim_t *s, sim_work_t *t, uint64_t w)
{
    uint32_t n = atomic_load_explicit(&s->nwindows, memory_order_acquire), i;
    for (i = 1; i <= n; i++)
        if (s->window[i] == w)
            goto found;
    pthread_mutex_lock(&s->window_lock);
    n = atomic_load_explicit(&s->nwindows, memory_order_relaxed);
    for (i = 1; i <= n && s->window[i] != w; i++)
        ;
    if (i > n) {
        if (n == WINDOWS_MAX) {
            i = 0;
        } else {
            s->window[i] = w;
            atomic_store_explicit(&s->nwindows, i, memory_order_release);
        }
    }
    pthread_mutex_unlock(&s->window_lock);
    if (!i)
        return 0;
found:
    t->last_window = w;
    t->last_window_index = i;
    return i;
}

/* The index of address window w, as window_find() gives it: nearly always the thread's last one. */
HOT uint32_t window_index(sim_t *s, sim_work_t *t, uint64_t w)
{
    if (__builtin_expect(t->last_window_index && t->last_window == w, 1))
        return t->last_window_index;
    return window_find(s, t, w);
}

static inline void slot_store(sim_t *s, sim_thread_t *t, uint64_t slot, void *p)
{
    const uint64_t addr = (uintptr_t)p;
    uint32_t w;
    if (!p) {
        s->slots[slot] = 0;
    } else if (!(addr & 7) && (w = window_index(s, t->work, addr >> WINDOW_SHIFT)) != 0) {
        s->slots[slot] = w << ENTRY_OFFSET_BITS | (uint32_t)((addr >> 3) & ENTRY_OFFSET_MASK);
    } else {
        s->slot_far[slot] = p;
        s->slots[slot] = SLOT_FAR;
        t->work->c.far_slots++;
    }
}

/* Live requested bytes, counted as the workload says (a call that fails in the replay but not in
 * the trace still counts: the ideal is the traced program's). Unsigned arithmetic: a damaged
 * workload's sizes may wrap the count, never overflow a signed one. */
static inline void add_live(sim_thread_t *t, uint64_t bytes)
{
    sim_work_t *w = t->work;
    const uint64_t v = (uint64_t)atomic_load_explicit(&w->live_bytes, memory_order_relaxed) + bytes;
    atomic_store_explicit(&w->live_bytes, (int64_t)v, memory_order_relaxed);
}

static inline void set_slot(sim_t *s, sim_thread_t *t, uint64_t slot, void *p, uint64_t size)
{
    slot_store(s, t, slot, p);
    add_live(t, size);
}

static inline void clear_slot(sim_t *s, sim_thread_t *t, uint64_t slot, uint64_t size)
{
    add_live(t, -size);
    s->slots[slot] = 0;
}

/* ---- one op's replay ---------------------------------------------------------------------------- */

/* What an op's replay tells the thread's loop. */
typedef enum {
    OP_NEXT, /* the op is done: it counts as completed, and the next one follows */
    OP_STOP, /* the thread stops here, the op not completed: it failed (and said why), another thread
              * failed or the watchdog stopped the replay (they say why), or its stream ended */
    OP_EXIT, /* the thread's exit, the stream's last op: it completes once the working set is back */
} op_end_t;

/* The slot table has nslots entries, and a damaged workload may name a slot past them: checked
 * here, once, so that no op's replay reads or writes outside the table. -1: the thread failed. */
HOT int check_slots(sim_t *s, sim_thread_t *t, const mt_wl_rec_t *r)
{
    if (__builtin_expect(r->slot <= s->nslots && r->slot2 <= s->nslots, 1))
        return 0;
    fail_at_op(s, t, r->op, "names slot %llu: expected a slot up to %llu, the workload's slot count",
               (unsigned long long)(r->slot > s->nslots ? r->slot : r->slot2), (unsigned long long)s->nslots);
    return -1;
}

/* A thread's pacing of its calls (--timing recorded): when it next looks at the clock, and what the
 * pacing cost, which the thread's time leaves out. */
typedef struct pacing {
    uint64_t from;   /* the next call from this recorded time on looks at the clock */
    uint64_t cycles; /* spent waiting for a call's recorded time */
    uint64_t cpu_ns; /* the CPU time of those waits */
    uint64_t sleeps; /* and their sleeps, which are not calls that blocked */
} pacing_t;

/* --timing recorded: no call before its recorded time, the clock read once per PACE_SLACK_NS of
 * those times (see pace()). Waits and marks are not paced: a wait's time is the awaited thread's. */
HOT void pace_call(sim_t *s, const mt_wl_rec_t *r, pacing_t *pc)
{
    if (s->timing != TIMING_RECORDED || r->op > MT_WL_LAST_CALL || r->time_ns < pc->from)
        return;
    pc->from = r->time_ns + PACE_SLACK_NS;
    const uint64_t p0 = sim_cycles();
    pace(s, r->time_ns, &pc->cpu_ns, &pc->sleeps);
    pc->cycles += sim_cycles() - p0;
}

/* The allocating call of op r, as the program made it: the block, or NULL where the call failed. */
HOT void *call_alloc(const sim_t *s, const mt_wl_rec_t *r)
{
    void *p;
    switch (r->op) {
    case MT_WL_MALLOC:
        return s->alloc.malloc(r->size);
    case MT_WL_CALLOC:
        return s->alloc.calloc(r->count, r->size);
    case MT_WL_MEMALIGN:
        return s->alloc.memalign(r->align, r->size);
    case MT_WL_POSIX_MEMALIGN:
        return s->alloc.posix_memalign(&p, r->align, r->size) ? NULL : p;
    case MT_WL_ALIGNED_ALLOC:
        return s->alloc.aligned_alloc(r->align, r->size);
    case MT_WL_VALLOC:
        return s->alloc.valloc(r->size);
    default:
        return s->alloc.pvalloc(r->size);
    }
}

/* An aligned op the allocator cannot make by any means: the replay would not be the program's. */
COLD void fail_unsupported(sim_t *s, sim_thread_t *t, unsigned op)
{
    char msg[300];
    snprintf(msg, sizeof msg,
             "the allocator defines none of memalign, posix_memalign and aligned_alloc: the workload's %s cannot be "
             "replayed",
             mt_wl_op_name(op));
    thread_fail(s, t, msg);
}

/* malloc, calloc and the aligned allocations: the call timed, then its block written as the program
 * wrote it (timed apart: its page faults are not the call's) and kept in the op's slot. */
HOT op_end_t replay_alloc(sim_t *s, sim_thread_t *t, const mt_wl_rec_t *r)
{
    const uint64_t bytes = mt_requested(r->op, r->count, r->size);
    const uint64_t c0 = sim_cycles();
    void *p = call_alloc(s, r);
    const uint64_t c1 = sim_cycles();
    account(t, r->op, c1 - c0);
    if (__builtin_expect(!p, 0) && (s->alloc.unsupported >> r->op & 1)) {
        fail_unsupported(s, t, r->op);
        return OP_STOP;
    }
    if (!r->slot) { /* the traced call failed; nothing will refer to what we got */
        if (p)      /* no call the program did not make: the allocator sees the workload's calls alone */
            s->alloc.free(p);
        return OP_NEXT;
    }
    if (!p)
        t->work->c.stat[r->op].failed++;
    touch(s, t, p, bytes, 0);
    t->work->c.write_cycles += sim_cycles() - c1;
    set_slot(s, t, r->slot, p, bytes);
    return OP_NEXT;
}

/* free: the block leaves its slot and the live bytes, then the call is timed. */
HOT op_end_t replay_free(sim_t *s, sim_thread_t *t, const mt_wl_rec_t *r)
{
    void *p = r->slot ? slot_ptr(s, r->slot) : NULL;
    if (r->slot)
        clear_slot(s, t, r->slot, r->old_size);
    const uint64_t c0 = sim_cycles();
    s->alloc.free(p);
    account(t, r->op, sim_cycles() - c0);
    return OP_NEXT;
}

/* realloc and reallocarray: the call timed, then the slots made to hold what the program's did.
 * The trace's call gave a block (slot2): written and kept as an allocation's, the old one kept where
 * this call failed. It gave none: a size of 0 freed the old block, a failure left it where it was. */
HOT op_end_t replay_realloc(sim_t *s, sim_thread_t *t, const mt_wl_rec_t *r)
{
    void *old = r->slot ? slot_ptr(s, r->slot) : NULL;
    const uint64_t bytes = mt_requested(r->op, r->count, r->size);
    const uint64_t c0 = sim_cycles();
    void *p = r->op == MT_WL_REALLOC ? s->alloc.realloc(old, r->size) : s->alloc.reallocarray(old, r->count, r->size);
    const uint64_t c1 = sim_cycles();
    account(t, r->op, c1 - c0);
    if (r->slot2) {
        if (r->slot)
            clear_slot(s, t, r->slot, r->old_size);
        if (!p)
            t->work->c.stat[r->op].failed++;
        touch(s, t, p, bytes, 0);
        t->work->c.write_cycles += sim_cycles() - c1;
        set_slot(s, t, r->slot2, p ? p : old, bytes);
    } else if (r->slot && bytes == 0) {
        clear_slot(s, t, r->slot, r->old_size); /* realloc(p, 0) freed p */
        if (p)
            s->alloc.free(p);
    } else if (r->slot) {
        if (p) /* failed in the trace, not here: the block lives on in its slot */
            slot_store(s, t, r->slot, p);
    } else if (p) {
        s->alloc.free(p);
    }
    return OP_NEXT;
}

/* The calls that neither make nor free a block: timed like the others, their results unused. */
HOT op_end_t replay_other_call(sim_t *s, sim_thread_t *t, const mt_wl_rec_t *r)
{
    const uint64_t c0 = sim_cycles();
    switch (r->op) {
    case MT_WL_USABLE_SIZE:
        (void)s->alloc.usable_size(slot_ptr(s, r->slot));
        break;
    case MT_WL_MALLOPT:
        mallopt((int)r->a, (int)r->b);
        break;
    default: /* malloc_trim, by name, as the program called it: the allocator's, else glibc's */
        malloc_trim((size_t)r->size);
        break;
    }
    account(t, r->op, sim_cycles() - c0);
    return OP_NEXT;
}

/* A sync point: the thread goes on once the awaited one has completed the ops the program's order
 * needs. One the workload can never meet fails the thread; one cut short stops it. */
static op_end_t replay_wait(sim_t *s, sim_thread_t *t, const mt_wl_rec_t *r)
{
    const int w = wait_for(s, t, r->thread, r->n);
    char msg[200];
    if (w == -EDEADLK) {
        snprintf(msg, sizeof msg, "thread %u waits for thread %u to complete %llu ops; it has only %llu", t->index,
                 r->thread, (unsigned long long)r->n, (unsigned long long)mt_wl_thread(s->wl, r->thread)->ops);
        thread_fail(s, t, msg);
    } else if (w == -EINVAL) {
        snprintf(msg, sizeof msg, "thread %u waits for thread %u; the workload has %u threads", t->index, r->thread,
                 s->nthreads);
        thread_fail(s, t, msg);
    } /* else another thread failed, or the watchdog stopped the replay: they say why */
    return w < 0 ? OP_STOP : OP_NEXT;
}

/* Memory the program mapped itself: mapped and written as it was, not the allocator's.
 * MAP_NORESERVE: a reservation the program never wrote costs nothing here either. */
static op_end_t replay_mmap(sim_t *s, sim_thread_t *t, const mt_wl_rec_t *r)
{
    void *p = r->size ? mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                      : MAP_FAILED;
    if (p == MAP_FAILED) {
        p = NULL;
        t->work->c.map_failed++;
    }
    t->work->c.maps++;
    const int64_t writing = p ? (int64_t)((r->size + s->page - 1) / s->page) : 0;
    sim_maps_writing(s, writing);
    touch(s, t, p, r->size, 1);
    const int put = sim_maps_put(s, r->slot, p, r->size);
    sim_maps_writing(s, -writing);
    if (put >= 0)
        return OP_NEXT;
    thread_fail(s, t, "more of the program's own mappings live at once than the workload's header counts mappings");
    if (p)
        munmap(p, r->size);
    return OP_STOP;
}

/* munmap and madvise of a part of one of the program's own mappings (sim_maps.c). */
static op_end_t replay_unmap(sim_t *s, sim_thread_t *t, const mt_wl_rec_t *r)
{
    const int u = r->op == MT_WL_MUNMAP ? sim_maps_unmap(s, r->slot, r->n, r->size, (int)r->a)
                                        : sim_maps_advise(s, r->slot, r->n, r->size, (int)r->a, r->count);
    if (u >= 0)
        return OP_NEXT;
    fail_at_op(s, t, r->op, "names %s of slot %llu: expected a part of a mapping the program made",
               u == -ENOENT ? "a mapping" : "a part past the end", (unsigned long long)r->slot);
    return OP_STOP;
}

/* The thread's exit, which must end its stream. Its completion lets a joiner go on and create the
 * next thread: the working set goes back to the pool first, or that thread maps a set of its own
 * (one more set per overlap: 150 Kb of a 2.8 MB replay of short threads), so the exit completes in
 * sim_thread_run(), after the give-back. */
static op_end_t replay_exit(sim_t *s, sim_thread_t *t)
{
    mt_wl_rec_t r;
    mt_error_t err;
    const int rc = mt_wl_cursor_next(&t->work->cur, &r, &err);
    if (rc == 0)
        return OP_EXIT;
    if (rc > 0)
        fail_at_op(s, t, r.op, "follows the thread's exit: expected the end of its stream");
    else
        thread_fail_at(s, t, &err);
    return OP_STOP;
}

/* One op of the thread's stream: its slots checked, its call paced, then replayed as its kind says. */
HOT op_end_t replay_op(sim_t *s, sim_thread_t *t, const mt_wl_rec_t *r, pacing_t *pc)
{
    if (check_slots(s, t, r) < 0)
        return OP_STOP;
    pace_call(s, r, pc);
    switch (r->op) {
    case MT_WL_MALLOC:
    case MT_WL_CALLOC:
    case MT_WL_MEMALIGN:
    case MT_WL_POSIX_MEMALIGN:
    case MT_WL_ALIGNED_ALLOC:
    case MT_WL_VALLOC:
    case MT_WL_PVALLOC:
        return replay_alloc(s, t, r);
    case MT_WL_FREE:
        return replay_free(s, t, r);
    case MT_WL_REALLOC:
    case MT_WL_REALLOCARRAY:
        return replay_realloc(s, t, r);
    case MT_WL_USABLE_SIZE:
    case MT_WL_MALLOPT:
    case MT_WL_MALLOC_TRIM:
        return replay_other_call(s, t, r);
    case MT_WL_WAIT:
        return replay_wait(s, t, r);
    case MT_WL_MMAP:
        return replay_mmap(s, t, r);
    case MT_WL_MUNMAP:
    case MT_WL_MADVISE:
        return replay_unmap(s, t, r);
    case MT_WL_RSS:
        atomic_store_explicit(&s->source_rss_kb, r->rss_kb, memory_order_relaxed);
        return OP_NEXT;
    case MT_WL_THREAD_EXIT:
        return replay_exit(s, t);
    default:
        return OP_NEXT; /* thread start, marks */
    }
}

/* ---- a thread, start to end --------------------------------------------------------------------- */

/* Replays the thread's stream, each op completed as its replay ends, up to its exit (OP_EXIT, not
 * completed yet) or the op it stops at (OP_STOP; the end of a stream without an exit, too). */
static op_end_t replay_stream(sim_t *s, sim_thread_t *t, pacing_t *pc)
{
    mt_wl_rec_t r;
    mt_error_t err;
    int rc;
    while ((rc = mt_wl_cursor_next(&t->work->cur, &r, &err)) > 0) {
        const op_end_t end = replay_op(s, t, &r, pc);
        if (end != OP_NEXT)
            return end;
        assert(!t->error); /* a failure stops the thread where it happens */
        if (__builtin_expect(t->touch_next < t->touch_end, 0) && t->touch_next->slot && s->touch == TOUCH_EVIDENCE)
            touch_later(s, t);
        completed(s, t);
    }
    if (rc < 0)
        thread_fail_at(s, t, &err);
    return OP_STOP;
}

/* A thread's clocks, read at its start and its end: its CPU time, the cycle counter, its voluntary
 * context switches. */
typedef struct thread_clocks {
    uint64_t cpu_ns, cycles, switches;
} thread_clocks_t;

static thread_clocks_t read_clocks(void)
{
    thread_clocks_t c;
    c.cpu_ns = thread_cpu_ns();
    c.cycles = sim_cycles();
    c.switches = voluntary_switches();
    return c;
}

/* Adds the thread's time since `start` to its counts, less what was not replaying: the CPU time of
 * its pacing, the cycles of its waits and pacing, and its own sleeps among its voluntary switches
 * (the rest are calls that blocked). */
static void count_thread_time(sim_thread_t *t, const thread_clocks_t *start, const pacing_t *pc)
{
    const thread_clocks_t end = read_clocks();
    sim_counts_t *c = &t->work->c;
    const uint64_t cpu = end.cpu_ns - start->cpu_ns;
    c->cpu_ns += cpu > pc->cpu_ns ? cpu - pc->cpu_ns : 0;
    const uint64_t lived = end.cycles - start->cycles, idle = pc->cycles + c->wait_cycles;
    c->busy_cycles += lived > idle ? lived - idle : 0;
    const uint64_t switched = end.switches - start->switches, own = c->futex_sleeps + pc->sleeps;
    c->blocked_switches += switched > own ? switched - own : 0;
}

/* The end of thread t, whether it ran or not. */
static void finish(sim_t *s, sim_thread_t *t)
{
    /* Children whose creation point was never reached still run, so that the replay ends. */
    while (t->next_spawn < t->nspawn)
        sim_spawn(s, s->spawns[t->spawn_first + t->next_spawn++].child);
    set_run_state(s, t, SIM_DONE);
    /* Wake anyone still waiting on us: they find the count short and report it. */
    atomic_store(&t->wake_at, UINT64_MAX);
    wake_all(t);
}

/* Thread t of the workload, start to end, on the calling thread (thread 0's is the main thread). */
void sim_thread_run(sim_t *s, sim_thread_t *t)
{
    set_run_state(s, t, SIM_RUNNING);
    const thread_clocks_t start = read_clocks();
    pacing_t pc = { 0 };
    t->work = sim_work_take(s, t);
    if (!t->work) {
        char msg[300];
        snprintf(msg, sizeof msg, "cannot map the replay buffers: %s", strerror(errno));
        thread_fail(s, t, msg);
        finish(s, t);
        return;
    }
    const op_end_t end = replay_stream(s, t, &pc);
    count_thread_time(t, &start, &pc);
    sim_work_give_back(s, t->work);
    t->work = NULL;
    if (end == OP_EXIT)
        completed(s, t);
    finish(s, t);
}

void *sim_thread_main(void *arg)
{
    sim_thread_t *t = arg;
    sim_t *s = t->sim;
    sim_thread_run(s, t);
    /* The last thing it does: once the count is 0, the main thread reports and exits. */
    if (atomic_fetch_sub(&s->threads_running, 1) == 1)
        futex(&s->threads_running, FUTEX_WAKE_PRIVATE, 1);
    return NULL;
}
