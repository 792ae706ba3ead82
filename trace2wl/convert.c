/* trace2wl: a trace into a workload, streaming.
 *
 * The threads' records are merged in time order with a heap. Addresses become slots through a map
 * that holds only live blocks, and a thread holds buffers only from its first record's turn to its
 * end, so memory follows the live set and the threads running at once, never the trace's length.
 * Timestamps can disagree with causality (a thread's malloc can carry an entry time earlier than
 * the free, in another thread, that made its address available); such a record is held back, with
 * the rest of its thread, until the event it depends on has been applied, whatever the depth of the
 * chain. A record that reads a block made by another thread waits, in the workload, for that thread
 * to have completed the op that made it: the only sync points emitted.
 */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mtrace/convert.h"
#include "mtrace/merge_heap.h"
#include "mtrace/ordered_reader.h"
#include "mtrace/ptr_map.h"
#include "mtrace/workload.h"
#include "mtrace/file_io.h"
#include "touch.h"
#include "mtrace/vmap.h"

/* A helper run for nearly every record, or the common case of one, split from its rare case: a
 * call costs about 15 instructions of register saves and restores, against a handful of work, and
 * GCC does not inline helpers with several callers in apply() by itself. */
#define HOT static inline __attribute__((always_inline))

/* ---- live blocks: address -> slot in an mt_ptr_map; what the slot holds is kept per slot ------- */

/* The map's entries stay 16 bytes: the value holds the block's slot (low 32 bits) and its last
 * toucher, the thread index of its maker or last reader (high 32 bits), which only a live block
 * has. The block's size and op number live in a slot-indexed array, which stays hot because freed
 * slots are reused first; it holds 16 bytes per slot, the memory of the peak live set. */
typedef mt_ptr_entry_t block_t;

static inline uint32_t block_slot(const block_t *b)
{
    return (uint32_t)b->value;
}

static inline uint32_t block_toucher(const block_t *b)
{
    return (uint32_t)(b->value >> 32);
}

static inline uint64_t block_value(uint32_t slot, uint32_t toucher)
{
    return (uint64_t)toucher << 32 | slot;
}

typedef struct slot_info {
    uint64_t size; /* requested bytes */
    uint64_t seq;  /* live: its toucher's op count through that op; freed: see slot_deque_t */
} slot_info_t;

/* ---- threads and the merge ------------------------------------------------------------------- */

typedef enum { RUNNABLE, BLOCKED_LIVE, BLOCKED_UNKNOWN, BLOCKED_CREATE, DONE } tstate_t;

/* Records are decoded this far ahead of their use (the record being applied included) so that
 * the map lines they will touch are prefetched in time: a large map does not fit in cache, and a
 * lookup is otherwise a miss. A power of two: it is also the ring's size. */
#define LOOKAHEAD 16u

/* Bytes of an event's payload kept (a MARK's label, of which the workload keeps 255): the copy is
 * needed because the cursor's buffer moves on to the next chunk while records wait in the ring. */
#define PAYLOAD_KEPT 256u

/* A live map smaller than this fits in the L1 data cache of any x86-64 core of the last 15 years:
 * prefetching its lines then only costs the hashing. A larger one, even one that fits in L2, is
 * prefetched: with a one-multiply hash (mt_ptr_map_home) that pays, by 1 to 2 % on a 1 000-block
 * live set (a 64 KiB map), where the limit was 256 KiB when the hash took five steps. */
#define PREFETCH_MIN_BYTES (32u << 10)

/* Slots a thread freed, oldest first. The replayer's slot table is shared by its threads, so a slot
 * freed by thread B can be reused by thread A only once B's free has run: a thread reuses its own
 * freed slots first (newest first, no sync needed), and when it has none it takes another thread's
 * oldest one and waits for that free, which has almost always run already. A listed slot's seq is
 * its thread's op count through the free, or, for a slot taken from another thread, through the
 * WAIT that took it. */
typedef struct slot_deque {
    uint32_t *v;
    uint64_t head, tail, cap; /* entries v[head % cap] .. v[(tail - 1) % cap] */
} slot_deque_t;

/* Entry k (mod cap) of the deque. cap is 0 or a power of two (64, doubled), so the modulo is a
 * mask: as a `%` by a variable it was a 64-bit division, twice a record (a push and a pop). */
static inline uint32_t *deque_at(const slot_deque_t *d, uint64_t k)
{
    return &d->v[k & (d->cap - 1)];
}

/* A mapping the program just made, held back while its thread's next records trim it. Programs map
 * more than they need and unmap a head and a tail to align the rest (Ruby's 16 KiB heap pages, from
 * 32 KiB mappings). The replay writes a mapping's pages from its start, so a mapping replayed whole
 * and then trimmed at its head loses what it wrote, and its page evidence is shared over pages the
 * program never kept: folded, the trims leave one mapping of the part kept, as the program used it. */
typedef struct held_map {
    uint64_t a, len, resident, ns;
    int brk, on;
} held_map_t;

/* What a thread holds while its records are read: made when its first record's turn comes in the
 * merge (until then the thread is parked: the merge needs only that record's time), given back at
 * its end. A program that ran thousands of threads one after another then costs the reading state
 * of those that ran at once: for every thread from the start, 2001 short threads took 43 MB. */
typedef struct cthread_io {
    mt_thread_cursor_t cur;      /* without decoders (conv_t.dec) */
    mt_record_t ring[LOOKAHEAD]; /* LOOKAHEAD decoded records, from ring_pos on */
    /* ns[k]: ring[k]'s time in nanoseconds, converted as it is decoded, LOOKAHEAD records before
     * its use: the conversion's latency (a division, about 20 cycles) then no longer holds up the
     * op's encoding, whose output position depends on it (-2 % on a 1 000-block live set). */
    uint64_t ns[LOOKAHEAD];
    uint8_t payload[LOOKAHEAD][PAYLOAD_KEPT]; /* payload[k]: ring[k]'s payload */
} cthread_io_t;

typedef struct cthread {
    slot_deque_t freed;
    cthread_io_t *io;        /* NULL while parked and once done */
    const mt_record_t *head; /* the next record to apply, io->ring[ring_pos]; NULL once all are */
    uint32_t ring_pos, ring_n;
    int parked; /* its first record's time is its key in the merge; nothing of it is read yet */
    int cursor_done;
    tstate_t state;
    uint64_t key;        /* what a blocked thread waits for: an address or a thread number */
    uint64_t *waited;    /* per other thread: the highest count already waited for (waited_*) */
    uint32_t *waited_of; /* with many threads: the threads waited for, + 1, 0 for none (a hash) */
    uint32_t waited_cap, waited_n;
    uint32_t thread_no;
    uint32_t creator;    /* index + 1 */
    uint64_t create_seq; /* the creator's op count when it created this thread; 0: unknown yet */
    int create_seen;
    int exited;        /* the trace recorded its exit */
    uint64_t *pending; /* exits of children to wait for at the next op: pairs (index, count) */
    uint32_t npending, cap_pending;
} cthread_t;

typedef struct conv {
    mt_trace_t *trace;
    mt_wl_writer_t *out;
    cthread_t *t;
    uint32_t n;
    mt_ordered_t *dec;     /* with jobs > 1: the threads' records decoded by workers, t[].cur unused */
    mt_merge_heap_t heap;  /* runnable threads by head time */
    uint64_t *key;         /* key[i]: thread i's head time */
    uint32_t blocked;      /* threads held back, for any reason */
    uint32_t hard_blocked; /* held back on a live address or a thread creation */
    mt_ptr_map_t live;
    slot_info_t *slots; /* indexed by slot */
    uint64_t slots_cap;
    uint64_t next_slot;
    uint32_t victim;        /* where the next search for another thread's freed slot starts */
    uint64_t *recent_frees; /* freed addresses, direct-mapped: tells a double free from an unknown one */
    double rate;
    uint64_t t0;
    uint64_t live_bytes, peak_bytes, peak_time_ns;
    uint64_t source_peak_rss_kb, source_peak_anon_kb;
    uint64_t source_start_anon_kb; /* at the first RSS sample */
    int rss_seen;
    /* at the latest RSS sample, the anonymous memory beyond the first sample's and the live malloc
     * bytes (vm_end_from_rss) */
    uint64_t unexplained_kb;
    int vm_exit_seen; /* the trace counts the program's own mappings at its exit (MT_VM_AT_EXIT) */
    uint32_t page_kb;
    mt_touch_t touch;    /* page evidence of large blocks */
    mt_touch_t vtouch;   /* and of the program's own mappings, keyed by their mt_vmap_map_t.key */
    mt_vmap_t vmap;      /* the program's own mappings */
    mt_vmap_cut_t *cuts; /* scratch for mt_vmap_cut */
    held_map_t *held;    /* per thread: its latest mapping, while the records after it may trim it */
    uint32_t held_maps;  /* threads holding one back */
    size_t ncuts, cap_cuts;
    int touch_failed;   /* out of memory deciding a block's entry */
    unsigned latest_op; /* the op of the latest record applied: did the trace end at an exec? */
    mt_convert_stats_t *st;
    mt_error_t *err;
} conv_t;

#define RECENT_FREES 65536u

static uint64_t to_ns(const conv_t *c, uint64_t time)
{
    return time > c->t0 ? mt_ticks_ns(time - c->t0, c->rate) : 0;
}

static inline __attribute__((always_inline)) void prefetch_record(const conv_t *c, const mt_record_t *r)
{
    if (r->op > MT_OP_LAST_CALL || c->live.cap * sizeof *c->live.v < PREFETCH_MIN_BYTES)
        return;
    if (r->ptr)
        mt_ptr_map_prefetch(&c->live, r->ptr);
    if (r->result && !(r->flags & MT_FLAG_NULL) && r->result != r->ptr)
        mt_ptr_map_prefetch(&c->live, r->result);
}

/* Moves thread i's head on past the record just applied (the first time, to its first record;
 * NULL at its end), keeping the ring full. Records are decoded straight into their ring slot and
 * stay there until applied: the head is a pointer, never a copy. */
HOT int advance(conv_t *c, uint32_t i)
{
    cthread_t *t = &c->t[i];
    cthread_io_t *io = t->io;
    if (t->head) {
        t->ring_pos = (t->ring_pos + 1) % LOOKAHEAD;
        t->ring_n--;
    }
    while (!t->cursor_done && t->ring_n < LOOKAHEAD) {
        const uint32_t k = (t->ring_pos + t->ring_n) % LOOKAHEAD;
        mt_record_t *r = &io->ring[k];
        int rc;
        if (c->dec) {
            const mt_record_t *d;
            if ((rc = mt_ordered_thread_next(c->dec, i, &d, c->err)) > 0)
                *r = *d; /* its payload, in the worker's batch until the next call, is copied below */
        } else {
            rc = mt_thread_cursor_next(&io->cur, r, c->err);
        }
        if (rc < 0)
            return rc;
        if (rc == 0) {
            t->cursor_done = 1;
            break;
        }
        if (r->len) {
            const uint32_t len = r->len < PAYLOAD_KEPT ? r->len : PAYLOAD_KEPT;
            memcpy(io->payload[k], r->data, len);
            r->data = io->payload[k];
            r->len = len;
        }
        prefetch_record(c, r);
        io->ns[k] = to_ns(c, r->time); /* the rate is known before the first record is read */
        t->ring_n++;
        c->st->records++;
        if (r->op <= MT_OP_LAST_CALL)
            c->st->calls++;
    }
    t->head = t->ring_n ? &io->ring[t->ring_pos] : NULL;
    if (t->head)
        c->key[i] = t->head->time;
    return 0;
}

static void block_thread(conv_t *c, uint32_t i, tstate_t why, uint64_t key)
{
    c->t[i].state = why;
    c->t[i].key = key;
    c->blocked++;
    if (why != BLOCKED_UNKNOWN)
        c->hard_blocked++;
}

static void unblock(conv_t *c, uint32_t i)
{
    if (c->t[i].state != BLOCKED_UNKNOWN)
        c->hard_blocked--;
    c->t[i].state = RUNNABLE;
    c->blocked--;
}

/* wake when some thread is blocked. */
static void wake_blocked(conv_t *c, tstate_t why, uint64_t key)
{
    for (uint32_t i = 0; i < c->n; i++) {
        cthread_t *t = &c->t[i];
        if (t->state == why && t->key == key) {
            unblock(c, i);
            c->st->inversions++;
            mt_merge_push(&c->heap, i);
        }
    }
    if (c->blocked && !c->hard_blocked) {
        for (uint32_t i = 0; i < c->n; i++) {
            if (c->t[i].state == BLOCKED_UNKNOWN) {
                unblock(c, i);
                mt_merge_push(&c->heap, i);
            }
        }
    }
}

/* Makes the threads blocked on (why, key) runnable again. A thread held on an address nobody made
 * is held only while a hard-blocked thread might still make it: once none is, it goes on. */
HOT void wake(conv_t *c, tstate_t why, uint64_t key)
{
    if (c->blocked)
        wake_blocked(c, why, key);
}

/* ---- emitting ops -------------------------------------------------------------------------------- */

_Static_assert(sizeof(mt_wl_rec_t) == 128, "wl_rec() stores every field of mt_wl_rec_t: update it");

/* An op of kind `op` at time_ns with every other field zero, stored field by field: GCC clears a
 * 128-byte initializer with `rep stos`, whose start-up cost is paid once per op. */
static inline mt_wl_rec_t wl_rec(uint8_t op, uint64_t time_ns)
{
    mt_wl_rec_t w;
    w.op = op;
    w.time_ns = time_ns;
    w.slot = 0;
    w.slot2 = 0;
    w.size = 0;
    w.count = 0;
    w.align = 0;
    w.old_size = 0;
    w.a = 0;
    w.b = 0;
    w.thread = 0;
    w.n = 0;
    w.rss_kb = 0;
    w.vm_kb = 0;
    w.data = NULL;
    w.len = 0;
    return w;
}

static int put(conv_t *c, uint32_t i, mt_wl_rec_t *r)
{
    if (mt_wl_writer_put(c->out, i, r, c->err) < 0)
        return -EIO;
    c->st->ops++;
    return 0;
}

/* What a thread has waited for: the highest op count of each other thread. Indexed by thread below
 * WAITED_DENSE threads; past that, an open-addressing table of the threads it waited for, which
 * grows as it waits on more: a dense array is 8 bytes per thread per thread, 32 MB for a program
 * of 2000 short threads, 80 GB for one of 100 000. */
#define WAITED_DENSE 256u
#define WAITED_FIRST 8u

static inline uint64_t waited_get(const cthread_t *t, uint32_t owner)
{
    if (!t->waited_of)
        return t->waited[owner];
    for (uint32_t k = (owner * 0x9e3779b9u) & (t->waited_cap - 1);; k = (k + 1) & (t->waited_cap - 1)) {
        if (t->waited_of[k] == owner + 1)
            return t->waited[k];
        if (!t->waited_of[k])
            return 0;
    }
}

/* Records that the thread has waited for owner's op count seq. 0, or -ENOMEM. */
static int waited_set(cthread_t *t, uint32_t owner, uint64_t seq)
{
    if (!t->waited_of) {
        t->waited[owner] = seq;
        return 0;
    }
    if (2 * (t->waited_n + 1) > t->waited_cap) { /* at most half full: double, placing every entry again */
        const uint32_t cap = 2 * t->waited_cap;
        uint32_t *of = calloc(cap, sizeof *of);
        uint64_t *v = calloc(cap, sizeof *v);
        if (!of || !v) {
            free(of);
            free(v);
            return -ENOMEM;
        }
        for (uint32_t j = 0; j < t->waited_cap; j++) {
            if (!t->waited_of[j])
                continue;
            uint32_t k = ((t->waited_of[j] - 1) * 0x9e3779b9u) & (cap - 1);
            while (of[k])
                k = (k + 1) & (cap - 1);
            of[k] = t->waited_of[j];
            v[k] = t->waited[j];
        }
        free(t->waited_of);
        free(t->waited);
        t->waited_of = of;
        t->waited = v;
        t->waited_cap = cap;
    }
    uint32_t k = (owner * 0x9e3779b9u) & (t->waited_cap - 1);
    while (t->waited_of[k] && t->waited_of[k] != owner + 1)
        k = (k + 1) & (t->waited_cap - 1);
    t->waited_n += !t->waited_of[k];
    t->waited_of[k] = owner + 1;
    t->waited[k] = seq;
    return 0;
}

/* The table of thread t of c's n threads. 0, or -ENOMEM. */
static int waited_init(cthread_t *t, uint32_t n)
{
    if (n <= WAITED_DENSE)
        return (t->waited = calloc(n + 1, sizeof *t->waited)) ? 0 : -ENOMEM;
    t->waited_cap = WAITED_FIRST;
    t->waited = calloc(WAITED_FIRST, sizeof *t->waited);
    t->waited_of = calloc(WAITED_FIRST, sizeof *t->waited_of);
    return t->waited && t->waited_of ? 0 : -ENOMEM;
}

/* Children that exited before thread i's next record: their exits come before it, as a join
 * would make them. Written before anything else of the record, so that op numbers taken while
 * applying it (a new block's maker count) are those of its own op. */
static int flush_exits(conv_t *c, uint32_t i, uint64_t time_ns)
{
    cthread_t *t = &c->t[i];
    for (uint32_t k = 0; k < t->npending; k++) {
        mt_wl_rec_t w = wl_rec(MT_WL_WAIT, time_ns);
        w.thread = (uint32_t)t->pending[2 * k];
        w.n = t->pending[2 * k + 1];
        if (waited_get(t, w.thread) >= w.n)
            continue;
        if (waited_set(t, w.thread, w.n) < 0)
            return -ENOMEM;
        if (put(c, i, &w) < 0)
            return -EIO;
        c->st->waits++;
    }
    t->npending = 0;
    return 0;
}

/* depend once the WAIT is needed. */
static int depend_wait(conv_t *c, uint32_t i, uint32_t owner, uint64_t seq, uint64_t time_ns)
{
    cthread_t *t = &c->t[i];
    if (waited_set(t, owner, seq) < 0)
        return -ENOMEM;
    mt_wl_rec_t w = wl_rec(MT_WL_WAIT, time_ns);
    w.thread = owner;
    w.n = seq;
    c->st->waits++;
    return put(c, i, &w);
}

/* Makes thread i wait until thread `owner` has completed `seq` ops, unless it already did. */
HOT int depend(conv_t *c, uint32_t i, uint32_t owner, uint64_t seq, uint64_t time_ns)
{
    if (owner == i || waited_get(&c->t[i], owner) >= seq)
        return 0;
    return depend_wait(c, i, owner, seq, time_ns);
}

#define STEAL_BATCH 256u

/* Doubles a full deque. */
static int deque_grow(slot_deque_t *d)
{
    const uint64_t cap = d->cap ? d->cap * 2 : 64;
    uint32_t *n = malloc(cap * sizeof *n);
    if (!n)
        return -ENOMEM;
    for (uint64_t k = d->head; k < d->tail; k++)
        n[k - d->head] = *deque_at(d, k);
    free(d->v);
    d->v = n;
    d->tail -= d->head;
    d->head = 0;
    d->cap = cap;
    return 0;
}

static void deque_free(slot_deque_t *d)
{
    free(d->v);
    *d = (slot_deque_t){ 0 };
}

HOT int deque_push(slot_deque_t *d, uint32_t s)
{
    if (d->tail - d->head == d->cap && deque_grow(d) < 0)
        return -ENOMEM;
    *deque_at(d, d->tail++) = s;
    return 0;
}

/* slot_take when thread i has no freed slot of its own. */
static int slot_take_other(conv_t *c, uint32_t i, uint64_t time_ns, uint32_t *slot)
{
    slot_deque_t *own = &c->t[i].freed;
    for (uint32_t k = 0; k < c->n; k++) {
        const uint32_t v = (c->victim + k) % c->n;
        slot_deque_t *d = &c->t[v].freed;
        if (d->tail == d->head)
            continue;
        /* A batch of the oldest, under one wait for the newest of them (they were freed in order). */
        c->victim = v;
        uint64_t seq = 0;
        uint32_t taken = 0;
        for (; taken < STEAL_BATCH && d->tail > d->head; taken++) {
            const uint32_t s = *deque_at(d, d->head++);
            seq = c->slots[s].seq;
            if (deque_push(own, s) < 0)
                return -ENOMEM;
        }
        if (d->tail == d->head && c->t[v].state == DONE)
            deque_free(d); /* nobody pushes to it again */
        int rc = depend(c, i, v, seq, time_ns);
        /* The batch is ours now, behind our wait: a thread that takes one of them from us later
         * must wait for us, at the count we have reached, not for the thread that freed it. */
        const uint64_t now = mt_wl_writer_thread_ops(c->out, i);
        for (uint64_t q = own->tail - taken; q < own->tail; q++)
            c->slots[*deque_at(own, q)].seq = now;
        *slot = *deque_at(own, --own->tail);
        return rc;
    }
    *slot = 0;
    if (c->next_slot + 1 >= c->slots_cap) {
        const uint64_t cap = c->slots_cap ? c->slots_cap * 2 : 4096;
        slot_info_t *n = realloc(c->slots, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        c->slots = n;
        c->slots_cap = cap;
    }
    *slot = (uint32_t)++c->next_slot;
    return 0;
}

/* A slot for a new block of thread i, in *slot (0 when memory runs out); may emit a WAIT. */
HOT int slot_take(conv_t *c, uint32_t i, uint64_t time_ns, uint32_t *slot)
{
    slot_deque_t *own = &c->t[i].freed;
    if (own->tail > own->head) {
        *slot = *deque_at(own, --own->tail);
        return 0;
    }
    return slot_take_other(c, i, time_ns, slot);
}

/* Thread i has just read a live block (malloc_usable_size, a failed realloc): whoever frees or reads
 * it next must come after this read, so the block's last toucher is now thread i. Readers chain:
 * each waited for the previous toucher, so waiting for the last one covers them all. */
static void touched(conv_t *c, uint32_t i, block_t *b)
{
    b->value = block_value(block_slot(b), i);
    c->slots[block_slot(b)].seq = mt_wl_writer_thread_ops(c->out, i);
}

/* Makes thread i wait for the last op that touched the live block b. */
static int depend_block(conv_t *c, uint32_t i, const block_t *b, uint64_t time_ns)
{
    return depend(c, i, block_toucher(b), c->slots[block_slot(b)].seq, time_ns);
}

/* Thread i has just written the op that freed `slot`. */
HOT int slot_release(conv_t *c, uint32_t i, uint32_t slot)
{
    c->slots[slot].seq = mt_wl_writer_thread_ops(c->out, i);
    return deque_push(&c->t[i].freed, slot);
}

static uint64_t requested(const mt_record_t *r)
{
    return mt_requested(r->op, r->count, r->size);
}

/* A block comes alive at address p in thread i's op that completes as op number seq. */
HOT int make_block(conv_t *c, uint32_t i, uint64_t p, uint64_t size, uint32_t slot, uint64_t time_ns)
{
    if (!slot || mt_ptr_map_put(&c->live, p, block_value(slot, i)) < 0)
        return -ENOMEM;
    c->slots[slot].size = size;
    c->slots[slot].seq = mt_wl_writer_thread_ops(c->out, i) + 1;
    c->live_bytes += size;
    if (c->live_bytes > c->peak_bytes) {
        c->peak_bytes = c->live_bytes;
        c->peak_time_ns = time_ns;
    }
    wake(c, BLOCKED_UNKNOWN, p);
    return 0;
}

/* A requested size this close to MT_PAGES_MIN may have MT_PAGES_MIN usable bytes (glibc rounds an
 * mmapped chunk up to a page): only such blocks can have page evidence to decide. */
#define PAGES_SLACK 8192u

HOT int end_block(conv_t *c, block_t *b)
{
    const uint64_t p = b->key;
    const uint64_t size = c->slots[block_slot(b)].size;
    c->live_bytes -= size;
    if (__builtin_expect(c->touch.map.n != 0 && size + PAGES_SLACK >= MT_PAGES_MIN, 0) &&
        mt_touch_ended(&c->touch, p) < 0)
        c->touch_failed = 1;
    c->recent_frees[mt_ptr_hash(p) & (RECENT_FREES - 1)] = p;
    mt_ptr_map_del(&c->live, b);
    wake(c, BLOCKED_LIVE, p);
    return 0;
}

/* A free of an address not live: freed before (a double free, if we still remember it) or made
 * before tracing began. */
static void count_unknown(conv_t *c, const mt_record_t *r)
{
    uint64_t *seen = &c->recent_frees[mt_ptr_hash(r->ptr) & (RECENT_FREES - 1)];
    if (*seen == r->ptr) {
        *seen = 0;
        if (!c->st->double_frees++)
            c->st->first_double_free_offset = r->offset;
        return;
    }
    if (!c->st->unknown_frees++)
        c->st->first_unknown_free_offset = r->offset;
}

static int held_release(conv_t *c, uint32_t i); /* with the program's mappings, below */

/* A thread that exited gets its THREAD_EXIT op, and its creator waits for it before its own next
 * op, as a join would make it (a creator whose records are done has no next op). */
static int exit_thread(conv_t *c, uint32_t i, uint64_t time)
{
    cthread_t *t = &c->t[i];
    mt_wl_rec_t w = wl_rec(MT_WL_THREAD_EXIT, to_ns(c, time));
    int rc = t->npending ? flush_exits(c, i, w.time_ns) : 0;
    if (rc < 0 || (rc = put(c, i, &w)) < 0)
        return rc;
    if (!t->creator || c->t[t->creator - 1].state == DONE)
        return 0;
    cthread_t *p = &c->t[t->creator - 1];
    if (p->npending == p->cap_pending) {
        const uint32_t cap = p->cap_pending ? p->cap_pending * 2 : 8;
        uint64_t *n = realloc(p->pending, 2 * cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        p->pending = n;
        p->cap_pending = cap;
    }
    p->pending[2 * p->npending] = i;
    p->pending[2 * p->npending + 1] = mt_wl_writer_thread_ops(c->out, i);
    p->npending++;
    return 0;
}

/* What thread i held to read its records and to write its ops goes: none follows. */
static void release_thread(conv_t *c, uint32_t i)
{
    cthread_t *t = &c->t[i];
    if (t->io && !c->dec)
        mt_thread_cursor_fini(&t->io->cur);
    free(t->io);
    t->io = NULL;
    free(t->waited);
    free(t->waited_of);
    t->waited = NULL;
    t->waited_of = NULL;
    free(t->pending);
    t->pending = NULL;
    t->npending = t->cap_pending = 0;
    if (t->freed.tail == t->freed.head)
        deque_free(&t->freed); /* else its slots wait there for other threads */
}

/* Thread i has no records left: its stream is complete. Its slots freed stay for other threads. */
static int finish_thread(conv_t *c, uint32_t i, uint64_t time)
{
    cthread_t *t = &c->t[i];
    t->state = DONE;
    int rc = held_release(c, i);
    if (rc == 0 && t->exited)
        rc = exit_thread(c, i, time);
    if (rc == 0)
        rc = mt_wl_writer_end_thread(c->out, i, c->err);
    release_thread(c, i);
    return rc;
}

/* ---- the program's own mappings ------------------------------------------------------------- */

/* The share of `resident` pages of a range `len` bytes long that lies in `part`. */
static uint64_t share(uint64_t resident, const mt_vmap_cut_t *part, uint64_t len)
{
    return (uint64_t)((long double)resident * (part->hi - part->lo) / len);
}

/* Thread i's op just written used mapping m: a later use waits for it (it waited for the one
 * before, so waiting for the last covers them all). */
static void vm_touched(conv_t *c, mt_vmap_map_t *m, uint32_t i)
{
    m->thread = i;
    m->op = mt_wl_writer_thread_ops(c->out, i);
}

/* Starts thread i's op on `part` of mapping m: a wait for the mapping's last user first (the slot
 * and the part's offset and length go into *w). */
static int part_op(conv_t *c, uint32_t i, const mt_vmap_map_t *m, const mt_vmap_cut_t *part, uint8_t op, uint64_t ns,
                   mt_wl_rec_t *w)
{
    *w = wl_rec(op, ns);
    w->slot = m->slot;
    w->n = part->lo - m->base;
    w->size = part->hi - part->lo;
    return depend(c, i, m->thread, m->op, ns);
}

/* Thread i unmaps [a, a + len), of which `resident` whole pages were resident: a munmap op per part
 * of a mapping it removes, each after the mapping's last user (its mmap, or a later use); the last
 * part of a mapping frees its slot and decides its page evidence, shared out by length. */
static int vm_unmap(conv_t *c, uint32_t i, uint64_t a, uint64_t len, uint64_t resident, uint64_t ns)
{
    if (!len || a + len < a)
        return 0;
    int rc = mt_vmap_cut(&c->vmap, a, a + len, &c->cuts, &c->ncuts, &c->cap_cuts);
    for (size_t k = 0; k < c->ncuts && rc == 0; k++) {
        const mt_vmap_cut_t *cut = &c->cuts[k];
        mt_vmap_map_t *m = &c->vmap.map[cut->map];
        mt_wl_rec_t w;
        if ((rc = part_op(c, i, m, cut, MT_WL_MUNMAP, ns, &w)) < 0)
            break;
        int last = m->left == 0; /* and no later part of it in this unmap (one may lie in its hole) */
        for (size_t j = k + 1; j < c->ncuts && last; j++)
            last = c->cuts[j].map != cut->map;
        w.a = last;
        mt_touch_ending_add(&c->vtouch, m->key, share(resident, cut, len));
        if ((rc = put(c, i, &w)) < 0)
            break;
        vm_touched(c, m, i);
        if (last) {
            if ((rc = mt_touch_ended(&c->vtouch, m->key)) < 0 || (rc = slot_release(c, i, m->slot)) < 0)
                break;
            mt_vmap_release(&c->vmap, cut->map);
        }
    }
    return rc;
}

/* Thread i gives `advice` for [a, a + len), of which `resident` whole pages were resident before:
 * an madvise op per part of a mapping of the program's it names (the rest, a malloc block's pages
 * among them, is not the program's own memory and gives nothing). */
static int vm_advise(conv_t *c, uint32_t i, uint64_t a, uint64_t len, uint64_t resident, uint64_t advice, uint64_t ns)
{
    if (!len || a + len < a || advice > INT32_MAX)
        return 0;
    int rc = mt_vmap_parts(&c->vmap, a, a + len, &c->cuts, &c->ncuts, &c->cap_cuts);
    for (size_t k = 0; k < c->ncuts && rc == 0; k++) {
        const mt_vmap_cut_t *part = &c->cuts[k];
        mt_vmap_map_t *m = &c->vmap.map[part->map];
        mt_wl_rec_t w;
        if ((rc = part_op(c, i, m, part, MT_WL_MADVISE, ns, &w)) < 0)
            break;
        w.a = (int64_t)advice;
        w.count = share(resident, part, len);
        /* pages the program held in this mapping before it gave them back: written from the
         * mapping's start in the replay too, not only just before the madvise */
        mt_touch_held(&c->vtouch, m->key, w.count);
        if ((rc = put(c, i, &w)) < 0)
            break;
        vm_touched(c, m, i);
        c->st->program_advises++;
    }
    return rc;
}

/* `resident` pages of [a, a + len), a mapping still live, were resident at the process's exit: the
 * evidence at its end of the parts of the program's mappings there, shared out by length. Without
 * it, a mapping kept to the end is estimated from those unmapped before. */
static int vm_at_exit(conv_t *c, uint64_t a, uint64_t len, uint64_t resident)
{
    if (!len || a + len < a)
        return 0;
    const int rc = mt_vmap_parts(&c->vmap, a, a + len, &c->cuts, &c->ncuts, &c->cap_cuts);
    for (size_t k = 0; k < c->ncuts && rc == 0; k++)
        mt_touch_ending_add(&c->vtouch, c->vmap.map[c->cuts[k].map].key, share(resident, &c->cuts[k], len));
    return rc;
}

/* Thread i maps [a, a + len) (what was mapped there is gone: the trace says so first, unless a
 * record was lost); `resident` of its whole pages are resident already (a remap, MAP_POPULATE).
 * `brk`: the pages are those the program's brk or sbrk added to the break. */
static int vm_map(conv_t *c, uint32_t i, uint64_t a, uint64_t len, uint64_t resident, int brk, uint64_t ns)
{
    if (!len || a + len < a)
        return 0;
    int rc = vm_unmap(c, i, a, len, 0, ns);
    uint32_t slot;
    if (rc < 0 || (rc = slot_take(c, i, ns, &slot)) < 0)
        return rc;
    const uint64_t op = mt_wl_writer_thread_ops(c->out, i) + 1;
    const int64_t k = mt_vmap_add(&c->vmap, a, len, slot, i, op, brk);
    if (k < 0)
        return (int)k;
    mt_wl_rec_t w = wl_rec(MT_WL_MMAP, ns);
    w.slot = slot;
    w.size = len;
    uint64_t first;
    const uint64_t pages = mt_whole_pages(a, len, c->page_kb * 1024, &first);
    if ((rc = mt_touch_made(&c->vtouch, c->vmap.map[k].key, i, op, pages, resident, 0, len)) < 0)
        return rc;
    return put(c, i, &w);
}

/* Folds an unmap of [a, a + len) into the mapping h holds when it cuts a head or a tail of it that
 * held no page: 1 if it did. */
static int held_trim(held_map_t *h, uint64_t a, uint64_t len, uint64_t resident)
{
    if (!h->on || h->brk || resident || !len || len >= h->len || a < h->a)
        return 0;
    if (a == h->a)
        h->a += len;
    else if (a - h->a != h->len - len)
        return 0;
    h->len -= len;
    return 1;
}

/* Thread i's held mapping goes into the workload, at its place in the thread's ops. */
static int held_release(conv_t *c, uint32_t i)
{
    held_map_t *h = &c->held[i];
    if (!h->on)
        return 0;
    h->on = 0;
    c->held_maps--;
    return vm_map(c, i, h->a, h->len, h->resident, h->brk, h->ns);
}

/* Before a VM event on [a, a + len): the mappings that other threads hold there go in first. */
static int held_release_overlapping(conv_t *c, uint64_t a, uint64_t len)
{
    int rc = 0;
    for (uint32_t k = 0; k < c->n && c->held_maps && rc == 0; k++) {
        const held_map_t *h = &c->held[k];
        if (h->on && h->a < a + len && a < h->a + h->len)
            rc = held_release(c, k);
    }
    return rc;
}

/* A VM event of thread i: a mapping made is held back until a record that is not its trim. */
static int vm_event(conv_t *c, uint32_t i, const mt_record_t *r, uint64_t ns)
{
    if (r->nargs < 4)
        return 0;
    uint64_t fifth = 0;
    const int has_fifth = mt_vmap_event_fifth(r, &fifth);
    const uint64_t kind = (uint64_t)r->arg[0], a = (uint64_t)r->arg[1], len = (uint64_t)r->arg[2];
    const uint64_t resident = (uint64_t)r->arg[3];
    held_map_t *h = &c->held[i];
    if (kind == MT_VM_UNMAP && held_trim(h, a, len, resident))
        return 0;
    int rc = held_release(c, i);
    if (rc < 0 || (c->held_maps && (rc = held_release_overlapping(c, a, len)) < 0))
        return rc;
    if (kind == MT_VM_MAP) {
        if (!len || a + len < a)
            return 0;
        *h = (held_map_t){ a, len, resident, ns, has_fifth && fifth == MT_VM_VIA_BRK, 1 };
        c->held_maps++;
        return 0;
    }
    if (kind == MT_VM_UNMAP)
        return vm_unmap(c, i, a, len, resident, ns);
    if (kind == MT_VM_ADVISE && has_fifth)
        return vm_advise(c, i, a, len, resident, fifth, ns);
    if (kind == MT_VM_AT_EXIT) {
        c->vm_exit_seen = 1;
        return vm_at_exit(c, a, len, resident);
    }
    return 0; /* a kind this converter does not know */
}

typedef enum { APPLIED, HELD } outcome_t;

/* Holds thread i's head record back: the thread is blocked on (why, key) until that comes. */
static inline int hold(conv_t *c, uint32_t i, tstate_t why, uint64_t key, outcome_t *out)
{
    block_thread(c, i, why, key);
    *out = HELD;
    return 0;
}

/* Before any record of thread i: its children's exits, then its held mapping unless a VM event may trim it. */
HOT int before_record(conv_t *c, uint32_t i, const mt_record_t *r, uint64_t ns)
{
    const cthread_t *t = &c->t[i];
    int rc = t->npending ? flush_exits(c, i, ns) : 0;
    if (rc == 0 && c->held_maps && c->held[i].on && r->op != MT_EV_VM)
        rc = held_release(c, i);
    return rc;
}

/* An allocation call: a new block, given a slot; held while another block still lives at its address. */
HOT int apply_alloc(conv_t *c, uint32_t i, const mt_record_t *r, uint64_t ns, int force, outcome_t *out)
{
    mt_wl_rec_t w = wl_rec(r->op, ns);
    w.size = r->size;
    w.count = r->count;
    w.align = r->align;
    if (r->flags & MT_FLAG_NULL)
        return put(c, i, &w); /* slot 0: the call failed */
    block_t *old = mt_ptr_map_find(&c->live, r->result);
    if (old) {
        if (!force)
            return hold(c, i, BLOCKED_LIVE, r->result, out);
        c->st->forced++;
        end_block(c, old);
    }
    uint32_t slot;
    int rc = slot_take(c, i, ns, &slot);
    if (rc < 0)
        return rc;
    w.slot = slot;
    if ((rc = make_block(c, i, r->result, requested(r), slot, ns)) < 0)
        return rc;
    return put(c, i, &w);
}

/* A free, or a malloc_usable_size of the block, after its last toucher; held while the block is unknown. */
HOT int apply_free(conv_t *c, uint32_t i, const mt_record_t *r, uint64_t ns, int force, outcome_t *out)
{
    mt_wl_rec_t w = wl_rec(r->op, ns);
    if (r->ptr == 0) {
        if (r->op == MT_OP_USABLE_SIZE)
            return 0;
        return put(c, i, &w);
    }
    block_t *b = mt_ptr_map_find(&c->live, r->ptr);
    if (!b) {
        /* Its allocation may sit behind a held record of another thread. */
        if (c->hard_blocked && !force)
            return hold(c, i, BLOCKED_UNKNOWN, r->ptr, out);
        if (r->op == MT_OP_FREE)
            count_unknown(c, r);
        return 0;
    }
    int rc = depend_block(c, i, b, ns);
    if (rc < 0)
        return rc;
    w.slot = block_slot(b);
    w.old_size = c->slots[w.slot].size;
    if (r->op == MT_OP_FREE)
        end_block(c, b);
    if ((rc = put(c, i, &w)) < 0)
        return rc;
    if (r->op == MT_OP_FREE)
        return slot_release(c, i, (uint32_t)w.slot);
    touched(c, i, b);
    return 0;
}

/* A realloc that returned NULL (its op in w): realloc(p, 0) freed block b; a failed one left it where it was. */
static inline int realloc_null(conv_t *c, uint32_t i, const mt_record_t *r, block_t *b, mt_wl_rec_t *w)
{
    const int frees_old = b && requested(r) == 0;
    if (frees_old)
        end_block(c, b);
    int rc = put(c, i, w);
    if (rc < 0)
        return rc;
    if (frees_old)
        return slot_release(c, i, (uint32_t)w->slot);
    if (b)
        touched(c, i, b);
    return 0;
}

/* A realloc or reallocarray: the old block lives on under its slot at the new address, or a new block takes a slot. */
HOT int apply_realloc(conv_t *c, uint32_t i, const mt_record_t *r, uint64_t ns, int force, outcome_t *out)
{
    mt_wl_rec_t w = wl_rec(r->op, ns);
    w.size = r->size;
    w.count = r->count;
    block_t *b = NULL;
    if (r->ptr) {
        b = mt_ptr_map_find(&c->live, r->ptr);
        if (!b && c->hard_blocked && !force)
            return hold(c, i, BLOCKED_UNKNOWN, r->ptr, out);
        if (!b)
            count_unknown(c, r); /* replayed as an allocation: the old block is not ours */
    }
    const int null = (r->flags & MT_FLAG_NULL) != 0;
    if (!null && r->result != r->ptr) {
        block_t *other = mt_ptr_map_find(&c->live, r->result);
        if (other && other != b) {
            if (!force)
                return hold(c, i, BLOCKED_LIVE, r->result, out);
            c->st->forced++;
            end_block(c, other);
            b = r->ptr ? mt_ptr_map_find(&c->live, r->ptr) : NULL;
        }
    }
    int rc;
    if (b) {
        if ((rc = depend_block(c, i, b, ns)) < 0)
            return rc;
        w.slot = block_slot(b);
        w.old_size = c->slots[w.slot].size;
    }
    if (null)
        return realloc_null(c, i, r, b, &w);
    uint32_t slot;
    if (b) {
        slot = block_slot(b); /* the block lives on under its slot, moved or not */
        end_block(c, b);
    } else if ((rc = slot_take(c, i, ns, &slot)) < 0) {
        return rc;
    }
    w.slot2 = slot;
    if ((rc = make_block(c, i, r->result, requested(r), slot, ns)) < 0)
        return rc;
    return put(c, i, &w);
}

/* A mallopt or a malloc_trim: its arguments, as the program gave them. */
static inline int apply_setting(conv_t *c, uint32_t i, const mt_record_t *r, uint64_t ns)
{
    mt_wl_rec_t w = wl_rec(r->op, ns);
    if (r->op == MT_OP_MALLOPT) {
        w.a = r->arg[0];
        w.b = r->arg[1];
    } else {
        w.size = (uint64_t)r->arg[0];
    }
    return put(c, i, &w);
}

/* The thread's start, after the op of its creator that created it; held until the trace shows that creation. */
static inline int apply_thread_start(conv_t *c, uint32_t i, uint64_t ns, int force, outcome_t *out)
{
    cthread_t *t = &c->t[i];
    if (t->creator && !t->create_seen) {
        if (!force)
            return hold(c, i, BLOCKED_CREATE, t->thread_no, out);
        c->st->forced++;
        t->creator = 0;
    }
    mt_wl_rec_t w = wl_rec(MT_WL_THREAD_START, ns);
    const int rc = put(c, i, &w);
    if (rc < 0)
        return rc;
    if (t->creator)
        return depend(c, i, t->creator - 1, t->create_seq, ns);
    return 0;
}

/* The index of the thread numbered `no`, or UINT32_MAX if the trace has none. The trace lists its
 * threads by number, each once (mt_trace_thread): a bisection. A scan of every thread for each
 * creation took 85 % of the conversion of 20 001 threads (2.2 s; 100 000 would take a minute). */
static uint32_t thread_index(const conv_t *c, uint64_t no)
{
    uint32_t lo = 0, hi = c->n;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (c->t[mid].thread_no < no)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->n && c->t[lo].thread_no == no ? lo : UINT32_MAX;
}

/* Thread i creates the thread the record names: the child's start waits for thread i's ops so far. */
static inline int apply_thread_create(conv_t *c, uint32_t i, const mt_record_t *r)
{
    const uint32_t k = thread_index(c, (uint64_t)r->arg[0]);
    if (k == UINT32_MAX)
        return 0;
    cthread_t *child = &c->t[k];
    child->creator = i + 1;
    child->create_seq = mt_wl_writer_thread_ops(c->out, i);
    child->create_seen = 1;
    mt_wl_writer_set_creator(c->out, k, i + 1);
    wake(c, BLOCKED_CREATE, child->thread_no);
    return 0;
}

/* The thread's exit, noted: its op comes at the end of its stream. */
static inline int apply_thread_exit(conv_t *c, uint32_t i)
{
    /* Destructors that run after the shim's own can still allocate in this thread: the exit op
     * is written when the thread's records end (finish_thread), as its stream's last op. */
    c->t[i].exited = 1;
    return 0;
}

/* An RSS sample: an op of the program's sizes then, and the source's peaks (the first sample's anonymous size too). */
static inline int apply_rss(conv_t *c, uint32_t i, const mt_record_t *r, uint64_t ns)
{
    if (r->nargs < 3)
        return 0;
    mt_wl_rec_t w = wl_rec(MT_WL_RSS, ns);
    w.vm_kb = (uint64_t)r->arg[0] * c->page_kb;
    w.rss_kb = (uint64_t)r->arg[1] * c->page_kb;
    if (w.rss_kb > c->source_peak_rss_kb)
        c->source_peak_rss_kb = w.rss_kb;
    const uint64_t anon_kb = r->arg[1] > r->arg[2] ? (uint64_t)(r->arg[1] - r->arg[2]) * c->page_kb : 0;
    if (anon_kb > c->source_peak_anon_kb)
        c->source_peak_anon_kb = anon_kb;
    /* The recorder samples as tracing starts, at the first call: at most that call's block is
     * also among the ops (libstdc++'s 72 KiB pool, or main's first malloc, not yet written). */
    if (!c->rss_seen) {
        c->rss_seen = 1;
        c->source_start_anon_kb = anon_kb;
    }
    const uint64_t explained_kb = c->source_start_anon_kb + c->live_bytes / 1024;
    c->unexplained_kb = anon_kb > explained_kb ? anon_kb - explained_kb : 0;
    return put(c, i, &w);
}

/* A count of `resident` pages of the large block at p in thread i (MT_PAGES_AT_SAMPLE, or its end):
 * if the converter watches the block (trace2wl/touch.h) and the count rose, the replay writes that
 * many of its pages after thread i's latest op (or after the wait for the block's last toucher that
 * this puts), and whoever frees or reads the block next waits for that op. */
static int pages_counted(conv_t *c, uint32_t i, block_t *b, uint64_t p, uint64_t resident, int sample, uint64_t ns)
{
    if (!mt_touch_watched(&c->touch, p, resident))
        return 0;
    const int rc = depend_block(c, i, b, ns);
    if (rc < 0)
        return rc;
    touched(c, i, b);
    return mt_touch_sampled(&c->touch, p, i, mt_wl_writer_thread_ops(c->out, i), resident, sample);
}

/* An edge block's evidence (MT_PAGES_EDGE), before its end or at exit: the block is live. One whose
 * allocation is held back (another thread's, later by the merge) goes without it. */
static int apply_edge(conv_t *c, const mt_record_t *r)
{
    const int written = mt_pages_edge_written(r);
    block_t *b = mt_ptr_map_find(&c->live, (uint64_t)r->arg[0]);
    if (written < 0 || !b)
        return 0;
    const uint32_t slot = block_slot(b);
    const uint64_t size = c->slots[slot].size, edge = mt_pages_edge_bytes(size);
    if (!edge)
        return 0; /* its requested bytes would not reach a page of their own */
    return mt_touch_edge(&c->touch, block_toucher(b), c->slots[slot].seq, written ? 0 : size - edge);
}

/* Page evidence of a large block, at its allocation or before its end; held while the block is unknown. */
static inline int apply_pages(conv_t *c, uint32_t i, const mt_record_t *r, uint64_t ns, int force, outcome_t *out)
{
    if (r->nargs < 4)
        return 0;
    if (r->arg[3] & MT_PAGES_EDGE)
        return apply_edge(c, r);
    const uint64_t p = (uint64_t)r->arg[0], pages = (uint64_t)r->arg[1];
    const int counted = !(r->arg[3] & MT_PAGES_UNCOUNTED);
    const uint64_t resident = counted ? (uint64_t)r->arg[2] : 0; /* flagged below: not used */
    block_t *b = mt_ptr_map_find(&c->live, p);
    if ((r->arg[3] & ~(int64_t)MT_PAGES_UNCOUNTED) == MT_PAGES_AT_SAMPLE)
        return b && counted ? pages_counted(c, i, b, p, resident, 1, ns) : 0;
    if ((r->arg[3] & ~(int64_t)MT_PAGES_UNCOUNTED) == MT_PAGES_AT_ALLOC) {
        /* Right after the op that made the block, in this thread: it is the block's toucher. */
        if (!b)
            return 0;
        const uint32_t slot = block_slot(b);
        const int rc = mt_touch_made(&c->touch, p, block_toucher(b), c->slots[slot].seq, pages, resident, slot,
                                     c->slots[slot].size);
        if (rc == 0 && !counted)
            mt_touch_uncounted(&c->touch, p, MT_TOUCH_MADE_UNCOUNTED);
        return rc;
    }
    if (!b && (r->arg[3] & ~(int64_t)MT_PAGES_UNCOUNTED) == MT_PAGES_AT_EXIT)
        return 0; /* freed unseen by the recorder's set: nothing waits for it */
    if (!b && c->hard_blocked && !force) {
        /* Right before the free or realloc of the block, which may be made by a held record. */
        return hold(c, i, BLOCKED_UNKNOWN, p, out);
    }
    int rc;
    if (b && counted && (rc = pages_counted(c, i, b, p, resident, 0, ns)) < 0)
        return rc;
    mt_pages_prints_t pr = { 0 };
    if (counted)
        mt_pages_prints(r, &pr);
    mt_touch_ending(&c->touch, p, resident, &pr);
    if (!counted)
        mt_touch_uncounted(&c->touch, p, MT_TOUCH_ENDED_UNCOUNTED);
    return 0;
}

/* A mark: its label, as an op. */
static inline int apply_mark(conv_t *c, uint32_t i, const mt_record_t *r, uint64_t ns)
{
    mt_wl_rec_t w = wl_rec(MT_WL_MARK, ns);
    w.data = r->data;
    w.len = r->len;
    return put(c, i, &w);
}

/* Applies thread i's head record, or holds it back (the thread becomes blocked). `force` applies a
 * record whose dependency will never come, dropping what stands in its way. */
static int apply(conv_t *c, uint32_t i, int force, outcome_t *out)
{
    const cthread_t *t = &c->t[i];
    assert(t->io && t->head); /* a thread with a record to apply holds its reading state */
    const mt_record_t *r = t->head;
    const uint64_t ns = t->io->ns[t->ring_pos];
    *out = APPLIED;
    const int rc = before_record(c, i, r, ns);
    if (rc < 0)
        return rc;
    switch (r->op) {
    case MT_OP_MALLOC:
    case MT_OP_CALLOC:
    case MT_OP_MEMALIGN:
    case MT_OP_POSIX_MEMALIGN:
    case MT_OP_ALIGNED_ALLOC:
    case MT_OP_VALLOC:
    case MT_OP_PVALLOC:
        return apply_alloc(c, i, r, ns, force, out);
    case MT_OP_FREE:
    case MT_OP_USABLE_SIZE:
        return apply_free(c, i, r, ns, force, out);
    case MT_OP_REALLOC:
    case MT_OP_REALLOCARRAY:
        return apply_realloc(c, i, r, ns, force, out);
    case MT_OP_MALLOPT:
    case MT_OP_MALLOC_TRIM:
        return apply_setting(c, i, r, ns);
    case MT_EV_THREAD_START:
        return apply_thread_start(c, i, ns, force, out);
    case MT_EV_THREAD_CREATE:
        return apply_thread_create(c, i, r);
    case MT_EV_THREAD_EXIT:
        return apply_thread_exit(c, i);
    case MT_EV_RSS:
        return apply_rss(c, i, r, ns);
    case MT_EV_PAGES:
        return apply_pages(c, i, r, ns, force, out);
    case MT_EV_VM:
        return vm_event(c, i, r, ns);
    case MT_EV_MARK:
        return apply_mark(c, i, r, ns);
    default:
        return 0; /* fork, exec, stacks, modules, control: nothing to replay */
    }
}

/* ---- driver ------------------------------------------------------------------------------------ */

static void progress(const conv_t *c, uint64_t total_chunks, int done)
{
    static struct timespec last;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!done && now.tv_sec == last.tv_sec && now.tv_nsec - last.tv_nsec < 500000000)
        return;
    last = now;
    /* Records per chunk vary; the share of records read is near enough to the share of chunks. */
    fprintf(stderr, "\rtrace2wl: %" PRIu64 " records, %" PRIu64 " ops, %" PRIu64 " live blocks%s", c->st->records,
            c->st->ops, c->live.n, done ? "\n" : "");
    (void)total_chunks;
}

/* Thread i's first record: its time is the thread's key in the merge and, a THREAD_START, it names
 * the creator's thread number. The thread stays parked (nothing of it is held) until that record's
 * turn, when unpark reads it again. 0, or negative with the message in err. */
static int peek_thread(conv_t *c, uint32_t i, mt_error_t *err)
{
    cthread_t *t = &c->t[i];
    mt_thread_cursor_t cur;
    mt_record_t r;
    if (mt_thread_cursor_init(&cur, c->trace, i) < 0)
        return -ENOMEM;
    const int rc = mt_thread_cursor_next(&cur, &r, err);
    mt_thread_cursor_fini(&cur);
    if (rc <= 0)
        return rc; /* none: the thread is done before it starts */
    t->parked = 1;
    c->key[i] = r.time;
    const uint32_t k = r.op == MT_EV_THREAD_START && r.nargs >= 1 ? thread_index(c, (uint64_t)r.arg[0]) : UINT32_MAX;
    if (k != UINT32_MAX)
        t->creator = k + 1;
    return 0;
}

/* Thread i's first record has its turn: what it needs to read its records is made, its ring filled. */
static int unpark(conv_t *c, uint32_t i)
{
    cthread_t *t = &c->t[i];
    t->parked = 0;
    t->head = NULL; /* a parked thread has read nothing: its ring starts empty */
    t->ring_pos = t->ring_n = 0;
    t->cursor_done = 0;
    if (!(t->io = calloc(1, sizeof *t->io)) || waited_init(t, c->n) < 0 ||
        (!c->dec && mt_thread_cursor_init(&t->io->cur, c->trace, i) < 0)) {
        snprintf(c->err->msg, sizeof c->err->msg, "%s: out of memory", mt_trace_path(c->trace));
        return -ENOMEM;
    }
    const int rc = advance(c, i);
    if (rc == 0 && !t->head)
        return mt_errorf(c->err, -EIO, mt_trace_path(c->trace), 0, "thread %u: its first record read again is gone",
                         t->thread_no);
    return rc;
}

/* ---- the steps of a conversion ------------------------------------------------------------------ */

/* The per-thread state, the clock's rate, each thread's first record and the creators. */
static int conv_start(conv_t *c, const char *trace_path, unsigned jobs, mt_error_t *err)
{
    const mt_file_header_t *th = mt_trace_header(c->trace);
    c->t0 = th->start_time;
    c->page_kb = th->page_size / 1024 ? th->page_size / 1024 : 4;
    c->n = (uint32_t)mt_trace_thread_count(c->trace);
    c->t = calloc(c->n + 1, sizeof *c->t);
    c->heap.v = calloc(c->n + 1, sizeof *c->heap.v);
    c->key = calloc(c->n + 1, sizeof *c->key);
    c->held = calloc(c->n + 1, sizeof *c->held);
    c->heap.key = c->key;
    mt_ptr_map_init(&c->live);
    mt_touch_init(&c->touch);
    mt_touch_init(&c->vtouch);
    c->recent_frees = calloc(RECENT_FREES, sizeof *c->recent_frees);
    if (!c->t || !c->heap.v || !c->key || !c->held || !c->live.v || !c->touch.map.v || !c->vtouch.map.v ||
        !c->recent_frees) {
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", trace_path);
        return -ENOMEM;
    }
    c->touch.page = c->vtouch.page = (uint64_t)c->page_kb * 1024;
    /* The rate: from the header, else from RSS samples, which needs a pass over the events (before
     * any worker reads the trace: one reader of its chunks at a time). */
    c->rate = mt_trace_ticks_per_sec(c->trace);
    if (c->rate <= 0) {
        mt_cursor_t cur;
        if (mt_cursor_init(&cur, c->trace) == 0) {
            for (size_t k = 0; k < mt_trace_chunk_count(c->trace); k++) {
                mt_record_t r;
                if (mt_cursor_load(&cur, k, err) < 0)
                    break;
                while (mt_cursor_next(&cur, &r, err) > 0)
                    mt_trace_note_rss(c->trace, &r);
            }
            mt_cursor_fini(&cur);
        }
        c->rate = mt_trace_ticks_per_sec(c->trace);
        if (c->rate <= 0)
            c->rate = 1e9; /* nothing tells: times in the workload are then in ticks */
    }
    for (uint32_t i = 0; i < c->n; i++)
        c->t[i].thread_no = mt_trace_thread(c->trace, i)->thread;
    int rc = 0;
    for (uint32_t i = 0; i < c->n && rc == 0; i++)
        rc = peek_thread(c, i, err);
    if (rc == -ENOMEM)
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", trace_path);
    /* Decoders read a thread from its first record once the merge asks for it (after the peeks: one
     * reader of the trace's chunks at a time). Past that many threads the caller decodes. */
    if (rc == 0 && jobs > 1 && c->n && c->n <= MT_ORDERED_DECODED_THREADS_MAX)
        rc = mt_ordered_open_threads(&c->dec, c->trace, jobs - 1, err);
    return rc;
}

/* Opens the workload: its header carries the trace's identity and settings (its strings, as they
 * are, and the trace's path); a stream per traced thread. */
static int conv_open_output(conv_t *c, const char *trace_path, const char *wl_path, mt_wl_header_t *hdr,
                            mt_error_t *err)
{
    const mt_file_header_t *th = mt_trace_header(c->trace);
    uint8_t strings[8192], *const strings_end = strings + sizeof strings, *sp = strings;
    const size_t path_len = strnlen(trace_path, 2048);
    for (unsigned tag = MT_STR_CMDLINE; tag <= MT_STR_HOST; tag++) {
        size_t len;
        const char *s;
        for (unsigned k = 0; (s = mt_trace_string(c->trace, tag, k, &len)); k++) {
            uint8_t *const q = mt_str_put(sp, strings_end - (4 + path_len), tag, s, len); /* the path's room kept */
            if (!q)
                break;
            sp = q;
        }
    }
    sp = mt_str_close(mt_str_put(sp, strings_end, MT_STR_PATH, trace_path, path_len));
    const size_t slen = (size_t)(sp - strings);
    *hdr = (mt_wl_header_t){ .source_pid = th->pid, .source_start_realtime_ns = th->start_realtime_ns };
    if (th->flags & MT_HDR_TRUNCATED)
        hdr->flags |= MT_WLH_SRC_TRUNCATED;
    if (th->version >= 3 && (th->flags & MT_HDR_GLIBC_FLAGS))
        hdr->flags |= MT_WLH_PAGES; /* the recorder wrote evidence for every large block */
    int rc = mt_wl_writer_open(&c->out, wl_path, hdr, strings, slen, err);
    if (rc < 0)
        return rc;
    for (uint32_t i = 0; i < c->n; i++) {
        const mt_thread_info_t *ti = mt_trace_thread(c->trace, i);
        if (mt_wl_writer_add_thread(c->out, ti->thread, ti->tid, c->t[i].creator) < 0) {
            snprintf(err->msg, sizeof err->msg, "%s: out of memory", wl_path);
            return -ENOMEM;
        }
        if (c->t[i].parked)
            mt_merge_push(&c->heap, i);
        else
            c->t[i].state = DONE; /* no records at all */
    }
    return 0;
}

/* Applies every thread's records in time order, as far as their dependencies allow; the time of
 * the last one goes to *last_time. */
static int conv_merge(conv_t *c, const char *wl_path, const mt_convert_opts_t *opts, uint64_t *last_time,
                      mt_error_t *err)
{
    int rc;
    /* The thread just applied goes on without a trip through the heap while it stays the earliest:
     * most records follow one of their own thread. */
    uint32_t cur = UINT32_MAX;
    for (uint64_t step = 0;; step++) {
        uint32_t i;
        int force = 0;
        if (cur != UINT32_MAX) {
            i = cur;
            cur = UINT32_MAX;
        } else if (c->heap.n) {
            i = mt_merge_pop(&c->heap);
            if (c->t[i].parked && (rc = unpark(c, i)) < 0)
                return rc;
        } else if (c->blocked) {
            /* Every remaining thread waits on something that will never come: the trace lacks the
             * record that would release them (a pause, a loss). Release the earliest one. */
            i = UINT32_MAX;
            for (uint32_t k = 0; k < c->n; k++)
                if (c->t[k].state != RUNNABLE && c->t[k].state != DONE &&
                    (i == UINT32_MAX || c->t[k].head->time < c->t[i].head->time))
                    i = k;
            unblock(c, i);
            force = 1;
        } else {
            break;
        }
        outcome_t out;
        if ((rc = apply(c, i, force, &out)) < 0) {
            if (rc == -ENOMEM)
                snprintf(err->msg, sizeof err->msg, "%s: out of memory", wl_path);
            return rc;
        }
        if (out == HELD)
            continue;
        const uint64_t applied_time = c->t[i].head->time;
        if (applied_time >= *last_time) { /* the latest record, of those at that time the last applied */
            *last_time = applied_time;
            c->latest_op = c->t[i].head->op;
        }
        if ((rc = advance(c, i)) < 0)
            return rc;
        if (!c->t[i].head) {
            if ((rc = finish_thread(c, i, applied_time)) < 0) {
                /* A write of the thread's last frame has its own message already. */
                if (rc == -ENOMEM)
                    snprintf(err->msg, sizeof err->msg, "%s: out of memory", wl_path);
                return rc;
            }
        } else if (!c->heap.n || !mt_merge_less(&c->heap, c->heap.v[0], i))
            cur = i;
        else
            mt_merge_push(&c->heap, i);
        if (opts->progress && (step & 0xfffff) == 0)
            progress(c, mt_trace_chunk_count(c->trace), 0);
    }
    if (opts->progress)
        progress(c, mt_trace_chunk_count(c->trace), 1);
    return 0;
}

/* A process that leaves without the recorder's exit work (by the exit_group system call, as every
 * Go program does, or killed) has no count of its own mappings still live (MT_VM_AT_EXIT). Estimated
 * from the mappings unmapped before, they came out anything from none written to all: a 512 MiB
 * reservation made PROT_NONE and never touched was replayed as written, 16 times the program's peak;
 * the go command's heap, whose only unmaps were reservations replaced by MAP_FIXED commits, as none
 * written, 0.56 of its peak (bench/RESULTS.md, "A fourth survey"). The RSS samples bound them: the
 * latest sample's anonymous memory beyond the first sample's and the live malloc bytes then is
 * taken as theirs (an upper bound: free heap pages and stacks are in it too), shared out over the
 * live parts of those mappings by length. */
static void vm_end_from_rss(conv_t *c)
{
    if (c->vm_exit_seen || !c->rss_seen)
        return;
    uint64_t live = 0;
    for (uint64_t k = 0; k < c->vmap.nmap; k++)
        live += c->vmap.map[k].left;
    if (!live)
        return;
    const uint64_t page = (uint64_t)c->page_kb * 1024;
    const unsigned __int128 budget = (unsigned __int128)c->unexplained_kb * 1024;
    for (uint64_t k = 0; k < c->vmap.nmap; k++) {
        const mt_vmap_map_t *m = &c->vmap.map[k];
        if (!m->left)
            continue;
        const uint64_t share = (uint64_t)(budget * m->left / live), most = m->left / page;
        mt_touch_ending_add(&c->vtouch, m->key, share / page < most ? share / page : most);
    }
}

/* The header's totals and the touch table, then the workload's index: the file is whole. */
static int conv_close_output(conv_t *c, const char *wl_path, const mt_wl_header_t *hdr, uint64_t last_time,
                             mt_error_t *err)
{
    mt_convert_stats_t *st = c->st;
    st->threads = c->n;
    st->slots = c->next_slot;
    st->peak_live_bytes = c->peak_bytes;
    mt_wl_header_t fin = *hdr;
    fin.slots = c->next_slot;
    fin.peak_live_bytes = c->peak_bytes;
    fin.peak_live_time_ns = c->peak_time_ns;
    fin.source_peak_rss_kb = c->source_peak_rss_kb;
    fin.source_peak_anon_kb = c->source_peak_anon_kb;
    fin.source_start_anon_kb = c->source_start_anon_kb;
    fin.duration_ns = to_ns(c, last_time);
    fin.unknown_frees = st->unknown_frees;
    fin.double_frees = st->double_frees;
    fin.inversions = st->inversions;
    fin.forced = st->forced;
    vm_end_from_rss(c);
    const int finished = mt_touch_finish(&c->touch) == 0 && mt_touch_finish(&c->vtouch) == 0 && !c->touch_failed;
    st->touch_entries = c->touch.nout; /* the blocks' own, before the mappings' join them */
    st->large_later = c->touch.written_later;
    st->later_entries = c->touch.later_entries;
    if (!finished || mt_touch_absorb(&c->touch, &c->vtouch) < 0) {
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", wl_path);
        return -ENOMEM;
    }
    mt_wl_writer_set_touch(c->out, c->touch.out, c->touch.nout);
    fin.large_blocks = st->large_blocks = c->touch.blocks;
    fin.large_exact = st->large_exact = c->touch.exact;
    fin.large_estimated = st->large_estimated = c->touch.estimated;
    st->large_printed = c->touch.printed;
    st->edge_blocks = c->touch.edge_blocks;
    st->edge_unwritten = c->touch.edge_unwritten;
    fin.large_pages = st->large_pages = c->touch.pages;
    fin.large_touched = st->large_touched = c->touch.written;
    fin.program_maps = st->program_maps = c->vmap.made;
    fin.program_peak_bytes = st->program_peak_bytes = c->vmap.peak_mapped;
    fin.program_brk_peak_bytes = st->program_brk_peak_bytes = c->vmap.peak_brk;
    fin.program_advises = st->program_advises;
    st->program_pages = c->vtouch.pages;
    st->program_touched = c->vtouch.written;
    const int rc = mt_wl_writer_close(c->out, &fin, err);
    c->out = NULL;
    return rc;
}

/* Gives back everything; a workload not closed is removed (the writer's abort). */
static void conv_free(conv_t *c)
{
    if (c->out)
        mt_wl_writer_abort(c->out);
    mt_ordered_close(c->dec);
    for (uint32_t i = 0; c->t && i < c->n; i++) {
        release_thread(c, i);
        deque_free(&c->t[i].freed);
    }
    free(c->t);
    free(c->heap.v);
    free(c->key);
    free(c->held);
    mt_ptr_map_fini(&c->live);
    mt_touch_fini(&c->touch);
    mt_touch_fini(&c->vtouch);
    mt_vmap_fini(&c->vmap);
    free(c->cuts);
    free(c->slots);
    free(c->recent_frees);
    mt_trace_close(c->trace);
}

int mt_convert(const char *trace_path, const char *wl_path, const mt_convert_opts_t *opts, mt_convert_stats_t *stats,
               mt_error_t *err)
{
    mt_convert_stats_t dummy;
    mt_convert_stats_t *st = stats ? stats : &dummy;
    memset(st, 0, sizeof *st);
    if (mt_same_file(trace_path, wl_path)) {
        snprintf(err->msg, sizeof err->msg, "%s: is the trace to convert; choose another output", wl_path);
        return -EINVAL;
    }
    if (mt_out_special(wl_path)) { /* renamed over, /dev/null would become a regular file */
        snprintf(err->msg, sizeof err->msg,
                 "%s: not a regular file; a workload is written whole, then renamed into place: name a file", wl_path);
        return -EINVAL;
    }
    if (!opts->force && access(wl_path, F_OK) == 0) {
        snprintf(err->msg, sizeof err->msg, "%s: exists; pass --force to replace it", wl_path);
        return -EEXIST;
    }
    conv_t c = { .st = st, .err = err };
    int rc = mt_trace_open(&c.trace, trace_path, err);
    if (rc < 0)
        return rc;
    /* A workload from a trace cut short would replay part of the run as if it were all of it. */
    if ((rc = mt_trace_check_whole(c.trace, err)) < 0) {
        mt_trace_close(c.trace);
        return rc;
    }
    mt_wl_header_t hdr;
    uint64_t last_time = 0;
    if ((rc = conv_start(&c, trace_path, opts->jobs, err)) == 0 &&
        (rc = conv_open_output(&c, trace_path, wl_path, &hdr, err)) == 0 &&
        (rc = conv_merge(&c, wl_path, opts, &last_time, err)) == 0)
        rc = conv_close_output(&c, wl_path, &hdr, last_time, err);
    st->ended_at_exec = mt_trace_ended_at_exec(mt_trace_header(c.trace), c.latest_op);
    if (rc == 0 && st->ended_at_exec &&
        !mt_trace_continuation(trace_path, mt_trace_header(c.trace), st->continued_in, sizeof st->continued_in))
        st->continued_in[0] = 0;
    conv_free(&c);
    return rc;
}
