/* The trace writer for tests (include/mtrace/trace_writer.h): per-thread chunk images in memory,
 * written out with pwrite at the slot each chunk claimed when its first record came. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mtrace/file_io.h"
#include "mtrace/trace_writer.h"

#define RECORD_AREA (MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE)

typedef struct wthread {
    uint32_t thread;
    uint32_t tid;  /* of the current chunk */
    uint32_t seq;  /* of the current chunk */
    uint64_t slot; /* the current chunk's index in the file (0 is the header chunk) */
    uint64_t base_time;
    uint8_t *buf; /* MT_CHUNK_SIZE bytes: the chunk image, header included */
    uint8_t *pos; /* next record byte; NULL while the thread has no open chunk */
    mt_enc_t enc;
} wthread_t;

struct mt_writer {
    char *path;
    int fd;
    int failed;       /* a write failed: every later call returns it */
    uint8_t *head;    /* the header chunk image */
    uint8_t *str_pos; /* next header string */
    wthread_t *threads;
    size_t nthreads, cap;
    size_t last; /* index of the latest thread used: records come in runs */
    uint64_t next_slot;
    uint32_t max_thread;
    uint64_t max_time;
    unsigned version; /* the header's: records are written in its syntax */
    char msg[1024];
};

/* One record to place: encoded twice at most, once to learn its size and once into the chunk. */
typedef struct pending {
    int is_event;
    unsigned b0;
    uint8_t ext;
    uint64_t time, ptr, n1, n2, result;
    int64_t slack;
    uint32_t stack;
    const void *payload;
    size_t len;
} pending_t;

static int set_error(mt_writer_t *w, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int set_error(mt_writer_t *w, int code, const char *fmt, ...)
{
    int n = snprintf(w->msg, sizeof w->msg, "%s: ", w->path);
    if (n < 0 || (size_t)n >= sizeof w->msg)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->msg + n, sizeof w->msg - (size_t)n, fmt, ap);
    va_end(ap);
    return code;
}

static void copy_error(mt_error_t *err, const char *msg)
{
    if (err)
        snprintf(err->msg, sizeof err->msg, "%s", msg);
}

void mt_writer_default_header(mt_file_header_t *h)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, MT_TRACE_MAGIC, MT_TRACE_MAGIC_LEN);
    h->version = MT_TRACE_VERSION;
    h->header_size = sizeof *h;
    h->chunk_size = MT_CHUNK_SIZE;
    h->ptr_size = sizeof(void *);
    h->little_endian = 1;
    const long page = sysconf(_SC_PAGESIZE);
    h->page_size = page > 0 ? (uint32_t)page : 4096u;
    h->ticks_per_sec = 1000000000u;
}

int mt_writer_open(mt_writer_t **out, const char *path, const mt_file_header_t *tmpl, mt_error_t *err)
{
    *out = NULL;
    mt_writer_t *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path)) || !(w->head = calloc(1, MT_CHUNK_SIZE))) {
        if (w) {
            free(w->path);
            free(w);
        }
        if (err)
            snprintf(err->msg, sizeof err->msg, "%s: out of memory", path);
        return -ENOMEM;
    }
    mt_file_header_t h;
    if (tmpl)
        h = *tmpl;
    else
        mt_writer_default_header(&h);
    memcpy(w->head, &h, sizeof h);
    w->version = h.version;
    w->str_pos = w->head + MT_HEADER_STRINGS_OFFSET;
    w->next_slot = 1;
    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        const int rc = -errno;
        set_error(w, rc, "cannot create: %s", strerror(errno));
        copy_error(err, w->msg);
        free(w->head);
        free(w->path);
        free(w);
        return rc;
    }
    *out = w;
    return 0;
}

const char *mt_writer_error(const mt_writer_t *w)
{
    return w->msg;
}

uint64_t mt_writer_chunks(const mt_writer_t *w)
{
    return w->next_slot - 1;
}

int mt_writer_header_string(mt_writer_t *w, unsigned tag, const void *s, size_t len)
{
    if (tag == MT_STR_END || tag > 0xffff || len > 0xffff)
        return set_error(w, -EINVAL,
                         "header string tag %u of %zu bytes: the tag must be 1 to 65535, the length at most 65535", tag,
                         len);
    uint8_t *const q = mt_str_put(w->str_pos, w->head + MT_CHUNK_SIZE, tag, s, len);
    if (!q)
        return set_error(w, -ENOSPC, "header string of %zu bytes does not fit in the header chunk", len);
    w->str_pos = q;
    return 0;
}

static int pwrite_all(mt_writer_t *w, const void *buf, size_t len, uint64_t off)
{
    const int rc = mt_write_full(w->fd, buf, len, off);
    if (rc < 0) {
        w->failed = rc;
        return set_error(w, rc, "offset %llu: write failed: %s", (unsigned long long)off, strerror(-rc));
    }
    return 0;
}

/* Writes the thread's open chunk into its slot, sealed or not, and closes it. */
static int flush_chunk(mt_writer_t *w, wthread_t *th, int seal)
{
    mt_chunk_header_t h = {
        .magic = MT_CHUNK_MAGIC,
        .kind = MT_CHUNK_THREAD,
        .flags = seal ? MT_CHUNK_SEALED : 0,
        .thread = th->thread,
        .tid = th->tid,
        .seq = th->seq,
        .used = seal ? (uint32_t)(th->pos - th->buf - MT_CHUNK_HEADER_SIZE) : 0,
        .base_time = th->base_time,
    };
    memcpy(th->buf, &h, sizeof h);
    const int rc = pwrite_all(w, th->buf, MT_CHUNK_SIZE, th->slot * MT_CHUNK_SIZE);
    memset(th->buf, 0, MT_CHUNK_SIZE);
    th->pos = NULL;
    th->seq++;
    return rc;
}

static wthread_t *find_thread(mt_writer_t *w, uint32_t thread)
{
    if (w->nthreads && w->threads[w->last].thread == thread)
        return &w->threads[w->last];
    for (size_t i = 0; i < w->nthreads; i++) {
        if (w->threads[i].thread == thread) {
            w->last = i;
            return &w->threads[i];
        }
    }
    if (w->nthreads == w->cap) {
        const size_t cap = w->cap ? w->cap * 2 : 16;
        wthread_t *n = realloc(w->threads, cap * sizeof *n);
        if (!n)
            return NULL;
        w->threads = n;
        w->cap = cap;
    }
    wthread_t *th = &w->threads[w->nthreads];
    memset(th, 0, sizeof *th);
    th->thread = thread;
    th->buf = calloc(1, MT_CHUNK_SIZE);
    if (!th->buf)
        return NULL;
    w->last = w->nthreads++;
    if (thread > w->max_thread)
        w->max_thread = thread;
    return th;
}

static uint8_t *encode(const pending_t *r, mt_enc_t *e, uint8_t *p, unsigned version)
{
    if (r->is_event)
        return mt_enc_event(e, p, r->b0, r->time, r->payload, r->len);
    return mt_enc_call(e, p, version, r->b0, r->ext, r->time, r->ptr, r->n1, r->n2, r->result, r->slack, r->stack);
}

static size_t uvarint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Exact encoded size of `r` against the delta bases `e` (which are left as they were). */
static size_t encoded_size(const pending_t *r, const mt_enc_t *e, unsigned version)
{
    if (r->is_event)
        return 1 + uvarint_len(mt_zigzag((int64_t)(r->time - e->prev_time))) + uvarint_len(r->len) + r->len;
    uint8_t scratch[MT_MAX_CALL_RECORD];
    mt_enc_t copy = *e;
    return (size_t)(encode(r, &copy, scratch, version) - scratch);
}

/* Places one record in the thread's chunk: a chunk is filled to its last byte, then sealed and
 * written out, and the record starts the thread's next chunk. */
static int put(mt_writer_t *w, uint32_t thread, uint32_t tid, const pending_t *r)
{
    if (w->failed)
        return w->failed;
    if (thread == 0)
        return set_error(w, -EINVAL, "thread numbers start at 1");
    wthread_t *th = find_thread(w, thread);
    if (!th)
        return set_error(w, -ENOMEM, "out of memory");
    if (th->pos) {
        const size_t need = encoded_size(r, &th->enc, w->version);
        if (need > (size_t)(th->buf + MT_CHUNK_SIZE - th->pos)) {
            const int rc = flush_chunk(w, th, 1);
            if (rc < 0)
                return rc;
        }
    }
    if (!th->pos) {
        th->slot = w->next_slot++;
        th->tid = tid;
        th->base_time = r->time;
        th->enc.prev_time = r->time;
        th->enc.prev_ptr = 0;
        th->pos = th->buf + MT_CHUNK_HEADER_SIZE;
    }
    th->pos = encode(r, &th->enc, th->pos, w->version);
    if (r->time > w->max_time)
        w->max_time = r->time;
    return 0;
}

int mt_writer_call(mt_writer_t *w, uint32_t thread, uint32_t tid, const mt_record_t *r)
{
    const unsigned op = r->op;
    if (op == MT_OP_NONE || op > mt_last_call(w->version))
        return set_error(w, -EINVAL, "opcode %u is not a call of trace format %u", op, w->version);
    pending_t p = { .b0 = op, .time = r->time, .stack = r->stack };
    if (r->flags & MT_FLAG_NULL)
        p.b0 |= MT_RF_NULL;
    if (r->flags & MT_FLAG_MMAPPED)
        p.b0 |= MT_RF_MMAPPED;
    if (r->flags & MT_FLAG_HEAP_GREW)
        p.ext |= MT_XF_HEAP_GREW;
    if (r->flags & MT_FLAG_STACK)
        p.ext |= MT_XF_STACK;
    int block = 1;
    const uint64_t requested = mt_requested(op, r->count, r->size);
    switch (op) {
    case MT_OP_MALLOC:
    case MT_OP_VALLOC:
    case MT_OP_PVALLOC:
        p.n1 = r->size;
        break;
    case MT_OP_CALLOC:
        p.n1 = r->count;
        p.n2 = r->size;
        break;
    case MT_OP_REALLOC:
        p.ptr = r->ptr;
        p.n1 = r->size;
        break;
    case MT_OP_REALLOCARRAY:
        p.ptr = r->ptr;
        p.n1 = r->count;
        p.n2 = r->size;
        break;
    case MT_OP_MEMALIGN:
    case MT_OP_ALIGNED_ALLOC:
    case MT_OP_POSIX_MEMALIGN:
        p.n1 = r->align;
        p.n2 = r->size;
        break;
    case MT_OP_FREE:
        p.ptr = r->ptr;
        block = 0;
        break;
    case MT_OP_USABLE_SIZE:
        p.ptr = r->ptr;
        p.n1 = r->size;
        block = 0;
        break;
    case MT_OP_MALLOPT:
        p.n1 = (uint64_t)r->arg[0];
        p.n2 = (uint64_t)r->arg[1];
        p.result = (uint64_t)r->arg[2];
        block = 0;
        break;
    case MT_OP_MALLOC_TRIM:
        p.n1 = (uint64_t)r->arg[0];
        p.result = (uint64_t)r->arg[1];
        block = 0;
        break;
    }
    if (!block && (r->flags & (MT_FLAG_NULL | MT_FLAG_MMAPPED)))
        return set_error(w, -EINVAL, "%s records carry no block flags", mt_op_name(op));
    if (block) {
        if (r->flags & MT_FLAG_NULL)
            p.result = op == MT_OP_POSIX_MEMALIGN ? (uint64_t)r->arg[0] : 0;
        else {
            p.result = r->result;
            p.slack = (int64_t)(r->usable - requested);
        }
    }
    return put(w, thread, tid, &p);
}

int mt_writer_event(mt_writer_t *w, uint32_t thread, uint32_t tid, unsigned op, uint64_t time, const void *payload,
                    size_t len)
{
    if (op < MT_FIRST_EVENT || !mt_op_name(op))
        return set_error(w, -EINVAL, "opcode %u is not an event", op);
    if (op > mt_last_event(w->version))
        return set_error(w, -EINVAL, "%s events are not defined in trace format version %u", mt_op_name(op),
                         w->version);
    /* In the worst case it starts a chunk: op, a 1-byte time delta (0 from the chunk's base time),
     * the length and the payload must fit in the record area. */
    if (len > RECORD_AREA || 2 + uvarint_len(len) + len > RECORD_AREA)
        return set_error(w, -EMSGSIZE, "a %s payload of %zu bytes does not fit in a chunk", mt_op_name(op), len);
    pending_t p = { .is_event = 1, .b0 = op, .time = time, .payload = payload ? payload : "", .len = len };
    return put(w, thread, tid, &p);
}

int mt_writer_close(mt_writer_t *w, int seal, mt_error_t *err)
{
    if (!w)
        return 0;
    int rc = w->failed;
    for (size_t i = 0; i < w->nthreads; i++) {
        wthread_t *th = &w->threads[i];
        if (!rc && th->pos)
            rc = flush_chunk(w, th, seal);
        free(th->buf);
    }
    if (!rc) {
        if (seal) {
            mt_file_header_t h;
            memcpy(&h, w->head, sizeof h);
            h.flags |= MT_HDR_COMPLETE;
            h.chunks_used = w->next_slot;
            h.threads = w->max_thread;
            if (!h.end_time)
                h.end_time = w->max_time;
            memcpy(w->head, &h, sizeof h);
            w->version = h.version;
        }
        rc = pwrite_all(w, w->head, MT_CHUNK_SIZE, 0);
    }
    if (close(w->fd) < 0 && !rc)
        rc = set_error(w, -errno, "close failed: %s", strerror(errno));
    if (rc < 0)
        copy_error(err, w->msg);
    free(w->threads);
    free(w->head);
    free(w->path);
    free(w);
    return rc;
}
