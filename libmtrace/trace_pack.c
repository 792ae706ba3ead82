/* mtrace pack: a raw trace into a packed one, one frame per chunk (doc/trace-format.md,
 * "Packed traces"): a modeled frame (pack_model.c), or plain zstd for a chunk the model cannot
 * represent. Frames are independent so a reader can fetch any chunk on its own. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "file_io.h"
#include "pack_model.h"
#include "tmp_cleanup.h"
#include "mtrace/trace_reader.h"

int mt_trace_pack(const char *in, const char *out, int level, mt_error_t *err)
{
    return mt_trace_pack_flags(in, out, level, 0, err);
}

int mt_trace_pack_flags(const char *in, const char *out, int level, unsigned flags, mt_error_t *err)
{
    mt_error_t unused;
    if (!err)
        err = &unused;
    if (mt_same_file(in, out))
        return mt_errorf(err, -EINVAL, out, 0, "is the trace to pack; choose another output");
    mt_trace_t *t = NULL;
    int rc = mt_trace_open(&t, in, err);
    if (rc < 0)
        return rc;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.partial.XXXXXX", out);
    int fd = mkstemp(tmp);
    if (fd >= 0)
        mt_cleanup_add(tmp, 0); /* a stop signal removes it (tmp_cleanup.h) */
    mt_cursor_t c = { 0 };
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    uint8_t *zbuf = malloc(ZSTD_compressBound(MT_CHUNK_SIZE));
    uint8_t *head = calloc(1, MT_CHUNK_SIZE);
    mt_pack_model_t *model = (flags & MT_PACK_PLAIN) ? NULL : mt_pack_model_new(mt_trace_header(t)->version);
    if (fd < 0) {
        rc = -errno;
        snprintf(err->msg, sizeof err->msg, "%s: cannot create: %s", out, strerror(errno));
        goto done;
    }
    if (!cctx || !zbuf || !head || (!model && !(flags & MT_PACK_PLAIN)) || mt_cursor_init(&c, t) < 0) {
        rc = -ENOMEM;
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", in);
        goto done;
    }
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
    /* A checksum of each frame's content (4 bytes): a damaged frame is an error, not other records
     * read without complaint (zstd verifies it as it decodes; readers need no change). */
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    if (mt_trace_is_packed(t)) {
        rc = -EINVAL;
        snprintf(err->msg, sizeof err->msg, "%s: offset 36: already packed", in);
        goto done;
    }
    /* A packed trace would not show that its source was cut short: refuse rather than hide it. */
    if ((rc = mt_trace_check_whole(t, err)) < 0)
        goto done;
    /* The header chunk, as read, with the packed flag. */
    {
        const int hfd = open(in, O_RDONLY | O_CLOEXEC);
        const ssize_t n = hfd >= 0 ? pread(hfd, head, MT_CHUNK_SIZE, 0) : -1;
        if (hfd >= 0)
            close(hfd);
        if (n < (ssize_t)sizeof(mt_file_header_t)) {
            rc = -EIO;
            snprintf(err->msg, sizeof err->msg, "%s: offset 0: cannot read the header again", in);
            goto done;
        }
        /* Keep the header and its strings up to the end tag; the rest of the chunk is padding. */
        const uint8_t *sp = head + MT_HEADER_STRINGS_OFFSET;
        unsigned tag;
        const char *str;
        size_t len;
        while (mt_str_next(&sp, head + MT_CHUNK_SIZE, &tag, &str, &len)) {
        }
        size_t end = (size_t)(sp - head);
        end = end + 4 <= MT_CHUNK_SIZE ? end : MT_CHUNK_SIZE - 4;
        memset(head + end, 0, 4);
        end = (end + 4 + 7) & ~(size_t)7;
        mt_file_header_t h;
        memcpy(&h, head, sizeof h);
        h.flags |= MT_HDR_PACKED;
        h.data_offset = end;
        h.packed_frames = mt_trace_chunk_count(t); /* one frame per chunk: a cut between frames shows */
        memcpy(head, &h, sizeof h);
        if ((rc = mt_write_full(fd, head, end, UINT64_MAX)) < 0)
            goto write_failed;
    }
    for (size_t i = 0; i < mt_trace_chunk_count(t); i++) {
        if ((rc = mt_cursor_load(&c, i, err)) < 0)
            goto done;
        mt_record_t r;
        while ((rc = mt_cursor_next(&c, &r, err)) > 0) {
        }
        if (rc < 0)
            goto done;
        /* Only the records are kept: a chunk never sealed (its process was killed) is sealed here at its end. */
        mt_chunk_header_t h = mt_trace_chunk(t, i)->h;
        h.used = (uint32_t)mt_cursor_used(&c);
        h.flags |= MT_CHUNK_SEALED;
        const uint8_t *records = c.buf + MT_CHUNK_HEADER_SIZE;
        uint32_t magic = MT_PACK_MODEL_MAGIC;
        const size_t zcap = ZSTD_compressBound(MT_CHUNK_SIZE);
        const long mz = model ? mt_pack_model_encode(model, records, h.used, level, zbuf, zcap) : 0;
        size_t z = (size_t)mz;
        if (mz < 0) {
            rc = (int)mz;
            snprintf(err->msg, sizeof err->msg, "%s: %s", out,
                     mz == -ENOMEM ? "out of memory" : "zstd failed");
            goto done;
        }
        if (mz == 0) { /* not representable by the model: plain zstd */
            magic = MT_PACK_FRAME_MAGIC;
            z = ZSTD_compress2(cctx, zbuf, zcap, records, h.used);
        }
        if (ZSTD_isError(z)) {
            rc = -EIO;
            snprintf(err->msg, sizeof err->msg, "%s: zstd: %s", out, ZSTD_getErrorName(z));
            goto done;
        }
        uint8_t fh[MT_PACK_FRAME_HEADER_SIZE + MT_CHUNK_HEADER_SIZE];
        const uint32_t zs = (uint32_t)z;
        memcpy(fh, &magic, 4);
        memcpy(fh + 4, &zs, 4);
        memcpy(fh + MT_PACK_FRAME_HEADER_SIZE, &h, sizeof h);
        if ((rc = mt_write_full(fd, fh, sizeof fh, UINT64_MAX)) < 0 || (rc = mt_write_full(fd, zbuf, z, UINT64_MAX)) < 0)
            goto write_failed;
    }
    if (fsync(fd) < 0 && errno != EINVAL) {
        rc = -errno;
        goto write_failed;
    }
    if (close(fd) < 0) {
        fd = -1;
        rc = -errno;
        goto write_failed;
    }
    fd = -1;
    if (rename(tmp, out) < 0) {
        rc = -errno;
        snprintf(err->msg, sizeof err->msg, "%s: cannot rename into place: %s", out, strerror(errno));
        goto done;
    }
    mt_cleanup_del(tmp);
    tmp[0] = 0;
    rc = 0;
    goto done;
write_failed:
    snprintf(err->msg, sizeof err->msg, "%s: write failed: %s", out, strerror(-rc));
done:
    if (fd >= 0)
        close(fd);
    if (tmp[0] && rc < 0) {
        unlink(tmp);
        mt_cleanup_del(tmp);
    }
    free(head);
    free(zbuf);
    mt_pack_model_free(model);
    ZSTD_freeCCtx(cctx);
    mt_cursor_fini(&c);
    mt_trace_close(t);
    return rc;
}
