/* The pool of working sets: what a replay thread needs only while it runs (sim.h, sim_work_t).
 * A workload of many short threads has few alive at once: 2000 threads created and joined one
 * after another kept 2000 sets of buffers, zstd contexts and statistics mapped and partly resident
 * for the whole replay, 69 MB of bookkeeping for a 108 MB max RSS (bench/RESULTS.md). A set is made
 * when no free one is left and is never unmapped: the table of the replay's mappings (sim_map)
 * stays true, and memory the replay gave back cannot be counted as bookkeeping while the allocator
 * under test uses its addresses. Taking and giving back lock a mutex: once per thread, not per op. */
#define _GNU_SOURCE
#define ZSTD_STATIC_LINKING_ONLY
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zstd.h>

#include "sim.h"

/* Maps a new working set with its buffers, or NULL (errno set). */
static sim_work_t *work_make(sim_t *s)
{
    const size_t dsize = ZSTD_estimateDCtxSize();
    sim_work_t *w = sim_map(s, sizeof *w);
    if (!w)
        return NULL;
    w->raw = sim_map(s, MT_WL_STREAM_BUF_SIZE);
    w->z = sim_map(s, ZSTD_compressBound(MT_WL_STREAM_BUF_SIZE));
    void *ws = sim_map(s, dsize);
    if (!w->raw || !w->z || !ws)
        return NULL;
    w->dctx = ZSTD_initStaticDCtx(ws, dsize);
    if (!w->dctx) {
        errno = ENOMEM;
        return NULL;
    }
    return w;
}

sim_work_t *sim_work_take(sim_t *s, const sim_thread_t *t)
{
    pthread_mutex_lock(&s->work_lock);
    sim_work_t *w = s->free_work;
    if (w) {
        s->free_work = w->next_free;
    } else if ((w = work_make(s)) != NULL) {
        const uint32_t n = atomic_load_explicit(&s->nwork, memory_order_relaxed);
        s->work[n] = w; /* at most one per thread: work[] has nthreads entries */
        atomic_store_explicit(&s->nwork, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&s->work_lock);
    if (!w)
        return NULL;
    mt_wl_cursor_init(&w->cur, s->wl, t->index, w->raw, w->z, w->dctx);
    return w;
}

/* Adds `from` into `to` and leaves `from` zero. Only the buckets that hold a count are written:
 * a histogram's untouched pages stay out of the RSS. */
static void opstat_move(sim_opstat_t *to, sim_opstat_t *from)
{
    if (!from->calls && !from->failed)
        return;
    to->calls += from->calls;
    to->cycles += from->cycles;
    to->failed += from->failed;
    to->slow_calls += from->slow_calls;
    to->slow_cycles += from->slow_cycles;
    if (from->max > to->max)
        to->max = from->max;
    for (unsigned b = 0; b < SIM_HIST_BUCKETS; b++)
        if (from->hist[b]) {
            to->hist[b] += from->hist[b];
            from->hist[b] = 0;
        }
    from->calls = from->cycles = from->failed = from->max = from->slow_calls = from->slow_cycles = 0;
}

void sim_work_give_back(sim_t *s, sim_work_t *w)
{
    sim_counts_t *to = s->totals, *from = &w->c;
    pthread_mutex_lock(&s->work_lock);
    to->waits += from->waits;
    to->wait_cycles += from->wait_cycles;
    to->futex_sleeps += from->futex_sleeps;
    to->far_slots += from->far_slots;
    to->touched_in_part += from->touched_in_part;
    to->maps += from->maps;
    to->map_failed += from->map_failed;
    from->maps = from->map_failed = 0;
    to->cpu_ns += from->cpu_ns;
    to->busy_cycles += from->busy_cycles;
    to->write_cycles += from->write_cycles;
    to->blocked_switches += from->blocked_switches;
    from->busy_cycles = from->write_cycles = from->blocked_switches = 0;
    from->waits = from->wait_cycles = from->futex_sleeps = from->far_slots = from->cpu_ns = 0;
    from->touched_in_part = 0;
    for (unsigned op = 0; op < SIM_OPS; op++)
        opstat_move(&to->stat[op], &from->stat[op]);
    w->next_free = s->free_work;
    s->free_work = w;
    pthread_mutex_unlock(&s->work_lock);
}

int64_t sim_live_bytes(const sim_t *s)
{
    const uint32_t n = atomic_load_explicit(&s->nwork, memory_order_acquire);
    int64_t live = 0;
    for (uint32_t i = 0; i < n; i++)
        live += atomic_load_explicit(&s->work[i]->live_bytes, memory_order_relaxed);
    return live;
}

void sim_set_error(sim_t *s, sim_thread_t *t, const char *msg)
{
    if (t->error) /* a thread's first error is the one that counts */
        return;
    pthread_mutex_lock(&s->error_lock);
    if (!s->has_error || t->index < s->error_thread) {
        s->has_error = 1;
        s->error_thread = t->index;
        snprintf(s->errmsg, sizeof s->errmsg, "%s", msg);
    }
    pthread_mutex_unlock(&s->error_lock);
    t->error = 1;
}
