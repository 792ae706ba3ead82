/* mtrace workload writer and reader: the one implementation of the workload format
 * (include/mtrace/workload_format.h, doc/workload-format.md). */
#ifndef MTRACE_WORKLOAD_H
#define MTRACE_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mtrace/trace_reader.h"
#include "mtrace/workload_format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One op, decoded. Fields by op (see workload_format.h):
 *   alloc ops      slot (0: the call returned NULL), size, count (calloc, reallocarray), align
 *   realloc ops    slot = old slot, slot2 = new slot, old_size (if slot != 0)
 *   free           slot, old_size (if slot != 0)
 *   usable         slot
 *   mallopt        a = param, b = value
 *   wait           thread, count
 *   rss            rss_kb, vm_kb
 *   mark           data, len
 *   mmap           slot, size
 *   munmap         slot, n = offset, size, a = 1 for the last part
 *   madvise        slot, n = offset, size, a = advice, count = pages to write before advising */
typedef struct mt_wl_rec {
    uint8_t op;
    uint64_t time_ns; /* since the start of the trace */
    uint64_t slot, slot2;
    uint64_t size, count, align; /* mmap, munmap: size is the length in bytes */
    uint64_t old_size;           /* requested bytes of the block in `slot` that free or realloc names */
    int64_t a, b;
    uint32_t thread;
    uint64_t n; /* wait: the count; munmap: the offset in the mapping (and a: 1 when it is the last part) */
    uint64_t rss_kb, vm_kb;
    const uint8_t *data;
    uint32_t len;
} mt_wl_rec_t;

const char *mt_wl_op_name(unsigned op);

/* ---- writer ---- */
typedef struct mt_wl_writer mt_wl_writer_t;

/* Writes to PATH.partial.XXXXXX and renames to PATH on a successful close, so a failed conversion
 * leaves nothing behind. `strings` is a TLV list as in the trace header (may be NULL). */
int mt_wl_writer_open(mt_wl_writer_t **w, const char *path, const mt_wl_header_t *tmpl, const uint8_t *strings,
                      size_t strings_len, mt_error_t *err);
/* Adds a thread stream; returns its index. It holds no buffer before its first op. */
int mt_wl_writer_add_thread(mt_wl_writer_t *w, uint32_t thread_no, uint32_t tid, uint32_t creator_index_plus1);
/* Thread's stream is complete: no op may follow. Its last frame is compressed now and held (in
 * memory, past 1 MiB in a nameless file beside the output) until close places it where every
 * stream's last frame goes, so the file is the same bytes; its buffer goes. A program that ran
 * thousands of threads one after another then costs the buffers of those running at once. 0, or
 * negative with the message in err. */
int mt_wl_writer_end_thread(mt_wl_writer_t *w, uint32_t thread, mt_error_t *err);
/* Sets a thread's creator (its index + 1; 0: none). */
void mt_wl_writer_set_creator(mt_wl_writer_t *w, uint32_t thread, uint32_t creator_index_plus1);
/* Appends an op to a thread's stream (inline, below). */
static inline int mt_wl_writer_put(mt_wl_writer_t *w, uint32_t thread, const mt_wl_rec_t *r, mt_error_t *err);
/* Ops written so far to a thread's stream (the next op's sequence number). */
static inline uint64_t mt_wl_writer_thread_ops(const mt_wl_writer_t *w, uint32_t thread);
/* The touch table close writes (sorted by thread, then op; kept by the caller until close). */
void mt_wl_writer_set_touch(mt_wl_writer_t *w, const mt_wl_touch_entry_t *entries, uint64_t n);
/* Finishes (counts from `final`: slots, waits, peak, repairs) and renames into place. */
int mt_wl_writer_close(mt_wl_writer_t *w, const mt_wl_header_t *final, mt_error_t *err);
/* Abandons the output: nothing is left behind. */
void mt_wl_writer_abort(mt_wl_writer_t *w);

/* ---- writer internals: the inline put ----
 * The converter writes an op for nearly every trace record, and encoding them cost about 15 % of
 * its time (bench/RESULTS.md, "Converter"), partly in a call into workload_writer.c per op that the
 * compiler cannot inline across translation units. So the per-op path lives here: it appends the
 * op to the thread's frame buffer and calls out only when the frame is full. The structures below
 * are the writer's own; nothing but workload_writer.c and these functions may touch them. */

/* A thread's stream while it is written. */
typedef struct mt_wl_writer_stream {
    uint8_t *pos;               /* where the next op goes in buf */
    uint8_t *cut;               /* buf + cap - MT_WL_STREAM_SLACK: past it, buf grows or its frame is written */
    uint64_t prev_ns;           /* time of the previous op: the base of the next op's delta */
    mt_wl_thread_entry_t entry; /* its index entry; end_ns is filled in from prev_ns at the end */
    uint8_t *buf;               /* the frame being built, made at the first op; NULL before and once ended */
    uint64_t first_op;          /* sequence number of the first op in buf */
    uint32_t cap;               /* bytes of buf: from MT_WL_STREAM_FIRST_SIZE up to MT_WL_STREAM_BUF_SIZE */
    uint32_t held_len;          /* ended: bytes of its last frame (header included) held until close */
    uint64_t held_at;           /* where they are among the held frames */
} mt_wl_writer_stream_t;

/* The first member of every mt_wl_writer_t (so a writer pointer points to it too). */
typedef struct mt_wl_writer_base {
    mt_wl_writer_stream_t *streams;
    uint64_t waits; /* WAIT ops in all streams */
} mt_wl_writer_base_t;

/* A frame buffer holds less than MT_WL_FRAME_RAW_MAX bytes before an op, plus that op (at most
 * MT_WL_MAX_OP_BYTES, or a mark's 268), plus the up to 3 bytes the varint encoder's word stores
 * write past the op's end: the slack after its cut. */
#define MT_WL_STREAM_SLACK (MT_WL_MAX_OP_BYTES + 300)
#define MT_WL_STREAM_BUF_SIZE (MT_WL_FRAME_RAW_MAX + MT_WL_STREAM_SLACK)
/* A stream's buffer starts this small and grows fourfold up to MT_WL_STREAM_BUF_SIZE: a thread of a
 * hundred calls writes about 1 KiB of ops, and a buffer of a whole frame for each of 2000 such
 * threads was 126 MiB. */
#define MT_WL_STREAM_FIRST_SIZE 4096u

/* Makes room in thread's buffer once pos reaches cut (out of line, for the inline put): the
 * stream's buffer after its first op, which went to the writer's scratch (pos and cut point there
 * before it, so that the put's path has no test of its own for it); then one four times larger while
 * it is smaller than a frame's, else the frame written out (once per 64 KiB of ops). */
int mt_wl_writer_room_(mt_wl_writer_t *w, uint32_t thread, mt_error_t *err);

static inline mt_wl_writer_base_t *mt_wl_writer_base_(mt_wl_writer_t *w)
{
    return (mt_wl_writer_base_t *)(void *)w;
}

/* A uvarint, the same bytes as mt_put_uvarint. The byte loop's exit branch follows each value's
 * length, which is random for sizes, slots and time deltas (1-3 bytes each): it mispredicts about
 * once per op. So values below 2^14 (most slots and time deltas, many sizes) are built without a
 * branch on their length and stored as one 2-byte word, values below 2^28 as one 4-byte word;
 * the pointer advances by 1 plus one compare per extra byte. The bytes past the value's end are
 * overwritten by what follows, or lie in the frame buffer's slack (MT_WL_STREAM_BUF_SIZE). Measured
 * on a 20 M op trace (encoding only): 2-byte path 0.92 s, 4-byte path alone 0.99 s, loop 1.10 s;
 * a 1-byte path in front made it slower again (one more mispredicted branch). */
static inline uint8_t *mt_wl_put_uvarint_(uint8_t *q, uint64_t v)
{
    if (v < (1u << 14)) {
        const uint32_t more = v >= (1u << 7);
        const uint8_t b[2] = { (uint8_t)(v | more << 7), (uint8_t)(v >> 7) };
        memcpy(q, b, sizeof b); /* one store */
        return q + 1 + more;
    }
    if (v < (1u << 28)) {
        const uint32_t more2 = v >= (1u << 21);
        const uint8_t b[4] = { (uint8_t)(v | 0x80), (uint8_t)(v >> 7 | 0x80), (uint8_t)(v >> 14 | more2 << 7),
                               (uint8_t)(v >> 21) };
        memcpy(q, b, sizeof b);
        return q + 3 + more2;
    }
    return mt_put_uvarint(q, v);
}

static inline uint8_t *mt_wl_encode_op_(uint8_t *q, const mt_wl_rec_t *r, uint64_t prev_ns, uint64_t *waits)
{
    *q++ = r->op;
    q = mt_wl_put_uvarint_(q, r->time_ns >= prev_ns ? r->time_ns - prev_ns : 0);
    switch (r->op) {
    case MT_WL_MALLOC:
    case MT_WL_VALLOC:
    case MT_WL_PVALLOC:
        q = mt_wl_put_uvarint_(q, r->slot);
        q = mt_wl_put_uvarint_(q, r->size);
        break;
    case MT_WL_CALLOC:
        q = mt_wl_put_uvarint_(q, r->slot);
        q = mt_wl_put_uvarint_(q, r->count);
        q = mt_wl_put_uvarint_(q, r->size);
        break;
    case MT_WL_REALLOC:
        q = mt_wl_put_uvarint_(q, r->slot);
        q = mt_wl_put_uvarint_(q, r->slot2);
        q = mt_wl_put_uvarint_(q, r->size);
        if (r->slot)
            q = mt_wl_put_uvarint_(q, r->old_size);
        break;
    case MT_WL_REALLOCARRAY:
        q = mt_wl_put_uvarint_(q, r->slot);
        q = mt_wl_put_uvarint_(q, r->slot2);
        q = mt_wl_put_uvarint_(q, r->count);
        q = mt_wl_put_uvarint_(q, r->size);
        if (r->slot)
            q = mt_wl_put_uvarint_(q, r->old_size);
        break;
    case MT_WL_MEMALIGN:
    case MT_WL_POSIX_MEMALIGN:
    case MT_WL_ALIGNED_ALLOC:
        q = mt_wl_put_uvarint_(q, r->slot);
        q = mt_wl_put_uvarint_(q, r->align);
        q = mt_wl_put_uvarint_(q, r->size);
        break;
    case MT_WL_FREE:
        q = mt_wl_put_uvarint_(q, r->slot);
        if (r->slot)
            q = mt_wl_put_uvarint_(q, r->old_size);
        break;
    case MT_WL_USABLE_SIZE:
        q = mt_wl_put_uvarint_(q, r->slot);
        break;
    case MT_WL_MALLOPT:
        q = mt_put_svarint(q, r->a);
        q = mt_put_svarint(q, r->b);
        break;
    case MT_WL_MALLOC_TRIM:
        q = mt_wl_put_uvarint_(q, r->size);
        break;
    case MT_WL_WAIT:
        q = mt_wl_put_uvarint_(q, r->thread);
        q = mt_wl_put_uvarint_(q, r->n);
        ++*waits;
        break;
    case MT_WL_MMAP:
        q = mt_wl_put_uvarint_(q, r->slot);
        q = mt_wl_put_uvarint_(q, r->size);
        break;
    case MT_WL_MUNMAP:
        q = mt_wl_put_uvarint_(q, r->slot);
        q = mt_wl_put_uvarint_(q, r->n);
        q = mt_wl_put_uvarint_(q, r->size);
        *q++ = r->a ? 1 : 0;
        break;
    case MT_WL_MADVISE:
        q = mt_wl_put_uvarint_(q, r->slot);
        q = mt_wl_put_uvarint_(q, r->n);
        q = mt_wl_put_uvarint_(q, r->size);
        q = mt_wl_put_uvarint_(q, (uint64_t)r->a);
        q = mt_wl_put_uvarint_(q, r->count);
        break;
    case MT_WL_RSS:
        q = mt_wl_put_uvarint_(q, r->rss_kb);
        q = mt_wl_put_uvarint_(q, r->vm_kb);
        break;
    case MT_WL_MARK: {
        const uint32_t len = r->len > 255 ? 255 : r->len;
        q = mt_wl_put_uvarint_(q, len);
        memcpy(q, r->data, len);
        q += len;
        break;
    }
    default:
        break;
    }
    return q;
}

static inline int mt_wl_writer_put(mt_wl_writer_t *w, uint32_t thread, const mt_wl_rec_t *r, mt_error_t *err)
{
    mt_wl_writer_base_t *b = mt_wl_writer_base_(w);
    mt_wl_writer_stream_t *s = &b->streams[thread];
    if (!s->entry.ops) /* the first op is timed from start_ns */
        s->entry.start_ns = s->prev_ns = r->time_ns;
    s->pos = mt_wl_encode_op_(s->pos, r, s->prev_ns, &b->waits);
    if (r->time_ns > s->prev_ns)
        s->prev_ns = r->time_ns;
    s->entry.ops++;
    if (s->pos >= s->cut)
        return mt_wl_writer_room_(w, thread, err);
    return 0;
}

static inline uint64_t mt_wl_writer_thread_ops(const mt_wl_writer_t *w, uint32_t thread)
{
    return ((const mt_wl_writer_base_t *)(const void *)w)->streams[thread].entry.ops;
}

/* ---- reader ---- */
typedef struct mt_wl mt_wl_t;

int mt_wl_open(mt_wl_t **out, const char *path, mt_error_t *err);
/* Reads the touch table (header touch_entries entries) into buf and checks it: 0 or negative. */
int mt_wl_read_touch(const mt_wl_t *w, mt_wl_touch_entry_t *buf, mt_error_t *err);
void mt_wl_close(mt_wl_t *w);
const char *mt_wl_path(const mt_wl_t *w);
const mt_wl_header_t *mt_wl_header(const mt_wl_t *w);
const char *mt_wl_string(const mt_wl_t *w, unsigned tag, unsigned n, size_t *len);
uint64_t mt_wl_file_size(const mt_wl_t *w);
size_t mt_wl_thread_count(const mt_wl_t *w);
const mt_wl_thread_entry_t *mt_wl_thread(const mt_wl_t *w, size_t i);

/* A cursor over one thread's ops; each cursor has its own buffers, so threads may read in parallel.
 * Its fields are the reader's: use the functions. */
typedef struct mt_wl_cursor {
    const mt_wl_t *w;
    uint32_t thread;
    uint32_t next_frame;
    uint8_t *raw, *z; /* MT_WL_STREAM_BUF_SIZE bytes; ZSTD_compressBound() of that */
    void *dctx;       /* a ZSTD_DCtx */
    const uint8_t *p, *end, *op_at;
    uint64_t frame_off;
    uint64_t prev_ns;
    uint32_t left;     /* ops left in the loaded frame */
    uint64_t first_op; /* the next frame's first op: the ops of the frames before it */
    int own_buffers;   /* made by mt_wl_cursor_open, freed by mt_wl_cursor_close */
} mt_wl_cursor_t;

/* A cursor with buffers of its own, from malloc. */
int mt_wl_cursor_open(mt_wl_cursor_t **c, const mt_wl_t *w, uint32_t thread);
/* A cursor in the caller's memory with the caller's buffers (a replayer keeps them out of the
 * allocator it measures, and reuses them from thread to thread): raw of MT_WL_STREAM_BUF_SIZE bytes,
 * z of ZSTD_compressBound(MT_WL_STREAM_BUF_SIZE), dctx a ZSTD_DCtx. Nothing to close. */
void mt_wl_cursor_init(mt_wl_cursor_t *c, const mt_wl_t *w, uint32_t thread, uint8_t *raw, uint8_t *z, void *dctx);
/* 1: an op; 0: the stream ended; negative: damage (message in err, with the file and offset). */
int mt_wl_cursor_next(mt_wl_cursor_t *c, mt_wl_rec_t *r, mt_error_t *err);
/* Where the op last returned lies, for messages about it: its frame's file offset, and its byte in
 * the frame's data. */
static inline uint64_t mt_wl_cursor_frame_offset(const mt_wl_cursor_t *c)
{
    return c->frame_off;
}
static inline size_t mt_wl_cursor_op_byte(const mt_wl_cursor_t *c)
{
    return (size_t)(c->op_at - c->raw);
}
void mt_wl_cursor_close(mt_wl_cursor_t *c);

/* Where a thread's frames are in the file (for tools that read frames themselves: the fuzzers). */
uint32_t mt_wl_thread_frame_count(const mt_wl_t *w, uint32_t thread);
const mt_wl_frame_entry_t *mt_wl_thread_frame(const mt_wl_t *w, uint32_t thread, uint32_t k);
int mt_wl_fd(const mt_wl_t *w);

/* The decoder of one op: reads one op at *pp (time relative to *prev_ns, which it updates) and
 * returns 0, or -1 if the bytes are damaged or cut. */
int mt_wl_decode_op(const uint8_t **pp, const uint8_t *end, mt_wl_rec_t *r, uint64_t *prev_ns);

/* Is this file a workload (by its magic)? 1 yes, 0 no, negative on I/O error. */
int mt_file_is_workload(const char *path);

#ifdef __cplusplus
}
#endif
#endif
