/* The workload writer (include/mtrace/workload.h, whose inline put encodes each op into its thread's
 * buffer): a full buffer compressed into a zstd frame and written out, the last frames of ended
 * threads held until close, then the index, the touch table and the finished header, the output
 * renamed into place. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "mtrace/file_io.h"
#include "mtrace/workload.h"
#include "mtrace/tmp_cleanup.h"

/* The last frames of the streams that ended before close (mt_wl_writer_end_thread), in the order
 * they ended: close places them in stream order, where the file puts every stream's last frame. The
 * newest wait in memory; when a frame would take them past HELD_MEM_MAX, those are written to a
 * nameless file beside the output, so that a program of 100 000 threads costs disk, not memory. A
 * held frame's place is its offset in the whole: the file's bytes, then the buffer's. */
typedef struct held_frames {
    uint8_t *buf;
    size_t len, cap;
    int fd;           /* -1 until the buffer first fills */
    uint64_t spilled; /* bytes in fd */
} held_frames_t;

#define HELD_MEM_MAX (1u << 20)

/* A writer is its base (mtrace/workload.h: the streams, as the inline put sees them) and the rest. */
struct mt_wl_writer {
    mt_wl_writer_base_t base; /* first: a writer pointer is a pointer to it */
    char *path;
    char tmp[4096];
    int fd;
    uint64_t off;
    mt_wl_header_t hdr;
    uint32_t nstreams, cap;
    mt_wl_frame_entry_t *frames;
    uint64_t nframes, frames_cap;
    ZSTD_CCtx *cctx;
    uint8_t *zbuf; /* a frame as the file has it: its header, then its zstd data */
    held_frames_t held;
    uint8_t first_op[MT_WL_STREAM_SLACK]; /* a stream's first op, until mt_wl_writer_room_ moves it */
    const mt_wl_touch_entry_t *touch;     /* the caller's, until close */
    uint64_t ntouch;
};

/* The most bytes a frame takes: its header and the zstd data of a full buffer. */
#define FRAME_MAX_BYTES (sizeof(mt_wl_frame_header_t) + ZSTD_COMPRESSBOUND(MT_WL_STREAM_BUF_SIZE))

void mt_wl_writer_set_touch(mt_wl_writer_t *w, const mt_wl_touch_entry_t *entries, uint64_t n)
{
    w->touch = entries;
    w->ntouch = n;
}

int mt_wl_writer_open(mt_wl_writer_t **out, const char *path, const mt_wl_header_t *tmpl, const uint8_t *strings,
                      size_t strings_len, mt_error_t *err)
{
    *out = NULL;
    mt_wl_writer_t *w = calloc(1, sizeof *w);
    if (!w)
        return mt_errorf(err, -ENOMEM, path, 0, "out of memory");
    w->fd = -1;
    w->held.fd = -1;
    w->path = strdup(path);
    w->cctx = ZSTD_createCCtx();
    w->zbuf = malloc(FRAME_MAX_BYTES);
    if (!w->path || !w->cctx || !w->zbuf) {
        mt_wl_writer_abort(w);
        return mt_errorf(err, -ENOMEM, path, 0, "out of memory");
    }
    /* Level 1: the converter must keep up with tens of millions of ops a second; higher levels
     * cost more time than the few percent of size they save on op streams. */
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, 1);
    /* A checksum of each frame's ops (4 bytes): damage is an error, not other ops replayed. */
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
    snprintf(w->tmp, sizeof w->tmp, "%s.partial.XXXXXX", path);
    w->fd = mkstemp(w->tmp);
    if (w->fd < 0) {
        const int e = errno;
        w->tmp[0] = 0;
        mt_wl_writer_abort(w);
        return mt_errorf(err, -e, path, 0, "cannot create the output: %s", strerror(e));
    }
    mt_cleanup_add(w->tmp, 0); /* a stop signal removes it (tmp_cleanup.h) */
    if (tmpl)
        w->hdr = *tmpl;
    memcpy(w->hdr.magic, MT_WL_MAGIC, 8);
    w->hdr.version = MT_WL_VERSION;
    w->hdr.flags &= ~MT_WLH_COMPLETE;
    if (strings_len > 60000)
        strings_len = 60000;
    w->hdr.header_size = (uint32_t)((MT_WL_HEADER_STRINGS_OFFSET + strings_len + 4 + 7) & ~7u);
    uint8_t *head = calloc(1, w->hdr.header_size);
    if (!head) {
        mt_wl_writer_abort(w);
        return mt_errorf(err, -ENOMEM, path, 0, "out of memory");
    }
    memcpy(head, &w->hdr, sizeof w->hdr);
    if (strings)
        memcpy(head + MT_WL_HEADER_STRINGS_OFFSET, strings, strings_len);
    const int rc = mt_write_full(w->fd, head, w->hdr.header_size, 0);
    free(head);
    if (rc < 0) {
        mt_wl_writer_abort(w);
        return mt_errorf(err, rc, path, 0, "write failed: %s", strerror(-rc));
    }
    w->off = w->hdr.header_size;
    *out = w;
    return 0;
}

int mt_wl_writer_add_thread(mt_wl_writer_t *w, uint32_t thread_no, uint32_t tid, uint32_t creator_index_plus1)
{
    if (w->nstreams == w->cap) {
        const uint32_t cap = w->cap ? w->cap * 2 : 16;
        mt_wl_writer_stream_t *n = realloc(w->base.streams, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        w->base.streams = n;
        w->cap = cap;
    }
    mt_wl_writer_stream_t *s = &w->base.streams[w->nstreams];
    memset(s, 0, sizeof *s);
    s->pos = s->cut = w->first_op;
    s->entry.thread_no = thread_no;
    s->entry.tid = tid;
    s->entry.creator = creator_index_plus1;
    return (int)w->nstreams++;
}

void mt_wl_writer_set_creator(mt_wl_writer_t *w, uint32_t thread, uint32_t creator_index_plus1)
{
    w->base.streams[thread].entry.creator = creator_index_plus1;
}

/* Gives stream s a buffer of cap bytes, its ops so far kept. 0, or -ENOMEM. */
static int stream_resize(mt_wl_writer_stream_t *s, uint32_t cap)
{
    const size_t used = s->buf ? (size_t)(s->pos - s->buf) : 0;
    uint8_t *n = realloc(s->buf, cap);
    if (!n)
        return -ENOMEM;
    s->buf = n;
    s->cap = cap;
    s->pos = n + used;
    s->cut = n + cap - MT_WL_STREAM_SLACK;
    return 0;
}

/* Stream s's first op is in the writer's scratch: the stream's buffer, with the op moved there. */
static int stream_open(mt_wl_writer_t *w, mt_wl_writer_stream_t *s)
{
    const size_t len = (size_t)(s->pos - w->first_op);
    assert(s->entry.ops == 1 && len < MT_WL_STREAM_SLACK); /* and no op after mt_wl_writer_end_thread */
    if (stream_resize(s, MT_WL_STREAM_FIRST_SIZE) < 0)
        return -ENOMEM;
    memcpy(s->buf, w->first_op, len);
    s->pos = s->buf + len;
    return 0;
}

/* Compresses stream `thread`'s ops into a frame at w->zbuf: its length, 0 if it has none, or
 * negative with the message in err. */
static int64_t make_frame(mt_wl_writer_t *w, uint32_t thread, mt_error_t *err)
{
    const mt_wl_writer_stream_t *s = &w->base.streams[thread];
    const size_t used = s->buf ? (size_t)(s->pos - s->buf) : 0;
    if (!used)
        return 0;
    assert(used < MT_WL_STREAM_BUF_SIZE - 8);
    mt_wl_frame_header_t fh = {
        .magic = MT_WL_FRAME_MAGIC,
        .thread = thread,
        .raw_size = (uint32_t)used,
        .first_op = s->first_op,
        .nops = (uint32_t)(s->entry.ops - s->first_op),
    };
    uint8_t *const data = w->zbuf + sizeof fh;
    const size_t z = ZSTD_compress2(w->cctx, data, ZSTD_compressBound(used), s->buf, used);
    if (ZSTD_isError(z))
        return mt_errorf(err, -EIO, w->path, w->off, "zstd: %s", ZSTD_getErrorName(z));
    fh.zsize = (uint32_t)z;
    memcpy(w->zbuf, &fh, sizeof fh);
    return (int64_t)(sizeof fh + z);
}

/* Writes the frame of `len` bytes at `frame` (made by make_frame) at the end of the file and
 * indexes it. 0, or negative with the message in err. */
static int put_frame(mt_wl_writer_t *w, const uint8_t *frame, size_t len, mt_error_t *err)
{
    mt_wl_frame_header_t fh;
    memcpy(&fh, frame, sizeof fh);
    const int rc = mt_write_full(w->fd, frame, len, w->off);
    if (rc < 0)
        return mt_errorf(err, rc, w->path, w->off, "write failed: %s", strerror(-rc));
    if (w->nframes == w->frames_cap) {
        const uint64_t cap = w->frames_cap ? w->frames_cap * 2 : 256;
        mt_wl_frame_entry_t *n = realloc(w->frames, cap * sizeof *n);
        if (!n)
            return mt_errorf(err, -ENOMEM, w->path, w->off, "out of memory");
        w->frames = n;
        w->frames_cap = cap;
    }
    w->frames[w->nframes++] = (mt_wl_frame_entry_t){ .offset = w->off, .thread = fh.thread, .nops = fh.nops };
    w->base.streams[fh.thread].entry.frames++;
    w->off += len;
    return 0;
}

/* Writes stream `thread`'s ops out as a frame, if it has any, and empties its buffer. */
static int cut_frame(mt_wl_writer_t *w, uint32_t thread, mt_error_t *err)
{
    mt_wl_writer_stream_t *s = &w->base.streams[thread];
    const int64_t len = make_frame(w, thread, err);
    if (len <= 0)
        return (int)len;
    const int rc = put_frame(w, w->zbuf, (size_t)len, err);
    if (rc < 0)
        return rc;
    s->first_op = s->entry.ops;
    s->pos = s->buf;
    return 0;
}

int mt_wl_writer_room_(mt_wl_writer_t *w, uint32_t thread, mt_error_t *err)
{
    mt_wl_writer_stream_t *s = &w->base.streams[thread];
    if (!s->buf) {
        if (stream_open(w, s) < 0)
            return mt_errorf(err, -ENOMEM, w->path, w->off, "out of memory");
        return 0;
    }
    if (s->cap < MT_WL_STREAM_BUF_SIZE) {
        /* Fourfold while that leaves the full size more than twice as large: 4 KiB, 16 KiB, full. */
        const uint32_t cap = s->cap * 4 < MT_WL_STREAM_BUF_SIZE / 2 ? s->cap * 4 : MT_WL_STREAM_BUF_SIZE;
        if (stream_resize(s, cap) < 0)
            return mt_errorf(err, -ENOMEM, w->path, w->off, "out of memory");
        return 0;
    }
    return cut_frame(w, thread, err);
}

/* Writes the held frames in memory to the held frames' file, made beside the output at the first
 * call and removed at once (its name is the output's temporary's, plus ".held"). */
static int held_spill(mt_wl_writer_t *w, mt_error_t *err)
{
    held_frames_t *h = &w->held;
    if (h->fd < 0) {
        char name[sizeof w->tmp + 8];
        snprintf(name, sizeof name, "%s.held", w->tmp);
        h->fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (h->fd < 0)
            return mt_errorf(err, -errno, name, 0, "cannot create a file for finished threads' frames: %s",
                             strerror(errno));
        mt_cleanup_add(name, 0);
        unlink(name);
        mt_cleanup_del(name);
    }
    const int rc = mt_write_full(h->fd, h->buf, h->len, h->spilled);
    if (rc < 0)
        return mt_errorf(err, rc, w->path, w->off, "write failed (finished threads' frames, beside the output): %s",
                         strerror(-rc));
    h->spilled += h->len;
    h->len = 0;
    return 0;
}

/* Holds the frame of len bytes at w->zbuf as stream s's last. 0, or negative (message in err). */
static int held_add(mt_wl_writer_t *w, mt_wl_writer_stream_t *s, size_t len, mt_error_t *err)
{
    held_frames_t *h = &w->held;
    int rc;
    if (h->len + len > HELD_MEM_MAX && h->len && (rc = held_spill(w, err)) < 0)
        return rc;
    if (h->len + len > h->cap) {
        size_t cap = h->cap ? h->cap : FRAME_MAX_BYTES;
        while (cap < h->len + len)
            cap *= 2;
        uint8_t *n = realloc(h->buf, cap);
        if (!n)
            return mt_errorf(err, -ENOMEM, w->path, w->off, "out of memory");
        h->buf = n;
        h->cap = cap;
    }
    memcpy(h->buf + h->len, w->zbuf, len);
    s->held_at = h->spilled + h->len;
    s->held_len = (uint32_t)len;
    h->len += len;
    return 0;
}

/* Writes stream s's held frame at the end of the file. */
static int held_put(mt_wl_writer_t *w, const mt_wl_writer_stream_t *s, mt_error_t *err)
{
    const held_frames_t *h = &w->held;
    if (s->held_at >= h->spilled)
        return put_frame(w, h->buf + (s->held_at - h->spilled), s->held_len, err);
    const int rc = mt_pread_full(h->fd, w->zbuf, s->held_len, s->held_at);
    if (rc < 0)
        return mt_errorf(err, rc, w->path, w->off, "read failed (finished threads' frames, beside the output): %s",
                         strerror(-rc));
    return put_frame(w, w->zbuf, s->held_len, err);
}

int mt_wl_writer_end_thread(mt_wl_writer_t *w, uint32_t thread, mt_error_t *err)
{
    mt_wl_writer_stream_t *s = &w->base.streams[thread];
    const int64_t len = make_frame(w, thread, err);
    int rc = len < 0 ? (int)len : 0;
    if (len > 0)
        rc = held_add(w, s, (size_t)len, err);
    if (rc < 0)
        return rc;
    free(s->buf);
    s->buf = s->pos = s->cut = NULL;
    s->cap = 0;
    return 0;
}

int mt_wl_writer_close(mt_wl_writer_t *w, const mt_wl_header_t *final, mt_error_t *err)
{
    int rc = 0;
    for (uint32_t i = 0; i < w->nstreams && rc == 0; i++)
        rc = w->base.streams[i].held_len ? held_put(w, &w->base.streams[i], err) : cut_frame(w, i, err);
    if (rc < 0)
        goto fail;
    /* The index: magic, thread count, thread entries, frame entries. */
    const uint64_t index_off = w->off;
    const uint32_t head[2] = { MT_WL_INDEX_MAGIC, w->nstreams };
    rc = mt_write_full(w->fd, head, sizeof head, w->off);
    w->off += sizeof head;
    uint64_t ops = 0;
    for (uint32_t i = 0; i < w->nstreams && rc == 0; i++) {
        mt_wl_writer_stream_t *s = &w->base.streams[i];
        s->entry.end_ns = s->prev_ns;
        ops += s->entry.ops;
        rc = mt_write_full(w->fd, &s->entry, sizeof s->entry, w->off);
        w->off += sizeof s->entry;
    }
    if (rc == 0 && w->nframes)
        rc = mt_write_full(w->fd, w->frames, w->nframes * sizeof *w->frames, w->off);
    w->off += w->nframes * sizeof *w->frames;
    const uint64_t touch_off = w->ntouch ? w->off : 0;
    if (rc == 0 && w->ntouch)
        rc = mt_write_full(w->fd, w->touch, w->ntouch * sizeof *w->touch, w->off);
    if (rc < 0) {
        mt_errorf(err, rc, w->path, w->off, "write failed: %s", strerror(-rc));
        goto fail;
    }
    mt_wl_header_t h = *final;
    memcpy(h.magic, MT_WL_MAGIC, 8);
    h.version = MT_WL_VERSION;
    h.header_size = w->hdr.header_size;
    h.threads = w->nstreams;
    h.ops = ops;
    h.waits = w->base.waits;
    h.index_offset = index_off;
    h.frames = w->nframes;
    h.touch_offset = touch_off;
    h.touch_entries = w->ntouch;
    h.flags |= MT_WLH_COMPLETE;
    if ((rc = mt_write_full(w->fd, &h, sizeof h, 0)) < 0) {
        mt_errorf(err, rc, w->path, 0, "write failed: %s", strerror(-rc));
        goto fail;
    }
    if (fsync(w->fd) < 0 && errno != EINVAL) {
        rc = mt_errorf(err, -errno, w->path, 0, "fsync failed: %s", strerror(errno));
        goto fail;
    }
    close(w->fd);
    w->fd = -1;
    if (rename(w->tmp, w->path) < 0) {
        rc = mt_errorf(err, -errno, w->path, 0, "cannot rename the output into place: %s", strerror(errno));
        goto fail;
    }
    mt_cleanup_del(w->tmp);
    w->tmp[0] = 0;
    mt_wl_writer_abort(w); /* frees; nothing left to remove */
    return 0;
fail:
    mt_wl_writer_abort(w);
    return rc;
}

void mt_wl_writer_abort(mt_wl_writer_t *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd);
    if (w->tmp[0]) {
        unlink(w->tmp);
        mt_cleanup_del(w->tmp);
    }
    for (uint32_t i = 0; i < w->nstreams; i++)
        free(w->base.streams[i].buf);
    if (w->held.fd >= 0)
        close(w->held.fd);
    free(w->held.buf);
    free(w->base.streams);
    free(w->frames);
    free(w->zbuf);
    ZSTD_freeCCtx(w->cctx);
    free(w->path);
    free(w);
}
