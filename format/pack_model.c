/* Modeled chunks of packed traces ("MTCM" frames; doc/trace-format.md, "Modeled frames").
 *
 * zstd on a chunk's records as they are sees fields of every kind interleaved byte by byte, and
 * pointers delta-coded against whatever pointer came before, so that a free's argument looks
 * random. Here the records are taken apart into one stream per field kind, and a pointer is coded,
 * where it can be, as a reference to an address the chunk has already seen: a free's argument as
 * "the block returned k allocations ago", an allocation's result as "the address freed k frees
 * ago", or better "the k-th latest free of a block of this usable size" (allocators hand out the
 * latest free block of a size class first: glibc's tcache and fastbins are LIFO lists per class).
 * Each stream is then compressed alone.
 *
 * The encoder and the decoder keep the same state (model_t), updated by the same function
 * (model_note) from the same values, so each can resolve the other's references. The encoder
 * checks its work by running the decoder over the streams it made: a chunk it cannot code exactly
 * (a varint not in its shortest form, say) is reported as such and goes into a plain "MTCZ" frame. */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "mtrace/trace_format.h"
#include "pack_model.h"

/* The streams, in the order they are stored. */
enum {
    S_OPS,     /* first byte of every record */
    S_EXT,     /* extension byte of the calls with MT_RF_EXT */
    S_TIME,    /* time delta of every record, as in the record */
    S_SIZE,    /* the size argument of calls that take one */
    S_MISC,    /* counts, alignments, usable-size results, errors, mallopt fields, payload lengths */
    S_SLACK,   /* slack minus its prediction, svarint */
    S_PCODE,   /* how each argument pointer is coded */
    S_RCODE,   /* how each result pointer is coded */
    S_PLIT,    /* argument pointers coded literally */
    S_RLIT,    /* result pointers coded literally */
    S_STACK,   /* stack ids */
    S_PAYLOAD, /* event payloads */
    S_SIZE_HI, /* the size varints' bytes after the first (S_SIZE holds the first) */
    S_COUNT
};
_Static_assert(S_COUNT == MT_PACK_MODEL_STREAMS, "stream count");

/* Table sizes. A record takes 3 bytes at least, so a chunk holds fewer than 32768 of them, and as
 * many allocations or frees at most. */
#define MAX_ENTRIES 32768u
#define HASH_SLOTS 65536u    /* encoder's address lookup, at most half full */
#define SLACK_SLOTS 4096u    /* slack by requested size, direct mapped */
#define CLASS_SLOTS 4096u    /* latest free by usable size, direct mapped */
#define MAX_CLASS_RANK 1024u /* bounds the decoder's walk along a class's frees */

/* Pointer codes. */
enum {
    PC_LITERAL = 0, /* the pointer follows in the literal stream */
    PC_NULL = 1,    /* argument: 0 */
    PC_ARG = 1,     /* result: the record's own argument pointer (realloc, reallocarray) */
    PC_TABLE = 2,   /* and up, argument: allocation c - 1 back; result: 2k + 1, free k back;
                       2k, the k-th latest free of the result's usable size */
};

/* State shared by encoder and decoder, reset at every chunk. */
typedef struct model {
    uint64_t allocs[MAX_ENTRIES];       /* results of the chunk's allocations, in order */
    uint64_t alloc_usable[MAX_ENTRIES]; /* their usable sizes (requested + slack) */
    uint64_t frees[MAX_ENTRIES];        /* addresses the chunk's calls freed, in order */
    uint64_t free_usable[MAX_ENTRIES];  /* their usable sizes when the chunk allocated them, else 0 */
    uint32_t free_prev[MAX_ENTRIES];    /* 1 + the previous free of the same nonzero usable size, or 0 */
    uint32_t class_last[CLASS_SLOTS];   /* 1 + the latest free of a usable size hashed here, or 0 */
    uint32_t nallocs, nfrees;
    uint64_t prev_arg_literal; /* the last argument pointer coded literally */
    uint64_t next_result;      /* prediction of a literal result: the last one plus its usable size */
    uint64_t slack_size[SLACK_SLOTS];
    int64_t slack_value[SLACK_SLOTS];
    uint8_t slack_used[SLACK_SLOTS];
    int64_t slack_by_low[16]; /* by requested size modulo 16 */
} model_t;

/* Encoder's index from an address to its latest entry in a table. */
typedef struct addr_slot {
    uint64_t addr;
    uint32_t index;
    uint32_t gen; /* valid when equal to the map's generation: no clearing per chunk */
} addr_slot_t;

typedef struct addr_map {
    addr_slot_t slot[HASH_SLOTS];
    uint32_t gen;
} addr_map_t;

typedef struct wstream {
    uint8_t *p;
    size_t n;
    int full;
} wstream_t;

typedef struct rstream {
    const uint8_t *p, *end;
} rstream_t;

struct mt_pack_model {
    model_t st;
    addr_map_t alloc_map, free_map;
    wstream_t w[S_COUNT];
    uint8_t *scratch; /* S_COUNT decoded streams (decoder) or the encoder's check of its output */
    ZSTD_CCtx *cctx;
    ZSTD_DCtx *dctx;
    unsigned version; /* of the trace: the syntax of the records' pointer fields */
    char msg[128];    /* the decoder's last complaint, when it needs numbers */
};

/* Shape of each call: which fields it has, in record order after the time delta. */
typedef struct call_shape {
    uint8_t ptr;     /* an argument pointer comes first */
    uint8_t nnum;    /* then this many varints ... */
    uint8_t num[3];  /* ... each stored in this stream */
    uint8_t block;   /* returns a block: result and slack follow unless MT_RF_NULL */
    uint8_t product; /* requested size is num[0] * num[1] (count * size) */
} call_shape_t;

static const call_shape_t shapes[MT_OP_LAST_CALL + 1] = {
    [MT_OP_MALLOC] = { 0, 1, { S_SIZE }, 1, 0 },
    [MT_OP_FREE] = { 1, 0, { 0 }, 0, 0 },
    [MT_OP_CALLOC] = { 0, 2, { S_MISC, S_SIZE }, 1, 1 },
    [MT_OP_REALLOC] = { 1, 1, { S_SIZE }, 1, 0 },
    [MT_OP_REALLOCARRAY] = { 1, 2, { S_MISC, S_SIZE }, 1, 1 },
    [MT_OP_MEMALIGN] = { 0, 2, { S_MISC, S_SIZE }, 1, 0 },
    [MT_OP_POSIX_MEMALIGN] = { 0, 2, { S_MISC, S_SIZE }, 1, 0 },
    [MT_OP_ALIGNED_ALLOC] = { 0, 2, { S_MISC, S_SIZE }, 1, 0 },
    [MT_OP_VALLOC] = { 0, 1, { S_SIZE }, 1, 0 },
    [MT_OP_PVALLOC] = { 0, 1, { S_SIZE }, 1, 0 },
    [MT_OP_USABLE_SIZE] = { 1, 1, { S_MISC }, 0, 0 },
    [MT_OP_MALLOPT] = { 0, 3, { S_MISC, S_MISC, S_MISC }, 0, 0 },
    [MT_OP_MALLOC_TRIM] = { 0, 2, { S_MISC, S_MISC }, 0, 0 },
};

/* The bytes a block-returning call asks for: count * size, or its last number (the size). */
static uint64_t shape_requested(const call_shape_t *sh, const uint64_t num[3])
{
    assert(sh->nnum >= 1); /* every block-returning shape in shapes[] has its size */
    return sh->product ? num[0] * num[1] : num[sh->nnum - 1];
}

/* Whether b0 starts an event record: an event's opcode and no flags. */
static inline int is_event(unsigned version, uint8_t b0)
{
    const unsigned op = b0 & MT_RF_OPMASK;
    return op >= MT_FIRST_EVENT && op <= mt_last_event(version) && !(b0 & ~MT_RF_OPMASK);
}

static void model_reset(model_t *st)
{
    st->nallocs = st->nfrees = 0;
    memset(st->class_last, 0, sizeof st->class_last);
    st->prev_arg_literal = st->next_result = 0;
    memset(st->slack_used, 0, sizeof st->slack_used);
    memset(st->slack_by_low, 0, sizeof st->slack_by_low);
}

static uint32_t slack_slot(uint64_t requested)
{
    return (uint32_t)((requested * 0x9e3779b97f4a7c15ull) >> 52);
}

/* 1 + the latest free of usable size u (nonzero), or 0. */
static uint32_t class_latest(const model_t *st, uint64_t u)
{
    const uint32_t f = st->class_last[slack_slot(u)];
    return f && st->free_usable[f - 1] == u ? f : 0;
}

/* The slack expected for a block of `requested` bytes: what the last block of that size had, else
 * what the last block of a size equal modulo 16 had (glibc's slack depends on that alone). */
static int64_t slack_predict(const model_t *st, uint64_t requested)
{
    const uint32_t s = slack_slot(requested);
    if (st->slack_used[s] && st->slack_size[s] == requested)
        return st->slack_value[s];
    return st->slack_by_low[requested & 15];
}

/* What a call teaches the model, applied by encoder and decoder alike after the call's pointers
 * are coded. `ptr` is the argument pointer (free, realloc, reallocarray), `result` the block
 * returned (has_result: a block call without MT_RF_NULL). A table that is full stays as it is. */
static void model_note(model_t *st, unsigned op, uint64_t ptr, uint64_t ptr_usable, int has_result, uint64_t result,
                       uint64_t requested, int64_t slack)
{
    int freed = 0;
    if (op == MT_OP_FREE)
        freed = ptr != 0;
    else if (op == MT_OP_REALLOC || op == MT_OP_REALLOCARRAY)
        freed = ptr != 0 && (!has_result || result != ptr);
    if (freed && st->nfrees < MAX_ENTRIES) {
        const uint32_t f = st->nfrees++;
        st->frees[f] = ptr;
        st->free_usable[f] = ptr_usable;
        st->free_prev[f] = 0;
        if (ptr_usable) {
            st->free_prev[f] = class_latest(st, ptr_usable);
            st->class_last[slack_slot(ptr_usable)] = f + 1;
        }
    }
    if (has_result) {
        if (st->nallocs < MAX_ENTRIES) {
            st->alloc_usable[st->nallocs] = requested + (uint64_t)slack;
            st->allocs[st->nallocs++] = result;
        }
        const uint32_t s = slack_slot(requested);
        st->slack_used[s] = 1;
        st->slack_size[s] = requested;
        st->slack_value[s] = slack;
        st->slack_by_low[requested & 15] = slack;
    }
}

/* ---- decoding ------------------------------------------------------------------------------- */

static int rs_u(rstream_t *r, uint64_t *v)
{
    return mt_get_uvarint(&r->p, r->end, v);
}

/* A varint whose first byte is in lo and the others in hi. */
static int rs_split_u(rstream_t *lo, rstream_t *hi, uint64_t *v)
{
    if (lo->p >= lo->end)
        return -1;
    const uint8_t b = *lo->p++;
    *v = b & 0x7f;
    if (!(b & 0x80))
        return 0;
    uint64_t rest;
    const uint8_t *start = hi->p;
    if (mt_get_uvarint(&hi->p, hi->end, &rest) < 0 || hi->p - start > 9)
        return -1;
    *v |= rest << 7;
    return 0;
}

static const char *const stream_names[S_COUNT] = {
    "ops",
    "ext",
    "time",
    "size",
    "misc",
    "slack",
    "pointer codes",
    "result codes",
    "pointer literals",
    "result literals",
    "stacks",
    "payloads",
    "size high bytes",
};

/* The decoder's place in a chunk: the decoded streams and the last pointer field written. */
typedef struct rebuild_state {
    mt_pack_model_t *m;
    rstream_t *s;
    uint64_t prev_ptr;
    const char **why;
} rebuild_t;

/* Fails the rebuild on a stream that ran short or held a bad varint. */
static int rb_short(mt_pack_model_t *m, unsigned stream, const char **why)
{
    snprintf(m->msg, sizeof m->msg, "the %s stream ends early or holds a bad varint", stream_names[stream]);
    *why = m->msg;
    return -EINVAL;
}

/* Fails the rebuild with a message that needs no numbers. */
static int rb_fail(const char **why, const char *msg)
{
    *why = msg;
    return -EINVAL;
}

/* Reads a varint of the stream into *v. Returns 0, or -EINVAL with the stream named. */
static inline int rb_get(rebuild_t *r, unsigned stream, uint64_t *v)
{
    return rs_u(&r->s[stream], v) < 0 ? rb_short(r->m, stream, r->why) : 0;
}

/* Rebuilds an event record, b0 its first byte, and its payload at dst + *pos. */
static inline int rebuild_event(rebuild_t *r, uint8_t b0, uint8_t *dst, size_t cap, size_t *pos)
{
    rstream_t *pl = &r->s[S_PAYLOAD];
    uint64_t dt, len;
    if (rb_get(r, S_TIME, &dt) < 0 || rb_get(r, S_MISC, &len) < 0)
        return -EINVAL;
    if (len > (uint64_t)(pl->end - pl->p))
        return rb_short(r->m, S_PAYLOAD, r->why);
    uint8_t head[21], *q = head;
    *q++ = b0;
    q = mt_put_uvarint(q, dt);
    q = mt_put_uvarint(q, len);
    const size_t hl = (size_t)(q - head);
    if (hl + len > cap - *pos)
        return rb_fail(r->why, "the records decoded exceed a chunk");
    memcpy(dst + *pos, head, hl);
    memcpy(dst + *pos + hl, pl->p, len);
    pl->p += len;
    *pos += hl + len;
    return 0;
}

/* Decodes a call's argument pointer into *ptr, and into *ptr_usable its usable size where it names
 * an allocation of the chunk. */
static inline int rebuild_arg(rebuild_t *r, uint64_t *ptr, uint64_t *ptr_usable)
{
    model_t *st = &r->m->st;
    uint64_t code, v;
    if (rb_get(r, S_PCODE, &code) < 0)
        return -EINVAL;
    if (code == PC_LITERAL) {
        if (rb_get(r, S_PLIT, &v) < 0)
            return -EINVAL;
        *ptr = st->prev_arg_literal + (uint64_t)mt_unzigzag(v);
        st->prev_arg_literal = *ptr;
    } else if (code != PC_NULL) {
        if (code - 1 > st->nallocs)
            return rb_fail(r->why, "a pointer code names an allocation before the chunk's first");
        *ptr = st->allocs[st->nallocs - (code - 1)];
        *ptr_usable = st->alloc_usable[st->nallocs - (code - 1)];
    }
    return 0;
}

/* Reads a call's numbers into num, each from the stream its shape names, and writes them at q.
 * Returns the end of what it wrote, or NULL with the stream named. */
static inline uint8_t *rebuild_nums(rebuild_t *r, const call_shape_t *sh, uint64_t num[3], uint8_t *q)
{
    for (unsigned k = 0; k < sh->nnum; k++) {
        if (sh->num[k] == S_SIZE) {
            if (rs_split_u(&r->s[S_SIZE], &r->s[S_SIZE_HI], &num[k]) < 0) {
                rb_short(r->m, S_SIZE, r->why);
                return NULL;
            }
        } else if (rb_get(r, sh->num[k], &num[k]) < 0) {
            return NULL;
        }
        q = mt_put_uvarint(q, num[k]);
    }
    return q;
}

/* The address that a result code naming a free stands for: 2k + 1, the free k back; 2k, the k-th
 * latest free of a block of usable size `usable`. */
static inline int result_from_frees(const model_t *st, uint64_t code, uint64_t usable, uint64_t *result,
                                    const char **why)
{
    if (code & 1) {
        const uint64_t k = (code - 1) / 2;
        if (k > st->nfrees)
            return rb_fail(why, "a result code names a free before the chunk's first");
        *result = st->frees[st->nfrees - k];
        return 0;
    }
    const uint64_t k = code / 2;
    uint32_t f = class_latest(st, usable);
    for (uint64_t j = 1; j < k && f && k <= MAX_CLASS_RANK; j++)
        f = st->free_prev[f - 1];
    if (!f || k > MAX_CLASS_RANK)
        return rb_fail(why, "a result code names a free of its size that the chunk does not hold");
    *result = st->frees[f - 1];
    return 0;
}

/* Decodes a block call's slack and result pointer; ptr is the call's argument pointer, if any. */
static inline int rebuild_result(rebuild_t *r, const call_shape_t *sh, uint64_t ptr, uint64_t requested, int64_t *slack,
                                 uint64_t *result)
{
    model_t *st = &r->m->st;
    uint64_t code, v;
    if (rb_get(r, S_SLACK, &v) < 0)
        return -EINVAL;
    *slack = (int64_t)((uint64_t)slack_predict(st, requested) + (uint64_t)mt_unzigzag(v)); /* mod 2^64 */
    if (rb_get(r, S_RCODE, &code) < 0)
        return -EINVAL;
    if (code == PC_LITERAL) {
        if (rb_get(r, S_RLIT, &v) < 0)
            return -EINVAL;
        *result = st->next_result + (uint64_t)mt_unzigzag(v);
        st->next_result = *result + requested + (uint64_t)*slack;
        return 0;
    }
    if (code == PC_ARG) {
        if (!sh->ptr)
            return rb_fail(r->why, "a result code names the argument of a call that has none");
        *result = ptr;
        return 0;
    }
    return result_from_frees(st, code, requested + (uint64_t)*slack, result, r->why);
}

/* Rebuilds a call record, b0 its first byte, at dst + *pos, and notes the call in the model. */
static inline int rebuild_call(rebuild_t *r, uint8_t b0, uint8_t *dst, size_t cap, size_t *pos)
{
    const unsigned op = b0 & MT_RF_OPMASK, version = r->m->version;
    const call_shape_t *sh = &shapes[op];
    rstream_t *es = &r->s[S_EXT];
    uint8_t rec[MT_MAX_CALL_RECORD], *q = rec, ext = 0;
    *q++ = b0;
    if (b0 & MT_RF_EXT) {
        if (es->p >= es->end)
            return rb_short(r->m, S_EXT, r->why);
        ext = *es->p++;
        *q++ = ext;
    }
    uint64_t v, ptr = 0, ptr_usable = 0, num[3] = { 0, 0, 0 };
    if (rb_get(r, S_TIME, &v) < 0)
        return -EINVAL;
    q = mt_put_uvarint(q, v);
    if (sh->ptr) {
        if (rebuild_arg(r, &ptr, &ptr_usable) < 0)
            return -EINVAL;
        q = mt_put_ptr(q, r->prev_ptr, ptr, version);
        r->prev_ptr = ptr;
    }
    if (!(q = rebuild_nums(r, sh, num, q)))
        return -EINVAL;
    const int has_result = sh->block && !(b0 & MT_RF_NULL);
    uint64_t result = 0, requested = 0;
    int64_t slack = 0;
    if (has_result) {
        requested = shape_requested(sh, num);
        if (rebuild_result(r, sh, ptr, requested, &slack, &result) < 0)
            return -EINVAL;
        q = mt_put_ptr(q, r->prev_ptr, result, version);
        r->prev_ptr = result;
        q = mt_put_svarint(q, slack);
    } else if (op == MT_OP_POSIX_MEMALIGN) {
        if (rb_get(r, S_MISC, &v) < 0)
            return -EINVAL;
        q = mt_put_uvarint(q, v);
    }
    if (ext & MT_XF_STACK) {
        if (rb_get(r, S_STACK, &v) < 0)
            return -EINVAL;
        q = mt_put_uvarint(q, v);
    }
    model_note(&r->m->st, op, ptr, ptr_usable, has_result, result, requested, slack);
    const size_t rl = (size_t)(q - rec);
    if (rl > cap - *pos)
        return rb_fail(r->why, "the records decoded exceed a chunk");
    memcpy(dst + *pos, rec, rl);
    *pos += rl;
    return 0;
}

/* Fails the rebuild where the records left bytes of a stream unused. */
static int check_streams_used(mt_pack_model_t *m, const rstream_t *s, const char **why)
{
    for (unsigned i = 0; i < S_COUNT; i++) {
        if (s[i].p != s[i].end) {
            snprintf(m->msg, sizeof m->msg, "the %s stream holds %zu bytes more than the records use", stream_names[i],
                     (size_t)(s[i].end - s[i].p));
            *why = m->msg;
            return -EINVAL;
        }
    }
    return 0;
}

/* Rebuilds the records from the decoded streams into dst. Returns 0 and the length in *n, or
 * -EINVAL with *why. Every read is bounded by its stream, every write by cap. */
static int rebuild(mt_pack_model_t *m, rstream_t *s, uint8_t *dst, size_t cap, size_t *n, const char **why)
{
    rebuild_t r = { .m = m, .s = s, .prev_ptr = 0, .why = why };
    size_t pos = 0;
    model_reset(&m->st);
    while (s[S_OPS].p < s[S_OPS].end) {
        const uint8_t b0 = *s[S_OPS].p++;
        const unsigned op = b0 & MT_RF_OPMASK;
        int rc;
        if (is_event(m->version, b0))
            rc = rebuild_event(&r, b0, dst, cap, &pos);
        else if (op == 0 || op > mt_last_call(m->version))
            rc = rb_fail(why, "expected a record's first byte in the ops stream, found an undefined opcode or an "
                              "event with flags");
        else
            rc = rebuild_call(&r, b0, dst, cap, &pos);
        if (rc < 0)
            return rc;
    }
    if (check_streams_used(m, s, why) < 0)
        return -EINVAL;
    *n = pos;
    return 0;
}

mt_pack_model_t *mt_pack_model_new(unsigned trace_version)
{
    mt_pack_model_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->version = trace_version;
    m->scratch = malloc((size_t)S_COUNT * MT_PACK_MODEL_STREAM_MAX);
    if (!m->scratch) {
        free(m);
        return NULL;
    }
    return m;
}

void mt_pack_model_free(mt_pack_model_t *m)
{
    if (!m)
        return;
    for (unsigned i = 0; i < S_COUNT; i++)
        free(m->w[i].p);
    free(m->scratch);
    ZSTD_freeCCtx(m->cctx);
    ZSTD_freeDCtx(m->dctx);
    free(m);
}

int mt_pack_model_decode(mt_pack_model_t *m, const uint8_t *src, size_t len, uint8_t *dst, size_t cap, size_t *n,
                         size_t *at, const char **why)
{
    char *const msg = m->msg;
    const size_t msg_size = sizeof m->msg;
    if (!m->dctx && !(m->dctx = ZSTD_createDCtx()))
        return -ENOMEM;
    rstream_t s[S_COUNT];
    const uint8_t *p = src, *end = src + len;
    for (unsigned i = 0; i < S_COUNT; i++) {
        *at = (size_t)(p - src);
        uint64_t dlen, coded = 0;
        if (mt_get_uvarint(&p, end, &dlen) < 0 || (dlen && mt_get_uvarint(&p, end, &coded) < 0)) {
            snprintf(msg, msg_size, "expected the %s stream's lengths, found a bad varint or the end", stream_names[i]);
            *why = msg;
            return -EINVAL;
        }
        const uint64_t clen = coded >> 1;
        if (dlen > MT_PACK_MODEL_STREAM_MAX || clen > (uint64_t)(end - p) || (!(coded & 1) && clen != dlen)) {
            snprintf(msg, msg_size, "the %s stream's lengths (%llu decoded, %llu stored) are out of range",
                     stream_names[i], (unsigned long long)dlen, (unsigned long long)clen);
            *why = msg;
            return -EINVAL;
        }
        if (coded & 1) {
            uint8_t *buf = m->scratch + (size_t)i * MT_PACK_MODEL_STREAM_MAX;
            const size_t got = ZSTD_decompressDCtx(m->dctx, buf, MT_PACK_MODEL_STREAM_MAX, p, clen);
            if (ZSTD_isError(got) || got != dlen) {
                snprintf(msg, msg_size, "the %s stream: expected a zstd frame of %llu bytes%s%s", stream_names[i],
                         (unsigned long long)dlen, ZSTD_isError(got) ? ": " : "",
                         ZSTD_isError(got) ? ZSTD_getErrorName(got) : ", found another length");
                *why = msg;
                return -EINVAL;
            }
            s[i].p = buf;
        } else {
            s[i].p = p;
        }
        s[i].end = s[i].p + dlen;
        p += clen;
    }
    *at = (size_t)(p - src);
    if (p != end) {
        *why = "bytes follow the last stream";
        return -EINVAL;
    }
    *at = 0;
    return rebuild(m, s, dst, cap, n, why);
}

/* ---- encoding ------------------------------------------------------------------------------- */

static uint32_t addr_hash(uint64_t a)
{
    return (uint32_t)(((a >> 4) * 0x9e3779b97f4a7c15ull) >> 48);
}

static void map_put(addr_map_t *map, uint64_t addr, uint32_t index)
{
    for (uint32_t h = addr_hash(addr);; h = (h + 1) & (HASH_SLOTS - 1)) {
        addr_slot_t *s = &map->slot[h];
        if (s->gen != map->gen || s->addr == addr) {
            *s = (addr_slot_t){ .addr = addr, .index = index, .gen = map->gen };
            return;
        }
    }
}

/* The latest index of addr in its table, or -1. */
static long map_get(const addr_map_t *map, uint64_t addr)
{
    for (uint32_t h = addr_hash(addr);; h = (h + 1) & (HASH_SLOTS - 1)) {
        const addr_slot_t *s = &map->slot[h];
        if (s->gen != map->gen)
            return -1;
        if (s->addr == addr)
            return s->index;
    }
}

static void map_clear(addr_map_t *map)
{
    if (++map->gen == 0) { /* wrapped: stale slots could look current */
        memset(map->slot, 0, sizeof map->slot);
        map->gen = 1;
    }
}

static void ws_u(wstream_t *w, uint64_t v)
{
    if (w->n + 10 > MT_PACK_MODEL_STREAM_MAX) {
        w->full = 1;
        return;
    }
    w->n = (size_t)(mt_put_uvarint(w->p + w->n, v) - w->p);
}

static void ws_byte(wstream_t *w, uint8_t b)
{
    if (w->n + 1 > MT_PACK_MODEL_STREAM_MAX) {
        w->full = 1;
        return;
    }
    w->p[w->n++] = b;
}

/* A varint's first byte to lo, the others to hi: the low 7 bits of a size are near random, its
 * high bits are not, and zstd codes bytes of one stream with one table. */
static void ws_split_u(wstream_t *lo, wstream_t *hi, uint64_t v)
{
    ws_byte(lo, (uint8_t)(v | (v >= 0x80 ? 0x80 : 0)));
    if (v >= 0x80)
        ws_u(hi, v >> 7);
}

/* Reads a pointer field at *pp after *prev (mt_put_ptr's syntax) into *prev. */
static int get_ptr(const uint8_t **pp, const uint8_t *end, uint64_t *prev, unsigned version)
{
    uint64_t u;
    if (mt_get_uvarint(pp, end, &u) < 0)
        return -1;
    if (version < 2) {
        *prev += (uint64_t)mt_unzigzag(u);
        return 0;
    }
    *prev = mt_ptr_v2(*prev, u);
    if (u & 1) {
        if (*pp >= end || !mt_ptr_low_ok(**pp))
            return -1;
        *prev |= *(*pp)++;
    }
    return 0;
}

/* The encoder's place in a chunk's records: the next byte, the end, the last pointer field read. */
typedef struct split_state {
    mt_pack_model_t *m;
    const uint8_t *p, *end;
    uint64_t prev_ptr;
} split_t;

/* Reads a varint of the records into *v. Returns -1 at a bad one. */
static inline int sp_get(split_t *sp, uint64_t *v)
{
    return mt_get_uvarint(&sp->p, sp->end, v);
}

/* Splits an event record, its first byte read: time, payload length and payload. */
static inline int split_event(split_t *sp)
{
    wstream_t *w = sp->m->w, *pw = &w[S_PAYLOAD];
    uint64_t v, len;
    if (sp_get(sp, &v) < 0)
        return -1;
    ws_u(&w[S_TIME], v);
    if (sp_get(sp, &len) < 0 || len > (uint64_t)(sp->end - sp->p))
        return -1;
    ws_u(&w[S_MISC], len);
    if (len > MT_PACK_MODEL_STREAM_MAX - pw->n)
        return -1;
    memcpy(pw->p + pw->n, sp->p, len);
    pw->n += len;
    sp->p += len;
    return 0;
}

/* Codes a call's argument pointer: null, an allocation of the chunk, else a literal. Returns the
 * block's usable size where the chunk allocated it, else 0. */
static inline uint64_t split_arg(mt_pack_model_t *m, uint64_t ptr)
{
    model_t *st = &m->st;
    wstream_t *w = m->w;
    const long i = ptr ? map_get(&m->alloc_map, ptr) : -1;
    if (!ptr) {
        ws_u(&w[S_PCODE], PC_NULL);
    } else if (i >= 0) {
        ws_u(&w[S_PCODE], st->nallocs - (uint64_t)i + 1);
        return st->alloc_usable[i];
    } else {
        ws_u(&w[S_PCODE], PC_LITERAL);
        ws_u(&w[S_PLIT], mt_zigzag((int64_t)(ptr - st->prev_arg_literal)));
        st->prev_arg_literal = ptr;
    }
    return 0;
}

/* Reads a call's numbers into num and writes each to the stream its shape names. */
static inline int split_nums(split_t *sp, const call_shape_t *sh, uint64_t num[3])
{
    wstream_t *w = sp->m->w;
    for (unsigned k = 0; k < sh->nnum; k++) {
        if (sp_get(sp, &num[k]) < 0)
            return -1;
        if (sh->num[k] == S_SIZE)
            ws_split_u(&w[S_SIZE], &w[S_SIZE_HI], num[k]);
        else
            ws_u(&w[sh->num[k]], num[k]);
    }
    return 0;
}

/* The rank of free i among the latest frees of usable size `usable` (1: the latest), or 0 where it
 * is not one of them or lies more than MAX_CLASS_RANK back. */
static inline uint64_t class_rank(const model_t *st, long i, uint64_t usable)
{
    if (!usable || st->free_usable[i] != usable)
        return 0;
    uint32_t f = class_latest(st, usable);
    uint64_t k;
    for (k = 1; f && f - 1 != (uint32_t)i && k <= MAX_CLASS_RANK; k++)
        f = st->free_prev[f - 1];
    return !f || k > MAX_CLASS_RANK ? 0 : k;
}

/* Codes a block call's slack and its result pointer: the call's argument ptr, a free of the chunk,
 * else a literal. */
static inline void split_result(mt_pack_model_t *m, const call_shape_t *sh, uint64_t ptr, uint64_t result,
                                uint64_t requested, int64_t slack)
{
    model_t *st = &m->st;
    wstream_t *w = m->w;
    ws_u(&w[S_SLACK], mt_zigzag((int64_t)((uint64_t)slack - (uint64_t)slack_predict(st, requested))));
    const long i = map_get(&m->free_map, result);
    if (sh->ptr && result == ptr) {
        ws_u(&w[S_RCODE], PC_ARG);
    } else if (i >= 0) {
        /* By rank among the frees of its usable size when it is one of those, near the end: an
         * allocator reuses the latest free of a size class first. */
        const uint64_t k = class_rank(st, i, requested + (uint64_t)slack);
        ws_u(&w[S_RCODE], k ? 2 * k : 2 * (st->nfrees - (uint64_t)i) + 1);
    } else {
        ws_u(&w[S_RCODE], PC_LITERAL);
        ws_u(&w[S_RLIT], mt_zigzag((int64_t)(result - st->next_result)));
        st->next_result = result + requested + (uint64_t)slack;
    }
}

/* Splits a call record, b0 its first byte (read), into the streams, and notes the call in the
 * model and the address maps. */
static inline int split_call(split_t *sp, uint8_t b0)
{
    mt_pack_model_t *m = sp->m;
    wstream_t *w = m->w;
    const unsigned op = b0 & MT_RF_OPMASK;
    const call_shape_t *sh = &shapes[op];
    uint8_t ext = 0;
    if (b0 & MT_RF_EXT) {
        if (sp->p >= sp->end)
            return -1;
        ext = *sp->p++;
        ws_byte(&w[S_EXT], ext);
    }
    uint64_t v, ptr = 0, ptr_usable = 0, num[3] = { 0, 0, 0 };
    if (sp_get(sp, &v) < 0)
        return -1;
    ws_u(&w[S_TIME], v);
    if (sh->ptr) {
        if (get_ptr(&sp->p, sp->end, &sp->prev_ptr, m->version) < 0)
            return -1;
        ptr = sp->prev_ptr;
        ptr_usable = split_arg(m, ptr);
    }
    if (split_nums(sp, sh, num) < 0)
        return -1;
    const int has_result = sh->block && !(b0 & MT_RF_NULL);
    uint64_t result = 0, requested = 0;
    int64_t slack = 0;
    if (has_result) {
        requested = shape_requested(sh, num);
        if (get_ptr(&sp->p, sp->end, &sp->prev_ptr, m->version) < 0 || sp_get(sp, &v) < 0)
            return -1;
        result = sp->prev_ptr;
        slack = mt_unzigzag(v);
        split_result(m, sh, ptr, result, requested, slack);
    } else if (op == MT_OP_POSIX_MEMALIGN) {
        if (sp_get(sp, &v) < 0)
            return -1;
        ws_u(&w[S_MISC], v);
    }
    if (ext & MT_XF_STACK) {
        if (sp_get(sp, &v) < 0)
            return -1;
        ws_u(&w[S_STACK], v);
    }
    const uint32_t na = m->st.nallocs, nf = m->st.nfrees;
    model_note(&m->st, op, ptr, ptr_usable, has_result, result, requested, slack);
    if (m->st.nfrees != nf)
        map_put(&m->free_map, ptr, nf);
    if (m->st.nallocs != na)
        map_put(&m->alloc_map, result, na);
    return 0;
}

/* Splits the records into the streams. Returns 0, or -1 where the bytes are not records the model
 * knows (it then need not be exact: the check after encoding catches any difference). */
static int split(mt_pack_model_t *m, const uint8_t *rec, size_t n)
{
    split_t sp = { .m = m, .p = rec, .end = rec + n, .prev_ptr = 0 };
    wstream_t *w = m->w;
    model_reset(&m->st);
    map_clear(&m->alloc_map);
    map_clear(&m->free_map);
    for (unsigned i = 0; i < S_COUNT; i++)
        w[i].n = 0, w[i].full = 0;
    while (sp.p < sp.end) {
        const uint8_t b0 = *sp.p++;
        const unsigned op = b0 & MT_RF_OPMASK;
        ws_byte(&w[S_OPS], b0);
        if (is_event(m->version, b0)) {
            if (split_event(&sp) < 0)
                return -1;
        } else if (op == 0 || op > mt_last_call(m->version) || split_call(&sp, b0) < 0) {
            return -1;
        }
    }
    for (unsigned i = 0; i < S_COUNT; i++)
        if (w[i].full)
            return -1;
    return 0;
}

long mt_pack_model_encode(mt_pack_model_t *m, const uint8_t *rec, size_t n, int level, uint8_t *out, size_t cap)
{
    for (unsigned i = 0; i < S_COUNT; i++)
        if (!m->w[i].p && !(m->w[i].p = malloc(MT_PACK_MODEL_STREAM_MAX)))
            return -ENOMEM;
    if (!m->cctx) {
        if (!(m->cctx = ZSTD_createCCtx()))
            return -ENOMEM;
        /* Each compressed stream carries a checksum of its content, as plain frames do. */
        ZSTD_CCtx_setParameter(m->cctx, ZSTD_c_checksumFlag, 1);
    }
    ZSTD_CCtx_setParameter(m->cctx, ZSTD_c_compressionLevel, level);
    if (n > MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE || split(m, rec, n) < 0)
        return 0;
    /* The check: the streams must give back these very bytes. */
    rstream_t s[S_COUNT];
    for (unsigned i = 0; i < S_COUNT; i++)
        s[i] = (rstream_t){ m->w[i].p, m->w[i].p + m->w[i].n };
    size_t got;
    const char *why;
    if (rebuild(m, s, m->scratch, MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE, &got, &why) < 0 || got != n ||
        memcmp(m->scratch, rec, n) != 0)
        return 0;
    size_t pos = 0;
    for (unsigned i = 0; i < S_COUNT; i++) {
        const wstream_t *w = &m->w[i];
        uint8_t head[20];
        uint8_t *q = mt_put_uvarint(head, w->n);
        if (!w->n) {
            if (cap - pos < 1)
                return 0;
            out[pos++] = head[0];
            continue;
        }
        /* Compressed into the scratch, kept only when smaller than the stream itself. */
        const size_t z = ZSTD_compress2(m->cctx, m->scratch, (size_t)S_COUNT * MT_PACK_MODEL_STREAM_MAX, w->p, w->n);
        if (ZSTD_isError(z))
            return -EIO;
        const int zipped = z < w->n;
        const size_t clen = zipped ? z : w->n;
        q = mt_put_uvarint(q, ((uint64_t)clen << 1) | (unsigned)zipped);
        const size_t hl = (size_t)(q - head);
        if (hl + clen > cap - pos)
            return 0;
        memcpy(out + pos, head, hl);
        memcpy(out + pos + hl, zipped ? m->scratch : w->p, clen);
        pos += hl + clen;
    }
    return (long)pos;
}
