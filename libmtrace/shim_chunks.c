/* A thread's stream in the trace file: its home chunk, the next chunk claimed and a full one moved
 * out to it, the events written into it, the thread's start and end, and the home chunks of ended
 * threads given back.
 *
 * Nothing here is on the per-call hot path except through mt_thread_reserve(), which runs once per
 * chunk (tens of thousands of records). Code here may make syscalls but never calls malloc: the
 * callers hold mt_self.busy, so any allocation made by libc on our behalf passes through untraced.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

static void seal_chunk(uint8_t *chunk, const uint8_t *pos)
{
    mt_chunk_header_t *ch = (mt_chunk_header_t *)chunk;
    ch->used = (uint32_t)(pos - chunk - MT_CHUNK_HEADER_SIZE);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    ch->flags |= MT_CHUNK_SEALED;
}

/* Claims the next free chunk index of the file, growing the file (and its mapping) to hold it. */
static int claim_index(uint64_t *idx_out)
{
    const uint64_t idx = atomic_fetch_add(&mt_g.next_chunk, 1);
    if (idx >= mt_g.reserved_chunks)
        return -EFBIG;
    if (idx >= atomic_load(&mt_g.mapped_chunks)) {
        const int rc = mt_file_map_chunk(idx);
        if (rc < 0)
            return rc;
    }
    *idx_out = idx;
    return 0;
}

/* Starts chunk number t->seq of the thread in its home chunk, which is zero past its header. */
static void open_chunk(mt_thread_t *t, uint64_t now)
{
    uint8_t *c = t->chunk;
    mt_chunk_header_t *ch = (mt_chunk_header_t *)c;
    ch->kind = MT_CHUNK_THREAD;
    ch->flags = 0;
    ch->thread = t->thread_no;
    ch->tid = t->tid;
    ch->seq = t->seq++;
    ch->used = 0;
    ch->base_time = now;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    ch->magic = MT_CHUNK_MAGIC;
    t->pos = c + MT_CHUNK_HEADER_SIZE;
    t->end = mt_g.hot_path ? mt_records_end(c) : NULL;
    t->enc.prev_time = now;
    t->enc.prev_ptr = 0;
}

/* Each thread writes its records into one home chunk of the mapped file for its whole life. A full
 * home chunk is copied with pwrite to a newly claimed chunk index and the home chunk starts over.
 * Only the home chunks are ever touched through the mapping, so the trace costs the traced process
 * 64 KiB of RSS per live thread, and no page is faulted in, populated or dropped (each drop
 * flushes the TLB) per chunk: measured 25.7 -> 14 ns per call, see bench/RESULTS.md.
 *
 * Crash safety holds at every instant: the copy's body is written before its header, so a copy cut
 * short by a kill has no magic and is skipped by readers; until the home chunk's magic is cleared
 * after the copy, the chunk is in the file twice, byte for byte, and readers keep one (the spec's
 * reader rules); then the home chunk is zeroed and its new header stored, magic last. */
static int move_out(mt_thread_t *t, uint64_t idx)
{
    uint8_t *c = t->chunk;
    mt_chunk_header_t *ch = (mt_chunk_header_t *)c;
    const size_t used = ch->used;
    const off_t at = (off_t)(idx * MT_CHUNK_SIZE);
    if (mt_file_fd_ours() < 0)
        return -EBADF;
    errno = 0;
    if (pwrite(mt_g.fd, c + MT_CHUNK_HEADER_SIZE, used, at + MT_CHUNK_HEADER_SIZE) != (ssize_t)used ||
        pwrite(mt_g.fd, c, MT_CHUNK_HEADER_SIZE, at) != MT_CHUNK_HEADER_SIZE)
        return errno ? -errno : -EIO;
    ch->magic = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memset(c + MT_CHUNK_HEADER_SIZE, 0, used);
    return 0;
}

static int claim_chunk(mt_thread_t *t, uint64_t now)
{
    const int saved = errno; /* the program's, on its hot path */
    uint64_t idx;
    const int rc = claim_index(&idx);
    if (rc < 0)
        return rc;
    if (!t->chunk) {
        t->chunk = mt_g.base + idx * MT_CHUNK_SIZE;
        /* One call makes the home chunk's pages writable instead of a write fault per page on the
         * hot path. Kernels before 5.14 refuse it and the pages fault in as before. */
        madvise(t->chunk, MT_CHUNK_SIZE, MADV_POPULATE_WRITE);
    } else {
        seal_chunk(t->chunk, t->pos);
        const int mrc = move_out(t, idx);
        if (mrc < 0) {
            /* The home chunk keeps its records and, open again, its tail reserve for the final
             * events; tracing stops. */
            ((mt_chunk_header_t *)t->chunk)->flags &= (uint16_t)~MT_CHUNK_SEALED;
            return mrc;
        }
    }
    open_chunk(t, now);
    errno = saved;
    return 0;
}

static void put_event(mt_thread_t *t, unsigned op, uint64_t now, const uint8_t *payload, size_t len)
{
    if (now > t->clock_last) /* the thread's later calls take no earlier time (mt_now_of) */
        t->clock_last = now;
    t->clock_left = 0; /* and the next one reads the clock: after an event (a mapping of the program's,
                        * a thread's start), a call may come long after the latest read */
    t->pos = mt_enc_event(&t->enc, t->pos, op, now, payload, len);
}

/* Space for events: an event must fit in a chunk's record area; larger payloads are split by callers. */
#define MT_MAX_EVENT_PAYLOAD (MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE - MT_CHUNK_TAIL_RESERVE - 32)

uint32_t mt_next_thread_no(void)
{
    const uint32_t no = atomic_fetch_add(&mt_g.next_thread, 1) + 1;
    if (no > 1) /* the process's second thread, made by our pthread_create or seen at its first call */
        mt_clock_shared();
    return no;
}

/* ---- the pages of ended threads ------------------------------------------------------------------
 * A thread's home chunk is resident while the thread lives (populated at its claim, see
 * claim_chunk). At its exit its pages are dropped from the process's RSS: the mapping is shared, so
 * MADV_DONTNEED unmaps them and the data stays in the file's page cache, dirty, on its way to disk
 * (a SIGKILL loses none of it). But glibc frees more after the thread's destructors have run, its
 * tcache among them, and those records fault the chunk's first page back in; on ext4 with large
 * folios the fault maps the folio around it, 4 to 64 KiB. A program that created and joined 2000
 * threads peaked at 57.6 MB of trace pages for 1.6 MB untraced (bench/threads_rss.sh). So the chunk
 * is dropped again once its thread is gone, which tgkill(pid, tid, 0) tells (ESRCH), by the next
 * thread to start or end, or the next RSS sample: none of them is on a call's path. Dropping a chunk
 * too early (a tid reused, which only delays it; or a chunk still written) costs a page fault, never
 * a record. */
void mt_release_ended(void)
{
    if (!atomic_load_explicit(&mt_g.nended, memory_order_relaxed))
        return;
    const int saved = errno;
    for (unsigned i = 0; i < MT_ENDED_MAX; i++) {
        uint64_t e = atomic_load_explicit(&mt_g.ended[i], memory_order_relaxed);
        if (!e || syscall(SYS_tgkill, mt_g.pid, (pid_t)(uint32_t)e, 0) == 0 || errno != ESRCH)
            continue;
        if (!atomic_compare_exchange_strong(&mt_g.ended[i], &e, 0))
            continue; /* another thread released it */
        atomic_fetch_sub(&mt_g.nended, 1);
        madvise(mt_g.base + (e >> 32) * MT_CHUNK_SIZE, MT_CHUNK_SIZE, MADV_DONTNEED);
    }
    errno = saved;
}

/* Lists the home chunk of thread t, which is ending, for mt_release_ended(). */
static void add_ended(const mt_thread_t *t)
{
    const uint64_t e = (uint64_t)(t->chunk - mt_g.base) / MT_CHUNK_SIZE << 32 | t->tid;
    for (unsigned i = 0; i < MT_ENDED_MAX; i++) {
        uint64_t free_entry = 0;
        if (atomic_compare_exchange_strong(&mt_g.ended[i], &free_entry, e)) {
            atomic_fetch_add(&mt_g.nended, 1);
            return;
        }
    }
}

static void start_thread(mt_thread_t *t)
{
    if (!t->thread_no) /* threads made by our pthread_create wrapper have theirs already */
        t->thread_no = mt_next_thread_no();
    t->tid = (uint32_t)syscall(SYS_gettid);
    t->started = 1;
    if (mt_g.exit_key_ok)
        pthread_setspecific(mt_g.exit_key, t);
}

uint8_t *mt_thread_reserve(mt_thread_t *t, uint64_t now)
{
    if (atomic_load(&mt_g.stopped))
        return NULL;
    const int first = !t->started;
    if (first)
        start_thread(t);
    /* The new index is claimed before the home chunk is sealed: if none can be had, the home chunk
     * keeps its tail reserve for the TRUNCATED and THREAD_EXIT events. */
    const int rc = claim_chunk(t, now);
    if (rc < 0) {
        mt_stop_tracing(-rc, "cannot grow the trace file");
        return NULL;
    }
    if (first) {
        mt_release_ended();
        uint8_t payload[24], *q = payload;
        q = mt_put_uvarint(q, t->creator);
        put_event(t, MT_EV_THREAD_START, now, payload, (size_t)(q - payload));
    }
    return t->pos;
}

void mt_emit_event_at(mt_thread_t *t, unsigned op, uint64_t now, const uint8_t *payload, size_t len)
{
    if (len > MT_MAX_EVENT_PAYLOAD)
        len = MT_MAX_EVENT_PAYLOAD;
    if (!t->pos || t->pos + 1 + 10 + 5 + len > t->chunk + MT_CHUNK_SIZE - MT_CHUNK_TAIL_RESERVE) {
        if (!mt_thread_reserve(t, now))
            return;
    }
    put_event(t, op, now, payload, len);
}

void mt_emit_event(mt_thread_t *t, unsigned op, const uint8_t *payload, size_t len)
{
    mt_emit_event_at(t, op, mt_now(), payload, len);
}

/* Final events use the tail reserve, so they land even when no new chunk can be had. */
void mt_emit_final(mt_thread_t *t, unsigned op, const uint8_t *payload, size_t len)
{
    const uint64_t now = mt_now();
    if (!t->pos)
        return;
    if (t->pos + 1 + 10 + 5 + len > t->chunk + MT_CHUNK_SIZE)
        return;
    put_event(t, op, now, payload, len);
}

void mt_thread_exit(mt_thread_t *t)
{
    if (t->exited || !t->chunk)
        return;
    uint8_t payload[16], *q = mt_put_uvarint(payload, t->lost);
    mt_emit_final(t, MT_EV_THREAD_EXIT, payload, (size_t)(q - payload));
    atomic_fetch_add(&mt_g.lost, t->lost);
    t->lost = 0;
    t->exited = 1;
    /* The chunk stays open: destructors that run after ours (other keys', glibc's own) can still
     * allocate and free in this thread, and their records follow THREAD_EXIT in the same chunk.
     * Its pages leave the process's RSS now (the page cache keeps them); a later record faults its
     * page back in, and mt_release_ended() drops it once the thread is gone. */
    madvise(t->chunk, MT_CHUNK_SIZE, MADV_DONTNEED);
    mt_release_ended();
    add_ended(t);
}
