/* include/mtrace/ordered_reader.h: a trace's records in time order, decoded and merged by workers.
 *
 * Three stages, each handing batches of records to the next through a ring of batches:
 * decoders (jobs - 2 threads; none with 2 jobs) turn each trace thread's chunks into records, the
 * merger picks records across the threads by (time, thread index) as the serial readers do, and the
 * caller takes the merged batches. A batch carries its events' payloads in an arena of its own, so
 * a record outlives the chunk buffer it was decoded from. A stream's last batch says how it ended
 * (the end, or the damage met and its message). */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/merge_heap.h"
#include "mtrace/ordered_reader.h"

/* Records per batch and batches per queue. A thread waiting on a queue (its consumer for a batch,
 * its producer for room) is woken only once the queue is half full, or half empty: with a wake-up
 * per batch the two threads took turns, and on a loaded machine each turn waited for a CPU (21 K
 * context switches a second, 20 M records on 2 CPUs at a load of 4). The merged queue holds 16 K
 * records (2 MiB), about 1.5 ms of the caller's work, so that either side can be off its CPU a
 * while without the other waiting; a larger one pushes the caller's live set out of its cache
 * (per-thread CPU time sampled with perf on this loaded machine: 16 x 1024 records did no worse
 * than 4, 8 or 32 x 1024, or 8 x 256; the differences were within the noise). Decoders' queues
 * are small because there is one per trace thread. */
#define DECODED_BATCH 256
#define DECODED_RING 4
#define MERGED_BATCH 1024
#define MERGED_RING 16
#define RING 16 /* the most of either */
/* The smallest payload arena; it grows to the largest event payload met (at most a chunk). */
#define ARENA_MIN 4096

typedef struct batch {
    mt_record_t *rec;
    uint32_t *thread; /* merged batches: each record's thread index */
    uint32_t n, cap;
    uint8_t *arena; /* the payloads of rec[].data */
    size_t arena_len, arena_cap;
    int end;    /* the stream's last batch */
    int status; /* with end: 0, or the negative errno of the damage that ended it */
    mt_error_t err;
} batch_t;

/* One producer, one consumer. mu and space may be shared with other queues of the same producer. */
typedef struct queue {
    batch_t b[RING];
    unsigned ring;          /* batches used of b[] */
    unsigned taken, filled; /* batches released by the consumer, published by the producer */
    pthread_mutex_t *mu;
    pthread_cond_t *space; /* the producer waits here */
    int *producer_waits;   /* set by the producer before it waits on space */
    pthread_cond_t data;   /* the consumer waits here */
    int consumer_waits;
} queue_t;

typedef struct decoder {
    struct mt_ordered *m;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t space;
    int waits; /* on space, all of its threads' queues full (or done) */
    mt_chunk_codec_t *codec;
    uint32_t *threads; /* the trace threads it decodes */
    uint32_t nthreads;
    int started;
} decoder_t;

/* Where the merger is in a trace thread's records. */
typedef struct source {
    mt_thread_cursor_t cur; /* decoded by a decoder, or by the merger itself (2 jobs) */
    int done;               /* decoder side: its last batch is published */
    int ended;              /* consumer side: its end was handed out and its queue let go */
    uint8_t *first_data;    /* the merger's own, many threads: head's payload while rewound */
    decoder_t *dec;         /* the decoder of its chunks (with decoders) */
    /* Decoded batches (with decoders: 16 KiB, and 128 KiB of records once filled), made when the
     * consumer first asks for the thread's records and let go at their end; a decoder reads only
     * the threads that have one. Set and cleared under dec->mu. */
    queue_t *q;
    _Alignas(64) const batch_t *b; /* the batch being merged: the merger's, on a cache line apart */
    uint32_t pos;
    mt_record_t head; /* the record decoded last */
    int pending;      /* decoder side: head is decoded and not yet in a batch */
} source_t;

struct mt_ordered {
    mt_trace_t *trace;
    uint32_t n;
    source_t *src;
    decoder_t *dec;
    uint32_t ndec;
    pthread_t merger;
    int merger_started;
    pthread_mutex_t out_mu;
    pthread_cond_t out_space;
    int out_waits;
    queue_t out;
    const batch_t *cur; /* the caller's batch */
    int handed;         /* its records are handed out */
    atomic_int stop;
};

static int batch_init(batch_t *b, uint32_t cap, int with_threads)
{
    b->cap = cap;
    b->rec = malloc(cap * sizeof *b->rec);
    b->thread = with_threads ? malloc(cap * sizeof *b->thread) : NULL;
    return b->rec && (!with_threads || b->thread) ? 0 : -ENOMEM;
}

static void batch_fini(batch_t *b)
{
    free(b->rec);
    free(b->thread);
    free(b->arena);
}

static void batch_reset(batch_t *b)
{
    b->n = 0;
    b->arena_len = 0;
    b->end = 0;
    b->status = 0;
}

/* Room for r's payload in b's arena: 1; 0 when b must be published first (payload pointers of the
 * records in it must not move); -ENOMEM. */
static inline int arena_room(batch_t *b, const mt_record_t *r)
{
    if (!r->data || b->arena_len + r->len <= b->arena_cap)
        return 1;
    if (b->n)
        return 0;
    size_t cap = b->arena_cap ? b->arena_cap : ARENA_MIN;
    while (cap < r->len)
        cap *= 2;
    uint8_t *a = realloc(b->arena, cap);
    if (!a)
        return -ENOMEM;
    b->arena = a;
    b->arena_cap = cap;
    return 1;
}

/* Appends r (room checked by arena_room), its payload copied. */
static inline mt_record_t *batch_add(batch_t *b, const mt_record_t *r)
{
    mt_record_t *x = &b->rec[b->n++];
    *x = *r;
    if (r->data) {
        memcpy(b->arena + b->arena_len, r->data, r->len);
        x->data = b->arena + b->arena_len;
        b->arena_len += r->len;
    }
    return x;
}

static void batch_end(batch_t *b, int status, const mt_error_t *err)
{
    assert(status <= 0);
    b->end = 1;
    b->status = status;
    if (status < 0)
        b->err = *err;
}

static int queue_init(queue_t *q, pthread_mutex_t *mu, pthread_cond_t *space, int *producer_waits, unsigned ring,
                      uint32_t cap, int with_threads)
{
    q->mu = mu;
    q->space = space;
    q->producer_waits = producer_waits;
    q->ring = ring;
    if (pthread_cond_init(&q->data, NULL) != 0)
        return -ENOMEM;
    for (unsigned k = 0; k < ring; k++)
        if (batch_init(&q->b[k], cap, with_threads) < 0)
            return -ENOMEM;
    return 0;
}

static void queue_fini(queue_t *q)
{
    pthread_cond_destroy(&q->data);
    for (unsigned k = 0; k < q->ring; k++)
        batch_fini(&q->b[k]);
}

/* Producer: the batch to fill, empty; NULL once the reader is stopping. */
static batch_t *queue_slot(struct mt_ordered *m, queue_t *q)
{
    pthread_mutex_lock(q->mu);
    while (q->filled - q->taken == q->ring && !atomic_load(&m->stop)) {
        *q->producer_waits = 1;
        pthread_cond_wait(q->space, q->mu);
    }
    pthread_mutex_unlock(q->mu);
    if (atomic_load(&m->stop))
        return NULL;
    batch_t *b = &q->b[q->filled % q->ring];
    batch_reset(b);
    return b;
}

static void queue_publish(queue_t *q, const batch_t *b)
{
    pthread_mutex_lock(q->mu);
    q->filled++;
    if (q->consumer_waits && (q->filled - q->taken >= q->ring / 2 || b->end)) {
        q->consumer_waits = 0;
        pthread_cond_signal(&q->data);
    }
    pthread_mutex_unlock(q->mu);
}

/* Consumer: the next batch; NULL once the reader is stopping. */
static const batch_t *queue_take(struct mt_ordered *m, queue_t *q)
{
    pthread_mutex_lock(q->mu);
    while (q->filled == q->taken && !atomic_load(&m->stop)) {
        q->consumer_waits = 1;
        pthread_cond_wait(&q->data, q->mu);
    }
    const int stop = q->filled == q->taken;
    pthread_mutex_unlock(q->mu);
    return stop ? NULL : &q->b[q->taken % q->ring];
}

static void queue_release(queue_t *q)
{
    pthread_mutex_lock(q->mu);
    q->taken++;
    if (*q->producer_waits && q->filled - q->taken <= q->ring / 2) {
        *q->producer_waits = 0;
        pthread_cond_signal(q->space); /* one producer per space, also where queues share it */
    }
    pthread_mutex_unlock(q->mu);
}

static int out_of_memory(const struct mt_ordered *m, mt_error_t *err)
{
    snprintf(err->msg, sizeof err->msg, "%s: out of memory", mt_trace_path(m->trace));
    return -ENOMEM;
}

/* ---- decoders -------------------------------------------------------------------------------- */

/* Decodes up to a batch of s's records into b and publishes it, the end with the last of them. */
static void decode_batch(struct mt_ordered *m, source_t *s, batch_t *b)
{
    mt_error_t err;
    while (b->n < b->cap) {
        mt_record_t *r = &s->head;
        if (!s->pending) {
            const int rc = mt_thread_cursor_next(&s->cur, r, &err);
            if (rc <= 0) {
                batch_end(b, rc, &err);
                mt_thread_cursor_fini(&s->cur); /* the batches hold copies of its records */
                break;
            }
        }
        const int room = arena_room(b, r);
        if (room < 0) {
            batch_end(b, out_of_memory(m, &err), &err);
            break;
        }
        /* No room: it starts the next batch, its payload still in the cursor's buffer (waiting for
         * room here could wait for ever: the merger may need another of this decoder's threads). */
        s->pending = !room;
        if (!room)
            break;
        batch_add(b, r);
    }
    if (b->end)
        s->done = 1;
    queue_publish(s->q, b);
}

static void *decoder_main(void *arg)
{
    decoder_t *d = arg;
    struct mt_ordered *m = d->m;
    uint32_t next = 0, left = d->nthreads;
    while (left && !atomic_load(&m->stop)) {
        /* The next of its threads, round robin, whose queue has room. */
        source_t *s = NULL;
        pthread_mutex_lock(&d->mu);
        for (;;) {
            for (uint32_t k = 0; k < d->nthreads && !s; k++) {
                source_t *x = &m->src[d->threads[(next + k) % d->nthreads]];
                if (x->q && !x->done && x->q->filled - x->q->taken < x->q->ring) {
                    s = x;
                    next = (next + k + 1) % d->nthreads;
                }
            }
            if (s || atomic_load(&m->stop))
                break;
            d->waits = 1;
            pthread_cond_wait(&d->space, &d->mu);
        }
        pthread_mutex_unlock(&d->mu);
        if (!s)
            break;
        batch_t *b = queue_slot(m, s->q);
        if (!b)
            break;
        decode_batch(m, s, b);
        if (s->done)
            left--;
    }
    return NULL;
}

/* ---- the merger ------------------------------------------------------------------------------ */

/* s's queue, for its decoder to fill from now on. 0, or -ENOMEM (message in err). */
static int source_activate(struct mt_ordered *m, source_t *s, mt_error_t *err)
{
    decoder_t *d = s->dec;
    queue_t *q = calloc(1, sizeof *q);
    if (!q || queue_init(q, &d->mu, &d->space, &d->waits, DECODED_RING, DECODED_BATCH, 0) < 0) {
        if (q && q->mu)
            queue_fini(q);
        free(q);
        return out_of_memory(m, err);
    }
    pthread_mutex_lock(&d->mu);
    s->q = q;
    if (d->waits) {
        d->waits = 0;
        pthread_cond_signal(&d->space);
    }
    pthread_mutex_unlock(&d->mu);
    return 0;
}

/* s's end is handed out: its decoder has published its last batch and never looks at its queue
 * again, which goes. */
static void source_release(source_t *s)
{
    queue_t *q = s->q;
    pthread_mutex_lock(q->mu);
    s->q = NULL;
    pthread_mutex_unlock(q->mu);
    queue_fini(q);
    free(q);
    s->b = NULL;
    s->ended = 1;
}

/* Thread i's next record in *r: 1, 0 at its end, negative on damage (message in err). */
static inline __attribute__((always_inline)) int source_next(struct mt_ordered *m, uint32_t i, const mt_record_t **r,
                                                             mt_error_t *err)
{
    source_t *s = &m->src[i];
    if (!m->ndec) {
        const int rc = mt_thread_cursor_next(&s->cur, &s->head, err);
        *r = &s->head;
        if (rc == 0) { /* its records are done: its buffer goes */
            mt_thread_cursor_fini(&s->cur);
            free(s->first_data);
            s->first_data = NULL;
        }
        return rc;
    }
    for (;;) {
        if (s->b && s->pos < s->b->n) {
            *r = &s->b->rec[s->pos++];
            return 1;
        }
        if (s->b && s->b->end) {
            const int status = s->b->status;
            assert(status <= 0); /* batch_end's: never 1, "a record" */
            if (status < 0)
                *err = s->b->err;
            else
                source_release(s);
            return status;
        }
        if (s->b) {
            queue_release(s->q);
        } else if (!s->q) { /* the first request, or one after the end */
            int rc;
            if (s->ended)
                return 0;
            if ((rc = source_activate(m, s, err)) < 0)
                return rc;
        }
        s->pos = 0;
        if (!(s->b = queue_take(m, s->q)))
            return 0; /* stopping: nobody reads on */
    }
}

/* With many threads and no decoders: s's first record is kept, its payload copied, and its cursor
 * rewound past it until its turn (MT_PARK_THREADS). 0, or -ENOMEM. */
static int park(struct mt_ordered *m, source_t *s, mt_error_t *err)
{
    if (s->head.data && s->head.len) {
        if (!(s->first_data = malloc(s->head.len)))
            return out_of_memory(m, err);
        memcpy(s->first_data, s->head.data, s->head.len);
        s->head.data = s->first_data;
    }
    mt_thread_cursor_rewind(&s->cur, 1);
    return 0;
}

static void *merger_main(void *arg)
{
    struct mt_ordered *m = arg;
    mt_error_t err;
    int rc = 0;
    const mt_record_t **head = calloc(m->n + 1, sizeof *head);
    uint64_t *key = calloc(m->n + 1, sizeof *key);
    mt_merge_heap_t heap = { .v = calloc(m->n + 1, sizeof *heap.v), .key = key };
    batch_t *b = queue_slot(m, &m->out);
    if (!b)
        goto out;
    if (!head || !key || !heap.v) {
        batch_end(b, out_of_memory(m, &err), &err);
        goto publish;
    }
    for (uint32_t i = 0; i < m->n && rc >= 0; i++) {
        if ((rc = source_next(m, i, &head[i], &err)) > 0) {
            key[i] = head[i]->time;
            mt_merge_push(&heap, i);
            if (!m->ndec && m->n > MT_PARK_THREADS && (rc = park(m, &m->src[i], &err)) < 0)
                break;
        }
    }
    while (rc >= 0 && heap.n) {
        const uint32_t i = heap.v[0];
        int room = arena_room(b, head[i]);
        if (room == 0) {
            queue_publish(&m->out, b);
            if (!(b = queue_slot(m, &m->out)))
                goto out;
            room = arena_room(b, head[i]);
        }
        if (room < 0) {
            rc = out_of_memory(m, &err);
            break;
        }
        b->thread[b->n] = i;
        batch_add(b, head[i]);
        if ((rc = source_next(m, i, &head[i], &err)) < 0)
            break; /* the record came before the damage, in order: handed out, as the serial merges do */
        if (rc) {
            key[i] = head[i]->time;
            mt_merge_top_changed(&heap);
        } else {
            mt_merge_pop(&heap);
        }
        if (b->n == b->cap) {
            queue_publish(&m->out, b);
            if (!(b = queue_slot(m, &m->out)))
                goto out;
        }
    }
    batch_end(b, rc < 0 ? rc : 0, &err);
publish:
    queue_publish(&m->out, b);
out:
    free(head);
    free(key);
    free(heap.v);
    return NULL;
}

/* ---- the caller's side ----------------------------------------------------------------------- */

/* Trace threads to decoders, the most chunks first to the least loaded (by chunks). */
static int assign_threads(struct mt_ordered *m)
{
    assert(m->ndec >= 1 && m->ndec <= m->n); /* mt_ordered_open: a decoder per trace thread at most */
    uint64_t *load = calloc(m->ndec, sizeof *load);
    uint32_t *order = malloc((m->n + 1) * sizeof *order);
    int rc = load && order ? 0 : -ENOMEM;
    for (uint32_t d = 0; d < m->ndec && rc == 0; d++)
        if (!(m->dec[d].threads = malloc((m->n + 1) * sizeof *m->dec[d].threads)))
            rc = -ENOMEM;
    for (uint32_t i = 0; i < m->n && rc == 0; i++) {
        /* insertion by chunk count, descending: the index is built once per stream */
        uint32_t k = i;
        const uint32_t c = mt_trace_thread(m->trace, i)->nchunks;
        while (k && mt_trace_thread(m->trace, order[k - 1])->nchunks < c) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
    for (uint32_t k = 0; k < m->n && rc == 0; k++) {
        uint32_t best = 0;
        for (uint32_t d = 1; d < m->ndec; d++)
            if (load[d] < load[best])
                best = d;
        decoder_t *d = &m->dec[best];
        d->threads[d->nthreads++] = order[k];
        load[best] += mt_trace_thread(m->trace, order[k])->nchunks + 1;
    }
    free(load);
    free(order);
    return rc;
}

/* Opens a reader with `ndec` decoders and, if `merged`, the merger (which with no decoder decodes
 * the threads itself). */
static int ordered_open(mt_ordered_t **out, mt_trace_t *t, uint32_t ndec, int merged, mt_error_t *err)
{
    *out = NULL;
    struct mt_ordered *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", mt_trace_path(t));
        return -ENOMEM;
    }
    m->trace = t;
    m->n = (uint32_t)mt_trace_thread_count(t);
    m->ndec = ndec;
    if (m->ndec > m->n)
        m->ndec = m->n; /* a decoder per trace thread at most */
    pthread_mutex_init(&m->out_mu, NULL);
    pthread_cond_init(&m->out_space, NULL);
    m->src = calloc(m->n + 1, sizeof *m->src);
    m->dec = calloc(m->ndec + 1, sizeof *m->dec);
    int rc = m->src && m->dec ? 0 : -ENOMEM;
    if (rc == 0 && merged)
        rc = queue_init(&m->out, &m->out_mu, &m->out_space, &m->out_waits, MERGED_RING, MERGED_BATCH, 1);
    for (uint32_t d = 0; d < m->ndec && rc == 0; d++) {
        m->dec[d].m = m;
        pthread_mutex_init(&m->dec[d].mu, NULL);
        pthread_cond_init(&m->dec[d].space, NULL);
        if (!(m->dec[d].codec = mt_chunk_codec_new()))
            rc = -ENOMEM;
    }
    if (rc == 0 && m->ndec)
        rc = assign_threads(m);
    for (uint32_t d = 0; d < m->ndec && rc == 0; d++)
        for (uint32_t k = 0; k < m->dec[d].nthreads && rc == 0; k++) {
            source_t *s = &m->src[m->dec[d].threads[k]];
            s->dec = &m->dec[d];
            if (mt_thread_cursor_init(&s->cur, t, m->dec[d].threads[k]) < 0) {
                rc = -ENOMEM;
                break;
            }
            s->cur.c.codec = m->dec[d].codec;
            mt_thread_cursor_rewind(&s->cur, 0); /* a buffer once its decoder reads it */
            /* The merger reads every thread's first record before any other: all start at once. */
            if (merged && source_activate(m, s, err) < 0)
                rc = -ENOMEM;
        }
    for (uint32_t i = 0; i < m->n && rc == 0 && !m->ndec; i++) {
        if (mt_thread_cursor_init(&m->src[i].cur, t, i) < 0)
            rc = -ENOMEM;
        else if (m->n > MT_PARK_THREADS) /* a buffer only once the merger reads the thread */
            mt_thread_cursor_rewind(&m->src[i].cur, 0);
    }
    if (rc < 0) {
        mt_ordered_close(m);
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", mt_trace_path(t));
        return rc;
    }
    for (uint32_t d = 0; d < m->ndec && rc == 0; d++)
        if ((rc = -pthread_create(&m->dec[d].th, NULL, decoder_main, &m->dec[d])) == 0)
            m->dec[d].started = 1;
    if (rc == 0 && merged && (rc = -pthread_create(&m->merger, NULL, merger_main, m)) == 0)
        m->merger_started = 1;
    if (rc < 0) {
        mt_ordered_close(m);
        snprintf(err->msg, sizeof err->msg, "%s: cannot start a reader thread: %s", mt_trace_path(t), strerror(-rc));
        return rc;
    }
    *out = m;
    return 0;
}

int mt_ordered_open(mt_ordered_t **out, mt_trace_t *t, unsigned jobs, mt_error_t *err)
{
    const int few = mt_trace_thread_count(t) <= MT_ORDERED_DECODED_THREADS_MAX;
    return ordered_open(out, t, jobs > 2 && few ? jobs - 2 : 0, 1, err);
}

int mt_ordered_open_threads(mt_ordered_t **out, mt_trace_t *t, unsigned decoders, mt_error_t *err)
{
    if (mt_trace_thread_count(t) > MT_ORDERED_DECODED_THREADS_MAX) {
        *out = NULL;
        snprintf(err->msg, sizeof err->msg, "%s: %zu threads: more than decoders keep batches for", mt_trace_path(t),
                 mt_trace_thread_count(t));
        return -E2BIG;
    }
    return ordered_open(out, t, decoders ? decoders : 1, 0, err);
}

int mt_ordered_thread_next(mt_ordered_t *m, uint32_t i, const mt_record_t **r, mt_error_t *err)
{
    assert(!m->merger_started && i < m->n);
    return source_next(m, i, r, err);
}

int mt_ordered_batch(mt_ordered_t *m, const mt_record_t **rec, const uint32_t **thread, size_t *n, mt_error_t *err)
{
    for (;;) {
        const batch_t *b = m->cur;
        if (b && !m->handed && b->n) {
            m->handed = 1;
            *rec = b->rec;
            *thread = b->thread;
            *n = b->n;
            return 1;
        }
        if (b && b->end) {
            if (b->status < 0)
                *err = b->err;
            return b->status;
        }
        if (b)
            queue_release(&m->out);
        m->handed = 0;
        m->cur = queue_take(m, &m->out);
    }
}

static void stop_all(struct mt_ordered *m)
{
    atomic_store(&m->stop, 1);
    /* Under each lock, so that a thread between its test of stop and its wait sees it. */
    pthread_mutex_lock(&m->out_mu);
    pthread_cond_broadcast(&m->out_space);
    if (m->out.mu) /* no merged queue with per-thread streams */
        pthread_cond_broadcast(&m->out.data);
    pthread_mutex_unlock(&m->out_mu);
    for (uint32_t d = 0; d < m->ndec; d++) {
        pthread_mutex_lock(&m->dec[d].mu);
        pthread_cond_broadcast(&m->dec[d].space);
        for (uint32_t k = 0; m->dec[d].threads && k < m->dec[d].nthreads; k++) {
            queue_t *q = m->src[m->dec[d].threads[k]].q;
            if (q && q->mu) /* made (a failed open may stop before) */
                pthread_cond_broadcast(&q->data);
        }
        pthread_mutex_unlock(&m->dec[d].mu);
    }
}

void mt_ordered_close(mt_ordered_t *m)
{
    if (!m)
        return;
    stop_all(m);
    if (m->merger_started)
        pthread_join(m->merger, NULL);
    for (uint32_t d = 0; d < m->ndec; d++)
        if (m->dec[d].started)
            pthread_join(m->dec[d].th, NULL);
    for (uint32_t i = 0; m->src && i < m->n; i++) {
        mt_thread_cursor_fini(&m->src[i].cur);
        free(m->src[i].first_data);
        if (m->src[i].q) {
            if (m->src[i].q->mu)
                queue_fini(m->src[i].q);
            free(m->src[i].q);
        }
    }
    for (uint32_t d = 0; m->dec && d < m->ndec; d++) {
        mt_chunk_codec_free(m->dec[d].codec);
        free(m->dec[d].threads);
        pthread_mutex_destroy(&m->dec[d].mu);
        pthread_cond_destroy(&m->dec[d].space);
    }
    if (m->out.mu)
        queue_fini(&m->out);
    pthread_mutex_destroy(&m->out_mu);
    pthread_cond_destroy(&m->out_space);
    free(m->src);
    free(m->dec);
    free(m);
}
