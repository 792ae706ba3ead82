/* A trace's figures in one pass over its records, on `jobs` threads (mtrace info): records, calls
 * and events per op, failures, bytes requested, the time span and the latest record's op. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/trace_scan.h"

/* A run of the threads' chunk list, scanned by one thread: its figures, and its latest RSS sample
 * for the trace's rate estimate (fed to mt_trace_note_rss run by run, in order, it leaves the
 * estimate that feeding every record in order leaves: the first sample at the latest time). */
typedef struct scan_part {
    mt_trace_t *t;
    const uint32_t *order;
    size_t from, to;
    mt_chunk_codec_t *codec; /* NULL: the trace's own (one thread scanning) */
    mt_trace_stats_t s;
    mt_record_t rss;
    int rc;
    mt_error_t err;
    pthread_t th;
} scan_part_t;

static void *scan_part(void *arg)
{
    scan_part_t *p = arg;
    mt_trace_stats_t *s = &p->s;
    s->first_time = UINT64_MAX;
    mt_cursor_t c;
    if (mt_cursor_init(&c, p->t) < 0) {
        snprintf(p->err.msg, sizeof p->err.msg, "%s: out of memory", mt_trace_path(p->t));
        p->rc = -ENOMEM;
        return NULL;
    }
    c.codec = p->codec;
    c.spread_reads = 0; /* counts, and the first time of all, which no spreading moves */
    int rc = 0;
    for (size_t i = p->from; i < p->to && rc >= 0; i++) {
        rc = mt_cursor_load(&c, p->order[i], &p->err);
        mt_record_t r;
        while (rc >= 0 && (rc = mt_cursor_next(&c, &r, &p->err)) > 0) {
            s->records++;
            s->per_op[r.op]++;
            if (r.op <= MT_OP_LAST_CALL) {
                s->calls++;
                const uint64_t req = mt_requested(r.op, r.count, r.size);
                s->failed += mt_call_failed(r.op, r.flags, req);
                /* by the calls that returned a block, as mtrace report counts them; never wrapped */
                const int block = mt_op_allocates(r.op) && !(r.flags & MT_FLAG_NULL);
                if (block && __builtin_add_overflow(s->bytes_requested, req, &s->bytes_requested))
                    s->bytes_requested = UINT64_MAX;
            } else {
                s->events++;
                if (r.op == MT_EV_RSS && r.nargs >= 4 && r.time > p->rss.time)
                    p->rss = r; /* as mt_trace_note_rss takes it (data not kept: it is not read) */
            }
            if (r.time < s->first_time)
                s->first_time = r.time;
            if (r.time >= s->last_time) {
                s->last_time = r.time;
                s->last_op = r.op;
            }
        }
    }
    mt_cursor_fini(&c);
    p->rc = rc < 0 ? rc : 0;
    return NULL;
}

/* Adds part b, which follows a in the chunk list, to a: the same figures as one scan of both. */
static void scan_add(mt_trace_stats_t *a, const mt_trace_stats_t *b)
{
    a->records += b->records;
    a->calls += b->calls;
    a->events += b->events;
    for (unsigned k = 0; k <= MT_OP_MAX; k++)
        a->per_op[k] += b->per_op[k];
    if (__builtin_add_overflow(a->bytes_requested, b->bytes_requested, &a->bytes_requested))
        a->bytes_requested = UINT64_MAX;
    a->failed += b->failed;
    if (!b->records)
        return;
    if (b->first_time < a->first_time)
        a->first_time = b->first_time;
    if (b->last_time >= a->last_time) { /* the last record at the latest time, as one scan finds it */
        a->last_time = b->last_time;
        a->last_op = b->last_op;
    }
}

int mt_trace_scan(mt_trace_t *t, mt_trace_stats_t *s, unsigned jobs, mt_error_t *err)
{
    memset(s, 0, sizeof *s);
    s->first_time = UINT64_MAX;
    /* Through the threads' chunk lists: a chunk present twice in the file is counted once. */
    const uint32_t *order = mt_trace_thread_chunks(t);
    size_t nkept = 0;
    for (size_t i = 0; i < mt_trace_thread_count(t); i++)
        nkept += mt_trace_thread(t, i)->nchunks;
    if (jobs > nkept)
        jobs = nkept ? (unsigned)nkept : 1;
    scan_part_t *part = calloc(jobs, sizeof *part);
    if (!part) {
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", mt_trace_path(t));
        return -ENOMEM;
    }
    int rc = 0;
    unsigned started = 0;
    for (unsigned k = 0; k < jobs; k++) {
        scan_part_t *p = &part[k];
        *p = (scan_part_t){ .t = t, .order = order, .from = nkept * k / jobs, .to = nkept * (k + 1) / jobs };
        if (jobs == 1)
            break;
        if (mt_trace_is_packed(t) && !(p->codec = mt_chunk_codec_new())) {
            snprintf(err->msg, sizeof err->msg, "%s: out of memory", mt_trace_path(t));
            rc = -ENOMEM;
            break;
        }
        const int e = pthread_create(&p->th, NULL, scan_part, p);
        if (e) {
            snprintf(err->msg, sizeof err->msg, "%s: cannot start a thread: %s", mt_trace_path(t), strerror(e));
            rc = -e;
            break;
        }
        started++;
    }
    if (jobs == 1)
        scan_part(&part[0]);
    for (unsigned k = 0; k < started; k++)
        pthread_join(part[k].th, NULL);
    for (unsigned k = 0; k < jobs && rc == 0; k++) {
        if ((rc = part[k].rc) < 0) {
            *err = part[k].err; /* the first damage in the list's order, where one scan stops */
            break;
        }
        scan_add(s, &part[k].s);
        mt_trace_note_rss(t, &part[k].rss);
    }
    for (unsigned k = 0; k < jobs; k++)
        mt_chunk_codec_free(part[k].codec);
    free(part);
    if (s->first_time == UINT64_MAX)
        s->first_time = s->last_time = 0;
    return rc;
}
