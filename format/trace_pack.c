/* mtrace pack: a raw trace into a packed one, one frame per chunk (doc/trace-format.md,
 * "Packed traces"): a modeled frame (pack_model.c), or plain zstd for a chunk the model cannot
 * represent. Frames are independent so a reader can fetch any chunk on its own, and so that
 * threads can make them at once (jobs > 1): the file is the same bytes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "mtrace/file_io.h"
#include "pack_model.h"
#include "mtrace/tmp_cleanup.h"
#include "mtrace/trace_reader.h"

/* What one thread needs to make frames. */
typedef struct packer {
    const mt_trace_t *t;
    const char *out;
    int level;
    mt_cursor_t c;
    ZSTD_CCtx *cctx;
    mt_pack_model_t *model; /* NULL: plain frames only */
} packer_t;

/* A frame made: its headers and payload; rc and err the failure where there was one. */
typedef struct frame {
    uint8_t fh[MT_PACK_FRAME_HEADER_SIZE + MT_CHUNK_HEADER_SIZE];
    uint8_t *z; /* ZSTD_compressBound(MT_CHUNK_SIZE) bytes */
    size_t zlen;
    int rc;
    mt_error_t err;
} frame_t;

static int packer_init(packer_t *w, const mt_trace_t *t, const char *out, int level, unsigned flags)
{
    memset(w, 0, sizeof *w);
    w->t = t;
    w->out = out;
    w->level = level;
    w->cctx = ZSTD_createCCtx();
    w->model = (flags & MT_PACK_PLAIN) ? NULL : mt_pack_model_new(mt_trace_header(t)->version);
    if (!w->cctx || (!w->model && !(flags & MT_PACK_PLAIN)) || mt_cursor_init(&w->c, t) < 0)
        return -ENOMEM;
    w->c.spread_reads = 0; /* the records' bytes are copied as stored: their times are not read */
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level);
    /* A checksum of each frame's content (4 bytes): a damaged frame is an error, not other records
     * read without complaint (zstd verifies it as it decodes; readers need no change). */
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
    return 0;
}

static void packer_fini(packer_t *w)
{
    mt_pack_model_free(w->model);
    ZSTD_freeCCtx(w->cctx);
    mt_cursor_fini(&w->c);
}

/* Chunk i as a frame into f: 0, or negative with the message in err. */
static int pack_chunk(packer_t *w, size_t i, frame_t *f, mt_error_t *err)
{
    int rc = mt_cursor_load(&w->c, i, err);
    if (rc < 0)
        return rc;
    mt_record_t r;
    while ((rc = mt_cursor_next(&w->c, &r, err)) > 0) {
    }
    if (rc < 0)
        return rc;
    /* Only the records are kept: a chunk never sealed (its process was killed) is sealed here at its end. */
    mt_chunk_header_t h = mt_trace_chunk(w->t, i)->h;
    h.used = (uint32_t)mt_cursor_used(&w->c);
    h.flags |= MT_CHUNK_SEALED;
    const uint8_t *records = w->c.buf + MT_CHUNK_HEADER_SIZE;
    uint32_t magic = MT_PACK_MODEL_MAGIC;
    const size_t zcap = ZSTD_compressBound(MT_CHUNK_SIZE);
    const long mz = w->model ? mt_pack_model_encode(w->model, records, h.used, w->level, f->z, zcap) : 0;
    size_t z = (size_t)mz;
    if (mz < 0) {
        snprintf(err->msg, sizeof err->msg, "%s: %s", w->out, mz == -ENOMEM ? "out of memory" : "zstd failed");
        return (int)mz;
    }
    if (mz == 0) { /* not representable by the model: plain zstd */
        magic = MT_PACK_FRAME_MAGIC;
        z = ZSTD_compress2(w->cctx, f->z, zcap, records, h.used);
    }
    if (ZSTD_isError(z)) {
        snprintf(err->msg, sizeof err->msg, "%s: zstd: %s", w->out, ZSTD_getErrorName(z));
        return -EIO;
    }
    const uint32_t zs = (uint32_t)z;
    memcpy(f->fh, &magic, 4);
    memcpy(f->fh + 4, &zs, 4);
    memcpy(f->fh + MT_PACK_FRAME_HEADER_SIZE, &h, sizeof h);
    f->zlen = z;
    return 0;
}

/* ---- jobs > 1: frames made by threads, written in order by the caller -------------------------- */

/* Frames in flight: a thread makes chunk i in slot i % nslots once the frame nslots before it is
 * written; the caller writes them in order as they are done. */
typedef struct pack_jobs {
    pthread_mutex_t mu;
    pthread_cond_t done_cv, free_cv;
    size_t nchunks, next, written, nslots;
    frame_t *slot;
    uint8_t *ready; /* per slot: its frame is made */
    int stop;
} pack_jobs_t;

typedef struct pack_worker {
    pack_jobs_t *j;
    packer_t w;
    pthread_t th;
} pack_worker_t;

static void *pack_worker(void *arg)
{
    pack_worker_t *pw = arg;
    pack_jobs_t *j = pw->j;
    for (;;) {
        pthread_mutex_lock(&j->mu);
        while (!j->stop && j->next < j->nchunks && j->next >= j->written + j->nslots)
            pthread_cond_wait(&j->free_cv, &j->mu);
        if (j->stop || j->next >= j->nchunks) {
            pthread_mutex_unlock(&j->mu);
            return NULL;
        }
        const size_t i = j->next++;
        pthread_mutex_unlock(&j->mu);
        frame_t *f = &j->slot[i % j->nslots];
        f->rc = pack_chunk(&pw->w, i, f, &f->err);
        pthread_mutex_lock(&j->mu);
        j->ready[i % j->nslots] = 1;
        pthread_cond_broadcast(&j->done_cv);
        pthread_mutex_unlock(&j->mu);
    }
}

/* Makes every chunk's frame on `jobs` threads and writes them to fd in order: as the one-thread
 * loop would, the first failure in chunk order is the one reported. */
static int pack_frames_jobs(const mt_trace_t *t, const char *out, int level, unsigned flags, unsigned jobs, int fd,
                            mt_error_t *err)
{
    pack_jobs_t j = { .nchunks = mt_trace_chunk_count(t), .nslots = 2 * (size_t)jobs };
    pthread_mutex_init(&j.mu, NULL);
    pthread_cond_init(&j.done_cv, NULL);
    pthread_cond_init(&j.free_cv, NULL);
    j.slot = calloc(j.nslots, sizeof *j.slot);
    j.ready = calloc(j.nslots, 1);
    pack_worker_t *pw = calloc(jobs, sizeof *pw);
    int rc = j.slot && j.ready && pw ? 0 : -ENOMEM;
    for (size_t k = 0; k < j.nslots && rc == 0; k++)
        if (!(j.slot[k].z = malloc(ZSTD_compressBound(MT_CHUNK_SIZE))))
            rc = -ENOMEM;
    unsigned made = 0, started = 0;
    for (; made < jobs && rc == 0; made++) {
        pw[made].j = &j;
        if (packer_init(&pw[made].w, t, out, level, flags) < 0)
            rc = -ENOMEM;
    }
    if (rc < 0)
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", mt_trace_path(t));
    for (; started < jobs && rc == 0; started++) {
        const int e = pthread_create(&pw[started].th, NULL, pack_worker, &pw[started]);
        if (e) {
            rc = -e;
            snprintf(err->msg, sizeof err->msg, "%s: cannot start a thread: %s", out, strerror(e));
            break;
        }
    }
    while (rc == 0 && j.written < j.nchunks) {
        const size_t s = j.written % j.nslots;
        pthread_mutex_lock(&j.mu);
        while (!j.ready[s])
            pthread_cond_wait(&j.done_cv, &j.mu);
        pthread_mutex_unlock(&j.mu);
        frame_t *f = &j.slot[s];
        if ((rc = f->rc) < 0) {
            *err = f->err;
            break;
        }
        if ((rc = mt_write_full(fd, f->fh, sizeof f->fh, UINT64_MAX)) < 0 ||
            (rc = mt_write_full(fd, f->z, f->zlen, UINT64_MAX)) < 0) {
            snprintf(err->msg, sizeof err->msg, "%s: write failed: %s", out, strerror(-rc));
            break;
        }
        pthread_mutex_lock(&j.mu);
        j.ready[s] = 0;
        j.written++;
        pthread_cond_broadcast(&j.free_cv);
        pthread_mutex_unlock(&j.mu);
    }
    pthread_mutex_lock(&j.mu);
    j.stop = 1;
    pthread_cond_broadcast(&j.free_cv);
    pthread_mutex_unlock(&j.mu);
    for (unsigned k = 0; k < started; k++)
        pthread_join(pw[k].th, NULL);
    for (unsigned k = 0; k < made; k++)
        packer_fini(&pw[k].w);
    for (size_t k = 0; j.slot && k < j.nslots; k++)
        free(j.slot[k].z);
    free(j.slot);
    free(j.ready);
    free(pw);
    pthread_mutex_destroy(&j.mu);
    pthread_cond_destroy(&j.done_cv);
    pthread_cond_destroy(&j.free_cv);
    return rc;
}

int mt_trace_pack(const char *in, const char *out, int level, mt_error_t *err)
{
    return mt_trace_pack_jobs(in, out, level, 0, 1, err);
}

int mt_trace_pack_flags(const char *in, const char *out, int level, unsigned flags, mt_error_t *err)
{
    return mt_trace_pack_jobs(in, out, level, flags, 1, err);
}

int mt_trace_pack_jobs(const char *in, const char *out, int level, unsigned flags, unsigned jobs, mt_error_t *err)
{
    mt_error_t unused;
    if (!err)
        err = &unused;
    if (mt_same_file(in, out))
        return mt_errorf(err, -EINVAL, out, 0, "is the trace to pack; choose another output");
    if (mt_out_special(out)) { /* renamed over, /dev/null would become a regular file */
        snprintf(err->msg, sizeof err->msg,
                 "%s: not a regular file; a packed trace is written whole, then renamed into place: name a file", out);
        return -EINVAL;
    }
    mt_trace_t *t = NULL;
    int rc = mt_trace_open(&t, in, err);
    if (rc < 0)
        return rc;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.partial.XXXXXX", out);
    int fd = mkstemp(tmp);
    if (fd >= 0)
        mt_cleanup_add(tmp, 0); /* a stop signal removes it (tmp_cleanup.h) */
    packer_t w;
    frame_t f = { .z = malloc(ZSTD_compressBound(MT_CHUNK_SIZE)) };
    uint8_t *head = calloc(1, MT_CHUNK_SIZE);
    const int nomem = packer_init(&w, t, out, level, flags) < 0;
    if (fd < 0) {
        rc = -errno;
        snprintf(err->msg, sizeof err->msg, "%s: cannot create: %s", out, strerror(errno));
        goto done;
    }
    if (nomem || !f.z || !head) {
        rc = -ENOMEM;
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", in);
        goto done;
    }
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
    if (jobs > 1 && mt_trace_chunk_count(t) > 1) {
        if ((rc = pack_frames_jobs(t, out, level, flags, jobs, fd, err)) < 0)
            goto done;
    } else {
        for (size_t i = 0; i < mt_trace_chunk_count(t); i++) {
            if ((rc = pack_chunk(&w, i, &f, err)) < 0)
                goto done;
            if ((rc = mt_write_full(fd, f.fh, sizeof f.fh, UINT64_MAX)) < 0 ||
                (rc = mt_write_full(fd, f.z, f.zlen, UINT64_MAX)) < 0)
                goto write_failed;
        }
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
    free(f.z);
    packer_fini(&w);
    mt_trace_close(t);
    return rc;
}
