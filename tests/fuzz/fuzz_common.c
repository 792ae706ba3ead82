/* Helpers shared by the fuzz targets (fuzz.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "fuzz.h"
#include "mtrace/trace_reader.h"
#include "mtrace/workload.h"
#include "mtrace/trace_format.h" /* MT_PACK_MODEL_MAGIC */

#define ZSTD_MAGIC_LE 0xfd2fb528u
#define MAX_EXPANDED_CHUNKS 64u /* a compact raw trace expands to at most this many chunks */
#define MAX_MAPPED_FRAMES 4096u

void fz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz: invariant broken: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

/* ---- files ------------------------------------------------------------------------------------- */

static int memfds[4] = { -1, -1, -1, -1 };
static char memfd_paths[4][64];

const char *fz_memfile(int slot, const uint8_t *data, size_t size)
{
    if (slot < 0 || slot >= 4)
        fz_fail("memfile slot %d", slot);
    if (memfds[slot] < 0) {
        memfds[slot] = memfd_create("mtrace-fuzz", MFD_CLOEXEC);
        if (memfds[slot] < 0)
            fz_fail("memfd_create: %s", strerror(errno));
        snprintf(memfd_paths[slot], sizeof memfd_paths[slot], "/proc/self/fd/%d", memfds[slot]);
    }
    const int fd = memfds[slot];
    if (ftruncate(fd, 0) < 0)
        fz_fail("ftruncate: %s", strerror(errno));
    size_t off = 0;
    while (off < size) {
        const ssize_t w = pwrite(fd, data + off, size - off, (off_t)off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            fz_fail("writing the memory file: %s", strerror(errno));
        }
        off += (size_t)w;
    }
    return memfd_paths[slot];
}

static char tmpdir[4096];

/* Removes a directory of the targets' outputs (flat: the files the targets write). */
static void remove_dir(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            unlinkat(dirfd(d), e->d_name, 0);
    if (d)
        closedir(d);
    rmdir(path);
}

static void remove_tmpdir(void)
{
    if (tmpdir[0])
        remove_dir(tmpdir);
}

const char *fz_tmpdir(void)
{
    if (tmpdir[0])
        return tmpdir;
    /* Memory-backed when there is one: the workload writer fsyncs its output. */
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    /* libFuzzer ends a process with _exit on a crash, a timeout or a merge step, so atexit does not
     * always run: named by pid, the directories of processes that are gone are removed here. */
    DIR *d = opendir(base);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char *end;
        if (strncmp(e->d_name, "mtrace-fuzz.", 12) != 0)
            continue;
        const long pid = strtol(e->d_name + 12, &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char stale[4096];
        snprintf(stale, sizeof stale, "%s/%s", base, e->d_name);
        remove_dir(stale);
    }
    if (d)
        closedir(d);
    snprintf(tmpdir, sizeof tmpdir, "%s/mtrace-fuzz.%ld", base, (long)getpid());
    remove_dir(tmpdir); /* left by an earlier process with this pid */
    if (mkdir(tmpdir, 0700) < 0)
        fz_fail("mkdir %s: %s", tmpdir, strerror(errno));
    atexit(remove_tmpdir);
    return tmpdir;
}

/* ---- buffers ----------------------------------------------------------------------------------- */

static void reserve(fz_buf_t *b, size_t len)
{
    if (b->cap - b->n >= len)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->n < len)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        fz_fail("out of memory (%zu bytes)", cap);
    b->p = p;
    b->cap = cap;
}

void fz_put(fz_buf_t *b, const void *data, size_t len)
{
    if (!len)
        return;
    reserve(b, len);
    memcpy(b->p + b->n, data, len);
    b->n += len;
}

void fz_zero(fz_buf_t *b, size_t len)
{
    if (!len)
        return;
    reserve(b, len);
    memset(b->p + b->n, 0, len);
    b->n += len;
}

void fz_buf_free(fz_buf_t *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ---- zstd -------------------------------------------------------------------------------------- */

static ZSTD_CCtx *cctx;
static ZSTD_DCtx *dctx;

static int is_zstd(const uint8_t *p, size_t n)
{
    return n >= 4 && mt_load_u32(p) == ZSTD_MAGIC_LE;
}

/* Appends the zstd compression of data (level 1) and returns its size. */
static size_t put_compressed(fz_buf_t *b, const uint8_t *data, size_t len)
{
    if (!cctx && !(cctx = ZSTD_createCCtx()))
        fz_fail("ZSTD_createCCtx");
    const size_t bound = ZSTD_compressBound(len);
    reserve(b, bound);
    const size_t z = ZSTD_compressCCtx(cctx, b->p + b->n, bound, data, len, 1);
    if (ZSTD_isError(z))
        fz_fail("zstd: %s", ZSTD_getErrorName(z));
    b->n += z;
    return z;
}

/* Appends the decompression of a zstd frame of at most cap bytes; returns its size or -1. */
static long long put_decompressed(fz_buf_t *b, const uint8_t *data, size_t len, size_t cap)
{
    if (!dctx && !(dctx = ZSTD_createDCtx()))
        fz_fail("ZSTD_createDCtx");
    reserve(b, cap);
    const size_t n = ZSTD_decompressDCtx(dctx, b->p + b->n, cap, data, len);
    if (ZSTD_isError(n))
        return -1;
    b->n += n;
    return (long long)n;
}

/* ---- traces ------------------------------------------------------------------------------------ */

#define TRACE_FRAME_HEAD (MT_PACK_FRAME_HEADER_SIZE + MT_CHUNK_HEADER_SIZE)

void fz_trace_expand(const uint8_t *in, size_t n, int force_packed, fz_buf_t *out)
{
    out->n = 0;
    mt_file_header_t h;
    if (n < sizeof h || memcmp(in, MT_TRACE_MAGIC, MT_TRACE_MAGIC_LEN) != 0) {
        fz_put(out, in, n);
        return;
    }
    memcpy(&h, in, sizeof h);
    if (force_packed)
        h.flags |= MT_HDR_PACKED;
    const uint64_t doff = h.data_offset;
    if (doff < MT_HEADER_STRINGS_OFFSET || doff > MT_CHUNK_SIZE || doff > n) {
        fz_put(out, &h, sizeof h);
        fz_put(out, in + sizeof h, n - sizeof h);
        return;
    }
    const int packed = (h.flags & MT_HDR_PACKED) != 0;
    if (!packed)
        h.data_offset = 0;
    fz_put(out, &h, sizeof h);
    fz_put(out, in + sizeof h, doff - sizeof h);
    if (!packed)
        fz_zero(out, MT_CHUNK_SIZE - doff);
    size_t p = doff;
    unsigned nframes = 0;
    /* Modeled frames ("MTCM") are kept as they are, in a packed trace only. */
    while (n - p >= TRACE_FRAME_HEAD &&
           (mt_load_u32(in + p) == MT_PACK_FRAME_MAGIC || (packed && mt_load_u32(in + p) == MT_PACK_MODEL_MAGIC))) {
        const uint32_t len = mt_load_u32(in + p + 4);
        const uint8_t *payload = in + p + TRACE_FRAME_HEAD;
        const size_t have = n - p - TRACE_FRAME_HEAD;
        mt_chunk_header_t ch;
        memcpy(&ch, in + p + MT_PACK_FRAME_HEADER_SIZE, sizeof ch);
        if (packed) {
            if (len > have)
                break; /* a cut frame: kept as it is below */
            if (is_zstd(payload, len) || mt_load_u32(in + p) == MT_PACK_MODEL_MAGIC) {
                fz_put(out, in + p, TRACE_FRAME_HEAD + len);
            } else {
                const size_t at = out->n;
                ch.used = len;
                fz_zero(out, MT_PACK_FRAME_HEADER_SIZE);
                fz_put(out, &ch, sizeof ch);
                const uint32_t z = (uint32_t)put_compressed(out, payload, len);
                const uint32_t magic = MT_PACK_FRAME_MAGIC;
                memcpy(out->p + at, &magic, 4);
                memcpy(out->p + at + 4, &z, 4);
            }
            p += TRACE_FRAME_HEAD + len;
        } else {
            if (nframes == MAX_EXPANDED_CHUNKS)
                return;
            /* A cut frame is a cut chunk: the file ends inside it. */
            const int cut = len > have;
            const size_t take = cut ? have : len;
            const size_t keep =
                take < MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE ? take : MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE;
            fz_put(out, &ch, sizeof ch);
            fz_put(out, payload, keep);
            p += TRACE_FRAME_HEAD + take;
            if (cut || p == n)
                return;
            fz_zero(out, MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE - keep);
        }
        nframes++;
    }
    /* Bytes that are not a frame: kept (a packed trace then fails on them; in a raw one they are a
     * chunk of their own, cut where they end). */
    fz_put(out, in + p, !packed && n - p > MT_CHUNK_SIZE ? MT_CHUNK_SIZE : n - p);
}

int fz_trace_compact(const char *path, fz_buf_t *out)
{
    out->n = 0;
    mt_trace_t *t;
    mt_error_t err;
    if (mt_trace_open(&t, path, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    uint8_t *head = calloc(1, MT_CHUNK_SIZE);
    if (fd < 0 || !head || pread(fd, head, MT_CHUNK_SIZE, 0) < (ssize_t)sizeof(mt_file_header_t)) {
        fprintf(stderr, "%s: cannot read the header\n", path);
        goto fail;
    }
    mt_file_header_t h;
    memcpy(&h, head, sizeof h);
    if (mt_trace_is_packed(t)) {
        /* Header as it is, then each frame with its records decompressed. */
        fz_put(out, head, h.data_offset);
        for (size_t i = 0; i < mt_trace_chunk_count(t); i++) {
            const mt_chunk_ref_t *ref = mt_trace_chunk(t, i);
            uint8_t *z = malloc(ref->stored ? ref->stored : 1);
            if (!z || pread(fd, z, ref->stored, (off_t)(ref->offset + TRACE_FRAME_HEAD)) != (ssize_t)ref->stored) {
                free(z);
                fprintf(stderr, "%s: cannot read frame %zu\n", path, i);
                goto fail;
            }
            uint8_t fh[MT_PACK_FRAME_HEADER_SIZE];
            if (pread(fd, fh, sizeof fh, (off_t)ref->offset) == (ssize_t)sizeof fh &&
                mt_load_u32(fh) == MT_PACK_MODEL_MAGIC) { /* a modeled frame stays as it is */
                fz_put(out, fh, sizeof fh);
                fz_put(out, &ref->h, sizeof ref->h);
                fz_put(out, z, ref->stored);
                free(z);
                continue;
            }
            const size_t at = out->n;
            fz_zero(out, MT_PACK_FRAME_HEADER_SIZE);
            fz_put(out, &ref->h, sizeof ref->h);
            const long long len = put_decompressed(out, z, ref->stored, MT_CHUNK_SIZE);
            free(z);
            if (len < 0) {
                fprintf(stderr, "%s: frame %zu does not decompress\n", path, i);
                goto fail;
            }
            const uint32_t magic = MT_PACK_FRAME_MAGIC, l = (uint32_t)len;
            memcpy(out->p + at, &magic, 4);
            memcpy(out->p + at + 4, &l, 4);
        }
    } else {
        /* The header and its strings up to the end tag, as mtrace pack keeps them. */
        size_t end = MT_HEADER_STRINGS_OFFSET;
        while (end + 4 <= MT_CHUNK_SIZE) {
            uint16_t tag, len;
            memcpy(&tag, head + end, 2);
            memcpy(&len, head + end + 2, 2);
            if (tag == MT_STR_END || end + 4 + len > MT_CHUNK_SIZE)
                break;
            end += 4 + (size_t)len;
        }
        end = end + 4 <= MT_CHUNK_SIZE ? end : MT_CHUNK_SIZE - 4;
        memset(head + end, 0, 4);
        end = (end + 4 + 7) & ~(size_t)7;
        h.data_offset = end;
        memcpy(head, &h, sizeof h);
        fz_put(out, head, end);
        mt_cursor_t c;
        if (mt_cursor_init(&c, t) < 0)
            goto fail;
        for (size_t i = 0; i < mt_trace_chunk_count(t); i++) {
            mt_record_t r;
            if (mt_cursor_load(&c, i, &err) < 0)
                break;
            while (mt_cursor_next(&c, &r, &err) > 0) {
            }
            const uint32_t used = (uint32_t)mt_cursor_used(&c);
            const uint32_t magic = MT_PACK_FRAME_MAGIC;
            fz_put(out, &magic, 4);
            fz_put(out, &used, 4);
            fz_put(out, &mt_trace_chunk(t, i)->h, MT_CHUNK_HEADER_SIZE);
            fz_put(out, c.buf + MT_CHUNK_HEADER_SIZE, used);
        }
        mt_cursor_fini(&c);
    }
    close(fd);
    free(head);
    mt_trace_close(t);
    return 0;
fail:
    if (fd >= 0)
        close(fd);
    free(head);
    mt_trace_close(t);
    return -1;
}

/* A sum of every field and payload byte of a record, its stack's and module's decoded too: the
 * fuzzer's reads of all that a decoder gave, which must stay in bounds. */
static uint64_t record_sum(const mt_record_t *r)
{
    uint64_t sink = r->op + r->time + r->ptr + r->result + r->size + r->usable + r->stack + r->len;
    for (uint32_t k = 0; k < r->nargs; k++)
        sink += (uint64_t)r->arg[k];
    if (r->op == MT_EV_STACK) {
        mt_stack_def_t s;
        if (mt_decode_stack(r, &s) == 0) {
            if (s.nframes > MT_MAX_FRAMES)
                fz_fail("stack with %u frames", s.nframes);
            for (uint32_t k = 0; k < s.nframes; k++)
                sink += s.frames[k];
        }
    } else if (r->op == MT_EV_MODULE) {
        mt_module_def_t m;
        if (mt_decode_module(r, &m) == 0) {
            if (m.nseg > MT_MAX_SEGMENTS || m.build_id_len > sizeof m.build_id)
                fz_fail("module with %u segments, %u-byte build id", m.nseg, m.build_id_len);
            for (uint32_t k = 0; k < m.name_len; k++)
                sink += (uint8_t)m.name[k];
            for (uint32_t k = 0; k < m.build_id_len; k++)
                sink += m.build_id[k];
        }
    } else {
        for (uint32_t k = 0; k < r->len; k++)
            sink += r->data[k];
    }
    return sink;
}

long long fz_walk_trace(const char *path)
{
    mt_trace_t *t;
    mt_error_t err;
    if (mt_trace_open(&t, path, &err) < 0)
        return -1;
    const mt_file_header_t *h = mt_trace_header(t);
    volatile uint64_t sink = h->flags + (uint64_t)mt_trace_is_packed(t) + mt_trace_file_size(t);
    for (unsigned tag = 0; tag <= MT_STR_PATH + 1; tag++) {
        size_t len = 0;
        const char *s;
        for (unsigned k = 0; k < 256 && (s = mt_trace_string(t, tag, k, &len)); k++)
            for (size_t i = 0; i < len; i++)
                sink += (uint8_t)s[i];
    }

    /* Every chunk in file order, with the payloads decoded. */
    long long by_chunk = 0, by_thread = 0;
    int chunk_errors = 0, thread_errors = 0;
    mt_cursor_t c;
    if (mt_cursor_init(&c, t) < 0)
        fz_fail("out of memory");
    const size_t nchunks = mt_trace_chunk_count(t);
    /* The chunks the threads read: a chunk present twice (same thread and seq) is read once. */
    uint8_t *kept = calloc(nchunks + 1, 1);
    if (!kept)
        fz_fail("out of memory");
    size_t chunks_of_threads = 0;
    for (size_t i = 0; i < mt_trace_thread_count(t); i++) {
        const mt_thread_info_t *ti = mt_trace_thread(t, i);
        for (uint32_t k = 0; k < ti->nchunks; k++) {
            const uint32_t ci = mt_trace_thread_chunks(t)[ti->first + k];
            if (ci >= nchunks || kept[ci])
                fz_fail("thread %zu lists chunk %u, out of range or twice", i, ci);
            kept[ci] = 1;
        }
        chunks_of_threads += ti->nchunks;
    }
    for (size_t i = 0; i < nchunks; i++) {
        if (kept[i])
            continue;
        const mt_chunk_header_t *ch = &mt_trace_chunk(t, i)->h;
        int twin = 0;
        for (size_t j = 0; j < nchunks && !twin; j++)
            twin = kept[j] && mt_trace_chunk(t, j)->h.thread == ch->thread && mt_trace_chunk(t, j)->h.seq == ch->seq;
        if (!twin)
            fz_fail("chunk %zu (thread %u, seq %u) is read by no thread and has no twin", i, ch->thread, ch->seq);
    }
    for (size_t i = 0; i < nchunks; i++) {
        const mt_chunk_ref_t *ref = mt_trace_chunk(t, i);
        sink += ref->offset + ref->stored + ref->h.thread;
        if (mt_cursor_load(&c, i, &err) < 0) {
            chunk_errors += kept[i];
            continue;
        }
        mt_record_t r;
        int rc;
        while ((rc = mt_cursor_next(&c, &r, &err)) > 0) {
            by_chunk += kept[i];
            sink += record_sum(&r);
            mt_trace_note_rss(t, &r);
        }
        if (rc < 0)
            chunk_errors += kept[i];
        sink += mt_cursor_used(&c);
    }
    mt_cursor_fini(&c);
    free(kept);
    if (mt_trace_chunk(t, nchunks) != NULL)
        fz_fail("chunk %zu of %zu exists", nchunks, nchunks);

    /* Every thread's records in order. */
    for (size_t i = 0; i < mt_trace_thread_count(t); i++) {
        mt_thread_cursor_t tc;
        if (mt_thread_cursor_init(&tc, t, i) < 0)
            fz_fail("thread cursor %zu", i);
        mt_record_t r;
        int rc;
        while ((rc = mt_thread_cursor_next(&tc, &r, &err)) > 0) {
            by_thread++;
            sink += r.op + r.time;
        }
        if (rc < 0)
            thread_errors++;
        mt_thread_cursor_fini(&tc);
    }
    if (mt_trace_thread(t, mt_trace_thread_count(t)) != NULL)
        fz_fail("a thread past the last");
    if (chunks_of_threads > nchunks)
        fz_fail("threads hold %zu chunks, the trace %zu", chunks_of_threads, nchunks);
    /* Both walks read the same records (of the chunks the threads read) when neither met damage. */
    if (!chunk_errors && !thread_errors && by_chunk != by_thread)
        fz_fail("%lld records chunk by chunk, %lld thread by thread", by_chunk, by_thread);
    const double rate = mt_trace_ticks_per_sec(t);
    sink += (uint64_t)(rate > 0 && rate < 1e18 ? rate : 0);
    (void)sink;
    mt_trace_close(t);
    return by_chunk;
}

/* ---- workloads --------------------------------------------------------------------------------- */

typedef struct frame_move {
    uint64_t from, to;
} frame_move_t;

void fz_wl_expand(const uint8_t *in, size_t n, int decompress, fz_buf_t *out)
{
    out->n = 0;
    mt_wl_header_t h;
    if (n < sizeof h || memcmp(in, MT_WL_MAGIC, 8) != 0) {
        fz_put(out, in, n);
        return;
    }
    memcpy(&h, in, sizeof h);
    const uint64_t hs = h.header_size, io = h.index_offset;
    if (hs < sizeof h || hs > n || io < hs || io > n) {
        fz_put(out, in, n);
        return;
    }
    static frame_move_t moves[MAX_MAPPED_FRAMES];
    unsigned nmoves = 0;
    fz_put(out, in, hs);
    uint64_t p = hs;
    while (io - p >= sizeof(mt_wl_frame_header_t) && nmoves < MAX_MAPPED_FRAMES) {
        mt_wl_frame_header_t fh;
        memcpy(&fh, in + p, sizeof fh);
        if (fh.magic != MT_WL_FRAME_MAGIC || fh.zsize > io - p - sizeof fh)
            break;
        const uint8_t *payload = in + p + sizeof fh;
        moves[nmoves++] = (frame_move_t){ p, out->n };
        const size_t at = out->n;
        fz_put(out, &fh, sizeof fh);
        long long len = -1;
        if (!decompress && !is_zstd(payload, fh.zsize)) {
            fh.raw_size = fh.zsize;
            fh.zsize = (uint32_t)put_compressed(out, payload, fh.zsize);
            memcpy(out->p + at, &fh, sizeof fh);
        } else if (decompress && is_zstd(payload, fh.zsize) &&
                   (len = put_decompressed(out, payload, fh.zsize, 4 * MT_WL_FRAME_RAW_MAX)) >= 0) {
            fh.zsize = (uint32_t)len;
            memcpy(out->p + at, &fh, sizeof fh);
        } else {
            fz_put(out, payload, fh.zsize);
        }
        p += sizeof fh + mt_load_u32(in + p + offsetof(mt_wl_frame_header_t, zsize));
    }
    fz_put(out, in + p, io - p); /* what is not a frame stays */
    const uint64_t new_io = out->n;
    fz_put(out, in + io, n - io);
    h.index_offset = new_io;
    memcpy(out->p, &h, sizeof h);
    /* The frame entries: offsets of moved frames follow them. */
    const uint64_t entries = new_io + 8 + (uint64_t)h.threads * sizeof(mt_wl_thread_entry_t);
    for (uint64_t f = 0; f < h.frames && entries <= out->n && (out->n - entries) / sizeof(mt_wl_frame_entry_t) > f;
         f++) {
        uint8_t *e = out->p + entries + f * sizeof(mt_wl_frame_entry_t);
        const uint64_t off = mt_load_u64(e);
        for (unsigned k = 0; k < nmoves; k++) {
            if (moves[k].from == off) {
                memcpy(e, &moves[k].to, 8);
                break;
            }
        }
    }
}

void fz_walk_wl(const char *path, fz_wl_stats_t *st)
{
    memset(st, 0, sizeof *st);
    mt_wl_t *w;
    mt_error_t err;
    if (mt_wl_open(&w, path, &err) < 0)
        return;
    st->opened = 1;
    const mt_wl_header_t *h = mt_wl_header(w);
    volatile uint64_t sink = h->ops + h->slots + mt_wl_file_size(w);
    for (unsigned tag = 0; tag <= MT_STR_PATH + 1; tag++) {
        size_t len = 0;
        const char *s;
        for (unsigned k = 0; k < 256 && (s = mt_wl_string(w, tag, k, &len)); k++)
            for (size_t i = 0; i < len; i++)
                sink += (uint8_t)s[i];
    }
    const size_t nthreads = mt_wl_thread_count(w);
    if (mt_wl_thread(w, nthreads) != NULL)
        fz_fail("a workload thread past the last");
    for (uint32_t i = 0; i < nthreads; i++) {
        const mt_wl_thread_entry_t *e = mt_wl_thread(w, i);
        for (uint32_t k = 0; k < mt_wl_thread_frame_count(w, i); k++) {
            const mt_wl_frame_entry_t *fe = mt_wl_thread_frame(w, i, k);
            if (fe->thread != i)
                fz_fail("frame %u of thread %u is listed for thread %u", k, i, fe->thread);
            sink += fe->offset;
        }
        mt_wl_cursor_t *c;
        if (mt_wl_cursor_open(&c, w, i) < 0)
            fz_fail("out of memory");
        mt_wl_rec_t r;
        int rc;
        uint64_t ops = 0;
        while ((rc = mt_wl_cursor_next(c, &r, &err)) > 0) {
            ops++;
            sink += r.op + r.time_ns + r.size + r.count + r.align + (uint64_t)r.a + (uint64_t)r.b + r.n + r.rss_kb;
            if (!mt_wl_op_name(r.op))
                fz_fail("the cursor returned op %u, which has no name", r.op);
            for (uint32_t k = 0; k < r.len; k++)
                sink += r.data[k];
            if (r.slot > st->max_slot)
                st->max_slot = r.slot;
            if (r.slot2 > st->max_slot)
                st->max_slot = r.slot2;
            if (r.op == MT_WL_WAIT && (r.thread >= nthreads || r.thread == i || r.n > mt_wl_thread(w, r.thread)->ops))
                st->bad_wait = 1;
        }
        if (rc < 0)
            st->damaged = 1;
        else if (ops != e->ops)
            st->ops_mismatch = 1;
        st->ops += ops;
        mt_wl_cursor_close(c);
    }
    (void)sink;
    mt_wl_close(w);
}
