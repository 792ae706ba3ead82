/* mtrace trace reader: the one streaming reader of raw and packed (zstd) traces.
 *
 * Open a trace, then walk its chunks with a cursor (file order) or one thread's records in order with
 * a thread cursor. Memory is one 64 KiB buffer per cursor plus a small index per chunk, whatever the
 * trace's length. Errors come back as a negative errno with a one-line message that names the file,
 * the byte offset and what was expected.
 */
#ifndef MTRACE_TRACE_READER_H
#define MTRACE_TRACE_READER_H

#include <stddef.h>
#include <stdint.h>

#include "mtrace/trace_format.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_error {
    char msg[1024];
} mt_error_t;

/* One decoded record. Which fields are set depends on the op (doc/trace-format.md, "Records"):
 *   malloc, valloc, pvalloc       size, result, usable
 *   calloc                        count, size (per element), result, usable
 *   realloc                       ptr, size, result, usable
 *   reallocarray                  ptr, count, size, result, usable
 *   memalign, aligned_alloc,
 *   posix_memalign                align, size, result, usable; posix_memalign's error in arg[0]
 *   free                          ptr
 *   malloc_usable_size            ptr, size (the value returned)
 *   mallopt                       arg[0] param, arg[1] value, arg[2] return value
 *   events                        data/len (payload); the varint fields of known events in arg[]
 * usable is the usable size of the returned block; result is 0 when MT_FLAG_NULL is set. */
typedef struct mt_record {
    uint8_t op;
    uint32_t flags; /* MT_FLAG_* */
    uint64_t time;  /* absolute, in the trace's time unit */
    uint64_t ptr;
    uint64_t result;
    uint64_t size;
    uint64_t count;
    uint64_t align;
    uint64_t usable;
    uint32_t stack; /* stack id when MT_FLAG_STACK */
    uint32_t nargs;
    int64_t arg[4];
    const uint8_t *data; /* event payload, valid until the cursor moves on */
    uint32_t len;
    uint64_t offset; /* byte offset of the record in the raw trace (in the chunk image when packed) */
} mt_record_t;

typedef struct mt_chunk_ref {
    uint64_t offset;  /* raw: the chunk's offset; packed: its frame's offset */
    uint32_t stored;  /* bytes stored after the chunk header (compressed size when packed) */
    uint32_t modeled; /* packed: the frame is a modeled one ("MTCM"), else plain ("MTCZ") */
    mt_chunk_header_t h;
} mt_chunk_ref_t;

typedef struct mt_thread_info {
    uint32_t thread; /* sequential number */
    uint32_t tid;
    uint32_t nchunks;
    uint32_t first; /* index into mt_trace_thread_chunks() of its first chunk */
} mt_thread_info_t;

typedef struct mt_trace mt_trace_t;

int mt_trace_open(mt_trace_t **out, const char *path, mt_error_t *err);
void mt_trace_close(mt_trace_t *t);

const char *mt_trace_path(const mt_trace_t *t);
const mt_file_header_t *mt_trace_header(const mt_trace_t *t);
int mt_trace_is_packed(const mt_trace_t *t);
uint64_t mt_trace_file_size(const mt_trace_t *t);

/* Header strings: returns the n-th string with `tag` (0-based) or NULL. */
const char *mt_trace_string(const mt_trace_t *t, unsigned tag, unsigned n, size_t *len);

/* 0 when the file holds all that its header counts; else -ENODATA with a message saying it is
 * truncated: a copy cut short, a disk that filled after the fact; or -EBUSY when a process is still
 * recording into it (it holds the file's lock). The records present still read (a prefix of the
 * whole), but a result made from them is a half-result. A raw trace finished by its process is
 * chunks_used chunks long, one whose process was killed a whole number of chunks; a packed trace
 * holds packed_frames frames. A killed process's trace is unfinished, not truncated. */
int mt_trace_check_whole(const mt_trace_t *t, mt_error_t *err);

/* The trace file in which the same process went on after an exec ended this trace (`h` is its
 * header, `path` its file). The recorder names the file of an image whose first choice of name is
 * taken by appending ".PID", then ".PID.1", ".PID.2" ... (libmtrace/shim_file.c, create_file): of the
 * files of those names beside `path`, the one with this trace's pid that began first after it.
 * 1 with its path in `out`, 0 if there is none (moved, removed, or never written). */
int mt_trace_continuation(const char *path, const mt_file_header_t *h, char *out, size_t cap);

/* Whether a trace ended at an exec, given its latest record's op: an exec that succeeds replaces the
 * image before tracing can finish (the header is written just before it, without MT_HDR_COMPLETE,
 * since the exec may fail), so the trace is not complete, yet nothing was lost. */
static inline int mt_trace_ended_at_exec(const mt_file_header_t *h, unsigned last_op)
{
    return !(h->flags & MT_HDR_COMPLETE) && last_op == MT_EV_EXEC;
}

size_t mt_trace_chunk_count(const mt_trace_t *t);
const mt_chunk_ref_t *mt_trace_chunk(const mt_trace_t *t, size_t i);

/* Threads in order of their numbers; each thread's chunk indices in order of seq. */
size_t mt_trace_thread_count(const mt_trace_t *t);
const mt_thread_info_t *mt_trace_thread(const mt_trace_t *t, size_t i);
const uint32_t *mt_trace_thread_chunks(const mt_trace_t *t);

/* What a cursor needs to decode a packed trace's frames. Cursors share their trace's, so they load
 * chunks one thread at a time; a cursor given a codec of its own (mt_cursor_t.codec, after init)
 * loads chunks while others of the trace load theirs in other threads. One codec serves any number
 * of cursors used by one thread. Reading the records of a loaded chunk needs no codec. */
typedef struct mt_chunk_codec mt_chunk_codec_t;
mt_chunk_codec_t *mt_chunk_codec_new(void);
void mt_chunk_codec_free(mt_chunk_codec_t *k);

/* Chunk cursor: decodes the records of one chunk. */
typedef struct mt_cursor {
    const mt_trace_t *trace;
    mt_chunk_codec_t *codec; /* NULL: the trace's (not owned) */
    size_t chunk;
    uint8_t *buf; /* MT_CHUNK_SIZE bytes, owned by the cursor */
    const uint8_t *p;
    const uint8_t *end; /* end of the bytes present (a cut file ends early) */
    uint64_t prev_time;
    uint64_t prev_ptr;
    uint64_t base_offset; /* file offset of buf[0] (raw traces) */
    int sealed;
    int complete;    /* all of the chunk's bytes are present */
    uint32_t unread; /* raw, unsealed: bytes of the chunk after end not read yet (read when reached) */
    /* Calls that share one clock read (a trace recorded with reads=every-K-calls-while-one-thread)
     * get times spread evenly up to the next read's (doc/trace-format.md, "Shared clock reads"):
     * set by mt_cursor_init from the trace's header; a caller that wants the times as stored (a
     * copy of the records) clears it before the first load. */
    int spread_reads;
    struct mt_lookahead *look; /* the records decoded ahead for that, made when first needed */
} mt_cursor_t;

int mt_cursor_init(mt_cursor_t *c, const mt_trace_t *t);
void mt_cursor_fini(mt_cursor_t *c);
int mt_cursor_load(mt_cursor_t *c, size_t chunk, mt_error_t *err);
/* 1: a record; 0: the chunk has no more; negative: a damaged record (message in err). */
int mt_cursor_next(mt_cursor_t *c, mt_record_t *r, mt_error_t *err);
/* Bytes of records decoded so far in the loaded chunk. */
size_t mt_cursor_used(const mt_cursor_t *c);

/* Thread cursor: one thread's records across its chunks, in order. */
typedef struct mt_thread_cursor {
    mt_cursor_t c;
    const mt_thread_info_t *info;
    uint32_t next;   /* next chunk of the thread to load */
    uint16_t loaded; /* a chunk is loaded */
    uint16_t skip;   /* records to read past after a rewind (mt_thread_cursor_rewind) */
} mt_thread_cursor_t;

int mt_thread_cursor_init(mt_thread_cursor_t *tc, const mt_trace_t *t, size_t thread_index);
int mt_thread_cursor_next(mt_thread_cursor_t *tc, mt_record_t *r, mt_error_t *err);
/* Lets the cursor's chunk buffer go and takes it back to the thread's start: the next
 * mt_thread_cursor_next reads (into a buffer it allocates) the record after the first `skip`. A merge
 * of many threads reads each thread's first record, to order them, keeps it (its payload copied) and
 * rewinds the cursor past it until that record's turn: it then holds buffers for the threads whose
 * records interleave, not for every thread. The skipped records are decoded again, once. */
void mt_thread_cursor_rewind(mt_thread_cursor_t *tc, uint16_t skip);
/* Merges of more threads than this rewind each one after its first record, and let a cursor go as
 * soon as its thread's records are done: a trace of 2000 short threads held a buffer (8 KiB
 * resident) for each. With few threads nothing changes. */
#define MT_PARK_THREADS 64u
void mt_thread_cursor_fini(mt_thread_cursor_t *tc);

/* Rate of the trace's time unit in ticks per second: the header's, else an estimate from the
 * (time, CLOCK_MONOTONIC) pairs that RSS samples carry; 0 when nothing tells. */
double mt_trace_ticks_per_sec(const mt_trace_t *t);
/* Feed an RSS record to the estimate (readers that walk the trace do this as they go). */
void mt_trace_note_rss(mt_trace_t *t, const mt_record_t *r);

/* Payloads of MT_EV_STACK and MT_EV_MODULE events (doc/trace-format.md, "Callsites"). */
#define MT_MAX_FRAMES 64
typedef struct mt_stack_def {
    uint32_t id;
    uint32_t nframes;
    uint64_t frames[MT_MAX_FRAMES]; /* return addresses, innermost first */
} mt_stack_def_t;

#define MT_MAX_SEGMENTS 32
typedef struct mt_module_def {
    uint64_t generation; /* modules with the same generation form one snapshot of the process */
    uint64_t base;       /* load bias: runtime address = base + p_vaddr */
    uint32_t nseg;
    struct {
        uint64_t vaddr, memsz, offset;
    } seg[MT_MAX_SEGMENTS]; /* PT_LOAD segments */
    uint32_t build_id_len;
    uint8_t build_id[64];
    const char *name; /* not NUL-terminated; empty for the main program */
    uint32_t name_len;
} mt_module_def_t;

int mt_decode_stack(const mt_record_t *r, mt_stack_def_t *s);

/* A PAGES event's print fields (doc/trace-format.md, "Page evidence"): of the block's pages printed
 * when it was made and again now, how many, how many printed differently (written) and how many were
 * four zero words both times (written with zeros, or not written). */
typedef struct mt_pages_prints {
    uint64_t sampled, changed, zero;
} mt_pages_prints_t;
/* 1 when the event has them, 0 when not (also when they make no sense: none compared, more changed
 * or zero than compared). */
int mt_pages_prints(const mt_record_t *r, mt_pages_prints_t *out);
/* A PAGES event of an edge block (MT_PAGES_EDGE): 1 if its last bytes were written, 0 if not; -1 when
 * the event is not one, or lacks the field. */
int mt_pages_edge_written(const mt_record_t *r);
int mt_decode_module(const mt_record_t *r, mt_module_def_t *m);

/* Compresses a trace into a packed trace (one frame per chunk); never leaves a partial output.
 * `level` is a zstd level. Chunks are written as modeled frames ("MTCM"), each chunk the model
 * cannot represent as a plain zstd frame ("MTCZ"). */
int mt_trace_pack(const char *in, const char *out, int level, mt_error_t *err);

enum {
    MT_PACK_PLAIN = 1u << 0, /* write plain zstd frames ("MTCZ") only, as mtrace before modeled frames */
};
/* mt_trace_pack with MT_PACK_* flags. */
int mt_trace_pack_flags(const char *in, const char *out, int level, unsigned flags, mt_error_t *err);
/* mt_trace_pack_flags with `jobs` threads making frames (each with its model and zstd context): the
 * same file, and the same error where one is met, as with one. */
int mt_trace_pack_jobs(const char *in, const char *out, int level, unsigned flags, unsigned jobs, mt_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
