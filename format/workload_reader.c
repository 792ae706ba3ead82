/* The workload reader (include/mtrace/workload.h): the header, the index and the touch table
 * checked at open, and a cursor over a thread's stream that decompresses its frames and decodes its
 * ops. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "mtrace/file_io.h"
#include "mtrace/workload.h"

/* ---- op codec: the encoder is inline in mtrace/workload.h (mt_wl_encode_op_) ----------------- */

/* A varint with no bounds check: the caller knows MT_WL_OP_MAX_BYTES are left. At most 10 bytes,
 * as mt_get_uvarint(). */
static inline int get_uvarint_unchecked(const uint8_t **pp, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t b = *p++;
    if (b < 0x80) { /* most fields of most ops: slots of recent blocks, small sizes, ticks */
        *pp = p;
        *out = b;
        return 0;
    }
    uint64_t v = b & 0x7f;
    for (unsigned shift = 7; shift < 70; shift += 7) {
        b = *p++;
        v |= (b & 0x7f) << shift;
        if (b < 0x80) {
            *pp = p;
            *out = v;
            return 0;
        }
    }
    return -1;
}

/* memset(r, 0, sizeof *r) compiled to `rep stos`, whose start-up cost more than the rest of an
 * op's decoding; eight 16-byte stores do the same. */
typedef uint8_t rec_chunk_t __attribute__((vector_size(16), aligned(1), may_alias));
_Static_assert(sizeof(mt_wl_rec_t) == 8 * sizeof(rec_chunk_t), "mt_wl_rec_t is eight 16-byte chunks");
static inline void clear_rec(mt_wl_rec_t *r)
{
    rec_chunk_t *q = (rec_chunk_t *)(void *)r;
    const rec_chunk_t z = { 0 };
    /* one by one: gcc turns a loop back into the memset */
    q[0] = z, q[1] = z, q[2] = z, q[3] = z, q[4] = z, q[5] = z, q[6] = z, q[7] = z;
}

/* The most bytes an op other than a mark takes: its byte and up to six varints of 10 bytes. */
#define MT_WL_OP_MAX_BYTES (1 + 6 * 10)

/* The op being decoded and how to read it. The functions that take it are always inlined into
 * decode_op, itself compiled twice (checked and unchecked), so that it lives in registers and
 * `checked` is a constant: they cost no more instructions per op than the one function they
 * replace (bench/RESULTS.md). Each returns 0, or -1 for an op that is damaged or cut. */
typedef struct op_in {
    const uint8_t *p; /* the next byte */
    const uint8_t *end;
    int checked; /* see decode_op */
} op_in_t;

/* A uvarint field; -1 where it is longer than 10 bytes or runs past the data (then *out and in->p are
 * left as they were). */
static inline __attribute__((always_inline)) int get_field(op_in_t *in, uint64_t *out)
{
    const uint8_t *p = in->p;
    uint64_t v;
    if ((in->checked ? mt_get_uvarint(&p, in->end, &v) : get_uvarint_unchecked(&p, &v)) < 0)
        return -1;
    in->p = p;
    *out = v;
    return 0;
}

/* The fields of an op that calls an allocating function, in their order: the old slot and the
 * new (realloc, reallocarray), or the one slot (the others); the alignment (memalign,
 * posix_memalign, aligned_alloc); the count (calloc, reallocarray); the size (all of them). */
enum { WF_SLOT2 = 1, WF_ALIGN = 2, WF_COUNT = 4 };

/* An allocating op's `fields` (WF_*), then for a realloc of a block (old slot not 0) that block's
 * old size. */
static inline __attribute__((always_inline)) int decode_block_op(op_in_t *in, mt_wl_rec_t *r, const unsigned fields)
{
    if (get_field(in, &r->slot) < 0)
        return -1;
    if ((fields & WF_SLOT2) && get_field(in, &r->slot2) < 0)
        return -1;
    if ((fields & WF_ALIGN) && get_field(in, &r->align) < 0)
        return -1;
    if ((fields & WF_COUNT) && get_field(in, &r->count) < 0)
        return -1;
    if (get_field(in, &r->size) < 0)
        return -1;
    if ((fields & WF_SLOT2) && r->slot)
        return get_field(in, &r->old_size);
    return 0;
}

/* free (`has_old_size`): the slot, then the block's old size where the slot is not 0 (free(NULL));
 * malloc_usable_size: the slot. */
static inline __attribute__((always_inline)) int decode_free_op(op_in_t *in, mt_wl_rec_t *r, const int has_old_size)
{
    if (get_field(in, &r->slot) < 0)
        return -1;
    if (has_old_size && r->slot)
        return get_field(in, &r->old_size);
    return 0;
}

/* mallopt: param and value, zigzagged, in a and b. */
static inline __attribute__((always_inline)) int decode_mallopt(op_in_t *in, mt_wl_rec_t *r)
{
    uint64_t v;
    if (get_field(in, &v) < 0)
        return -1;
    r->a = mt_unzigzag(v);
    if (get_field(in, &v) < 0)
        return -1;
    r->b = mt_unzigzag(v);
    return 0;
}

/* wait: the thread awaited (below 2^32) and its op count. */
static inline __attribute__((always_inline)) int decode_wait(op_in_t *in, mt_wl_rec_t *r)
{
    uint64_t v;
    if (get_field(in, &v) < 0)
        return -1;
    if (v > UINT32_MAX)
        return -1;
    r->thread = (uint32_t)v;
    return get_field(in, &r->n);
}

/* rss: resident and virtual KiB. */
static inline __attribute__((always_inline)) int decode_rss(op_in_t *in, mt_wl_rec_t *r)
{
    if (get_field(in, &r->rss_kb) < 0)
        return -1;
    return get_field(in, &r->vm_kb);
}

/* mark: the label's length, then its bytes, which must end by the end of the data (checked or
 * unchecked). */
static inline __attribute__((always_inline)) int decode_mark(op_in_t *in, mt_wl_rec_t *r)
{
    uint64_t v;
    if (get_field(in, &v) < 0)
        return -1;
    if (v > (uint64_t)(in->end - in->p))
        return -1;
    r->data = in->p;
    r->len = (uint32_t)v;
    in->p += v;
    return 0;
}

/* An op on the program's own mappings (`op`, a constant). mmap: slot, size. munmap: slot, offset n,
 * size, and a: 1 where none of the mapping is left (else 0). madvise: slot, offset n, size, advice a
 * (at most 2^31 - 1), the pages in count. */
static inline __attribute__((always_inline)) int decode_mapping_op(op_in_t *in, mt_wl_rec_t *r, const unsigned op)
{
    uint64_t v;
    if (get_field(in, &r->slot) < 0)
        return -1;
    if (op == MT_WL_MMAP)
        return get_field(in, &r->size);
    if (get_field(in, &r->n) < 0 || get_field(in, &r->size) < 0 || get_field(in, &v) < 0)
        return -1;
    if (v > (op == MT_WL_MUNMAP ? 1 : INT32_MAX))
        return -1;
    r->a = (int64_t)v;
    return op == MT_WL_MADVISE ? get_field(in, &r->count) : 0;
}

/* The fields of an op that is not a call (r->op is op): thread_start and thread_exit have none. */
static inline __attribute__((always_inline)) int decode_other_op(op_in_t *in, mt_wl_rec_t *r, const unsigned op)
{
    switch (op) {
    case MT_WL_THREAD_START:
    case MT_WL_THREAD_EXIT:
        return 0;
    case MT_WL_WAIT:
        return decode_wait(in, r);
    case MT_WL_RSS:
        return decode_rss(in, r);
    case MT_WL_MARK:
        return decode_mark(in, r);
    case MT_WL_MMAP:
        return decode_mapping_op(in, r, MT_WL_MMAP);
    case MT_WL_MUNMAP:
        return decode_mapping_op(in, r, MT_WL_MUNMAP);
    case MT_WL_MADVISE:
        return decode_mapping_op(in, r, MT_WL_MADVISE);
    default:
        return -1; /* not an op */
    }
}

/* The fields of an op after its time (r->op is op): a call of the allocator's (ops 1 to
 * MT_WL_LAST_CALL), or another op. An op byte that is not an op falls to a switch's default: the
 * replay decodes every op, and a look-up in the name table first cost its loop 2-3 ns of about 15
 * per op. The calls are told from the others by one compare, where the switch over every op had
 * its range check: a switch of the calls whose default went on to the other ops kept the op byte
 * past its jump, an instruction more per op. */
static inline __attribute__((always_inline)) int decode_op_fields(op_in_t *in, mt_wl_rec_t *r, const unsigned op)
{
    if (op > MT_WL_LAST_CALL)
        return decode_other_op(in, r, op);
    switch (op) {
    case MT_WL_MALLOC:
    case MT_WL_VALLOC:
    case MT_WL_PVALLOC:
        return decode_block_op(in, r, 0);
    case MT_WL_CALLOC:
        return decode_block_op(in, r, WF_COUNT);
    case MT_WL_REALLOC:
        return decode_block_op(in, r, WF_SLOT2);
    case MT_WL_REALLOCARRAY:
        return decode_block_op(in, r, WF_SLOT2 | WF_COUNT);
    case MT_WL_MEMALIGN:
    case MT_WL_POSIX_MEMALIGN:
    case MT_WL_ALIGNED_ALLOC:
        return decode_block_op(in, r, WF_ALIGN);
    case MT_WL_FREE:
        return decode_free_op(in, r, 1);
    case MT_WL_USABLE_SIZE:
        return decode_free_op(in, r, 0);
    case MT_WL_MALLOPT:
        return decode_mallopt(in, r);
    case MT_WL_MALLOC_TRIM:
        return get_field(in, &r->size); /* the pad */
    default:
        return -1; /* not an op */
    }
}

/* One op's decoding, written once and compiled twice: `checked` tests every byte against `end`;
 * unchecked, the caller has made sure MT_WL_OP_MAX_BYTES are left (a mark's data is checked
 * either way). Per op in a replay the checks cost more than the decoding (callgrind: 102
 * instructions per op checked). 0, or -1 for an op that is damaged or cut. */
static inline __attribute__((always_inline)) int decode_op(const uint8_t **pp, const uint8_t *end, mt_wl_rec_t *r,
                                                           uint64_t *prev_ns, const int checked)
{
    op_in_t in = { .p = *pp, .end = end, .checked = checked };
    if (in.p >= end)
        return -1;
    clear_rec(r);
    const unsigned op = *in.p++;
    r->op = (uint8_t)op;
    uint64_t dt;
    if (get_field(&in, &dt) < 0)
        return -1;
    r->time_ns = *prev_ns + dt;
    if (decode_op_fields(&in, r, op) < 0)
        return -1;
    *prev_ns = r->time_ns;
    *pp = in.p;
    return 0;
}

/* Decodes one op at *pp; 0 on success, -1 if damaged or cut. */
int mt_wl_decode_op(const uint8_t **pp, const uint8_t *end, mt_wl_rec_t *r, uint64_t *prev_ns)
{
    if (end - *pp >= MT_WL_OP_MAX_BYTES)
        return decode_op(pp, end, r, prev_ns, 0);
    return decode_op(pp, end, r, prev_ns, 1);
}

/* ---- the file and its cursors ------------------------------------------------------------------ */

struct mt_wl {
    char *path;
    int fd;
    uint64_t size;
    mt_wl_header_t hdr;
    uint8_t *strings;
    size_t strings_len;
    mt_wl_thread_entry_t *threads;
    mt_wl_frame_entry_t *frames;
    uint64_t **thread_frames; /* per thread: indices into frames, in order */
};

int mt_file_is_workload(const char *path)
{
    struct stat st;
    const int fd = mt_open_input(path, &st, NULL);
    if (fd < 0)
        return fd;
    uint8_t m[8];
    const ssize_t n = pread(fd, m, sizeof m, 0);
    close(fd);
    return n == (ssize_t)sizeof m && !memcmp(m, MT_WL_MAGIC, 8);
}

/* Bytes of the index: its magic and thread count, the thread entries, the frame entries. */
static uint64_t index_bytes(const mt_wl_header_t *h)
{
    return 8 + (uint64_t)h->threads * sizeof(mt_wl_thread_entry_t) + h->frames * sizeof(mt_wl_frame_entry_t);
}

/* mt_wl_open's steps, each 0 or a negative errno with *err set. The header's fields, against each
 * other and the file's size. */
static int check_header(const mt_wl_t *w, const char *path, mt_error_t *err)
{
    const mt_wl_header_t *h = &w->hdr;
    if (h->version < MT_WL_VERSION_MIN || h->version > MT_WL_VERSION) {
        if (h->version == 1)
            return mt_errorf(
                err, -ENOTSUP, path, 8,
                "workload format version 1 (an older trace2wl; its frees lack the block size), this mtrace "
                "reads versions %u to %u: convert the trace again",
                MT_WL_VERSION_MIN, MT_WL_VERSION);
        else
            return mt_errorf(err, -ENOTSUP, path, 8, "workload format version %u, this mtrace reads versions %u to %u",
                             h->version, MT_WL_VERSION_MIN, MT_WL_VERSION);
    }
    if (!(h->flags & MT_WLH_COMPLETE) || h->index_offset == 0) {
        return mt_errorf(err, -EINVAL, path, 20, "the workload was not finished by its writer (no index)");
    }
    if (h->header_size < MT_WL_HEADER_STRINGS_OFFSET || h->header_size > w->size) {
        return mt_errorf(err, -EINVAL, path, 12, "expected a header size between 256 and the file size, found %u",
                         h->header_size);
    }
    /* Every slot is made by an op: a header that claims more slots than ops would make a replayer
     * size its slot table from a number nothing backs (and overflow it). */
    /* A frame holds at most MT_WL_FRAME_RAW_MAX bytes of ops (plus one op), an op at least 2 bytes. */
    if (h->ops > h->frames * (MT_WL_STREAM_BUF_SIZE / 2)) {
        return mt_errorf(err, -EINVAL, path, 32, "the header claims %llu ops in %llu frames; a frame holds at most %u",
                         (unsigned long long)h->ops, (unsigned long long)h->frames, MT_WL_STREAM_BUF_SIZE / 2);
    }
    if (h->slots > h->ops) {
        return mt_errorf(err, -EINVAL, path, 24,
                         "the header claims %llu slots for %llu ops; expected at most one per op",
                         (unsigned long long)h->slots, (unsigned long long)h->ops);
    }
    const uint64_t idx_need = index_bytes(h);
    if (h->threads > (1u << 24) || h->frames > (1ull << 40) || h->index_offset < h->header_size ||
        h->index_offset > w->size || w->size - h->index_offset < idx_need) {
        return mt_errorf(err, -EINVAL, path, h->index_offset,
                         "expected an index of %u threads and %llu frames, the file ends at %llu", h->threads,
                         (unsigned long long)h->frames, (unsigned long long)w->size);
    }
    return 0;
}

/* The header strings, the thread entries and the frame entries, read and checked. */
static int read_index(mt_wl_t *w, const char *path, mt_error_t *err)
{
    const mt_wl_header_t *h = &w->hdr;
    w->strings_len = h->header_size - MT_WL_HEADER_STRINGS_OFFSET;
    w->strings = calloc(1, w->strings_len + 4);
    w->threads = calloc(h->threads + 1, sizeof *w->threads);
    w->frames = calloc(h->frames + 1, sizeof *w->frames);
    w->thread_frames = calloc(h->threads + 1, sizeof *w->thread_frames);
    if (!w->strings || !w->threads || !w->frames || !w->thread_frames) {
        return mt_errorf(err, -ENOMEM, path, 0, "out of memory");
    }
    uint32_t ih[2];
    if (mt_pread_full(w->fd, w->strings, w->strings_len, MT_WL_HEADER_STRINGS_OFFSET) < 0 ||
        mt_pread_full(w->fd, ih, sizeof ih, h->index_offset) < 0 ||
        mt_pread_full(w->fd, w->threads, h->threads * sizeof *w->threads, h->index_offset + 8) < 0 ||
        mt_pread_full(w->fd, w->frames, h->frames * sizeof *w->frames,
                      h->index_offset + 8 + h->threads * sizeof *w->threads) < 0) {
        return mt_errorf(err, -EIO, path, h->index_offset, "cannot read the index");
    }
    if (ih[0] != MT_WL_INDEX_MAGIC || ih[1] != h->threads) {
        return mt_errorf(err, -EINVAL, path, h->index_offset, "expected the index magic \"MLIX\" and %u threads",
                         h->threads);
    }
    uint64_t listed = 0;
    for (uint32_t i = 0; i < h->threads; i++)
        listed += w->threads[i].frames;
    if (listed != h->frames) {
        return mt_errorf(err, -EINVAL, path, h->index_offset + 8,
                         "the thread entries list %llu frames, the header %llu", (unsigned long long)listed,
                         (unsigned long long)h->frames);
    }
    return 0;
}

/* Each thread's frames, in order, from the frame entries. */
static int list_thread_frames(mt_wl_t *w, const char *path, mt_error_t *err)
{
    const mt_wl_header_t *h = &w->hdr;
    for (uint32_t i = 0; i < h->threads; i++)
        if (!(w->thread_frames[i] = calloc(w->threads[i].frames + 1, sizeof(uint64_t)))) {
            return mt_errorf(err, -ENOMEM, path, 0, "out of memory");
        }
    uint32_t *fill = calloc(h->threads + 1, sizeof *fill);
    if (!fill) {
        return mt_errorf(err, -ENOMEM, path, 0, "out of memory");
    }
    int rc = 0;
    for (uint64_t f = 0; f < h->frames && rc == 0; f++) {
        const mt_wl_frame_entry_t *fe = &w->frames[f];
        if (fe->thread >= h->threads || fill[fe->thread] >= w->threads[fe->thread].frames ||
            fe->offset < h->header_size || fe->offset + sizeof(mt_wl_frame_header_t) > h->index_offset)
            rc = mt_errorf(err, -EINVAL, path, h->index_offset + 8 + h->threads * sizeof *w->threads + f * sizeof *fe,
                           "frame index entry %llu names thread %u at offset %llu: out of range", (unsigned long long)f,
                           fe->thread, (unsigned long long)fe->offset);
        else
            w->thread_frames[fe->thread][fill[fe->thread]++] = f;
    }
    for (uint32_t i = 0; i < h->threads && rc == 0; i++)
        if (fill[i] != w->threads[i].frames)
            rc = mt_errorf(err, -EINVAL, path, h->index_offset, "thread %u: index lists %u frames, expected %u", i,
                           fill[i], w->threads[i].frames);
    free(fill);
    return rc;
}

/* Where the header puts the touch table: after the index, within the file (mt_wl_read_touch reads
 * it). */
static int check_touch_table(const mt_wl_t *w, const char *path, mt_error_t *err)
{
    const mt_wl_header_t *h = &w->hdr;
    /* The touch table follows the index's frame entries, where version 2 has nothing (its fields
     * were reserved, so 0). */
    const uint64_t touch_at = h->index_offset + index_bytes(h);
    if (h->version < 3 && (h->touch_offset || h->touch_entries)) {
        return mt_errorf(err, -EINVAL, path, offsetof(mt_wl_header_t, touch_offset),
                         "a version 2 workload with a touch table: expected reserved bytes 0");
    }
    const uint64_t entry = h->version >= 6 ? sizeof(mt_wl_touch_entry_t) : MT_WL_TOUCH_ENTRY_V5;
    if (h->touch_entries && (h->touch_offset != touch_at || h->touch_entries > (w->size - touch_at) / entry)) {
        return mt_errorf(
            err, -EINVAL, path, offsetof(mt_wl_header_t, touch_offset),
            "expected a touch table of %llu entries at offset %llu, after the index; the file ends at %llu",
            (unsigned long long)h->touch_entries, (unsigned long long)touch_at, (unsigned long long)w->size);
    }
    if (!h->touch_entries && h->touch_offset) {
        return mt_errorf(err, -EINVAL, path, offsetof(mt_wl_header_t, touch_offset),
                         "a touch table offset without entries");
    }
    return 0;
}

int mt_wl_open(mt_wl_t **out, const char *path, mt_error_t *err)
{
    *out = NULL;
    mt_wl_t *w = calloc(1, sizeof *w);
    if (!w)
        return mt_errorf(err, -ENOMEM, path, 0, "out of memory");
    w->fd = -1;
    int rc;
    w->path = strdup(path);
    if (!w->path) {
        rc = mt_errorf(err, -ENOMEM, path, 0, "out of memory");
        goto fail;
    }
    struct stat st;
    w->fd = mt_open_input(path, &st, err);
    if (w->fd < 0) {
        rc = w->fd;
        goto fail;
    }
    w->size = (uint64_t)st.st_size;
    if (w->size < 8 || mt_pread_full(w->fd, &w->hdr, 8, 0) < 0 || memcmp(w->hdr.magic, MT_WL_MAGIC, 8)) {
        rc = mt_errorf(err, -EINVAL, path, 0,
                       "expected the mtrace workload magic 89 4d 54 57 0d 0a 1a 0a: not a workload");
        goto fail;
    }
    if (w->size < sizeof w->hdr || mt_pread_full(w->fd, &w->hdr, sizeof w->hdr, 0) < 0) {
        rc =
            mt_errorf(err, -EINVAL, path, w->size, "expected a %zu-byte workload header, the file ends", sizeof w->hdr);
        goto fail;
    }
    if ((rc = check_header(w, path, err)) < 0 || (rc = read_index(w, path, err)) < 0 ||
        (rc = list_thread_frames(w, path, err)) < 0 || (rc = check_touch_table(w, path, err)) < 0)
        goto fail;
    *out = w;
    return 0;
fail:
    mt_wl_close(w);
    return rc;
}

/* Versions 3 to 5 store 16-byte entries (op, thread, frac): read into the start of buf, each is
 * widened in place, the last first, so that no entry is overwritten before it is read. */
static void widen_v5_entries(mt_wl_touch_entry_t *buf, uint64_t n)
{
    for (uint64_t k = n; k-- > 0;) {
        struct {
            uint64_t op;
            uint32_t thread, frac;
        } old;
        memcpy(&old, (const uint8_t *)buf + k * MT_WL_TOUCH_ENTRY_V5, sizeof old);
        buf[k] = (mt_wl_touch_entry_t){ .op = old.op, .thread = old.thread, .frac = old.frac };
    }
}

int mt_wl_read_touch(const mt_wl_t *w, mt_wl_touch_entry_t *buf, mt_error_t *err)
{
    const mt_wl_header_t *h = &w->hdr;
    if (!h->touch_entries)
        return 0;
    const uint64_t entry = h->version >= 6 ? sizeof *buf : MT_WL_TOUCH_ENTRY_V5;
    if (mt_pread_full(w->fd, buf, h->touch_entries * entry, h->touch_offset) < 0)
        return mt_errorf(err, -EIO, w->path, h->touch_offset, "cannot read the touch table");
    if (entry != sizeof *buf)
        widen_v5_entries(buf, h->touch_entries);
    for (uint64_t k = 0; k < h->touch_entries; k++) {
        const mt_wl_touch_entry_t *e = &buf[k], *prev = k ? &buf[k - 1] : NULL;
        const int ordered =
            !prev || e->thread > prev->thread ||
            (e->thread == prev->thread && (e->op > prev->op || (e->op == prev->op && e->slot > prev->slot)));
        const int fields = e->slot   ? e->slot <= h->slots && e->size && e->frac <= MT_WL_TOUCH_ONE
                           : e->size ? h->version >= 7 && e->frac == MT_WL_TOUCH_ONE
                                     : e->frac < MT_WL_TOUCH_ONE;
        if (e->thread >= h->threads || e->op == 0 || e->op > w->threads[e->thread].ops || !fields || !ordered)
            return mt_errorf(err, -EINVAL, w->path, h->touch_offset + k * entry,
                             "touch entry %llu (thread %u, op %llu, slot %llu, %llu bytes, share %u/65536): expected "
                             "a thread below %u, an op of that thread after the previous entry's (or the same op "
                             "and a higher slot), and either slot 0, 0 bytes and a share below 65536, or slot 0, a "
                             "size and a share of 65536 (version 7), or a slot up to %llu, a size and a share up to "
                             "65536",
                             (unsigned long long)k, e->thread, (unsigned long long)e->op, (unsigned long long)e->slot,
                             (unsigned long long)e->size, e->frac, h->threads, (unsigned long long)h->slots);
    }
    return 0;
}

void mt_wl_close(mt_wl_t *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd);
    if (w->thread_frames)
        for (uint32_t i = 0; i < w->hdr.threads; i++)
            free(w->thread_frames[i]);
    free(w->thread_frames);
    free(w->threads);
    free(w->frames);
    free(w->strings);
    free(w->path);
    free(w);
}

const char *mt_wl_path(const mt_wl_t *w)
{
    return w->path;
}
int mt_wl_fd(const mt_wl_t *w)
{
    return w->fd;
}
uint32_t mt_wl_thread_frame_count(const mt_wl_t *w, uint32_t thread)
{
    return w->threads[thread].frames;
}
const mt_wl_frame_entry_t *mt_wl_thread_frame(const mt_wl_t *w, uint32_t thread, uint32_t k)
{
    return &w->frames[w->thread_frames[thread][k]];
}
const mt_wl_header_t *mt_wl_header(const mt_wl_t *w)
{
    return &w->hdr;
}
uint64_t mt_wl_file_size(const mt_wl_t *w)
{
    return w->size;
}
size_t mt_wl_thread_count(const mt_wl_t *w)
{
    return w->hdr.threads;
}
const mt_wl_thread_entry_t *mt_wl_thread(const mt_wl_t *w, size_t i)
{
    return i < w->hdr.threads ? &w->threads[i] : NULL;
}

const char *mt_wl_string(const mt_wl_t *w, unsigned tag, unsigned n, size_t *len)
{
    return mt_str_find(w->strings, w->strings + w->strings_len, tag, n, len);
}

void mt_wl_cursor_init(mt_wl_cursor_t *c, const mt_wl_t *w, uint32_t thread, uint8_t *raw, uint8_t *z, void *dctx)
{
    memset(c, 0, sizeof *c);
    c->w = w;
    c->thread = thread;
    c->raw = raw;
    c->z = z;
    c->dctx = dctx;
    c->prev_ns = w->threads[thread].start_ns;
}

int mt_wl_cursor_open(mt_wl_cursor_t **out, const mt_wl_t *w, uint32_t thread)
{
    *out = NULL;
    if (thread >= w->hdr.threads)
        return -EINVAL;
    mt_wl_cursor_t *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    uint8_t *raw = malloc(MT_WL_STREAM_BUF_SIZE), *z = malloc(ZSTD_compressBound(MT_WL_STREAM_BUF_SIZE));
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    mt_wl_cursor_init(c, w, thread, raw, z, dctx);
    c->own_buffers = 1;
    if (!raw || !z || !dctx) {
        mt_wl_cursor_close(c);
        return -ENOMEM;
    }
    *out = c;
    return 0;
}

static int load_frame(mt_wl_cursor_t *c, mt_error_t *err)
{
    const mt_wl_t *w = c->w;
    const mt_wl_frame_entry_t *fe = &w->frames[w->thread_frames[c->thread][c->next_frame++]];
    mt_wl_frame_header_t fh;
    const size_t raw_cap = MT_WL_STREAM_BUF_SIZE;
    if (mt_pread_full(w->fd, &fh, sizeof fh, fe->offset) < 0)
        return mt_errorf(err, -EIO, w->path, fe->offset, "expected a frame header, the file ends");
    if (fh.magic != MT_WL_FRAME_MAGIC || fh.thread != c->thread || fh.nops != fe->nops || fh.first_op != c->first_op ||
        fh.raw_size > raw_cap || fh.zsize > ZSTD_compressBound(raw_cap) ||
        fe->offset + sizeof fh + fh.zsize > w->hdr.index_offset)
        return mt_errorf(err, -EINVAL, w->path, fe->offset,
                         "expected a frame of thread %u (magic \"MLWF\", ops %" PRIu64 " to %" PRIu64 ")", c->thread,
                         c->first_op, c->first_op + fe->nops);
    if (mt_pread_full(w->fd, c->z, fh.zsize, fe->offset + sizeof fh) < 0)
        return mt_errorf(err, -EIO, w->path, fe->offset + sizeof fh, "cannot read %u bytes of frame", fh.zsize);
    const size_t n = ZSTD_decompressDCtx(c->dctx, c->raw, raw_cap, c->z, fh.zsize);
    if (ZSTD_isError(n) || n != fh.raw_size)
        return mt_errorf(err, -EINVAL, w->path, fe->offset + sizeof fh, "expected a zstd frame of %u bytes%s%s",
                         fh.raw_size, ZSTD_isError(n) ? ": " : "", ZSTD_isError(n) ? ZSTD_getErrorName(n) : "");
    c->p = c->raw;
    c->end = c->raw + n;
    c->left = fh.nops;
    c->first_op += fh.nops;
    c->frame_off = fe->offset;
    return 0;
}

/* Past the loaded frame's last op: loads the next frame with ops. 1: loaded; 0: the stream ended;
 * negative: damage. Out of line, so that the per-op path saves no registers for it. */
static __attribute__((noinline)) int next_frame(mt_wl_cursor_t *c, mt_error_t *err)
{
    while (c->left == 0) {
        if (c->p != c->end)
            return mt_errorf(err, -EINVAL, c->w->path, c->frame_off, "frame of thread %u has bytes after its last op",
                             c->thread);
        if (c->next_frame >= c->w->threads[c->thread].frames)
            return 0;
        const int rc = load_frame(c, err);
        if (rc < 0)
            return rc;
    }
    return 1;
}

static __attribute__((noinline, cold)) int damaged_op(const mt_wl_cursor_t *c, mt_error_t *err)
{
    return mt_errorf(err, -EINVAL, c->w->path, c->frame_off,
                     "damaged op at byte %zu of the frame's data (thread %u): expected a workload op",
                     mt_wl_cursor_op_byte(c), c->thread);
}

int mt_wl_cursor_next(mt_wl_cursor_t *c, mt_wl_rec_t *r, mt_error_t *err)
{
    if (__builtin_expect(c->left == 0, 0)) {
        const int rc = next_frame(c, err);
        if (rc <= 0)
            return rc;
    }
    c->op_at = c->p;
    const int d = c->end - c->p >= MT_WL_OP_MAX_BYTES ? decode_op(&c->p, c->end, r, &c->prev_ns, 0)
                                                      : decode_op(&c->p, c->end, r, &c->prev_ns, 1);
    if (__builtin_expect(d < 0, 0))
        return damaged_op(c, err);
    c->left--;
    return 1;
}

void mt_wl_cursor_close(mt_wl_cursor_t *c)
{
    if (!c || !c->own_buffers)
        return;
    free(c->raw);
    free(c->z);
    ZSTD_freeDCtx(c->dctx);
    free(c);
}
