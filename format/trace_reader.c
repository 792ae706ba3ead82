/* The trace reader (doc/trace-format.md): header validation, the chunk index, record decoding.
 * Raw and packed traces differ only in how a chunk's bytes are fetched (mt_cursor_load). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "mtrace/file_io.h"
#include "mtrace/trace_reader.h"
#include "pack_model.h"

struct mt_trace {
    char *path;
    int fd;
    int packed;
    uint64_t size;
    uint8_t *head;   /* the header chunk (as much of it as the file holds), zero-padded */
    size_t head_len; /* bytes of it the file holds: header strings end there at the latest */
    mt_file_header_t hdr;
    mt_chunk_ref_t *chunks;
    size_t nchunks;
    uint64_t cut_frame; /* packed: the offset of the frame the file ends inside; 0: none */
    mt_thread_info_t *threads;
    size_t nthreads;
    uint32_t *thread_chunks;
    uint32_t opcodes;        /* bit op: a record opcode of the file's version (mt_last_call, mt_last_event) */
    mt_chunk_codec_t *codec; /* packed traces: the cursors' codec unless they bring their own */
    /* rate estimate from RSS samples */
    uint64_t est_time, est_mono;
    int shared_reads; /* MT_STR_CLOCK says reads=every-K-calls-while-one-thread */
};

/* What decoding a packed frame needs: one per thread that loads chunks. */
struct mt_chunk_codec {
    ZSTD_DCtx *dctx;
    uint8_t *zbuf;          /* compressed frame staging */
    mt_pack_model_t *model; /* decoder of modeled frames, made at the first one (about 2.5 MiB) */
};

mt_chunk_codec_t *mt_chunk_codec_new(void)
{
    mt_chunk_codec_t *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->dctx = ZSTD_createDCtx();
    k->zbuf = malloc(ZSTD_compressBound(MT_CHUNK_SIZE));
    if (!k->dctx || !k->zbuf) {
        mt_chunk_codec_free(k);
        return NULL;
    }
    return k;
}

void mt_chunk_codec_free(mt_chunk_codec_t *k)
{
    if (!k)
        return;
    ZSTD_freeDCtx(k->dctx);
    mt_pack_model_free(k->model);
    free(k->zbuf);
    free(k);
}

static int check_header(mt_trace_t *t, size_t got, mt_error_t *err)
{
    const mt_file_header_t *h = &t->hdr;
    if (got < MT_TRACE_MAGIC_LEN || memcmp(h->magic, MT_TRACE_MAGIC, MT_TRACE_MAGIC_LEN) != 0)
        return mt_errorf(err, -EINVAL, t->path, 0,
                         "expected the mtrace trace magic 89 4d 54 52 0d 0a 1a 0a: not a trace");
    if (got < sizeof *h)
        return mt_errorf(err, -EINVAL, t->path, got, "expected a %zu-byte trace header, the file ends", sizeof *h);
    if (h->version > MT_TRACE_VERSION || h->version == 0)
        return mt_errorf(err, -ENOTSUP, t->path, 8, "trace format version %u, this mtrace reads versions 1 to %u",
                         h->version, MT_TRACE_VERSION);
    if (h->chunk_size != MT_CHUNK_SIZE)
        return mt_errorf(err, -EINVAL, t->path, 16, "expected chunk size %u, found %u", MT_CHUNK_SIZE, h->chunk_size);
    if (!h->little_endian || h->ptr_size != sizeof(void *))
        return mt_errorf(
            err, -ENOTSUP, t->path, 20,
            "trace written by a %u-byte-pointer %s-endian process; this reader needs %zu-byte little-endian",
            h->ptr_size, h->little_endian ? "little" : "big", sizeof(void *));
    if (h->header_size < sizeof *h || h->header_size > MT_HEADER_STRINGS_OFFSET)
        return mt_errorf(err, -EINVAL, t->path, 12, "expected a header size of %zu to %u bytes, found %u", sizeof *h,
                         MT_HEADER_STRINGS_OFFSET, h->header_size);
    return 0;
}

static int add_chunk(mt_trace_t *t, size_t *cap, uint64_t offset, uint32_t stored, const mt_chunk_header_t *h)
{
    if (t->nchunks == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        mt_chunk_ref_t *n = realloc(t->chunks, *cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        t->chunks = n;
    }
    mt_chunk_ref_t *c = &t->chunks[t->nchunks++];
    c->offset = offset;
    c->stored = stored;
    c->modeled = 0;
    c->h = *h;
    return 0;
}

static int check_chunk_header(const mt_trace_t *t, const mt_chunk_header_t *h, uint64_t off, mt_error_t *err)
{
    if (h->magic != MT_CHUNK_MAGIC)
        return mt_errorf(err, -EINVAL, t->path, off, "expected a chunk header (magic \"MTCK\"), found 0x%08x",
                         h->magic);
    if (h->kind != MT_CHUNK_THREAD)
        return mt_errorf(err, -EINVAL, t->path, off + 4, "expected chunk kind 1 (thread records), found %u", h->kind);
    if (h->thread == 0)
        return mt_errorf(err, -EINVAL, t->path, off + 8, "expected a thread number of 1 or more, found 0");
    if (h->used > MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE)
        return mt_errorf(err, -EINVAL, t->path, off + 20, "chunk claims %u bytes of records, at most %u fit", h->used,
                         MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE);
    return 0;
}

static int index_raw(mt_trace_t *t, mt_error_t *err)
{
    size_t cap = 0;
    for (uint64_t off = MT_CHUNK_SIZE; off + MT_CHUNK_HEADER_SIZE <= t->size; off += MT_CHUNK_SIZE) {
        mt_chunk_header_t h;
        size_t got;
        const int rc = mt_pread_some(t->fd, &h, sizeof h, off, &got);
        if (rc < 0)
            return mt_errorf(err, rc, t->path, off, "read failed: %s", strerror(-rc));
        if (got < sizeof h)
            break;
        if (h.magic == 0)
            continue; /* preallocated, or claimed by a process that died before storing the magic last */
        const int bad = check_chunk_header(t, &h, off, err);
        if (bad < 0)
            return bad;
        uint64_t stored = t->size - off - MT_CHUNK_HEADER_SIZE;
        if (stored > MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE)
            stored = MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE;
        if (add_chunk(t, &cap, off, (uint32_t)stored, &h) < 0)
            return mt_errorf(err, -ENOMEM, t->path, off, "out of memory indexing chunks");
    }
    return 0;
}

static int index_packed(mt_trace_t *t, mt_error_t *err)
{
    size_t cap = 0;
    uint64_t off = t->hdr.data_offset;
    if (off < MT_HEADER_STRINGS_OFFSET || off > MT_CHUNK_SIZE)
        return mt_errorf(err, -EINVAL, t->path, 112, "expected the packed data offset between %u and %u, found %llu",
                         MT_HEADER_STRINGS_OFFSET, MT_CHUNK_SIZE, (unsigned long long)off);
    while (off < t->size) {
        uint8_t fh[MT_PACK_FRAME_HEADER_SIZE + MT_CHUNK_HEADER_SIZE];
        size_t got;
        const int rc = mt_pread_some(t->fd, fh, sizeof fh, off, &got);
        if (rc < 0)
            return mt_errorf(err, rc, t->path, off, "read failed: %s", strerror(-rc));
        /* The file ends inside this frame: cut short after it was written, like a raw trace that
         * ends inside a chunk. The frames before it are whole and independent; they are read, and
         * mt_trace_check_whole says the file is truncated. */
        if (got < sizeof fh) {
            t->cut_frame = off;
            break;
        }
        if (mt_load_u32(fh) != MT_PACK_FRAME_MAGIC && mt_load_u32(fh) != MT_PACK_MODEL_MAGIC)
            return mt_errorf(err, -EINVAL, t->path, off,
                             "expected a packed frame (magic \"MTCZ\" or \"MTCM\"), found 0x%08x", mt_load_u32(fh));
        const uint32_t csize = mt_load_u32(fh + 4);
        mt_chunk_header_t h;
        memcpy(&h, fh + MT_PACK_FRAME_HEADER_SIZE, sizeof h);
        const int bad = check_chunk_header(t, &h, off + MT_PACK_FRAME_HEADER_SIZE, err);
        if (bad < 0)
            return bad;
        if (csize > ZSTD_compressBound(MT_CHUNK_SIZE))
            return mt_errorf(err, -EINVAL, t->path, off + 4, "expected a packed frame of at most %zu bytes, found %u",
                             ZSTD_compressBound(MT_CHUNK_SIZE), csize);
        if (off + sizeof fh + csize > t->size) {
            t->cut_frame = off;
            break;
        }
        if (add_chunk(t, &cap, off, csize, &h) < 0)
            return mt_errorf(err, -ENOMEM, t->path, off, "out of memory indexing chunks");
        t->chunks[t->nchunks - 1].modeled = mt_load_u32(fh) == MT_PACK_MODEL_MAGIC;
        off += sizeof fh + csize;
    }
    return 0;
}

static int cmp_thread_chunk(const void *a, const void *b, void *arg)
{
    const mt_trace_t *t = arg;
    const mt_chunk_header_t *x = &t->chunks[*(const uint32_t *)a].h, *y = &t->chunks[*(const uint32_t *)b].h;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    const uint64_t ox = t->chunks[*(const uint32_t *)a].offset, oy = t->chunks[*(const uint32_t *)b].offset;
    return ox < oy ? -1 : ox > oy;
}

static int index_threads(mt_trace_t *t, mt_error_t *err)
{
    t->thread_chunks = malloc((t->nchunks + 1) * sizeof *t->thread_chunks);
    if (!t->thread_chunks)
        return mt_errorf(err, -ENOMEM, t->path, 0, "out of memory indexing threads");
    for (size_t i = 0; i < t->nchunks; i++)
        t->thread_chunks[i] = (uint32_t)i;
    qsort_r(t->thread_chunks, t->nchunks, sizeof *t->thread_chunks, cmp_thread_chunk, t);
    /* A chunk met twice (same thread and seq) was being moved out of its thread's home chunk when
     * the process ended: both copies hold the same records; the first in the file is read. */
    size_t cap = 0, kept = 0;
    for (size_t i = 0; i < t->nchunks; i++) {
        const uint32_t ci = t->thread_chunks[i];
        const mt_chunk_ref_t *c = &t->chunks[ci];
        if (t->nthreads && t->threads[t->nthreads - 1].thread == c->h.thread) {
            if (c->h.seq == t->chunks[t->thread_chunks[kept - 1]].h.seq)
                continue;
            t->threads[t->nthreads - 1].nchunks++;
            t->thread_chunks[kept++] = ci;
            continue;
        }
        if (t->nthreads == cap) {
            cap = cap ? cap * 2 : 16;
            mt_thread_info_t *n = realloc(t->threads, cap * sizeof *n);
            if (!n)
                return mt_errorf(err, -ENOMEM, t->path, 0, "out of memory indexing threads");
            t->threads = n;
        }
        t->threads[t->nthreads++] =
            (mt_thread_info_t){ .thread = c->h.thread, .tid = c->h.tid, .nchunks = 1, .first = (uint32_t)kept };
        t->thread_chunks[kept++] = ci;
    }
    return 0;
}

int mt_trace_open(mt_trace_t **out, const char *path, mt_error_t *err)
{
    *out = NULL;
    mt_trace_t *t = calloc(1, sizeof *t);
    if (!t)
        return mt_errorf(err, -ENOMEM, path, 0, "out of memory");
    t->fd = -1;
    t->path = strdup(path);
    t->head = calloc(1, MT_CHUNK_SIZE);
    int rc = -ENOMEM;
    if (!t->path || !t->head) {
        mt_errorf(err, rc, path, 0, "out of memory");
        goto out;
    }
    struct stat st;
    t->fd = mt_open_input(path, &st, err);
    if (t->fd < 0) {
        rc = t->fd;
        goto out;
    }
    t->size = (uint64_t)st.st_size;
    size_t got;
    rc = mt_pread_some(t->fd, t->head, MT_CHUNK_SIZE, 0, &got);
    if (rc < 0) {
        mt_errorf(err, rc, path, 0, "read failed: %s", strerror(-rc));
        goto out;
    }
    memcpy(&t->hdr, t->head, sizeof t->hdr);
    t->head_len = got;
    rc = check_header(t, got, err);
    if (rc < 0)
        goto out;
    for (unsigned op = MT_OP_MALLOC; op <= MT_OP_MAX; op++)
        if (op <= mt_last_call(t->hdr.version) || (op >= MT_FIRST_EVENT && op <= mt_last_event(t->hdr.version)))
            t->opcodes |= 1u << op;
    t->packed = (t->hdr.flags & MT_HDR_PACKED) != 0;
    if (t->packed) {
        /* Only the header and its strings are stored; what follows is frames, not strings. */
        if (t->hdr.data_offset >= MT_HEADER_STRINGS_OFFSET && t->hdr.data_offset < MT_CHUNK_SIZE) {
            memset(t->head + t->hdr.data_offset, 0, MT_CHUNK_SIZE - t->hdr.data_offset);
            if (t->head_len > t->hdr.data_offset)
                t->head_len = t->hdr.data_offset;
        }
        t->codec = mt_chunk_codec_new();
        if (!t->codec) {
            rc = mt_errorf(err, -ENOMEM, path, 0, "out of memory");
            goto out;
        }
        rc = index_packed(t, err);
    } else {
        rc = index_raw(t, err);
    }
    if (rc < 0)
        goto out;
    rc = index_threads(t, err);
    if (rc < 0)
        goto out;
    size_t clen;
    const char *clock = mt_trace_string(t, MT_STR_CLOCK, 0, &clen);
    t->shared_reads = clock && memmem(clock, clen, "reads=every-", 12) != NULL;
    *out = t;
    return 0;
out:
    mt_trace_close(t);
    return rc;
}

void mt_trace_close(mt_trace_t *t)
{
    if (!t)
        return;
    if (t->fd >= 0)
        close(t->fd);
    mt_chunk_codec_free(t->codec);
    free(t->path);
    free(t->head);
    free(t->chunks);
    free(t->threads);
    free(t->thread_chunks);
    free(t);
}

const char *mt_trace_path(const mt_trace_t *t)
{
    return t->path;
}
const mt_file_header_t *mt_trace_header(const mt_trace_t *t)
{
    return &t->hdr;
}
int mt_trace_is_packed(const mt_trace_t *t)
{
    return t->packed;
}
uint64_t mt_trace_file_size(const mt_trace_t *t)
{
    return t->size;
}
size_t mt_trace_chunk_count(const mt_trace_t *t)
{
    return t->nchunks;
}

int mt_trace_check_whole(const mt_trace_t *t, mt_error_t *err)
{
    const mt_file_header_t *h = &t->hdr;
    if (t->packed) {
        if (t->cut_frame)
            return mt_errorf(err, -ENODATA, t->path, t->size,
                             "truncated: the file ends at byte %llu, inside the packed frame at offset %llu",
                             (unsigned long long)t->size, (unsigned long long)t->cut_frame);
        /* Frames end where the file does, so a cut between two frames is seen only by their count. */
        if (h->packed_frames && t->nchunks < h->packed_frames)
            return mt_errorf(err, -ENODATA, t->path, t->size,
                             "truncated: the file ends after %zu frames, its header counts %llu", t->nchunks,
                             (unsigned long long)h->packed_frames);
        return 0;
    }
    /* chunks_used is written at finish (and before an exec); the shim grows its file in whole chunks,
     * so the file of a killed process, too, ends at a chunk boundary. */
    if (h->chunks_used && t->size < h->chunks_used * (uint64_t)MT_CHUNK_SIZE)
        return mt_errorf(err, -ENODATA, t->path, t->size,
                         "truncated: the file ends at byte %llu, its header counts %llu chunks (%llu bytes)",
                         (unsigned long long)t->size, (unsigned long long)h->chunks_used,
                         (unsigned long long)(h->chunks_used * (uint64_t)MT_CHUNK_SIZE));
    if (t->size % MT_CHUNK_SIZE)
        return mt_errorf(err, -ENODATA, t->path, t->size,
                         "truncated: the file ends at byte %llu, inside a chunk (a trace is whole %u-byte chunks)",
                         (unsigned long long)t->size, MT_CHUNK_SIZE);
    /* A process recording into the file holds a lock on it until it finishes, execs or dies
     * (libmtrace/shim_file.c, lock_trace): its records so far are a prefix of what is to come. */
    if (!(h->flags & MT_HDR_COMPLETE)) {
        if (flock(t->fd, LOCK_SH | LOCK_NB) == 0)
            flock(t->fd, LOCK_UN);
        else if (errno == EWOULDBLOCK)
            return mt_errorf(err, -EBUSY, t->path, t->size,
                             "still being written: process %u is recording into it (its records so far end here); "
                             "read it once the process has ended",
                             h->pid);
    }
    return 0;
}
/* The header of the trace at `path`, read alone (no index of its chunks). 0, or -1. */
static int read_header_only(const char *path, mt_file_header_t *h)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    const ssize_t got = pread(fd, h, sizeof *h, 0);
    close(fd);
    return got == (ssize_t)sizeof *h && memcmp(h->magic, MT_TRACE_MAGIC, MT_TRACE_MAGIC_LEN) == 0 ? 0 : -1;
}

/* How long `name` is without a ".PID" or ".PID.N" suffix that the recorder appends (N < 100). */
static size_t strip_pid_suffix(const char *name, uint32_t pid)
{
    char tail[40];
    const size_t n = strlen(name);
    for (int k = 0; k < 100; k++) {
        const int len = k ? snprintf(tail, sizeof tail, ".%u.%d", pid, k) : snprintf(tail, sizeof tail, ".%u", pid);
        if ((size_t)len < n && !strcmp(name + n - (size_t)len, tail))
            return n - (size_t)len;
    }
    return n;
}

int mt_trace_continuation(const char *path, const mt_file_header_t *h, char *out, size_t cap)
{
    struct stat self;
    if (stat(path, &self) < 0)
        return 0;
    const char *slash = strrchr(path, '/');
    const size_t base_len = (size_t)(slash ? slash + 1 - path : 0) + strip_pid_suffix(slash ? slash + 1 : path, h->pid);
    char cand[4096];
    uint64_t best = UINT64_MAX;
    int found = 0;
    /* The recorder takes the names in this order, so the first missing one ends the list. */
    for (int k = 0; k < 100; k++) {
        const int len = k ? snprintf(cand, sizeof cand, "%.*s.%u.%d", (int)base_len, path, h->pid, k)
                          : snprintf(cand, sizeof cand, "%.*s.%u", (int)base_len, path, h->pid);
        struct stat st;
        if (len < 0 || (size_t)len >= sizeof cand || lstat(cand, &st) < 0)
            break;
        mt_file_header_t c;
        if ((st.st_dev == self.st_dev && st.st_ino == self.st_ino) || !S_ISREG(st.st_mode) ||
            read_header_only(cand, &c) < 0 || c.pid != h->pid || c.start_mono_ns < h->start_mono_ns ||
            c.start_mono_ns >= best)
            continue;
        if ((size_t)len >= cap)
            continue;
        best = c.start_mono_ns;
        memcpy(out, cand, (size_t)len + 1);
        found = 1;
    }
    return found;
}

const mt_chunk_ref_t *mt_trace_chunk(const mt_trace_t *t, size_t i)
{
    return i < t->nchunks ? &t->chunks[i] : NULL;
}
size_t mt_trace_thread_count(const mt_trace_t *t)
{
    return t->nthreads;
}
const mt_thread_info_t *mt_trace_thread(const mt_trace_t *t, size_t i)
{
    return i < t->nthreads ? &t->threads[i] : NULL;
}
const uint32_t *mt_trace_thread_chunks(const mt_trace_t *t)
{
    return t->thread_chunks;
}

const char *mt_trace_string(const mt_trace_t *t, unsigned tag, unsigned n, size_t *len)
{
    /* A cut file ends the list where its bytes end: a string cut short is not returned. */
    return mt_str_find(t->head + MT_HEADER_STRINGS_OFFSET, t->head + t->head_len, tag, n, len);
}

/* ---- shared clock reads ---------------------------------------------------------------------------
 * While a process has one thread, the recorder may read the clock every K calls (MT_STR_CLOCK's
 * reads=every-K-calls-while-one-thread): the K - 1 calls after a read carry its time. A cursor of
 * such a trace decodes such a run of calls ahead, up to the next record, and when that record
 * comes later than the run, gives the run's calls times spread evenly between the two: call i of a
 * run of n that starts at time T, ended by a record at T', takes T + (T' - T) * i / n. The first
 * call, every event and every record of another time keep theirs, and times still never decrease
 * within a thread. A run at the end of a chunk, one ended by a record of the same time (an event
 * the last call wrote), or one longer than LOOK_MAX keeps its times as stored. A lifetime read
 * between two calls of such runs is then off by the spread of call times within a run (calls
 * less than 1 us apart on average), where the stored times could be off by a whole run's span. */
#define LOOK_MAX 64u

struct mt_lookahead {
    unsigned n, i; /* records held, the next one to return */
    int end_rc;    /* what comes after them: 1 nothing yet, 0 the chunk's end, negative an error */
    mt_error_t err;
    mt_record_t rec[LOOK_MAX + 1];
};

int mt_cursor_init(mt_cursor_t *c, const mt_trace_t *t)
{
    memset(c, 0, sizeof *c);
    c->trace = t;
    c->spread_reads = t->shared_reads;
    c->buf = malloc(MT_CHUNK_SIZE);
    return c->buf ? 0 : -ENOMEM;
}

void mt_cursor_fini(mt_cursor_t *c)
{
    free(c->buf);
    c->buf = NULL;
    free(c->look);
    c->look = NULL;
}

/* What a load reads of an unsealed raw chunk before its records ask for more: the records of a
 * thread that made a hundred calls. */
#define FIRST_READ 4096u

int mt_cursor_load(mt_cursor_t *c, size_t chunk, mt_error_t *err)
{
    mt_trace_t *t = (mt_trace_t *)c->trace;
    if (c->look)
        c->look->n = c->look->i = 0, c->look->end_rc = 1;
    if (chunk >= t->nchunks)
        return mt_errorf(err, -EINVAL, t->path, 0, "no chunk %zu (the trace has %zu)", chunk, t->nchunks);
    const mt_chunk_ref_t *ref = &t->chunks[chunk];
    memcpy(c->buf, &ref->h, sizeof ref->h);
    size_t have;
    if (t->packed) {
        size_t got;
        mt_chunk_codec_t *k = c->codec ? c->codec : t->codec;
        const uint64_t zoff = ref->offset + MT_PACK_FRAME_HEADER_SIZE + MT_CHUNK_HEADER_SIZE;
        int rc = mt_pread_some(t->fd, k->zbuf, ref->stored, zoff, &got);
        if (rc < 0 || got < ref->stored)
            return mt_errorf(err, rc < 0 ? rc : -EIO, t->path, zoff, "expected %u bytes of compressed chunk",
                             ref->stored);
        size_t n, at;
        const char *why;
        if (ref->modeled) { /* a modeled frame (pack_model.c) */
            if (!k->model && !(k->model = mt_pack_model_new(t->hdr.version)))
                return mt_errorf(err, -ENOMEM, t->path, zoff, "out of memory");
            rc = mt_pack_model_decode(k->model, k->zbuf, ref->stored, c->buf + MT_CHUNK_HEADER_SIZE,
                                      MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE, &n, &at, &why);
            if (rc < 0)
                return mt_errorf(err, rc, t->path, zoff + at, "bad modeled frame: %s",
                                 rc == -ENOMEM ? "out of memory" : why);
        } else {
            n = ZSTD_decompressDCtx(k->dctx, c->buf + MT_CHUNK_HEADER_SIZE, MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE,
                                    k->zbuf, ref->stored);
        }
        if (ZSTD_isError(n))
            return mt_errorf(err, -EINVAL, t->path, zoff, "expected a zstd frame: %s", ZSTD_getErrorName(n));
        if (n != ref->h.used)
            return mt_errorf(err, -EINVAL, t->path, zoff, "frame holds %zu bytes, its header says %u", n, ref->h.used);
        have = n;
        c->base_offset = 0;
        c->complete = 1;
        c->unread = 0;
    } else {
        /* A sealed chunk: its used bytes. An unsealed one (a thread that ended, or a process that
         * was killed) says nothing of its end: its first FIRST_READ bytes, the rest when the
         * records reach it (cursor_read_rest). A thread that made a few calls leaves its chunk
         * almost empty, and a reader holds a chunk per thread: reading the whole 64 KiB of each
         * made mtrace report of 2000 short threads hold 128 MiB. */
        const int sealed = (ref->h.flags & MT_CHUNK_SEALED) != 0;
        uint32_t want = sealed && ref->h.used < ref->stored ? ref->h.used : ref->stored;
        if (!sealed && want > FIRST_READ)
            want = FIRST_READ;
        size_t got;
        const int rc =
            mt_pread_some(t->fd, c->buf + MT_CHUNK_HEADER_SIZE, want, ref->offset + MT_CHUNK_HEADER_SIZE, &got);
        if (rc < 0)
            return mt_errorf(err, rc, t->path, ref->offset, "read failed: %s", strerror(-rc));
        have = got;
        c->base_offset = ref->offset;
        c->unread = !sealed && got == want ? ref->stored - want : 0; /* cut short: nothing more to read */
        c->complete = got == MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE;
    }
    c->chunk = chunk;
    c->sealed = (ref->h.flags & MT_CHUNK_SEALED) != 0;
    c->p = c->buf + MT_CHUNK_HEADER_SIZE;
    c->end = c->p + have;
    if (c->sealed && ref->h.used <= have) {
        c->end = c->p + ref->h.used;
        c->complete = 1;
    }
    c->prev_time = ref->h.base_time;
    c->prev_ptr = 0;
    return 0;
}

size_t mt_cursor_used(const mt_cursor_t *c)
{
    return (size_t)(c->p - (c->buf + MT_CHUNK_HEADER_SIZE));
}

/* A varint at p of which at least 10 bytes are present, decoded without a bound check per byte.
 * Varints of up to 8 bytes (values below 2^56: every time delta, size and pointer delta of a real
 * trace) are decoded from one 8-byte load without a branch per byte: their lengths are random in
 * a trace, and a loop over the bytes is mispredicted about once per field. The one branch, on
 * "4 bytes or fewer", is taken the same way almost every time at a given field (sizes and times
 * are short; pointer deltas are long), and the short case needs no 64-bit constants. Accepts and
 * rejects exactly what mt_get_uvarint does. */
static inline int get_uvarint_unchecked(const uint8_t **pp, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t x = mt_load_u64(p);
    const uint64_t last_bytes = ~x & 0x8080808080808080ull; /* bit 7 clear: the varint's last byte */
    if (__builtin_expect(last_bytes == 0, 0))
        return mt_get_uvarint(pp, p + 10, out);                  /* 9 or 10 bytes, or too long */
    const unsigned stop = (unsigned)__builtin_ctzll(last_bytes); /* 8 * (length - 1) + 7 */
    *pp = p + stop / 8 + 1;
    x &= last_bytes ^ (last_bytes - 1); /* bits 0 to stop: the varint's bytes */
    /* Join the 7-bit groups (the masks drop the continuation bits): pairs of bytes into 14 bits,
     * pairs of those into 28, then 56. */
    if (stop < 32) {
        uint32_t y = (uint32_t)x;
        y = (y & 0x007f007fu) | ((y & 0x7f007f00u) >> 1);
        *out = (y & 0x00003fffu) | ((y & 0x3fff0000u) >> 2);
        return 0;
    }
    x = (x & 0x007f007f007f007full) | ((x & 0x7f007f007f007f00ull) >> 1);
    x = (x & 0x00003fff00003fffull) | ((x & 0x3fff00003fff0000ull) >> 2);
    *out = (x & 0x000000000fffffffull) | ((x & 0x0fffffff00000000ull) >> 4);
    return 0;
}

static __attribute__((noinline, cold)) int bad_low_bits(const mt_cursor_t *c, const uint8_t *q, mt_error_t *err)
{
    return mt_errorf(err, -EINVAL, c->trace->path, c->base_offset + (uint64_t)(q - c->buf),
                     "expected the low 4 bits of a pointer (1 to 15), found 0x%02x", *q);
}

_Static_assert(sizeof(mt_record_t) == 128, "clear_record() stores every field of mt_record_t: update it");

/* Zeroes a record field by field: as one block (memset, or a compound literal) GCC clears the
 * 128 bytes with `rep stos`, whose start-up cost, paid once per record, was a large part of the
 * decoding time. */
static inline void clear_record(mt_record_t *r)
{
    r->op = 0;
    r->flags = 0;
    r->time = 0;
    r->ptr = 0;
    r->result = 0;
    r->size = 0;
    r->count = 0;
    r->align = 0;
    r->usable = 0;
    r->stack = 0;
    r->nargs = 0;
    for (unsigned k = 0; k < 4; k++)
        r->arg[k] = 0;
    r->data = NULL;
    r->len = 0;
    r->offset = 0;
}

/* One test a record: the file's opcodes as bits, made when it is opened. */
static inline int is_opcode(const mt_trace_t *t, unsigned op)
{
    return (t->opcodes >> op) & 1;
}

/* ---- one record: decode_record, and a function per part of a record (doc/trace-format.md) ------ */

/* How decoding a part of a record went: DEC_OK; DEC_SHORT, the record runs past the bytes present
 * (short_record says what that means); or negative, damage (err says). */
enum { DEC_OK = 0, DEC_SHORT = 1 };

/* The record being decoded and how to read it. The functions that take it are always inlined into
 * decode_record, itself inlined twice (unchecked and checked), so that it lives in registers and
 * `unchecked` is a constant: they cost no more instructions per record than the one function they
 * replace (bench/RESULTS.md). */
typedef struct rec_in {
    mt_cursor_t *c;
    const uint8_t *q; /* the next byte */
    mt_error_t *err;
    int v1;        /* pointers in the syntax of version 1 */
    int unchecked; /* see decode_record */
} rec_in_t;

/* The file offset of the record being decoded, which errors name: c->p moves past it only once it
 * is decoded. Worked out again where an error needs it, so that it is not one more value to keep
 * through the decoding. */
static inline uint64_t record_offset(const mt_cursor_t *c)
{
    return c->base_offset + (uint64_t)(c->p - c->buf);
}

/* A uvarint field: DEC_SHORT where it runs past the bytes present (then *out and in->q are left as
 * they were). Decoded into a local and stored once, as the macro it replaces did: a store on each
 * of the varint decoder's exits cost instructions. */
static inline __attribute__((always_inline)) int get_u(rec_in_t *in, uint64_t *out)
{
    const uint8_t *q = in->q;
    uint64_t v;
    if ((in->unchecked ? get_uvarint_unchecked(&q, &v) : mt_get_uvarint(&q, in->c->end, &v)) < 0)
        return DEC_SHORT;
    in->q = q;
    *out = v;
    return DEC_OK;
}

/* An svarint field (zigzag). */
static inline __attribute__((always_inline)) int get_s(rec_in_t *in, int64_t *out)
{
    uint64_t u;
    if (get_u(in, &u) != DEC_OK)
        return DEC_SHORT;
    *out = mt_unzigzag(u);
    return DEC_OK;
}

/* A pointer field in the syntax of the file's version (see mt_put_ptr), after the chunk's previous
 * one. Version 2's low-bits byte must be 1 to 15. */
static inline __attribute__((always_inline)) int get_ptr(rec_in_t *in, uint64_t *out)
{
    mt_cursor_t *c = in->c;
    uint64_t u;
    if (get_u(in, &u) != DEC_OK)
        return DEC_SHORT;
    if (in->v1) {
        c->prev_ptr += (uint64_t)mt_unzigzag(u);
    } else {
        c->prev_ptr = mt_ptr_v2(c->prev_ptr, u);
        if (u & 1) {
            if (!in->unchecked && in->q >= c->end)
                return DEC_SHORT;
            if (!mt_ptr_low_ok(*in->q))
                return bad_low_bits(c, in->q, in->err);
            c->prev_ptr |= *in->q++;
        }
    }
    *out = c->prev_ptr;
    return DEC_OK;
}

/* The fields of a block call before its result, in their order in the record: the old pointer
 * (realloc, reallocarray), the alignment (memalign, posix_memalign, aligned_alloc), the count
 * (calloc, reallocarray), then the size (all of them). */
enum { BF_PTR = 1, BF_ALIGN = 2, BF_COUNT = 4 };

static inline __attribute__((always_inline)) int decode_block_args(rec_in_t *in, mt_record_t *r, const unsigned fields)
{
    int rc;
    if ((fields & BF_PTR) && (rc = get_ptr(in, &r->ptr)) != DEC_OK)
        return rc;
    if ((fields & BF_ALIGN) && get_u(in, &r->align) != DEC_OK)
        return DEC_SHORT;
    if ((fields & BF_COUNT) && get_u(in, &r->count) != DEC_OK)
        return DEC_SHORT;
    return get_u(in, &r->size);
}

/* glibc's blocks are 16-byte aligned on a 64-bit machine (MALLOC_ALIGNMENT, twice the size of a
 * pointer), and the only traces read here are of 64-bit processes (ptr_size is checked). */
#define MT_GLIBC_ALIGN_MASK 15u

/* Whether a block with this result and usable size can have come from the trace's allocator. Of
 * glibc's (MT_HDR_GLIBC_FLAGS: the usable size is from the chunk's size) a block is aligned and
 * never smaller than the bytes asked for: a record that breaks this is damaged, a flipped varint
 * that still decodes, but as other fields. Other allocators promise less (the recorder stores a
 * usable size of 0 where it knows none), and their records are taken as they are. */
static inline int block_possible(const mt_trace_t *t, const mt_record_t *r, uint64_t requested)
{
    return !(t->hdr.flags & MT_HDR_GLIBC_FLAGS) || (r->usable >= requested && !(r->result & MT_GLIBC_ALIGN_MASK));
}

static __attribute__((noinline, cold)) int bad_block(const rec_in_t *in, const mt_record_t *r, uint64_t requested)
{
    return mt_errorf(in->err, -EINVAL, in->c->trace->path, record_offset(in->c),
                     "%s of %llu bytes returned 0x%llx with %llu usable bytes: no block of this trace's allocator",
                     mt_op_name(r->op), (unsigned long long)requested, (unsigned long long)r->result,
                     (unsigned long long)r->usable);
}

/* What a call that returned a block returned, after its fields: the block and its slack (usable
 * less requested bytes), or with MT_RF_NULL no block, and for posix_memalign the error number. */
static inline __attribute__((always_inline)) int decode_block_result(rec_in_t *in, mt_record_t *r, const uint8_t b0)
{
    const unsigned op = b0 & MT_RF_OPMASK;
    if (!(b0 & MT_RF_NULL)) {
        const int rc = get_ptr(in, &r->result);
        if (rc != DEC_OK)
            return rc;
        int64_t slack;
        if (get_s(in, &slack) != DEC_OK)
            return DEC_SHORT;
        const uint64_t requested = mt_requested(op, r->count, r->size);
        r->usable = requested + (uint64_t)slack;
        /* One branch, not taken in a glibc trace; a trace of another allocator pays one more test
         * where it is. */
        if (__builtin_expect(slack < 0 || (r->result & MT_GLIBC_ALIGN_MASK), 0) &&
            !block_possible(in->c->trace, r, requested))
            return bad_block(in, r, requested);
    } else if (op == MT_OP_POSIX_MEMALIGN) {
        uint64_t e;
        if (get_u(in, &e) != DEC_OK)
            return DEC_SHORT;
        r->arg[0] = (int64_t)e;
        r->nargs = 1;
    }
    return DEC_OK;
}

/* A call that returns no block carries no flag of one. Tested after its fields: a record that runs
 * past the bytes present is the end of them, whatever its flags. */
static inline __attribute__((always_inline)) int check_no_block_flags(const rec_in_t *in, const uint8_t b0)
{
    if (b0 & (MT_RF_NULL | MT_RF_MMAPPED))
        return mt_errorf(in->err, -EINVAL, in->c->trace->path, record_offset(in->c),
                         "%s record 0x%02x carries block flags", mt_op_name(b0 & MT_RF_OPMASK), b0);
    return DEC_OK;
}

/* free: the pointer; malloc_usable_size (`has_size`): the pointer and the value returned. */
static inline __attribute__((always_inline)) int decode_free_call(rec_in_t *in, mt_record_t *r, const uint8_t b0,
                                                                  const int has_size)
{
    const int rc = get_ptr(in, &r->ptr);
    if (rc != DEC_OK)
        return rc;
    if (has_size && get_u(in, &r->size) != DEC_OK)
        return DEC_SHORT;
    return check_no_block_flags(in, b0);
}

/* mallopt: param, value and the value returned, svarints, in arg[0..2]. */
static inline __attribute__((always_inline)) int decode_mallopt(rec_in_t *in, mt_record_t *r, const uint8_t b0)
{
    if (get_s(in, &r->arg[0]) != DEC_OK || get_s(in, &r->arg[1]) != DEC_OK || get_s(in, &r->arg[2]) != DEC_OK)
        return DEC_SHORT;
    r->nargs = 3;
    return check_no_block_flags(in, b0);
}

/* malloc_trim: pad (a uvarint) and the value returned (an svarint), in arg[0..1]. */
static inline __attribute__((always_inline)) int decode_malloc_trim(rec_in_t *in, mt_record_t *r, const uint8_t b0)
{
    uint64_t pad;
    if (get_u(in, &pad) != DEC_OK)
        return DEC_SHORT;
    r->arg[0] = (int64_t)pad;
    if (get_s(in, &r->arg[1]) != DEC_OK)
        return DEC_SHORT;
    r->nargs = 2;
    return check_no_block_flags(in, b0);
}

/* The fields of a call record after its time, by opcode: those of a block call, then what it
 * returned (one decode_block_result for all of them); those of the others. */
static inline __attribute__((always_inline)) int decode_call_fields(rec_in_t *in, mt_record_t *r, const uint8_t b0)
{
    int rc;
    switch (b0 & MT_RF_OPMASK) {
    case MT_OP_MALLOC:
    case MT_OP_VALLOC:
    case MT_OP_PVALLOC:
        rc = decode_block_args(in, r, 0);
        break;
    case MT_OP_CALLOC:
        rc = decode_block_args(in, r, BF_COUNT);
        break;
    case MT_OP_REALLOC:
        rc = decode_block_args(in, r, BF_PTR);
        break;
    case MT_OP_REALLOCARRAY:
        rc = decode_block_args(in, r, BF_PTR | BF_COUNT);
        break;
    case MT_OP_MEMALIGN:
    case MT_OP_ALIGNED_ALLOC:
    case MT_OP_POSIX_MEMALIGN:
        rc = decode_block_args(in, r, BF_ALIGN);
        break;
    case MT_OP_FREE:
        return decode_free_call(in, r, b0, 0);
    case MT_OP_USABLE_SIZE:
        return decode_free_call(in, r, b0, 1);
    case MT_OP_MALLOPT:
        return decode_mallopt(in, r, b0);
    case MT_OP_MALLOC_TRIM:
        return decode_malloc_trim(in, r, b0);
    default:
        return mt_errorf(in->err, -EINVAL, in->c->trace->path, record_offset(in->c),
                         "expected a record opcode, found 0x%02x", b0);
    }
    return rc != DEC_OK ? rc : decode_block_result(in, r, b0);
}

/* A call's extension flags byte (MT_RF_EXT). */
static inline __attribute__((always_inline)) int decode_ext_flags(rec_in_t *in, mt_record_t *r)
{
    if (!in->unchecked && in->q >= in->c->end)
        return DEC_SHORT;
    const uint8_t ext = *in->q++;
    if (ext & ~(MT_XF_HEAP_GREW | MT_XF_STACK))
        return mt_errorf(in->err, -EINVAL, in->c->trace->path, record_offset(in->c) + 1,
                         "unknown extension flags 0x%02x", ext);
    if (ext & MT_XF_HEAP_GREW)
        r->flags |= MT_FLAG_HEAP_GREW;
    if (ext & MT_XF_STACK)
        r->flags |= MT_FLAG_STACK;
    return DEC_OK;
}

/* A call record after its first byte b0: the extension flags, the time delta, the fields of its
 * opcode, and the stack id where the extension flags say one follows. */
static inline __attribute__((always_inline)) int decode_call(rec_in_t *in, mt_record_t *r, const uint8_t b0)
{
    int rc;
    if ((b0 & MT_RF_EXT) && (rc = decode_ext_flags(in, r)) != DEC_OK)
        return rc;
    if (b0 & MT_RF_NULL)
        r->flags |= MT_FLAG_NULL;
    if (b0 & MT_RF_MMAPPED)
        r->flags |= MT_FLAG_MMAPPED;
    int64_t dt;
    if (get_s(in, &dt) != DEC_OK)
        return DEC_SHORT;
    r->time = in->c->prev_time + (uint64_t)dt;
    if ((rc = decode_call_fields(in, r, b0)) != DEC_OK)
        return rc;
    if (r->flags & MT_FLAG_STACK) {
        uint64_t id;
        if (get_u(in, &id) != DEC_OK)
            return DEC_SHORT;
        r->stack = (uint32_t)id;
    }
    return DEC_OK;
}

/* Up to four varints of an event's payload, [r->data, in->q), into arg[]. */
static inline __attribute__((always_inline)) int decode_event_args(const rec_in_t *in, mt_record_t *r,
                                                                   const unsigned op)
{
    const uint8_t *pq = r->data, *pend = in->q;
    while (pq < pend && r->nargs < 4) {
        uint64_t v;
        if (mt_get_uvarint(&pq, pend, &v) < 0)
            return mt_errorf(in->err, -EINVAL, in->c->trace->path, record_offset(in->c),
                             "bad varint in %s event payload", mt_op_name(op));
        r->arg[r->nargs++] = (int64_t)v;
    }
    return DEC_OK;
}

/* An event record after its first byte b0: the time delta, the payload's length, the payload. The
 * payload is bytes for MARK and EXEC, the layouts of "Callsites" for STACK and MODULE (read by
 * mt_decode_stack and mt_decode_module), and varints, read into arg[], for the others. */
static inline __attribute__((always_inline)) int decode_event(rec_in_t *in, mt_record_t *r, const uint8_t b0)
{
    const unsigned op = b0 & MT_RF_OPMASK;
    if (b0 & ~MT_RF_OPMASK)
        return mt_errorf(in->err, -EINVAL, in->c->trace->path, record_offset(in->c),
                         "event record 0x%02x carries call flags", b0);
    int64_t dt;
    uint64_t len;
    if (get_s(in, &dt) != DEC_OK || get_u(in, &len) != DEC_OK || len > (uint64_t)(in->c->end - in->q))
        return DEC_SHORT;
    r->time = in->c->prev_time + (uint64_t)dt;
    r->data = in->q;
    r->len = (uint32_t)len;
    in->q += len;
    if (op == MT_EV_MARK || op == MT_EV_EXEC || op == MT_EV_STACK || op == MT_EV_MODULE)
        return DEC_OK;
    return decode_event_args(in, r, op);
}

/* The record at c->p runs past the bytes present: in a cut file or a chunk being written that is the
 * end, not damage; inside a sealed, complete chunk it is damage. The pointer base goes back to what
 * it was before the record. */
static __attribute__((noinline, cold)) int short_record(mt_cursor_t *c, uint64_t saved_ptr, mt_error_t *err)
{
    const unsigned op = *c->p & MT_RF_OPMASK;
    c->prev_ptr = saved_ptr;
    if (c->unread)
        return 2; /* the rest of the chunk is still to read: read it, and decode this record again */
    if (c->sealed && c->complete)
        return mt_errorf(err, -EINVAL, c->trace->path, record_offset(c),
                         "%s record runs past the end of its sealed chunk", mt_op_name(op));
    c->end = c->p; /* the cut or the crash ended the chunk here */
    return 0;
}

/* The record at c->p, which is present and not the end marker: 1, the record is in r; 2 or 0 where
 * it runs past the bytes present (short_record); negative on damage (err says). `unchecked`: at
 * least MT_MAX_CALL_RECORD bytes are present, so no varint of a call record, nor an event's time
 * and length, can run past them; only an event's payload is checked. Inlined twice with a
 * constant. */
static inline __attribute__((always_inline)) int decode_record(mt_cursor_t *restrict c, mt_record_t *restrict r,
                                                               mt_error_t *err, const int unchecked)
{
    const mt_trace_t *t = c->trace;
    rec_in_t in = { .c = c, .q = c->p, .err = err, .v1 = t->hdr.version < 2, .unchecked = unchecked };
    const uint64_t saved_ptr = c->prev_ptr;
    clear_record(r);
    r->offset = record_offset(c);
    const uint8_t b0 = *in.q++;
    const unsigned op = b0 & MT_RF_OPMASK;
    r->op = (uint8_t)op;
    if (!is_opcode(t, op))
        return mt_errorf(err, -EINVAL, t->path, record_offset(c), "expected a record opcode, found 0x%02x", b0);
    const int rc = op >= MT_FIRST_EVENT ? decode_event(&in, r, b0) : decode_call(&in, r, b0);
    if (rc != DEC_OK)
        return rc < 0 ? rc : short_record(c, saved_ptr, err);
    c->prev_time = r->time;
    c->p = in.q;
    return 1;
}

/* Reads the rest of an unsealed raw chunk, after the bytes read so far. 0, or negative (err says). */
static __attribute__((noinline, cold)) int cursor_read_rest(mt_cursor_t *c, mt_error_t *err)
{
    const mt_trace_t *t = c->trace;
    const size_t at = (size_t)(c->end - c->buf);
    size_t got;
    const uint32_t want = c->unread;
    c->unread = 0;
    const int rc = mt_pread_some(t->fd, (uint8_t *)c->end, want, c->base_offset + at, &got);
    if (rc < 0)
        return mt_errorf(err, rc, t->path, c->base_offset + at, "read failed: %s", strerror(-rc));
    c->end += got;
    c->complete = c->end == c->buf + MT_CHUNK_SIZE;
    return 0;
}

/* A zero first byte at c->p, or the end of the bytes present: the chunk's records end here. A
 * sealed chunk's records end exactly at `used` (the writer stores it as the end of its last record),
 * and its bytes up to there are all records, also in a file cut short: a zero before it is a damaged
 * record that decoded as a shorter one and left the decoder in the middle of the next. Reading on
 * would drop the rest of the chunk without a word. */
static __attribute__((noinline, cold)) int records_end(const mt_cursor_t *c, mt_error_t *err)
{
    if (!c->sealed || c->p >= c->end)
        return 0;
    return mt_errorf(err, -EINVAL, c->trace->path, record_offset(c),
                     "expected a record, found a zero byte %zu bytes before the end of the sealed chunk's "
                     "records (its header's used): a record before it is damaged",
                     (size_t)(c->end - c->p));
}

/* The next record as stored. */
static inline __attribute__((always_inline)) int cursor_next_stored(mt_cursor_t *c, mt_record_t *r, mt_error_t *err)
{
    for (;;) {
        int rc;
        /* All but the last records of a chunk take the unchecked path. */
        if ((size_t)(c->end - c->p) >= MT_MAX_CALL_RECORD)
            rc = *c->p ? decode_record(c, r, err, 1) : records_end(c, err);
        else if (c->unread)
            rc = 2;
        else
            rc = c->p < c->end && *c->p ? decode_record(c, r, err, 0) : records_end(c, err);
        if (rc != 2)
            return rc;
        if ((rc = cursor_read_rest(c, err)) < 0)
            return rc;
    }
}

/* The next record of a trace with shared clock reads: from the records held, else decoded ahead
 * (see "shared clock reads" above). */
static __attribute__((noinline)) int cursor_next_spread(mt_cursor_t *c, mt_record_t *r, mt_error_t *err)
{
    struct mt_lookahead *k = c->look;
    if (!k) {
        if (!(k = c->look = malloc(sizeof *k)))
            return mt_errorf(err, -ENOMEM, c->trace->path, 0, "out of memory");
        k->n = k->i = 0;
        k->end_rc = 1;
    }
    if (k->i < k->n) {
        *r = k->rec[k->i++];
        /* The record that ended a run, when it is a call with more to read after it, starts the
         * next run: its time is a read's, as stored. */
        if (k->i < k->n || k->end_rc <= 0 || r->op >= MT_FIRST_EVENT)
            return 1;
    } else if (k->end_rc <= 0) { /* the end or the damage found while decoding ahead */
        const int rc = k->end_rc;
        if (rc < 0)
            *err = k->err;
        k->end_rc = 1;
        return rc;
    } else {
        const int rc = cursor_next_stored(c, r, err);
        if (rc <= 0 || r->op >= MT_FIRST_EVENT)
            return rc;
    }
    /* a call: are the next ones of the same time? */
    k->rec[0] = *r;
    unsigned n = 1;
    for (;;) {
        mt_record_t *x = &k->rec[n];
        const int xr = cursor_next_stored(c, x, &k->err);
        if (xr <= 0) {
            k->end_rc = xr;
            break;
        }
        n++;
        if (x->time != r->time || x->op >= MT_FIRST_EVENT || n == LOOK_MAX + 1)
            break;
    }
    /* rec[0 .. n) are held; rec[0 .. run) the calls of time T, and rec[run] (if held) what ended them */
    const unsigned last = n - 1;
    const int ended = k->end_rc > 0 && k->rec[last].time > r->time;
    if (ended && last > 1) {
        const uint64_t t0 = r->time, span = k->rec[last].time - t0;
        for (unsigned i = 1; i < last; i++)
            k->rec[i].time = t0 + (uint64_t)((unsigned __int128)span * i / last);
    }
    k->n = n;
    k->i = 1; /* rec[0] is r */
    return 1;
}

/* mt_cursor_next's body, inlined into mt_thread_cursor_next too: the converter calls that once per
 * record, and a second call level there cost about 20 instructions a record. */
static inline __attribute__((always_inline)) int cursor_next(mt_cursor_t *c, mt_record_t *r, mt_error_t *err)
{
    if (__builtin_expect(c->spread_reads, 0))
        return cursor_next_spread(c, r, err);
    return cursor_next_stored(c, r, err);
}

int mt_pages_prints(const mt_record_t *r, mt_pages_prints_t *out)
{
    if (r->op != MT_EV_PAGES || !r->data)
        return 0;
    const uint8_t *q = r->data, *end = r->data + r->len;
    uint64_t v[7];
    for (unsigned k = 0; k < 7; k++)
        if (mt_get_uvarint(&q, end, &v[k]) < 0)
            return 0;
    if (!v[4] || v[5] > v[4] || v[6] > v[4] - v[5])
        return 0;
    *out = (mt_pages_prints_t){ .sampled = v[4], .changed = v[5], .zero = v[6] };
    return 1;
}

int mt_pages_edge_written(const mt_record_t *r)
{
    if (r->op != MT_EV_PAGES || !r->data)
        return -1;
    const uint8_t *q = r->data, *end = r->data + r->len;
    uint64_t v[5];
    for (unsigned k = 0; k < 5; k++)
        if (mt_get_uvarint(&q, end, &v[k]) < 0)
            return -1;
    return (v[3] & MT_PAGES_EDGE) && v[4] <= 1 ? (int)v[4] : -1;
}

int mt_cursor_next(mt_cursor_t *c, mt_record_t *r, mt_error_t *err)
{
    return cursor_next(c, r, err);
}

int mt_thread_cursor_init(mt_thread_cursor_t *tc, const mt_trace_t *t, size_t thread_index)
{
    memset(tc, 0, sizeof *tc);
    tc->info = mt_trace_thread(t, thread_index);
    if (!tc->info)
        return -EINVAL;
    return mt_cursor_init(&tc->c, t);
}

/* After a rewind: reads past tc->skip records of the chunk just loaded (the rest in the next ones).
 * 0, or negative on damage. */
static __attribute__((noinline, cold)) int skip_records(mt_thread_cursor_t *tc, mt_record_t *r, mt_error_t *err)
{
    while (tc->skip) {
        const int rc = cursor_next(&tc->c, r, err);
        if (rc <= 0) {
            if (rc == 0)
                tc->loaded = 0;
            return rc;
        }
        tc->skip--;
    }
    return 0;
}

int mt_thread_cursor_next(mt_thread_cursor_t *tc, mt_record_t *r, mt_error_t *err)
{
    for (;;) {
        if (tc->loaded) {
            const int rc = cursor_next(&tc->c, r, err);
            if (rc != 0)
                return rc;
            tc->loaded = 0;
        }
        if (tc->next >= tc->info->nchunks)
            return 0;
        if (!tc->c.buf && !(tc->c.buf = malloc(MT_CHUNK_SIZE))) /* rewound */
            return mt_errorf(err, -ENOMEM, tc->c.trace->path, 0, "out of memory");
        const uint32_t idx = tc->c.trace->thread_chunks[tc->info->first + tc->next++];
        int rc = mt_cursor_load(&tc->c, idx, err);
        if (rc < 0)
            return rc;
        tc->loaded = 1;
        if (__builtin_expect(tc->skip != 0, 0) && (rc = skip_records(tc, r, err)) < 0)
            return rc;
    }
}

void mt_thread_cursor_rewind(mt_thread_cursor_t *tc, uint16_t skip)
{
    mt_cursor_fini(&tc->c);
    tc->next = 0;
    tc->loaded = 0;
    tc->skip = skip;
}

void mt_thread_cursor_fini(mt_thread_cursor_t *tc)
{
    mt_cursor_fini(&tc->c);
}

void mt_trace_note_rss(mt_trace_t *t, const mt_record_t *r)
{
    if (r->op == MT_EV_RSS && r->nargs >= 4 && r->time > t->est_time)
        t->est_time = r->time, t->est_mono = (uint64_t)r->arg[3];
}

double mt_trace_ticks_per_sec(const mt_trace_t *t)
{
    const mt_file_header_t *h = &t->hdr;
    if (h->ticks_per_sec)
        return (double)h->ticks_per_sec;
    if (!(h->flags & MT_HDR_TIME_TSC))
        return 1e9;
    if (t->est_time > h->start_time && t->est_mono > h->start_mono_ns)
        return (double)(t->est_time - h->start_time) * 1e9 / (double)(t->est_mono - h->start_mono_ns);
    return 0;
}

int mt_decode_stack(const mt_record_t *r, mt_stack_def_t *s)
{
    const uint8_t *p = r->data, *end = r->data + r->len;
    uint64_t id, n;
    if (r->op != MT_EV_STACK || mt_get_uvarint(&p, end, &id) < 0 || mt_get_uvarint(&p, end, &n) < 0 ||
        n > MT_MAX_FRAMES || id == 0 || id > UINT32_MAX)
        return -EINVAL;
    s->id = (uint32_t)id;
    s->nframes = (uint32_t)n;
    uint64_t prev = 0;
    for (uint32_t i = 0; i < s->nframes; i++) {
        uint64_t d;
        if (mt_get_uvarint(&p, end, &d) < 0)
            return -EINVAL;
        prev += (uint64_t)mt_unzigzag(d);
        s->frames[i] = prev;
    }
    return p == end ? 0 : -EINVAL;
}

int mt_decode_module(const mt_record_t *r, mt_module_def_t *m)
{
    const uint8_t *p = r->data, *end = r->data + r->len;
    uint64_t n, idlen;
    memset(m, 0, sizeof *m);
    if (r->op != MT_EV_MODULE || mt_get_uvarint(&p, end, &m->generation) < 0 || mt_get_uvarint(&p, end, &m->base) < 0 ||
        mt_get_uvarint(&p, end, &n) < 0 || n > MT_MAX_SEGMENTS)
        return -EINVAL;
    m->nseg = (uint32_t)n;
    for (uint32_t i = 0; i < m->nseg; i++)
        if (mt_get_uvarint(&p, end, &m->seg[i].vaddr) < 0 || mt_get_uvarint(&p, end, &m->seg[i].memsz) < 0 ||
            mt_get_uvarint(&p, end, &m->seg[i].offset) < 0)
            return -EINVAL;
    if (mt_get_uvarint(&p, end, &idlen) < 0 || idlen > sizeof m->build_id || idlen > (uint64_t)(end - p))
        return -EINVAL;
    m->build_id_len = (uint32_t)idlen;
    memcpy(m->build_id, p, idlen);
    p += idlen;
    m->name = (const char *)p;
    m->name_len = (uint32_t)(end - p);
    return 0;
}
