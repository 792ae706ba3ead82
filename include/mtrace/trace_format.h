/* mtrace trace format, version 3: constants, on-disk layouts and the varint codec.
 *
 * doc/trace-format.md is the normative description; this header is its single implementation in
 * code. Everything here is malloc-free and header-only so the preload shim can use it on its hot path.
 */
#ifndef MTRACE_TRACE_FORMAT_H
#define MTRACE_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* PNG-style magic: the high byte catches 7-bit transfers, CR LF and ^Z catch text-mode mangling. */
#define MT_TRACE_MAGIC "\x89MTR\r\n\x1a\n"
#define MT_TRACE_MAGIC_LEN 8
#define MT_TRACE_VERSION 4u

#define MT_CHUNK_SIZE 65536u       /* every chunk, the header chunk included */
#define MT_CHUNK_HEADER_SIZE 32u   /* at the start of each record chunk */
#define MT_CHUNK_MAGIC 0x4b43544du /* "MTCK" read as a little-endian u32 */
#define MT_CHUNK_TAIL_RESERVE 64u  /* room kept at a chunk's end for its thread's final events */
#define MT_HEADER_STRINGS_OFFSET 256u

/* Packed traces: the header chunk as in a raw trace with MT_HDR_PACKED set, then frames. */
#define MT_PACK_FRAME_MAGIC 0x5a43544du /* "MTCZ": the chunk's records in one zstd frame */
#define MT_PACK_MODEL_MAGIC 0x4d43544du /* "MTCM": the records modeled into streams (pack_model.h) */
#define MT_PACK_FRAME_HEADER_SIZE 8u    /* magic, compressed size; the chunk header follows */

/* Header flags (mt_file_header_t.flags). */
enum {
    MT_HDR_COMPLETE = 1u << 0,    /* the process finished tracing normally and wrote the end fields */
    MT_HDR_TRUNCATED = 1u << 1,   /* tracing stopped early; truncated_errno says why */
    MT_HDR_STACKS = 1u << 2,      /* call records may carry stack ids */
    MT_HDR_TIME_TSC = 1u << 3,    /* time unit is the CPU's time-stamp counter, else nanoseconds */
    MT_HDR_GLIBC_FLAGS = 1u << 4, /* MMAPPED and HEAP_GREW are observed (the allocator is glibc's) */
    MT_HDR_PACKED = 1u << 5,      /* chunks follow as compressed frames (written by mtrace pack) */
    MT_HDR_BYPASSED = 1u << 6,    /* the program's malloc was another object's: calls went past the shim */
};

/* Header string tags (TLV list at MT_HEADER_STRINGS_OFFSET). */
enum {
    MT_STR_END = 0,
    MT_STR_CMDLINE = 1,      /* /proc/self/cmdline: arguments separated by NUL */
    MT_STR_EXE = 2,          /* /proc/self/exe target */
    MT_STR_GLIBC = 3,        /* gnu_get_libc_version() */
    MT_STR_ALLOCATOR = 4,    /* file name of the object that defines the malloc the shim calls */
    MT_STR_ENV = 5,          /* one NAME=VALUE for each MALLOC_*, GLIBC_TUNABLES, MTRACE_* variable */
    MT_STR_HOST = 6,         /* uname nodename */
    MT_STR_PATH = 7,         /* the trace file's own path as opened */
    MT_STR_BOUND_MALLOC = 8, /* with MT_HDR_BYPASSED: the object whose malloc the program calls */
    MT_STR_CLOCK = 9,        /* the recorder's time source and one read's cost, measured at start */
};

/* The string list's writer and reader, one for the recorder, the trace writer, trace2wl (the workload
 * header keeps the list) and every reader. An entry is a u16 tag, a u16 length and the bytes; tag
 * MT_STR_END (four zero bytes) ends the list. Header-only and malloc-free: the recorder writes it. */

/* Appends an entry at p if it fits before `end` with room left for the end tag: returns the new end
 * of the list, or NULL (nothing written) when it does not fit or the tag or length is out of range. */
static inline uint8_t *mt_str_put(uint8_t *p, const uint8_t *end, unsigned tag, const void *s, size_t len)
{
    if (tag == MT_STR_END || tag > 0xffff || len > 0xffff || (size_t)(end - p) < 4 + len + 4)
        return NULL;
    const uint16_t t = (uint16_t)tag, l = (uint16_t)len;
    __builtin_memcpy(p, &t, 2);
    __builtin_memcpy(p + 2, &l, 2);
    if (len)
        __builtin_memcpy(p + 4, s, len);
    return p + 4 + len;
}

/* Ends the list at p (mt_str_put kept the room): returns the byte after the end tag. */
static inline uint8_t *mt_str_close(uint8_t *p)
{
    __builtin_memset(p, 0, 4);
    return p + 4;
}

/* The entry at *pp before `end`: 1 with its tag, bytes and length, *pp moved past it; 0 at the end
 * tag or where an entry does not fit before `end` (a list cut short ends at its last whole entry). */
static inline int mt_str_next(const uint8_t **pp, const uint8_t *end, unsigned *tag, const char **s, size_t *len)
{
    const uint8_t *p = *pp;
    if (end - p < 4)
        return 0;
    uint16_t t, l;
    __builtin_memcpy(&t, p, 2);
    __builtin_memcpy(&l, p + 2, 2);
    if (t == MT_STR_END || (size_t)(end - p) < 4u + l)
        return 0;
    *tag = t;
    *s = (const char *)p + 4;
    *len = l;
    *pp = p + 4 + l;
    return 1;
}

/* The n-th (from 0) entry with `tag` of the list at p, or NULL; its length in *len if len. */
static inline const char *mt_str_find(const uint8_t *p, const uint8_t *end, unsigned tag, unsigned n, size_t *len)
{
    unsigned t;
    const char *s;
    size_t l;
    while (mt_str_next(&p, end, &t, &s, &l))
        if (t == tag && n-- == 0) {
            if (len)
                *len = l;
            return s;
        }
    return NULL;
}

/* File header: the first bytes of chunk 0, little-endian, fixed offsets (see the spec's table). */
typedef struct mt_file_header {
    uint8_t magic[8];
    uint32_t version;
    uint32_t header_size; /* sizeof(mt_file_header_t) as written */
    uint32_t chunk_size;
    uint8_t ptr_size;
    uint8_t little_endian;
    uint8_t time_shift; /* recorded time = counter >> time_shift */
    uint8_t max_frames; /* MTRACE_STACKS in force (0: no stacks) */
    uint32_t page_size;
    uint32_t pid;
    uint32_t ppid;
    uint32_t flags;
    uint64_t start_realtime_ns; /* CLOCK_REALTIME at start */
    uint64_t start_time;        /* recorded time at start */
    uint64_t start_mono_ns;     /* CLOCK_MONOTONIC at start */
    uint64_t end_time;          /* recorded time at finish (0: not finished) */
    uint64_t end_mono_ns;
    uint64_t ticks_per_sec; /* rate of recorded time (0: unknown, estimate from RSS samples) */
    int32_t truncated_errno;
    uint32_t threads;       /* threads seen, at finish */
    uint64_t chunks_used;   /* chunks claimed (header chunk included), at finish */
    uint64_t lost_calls;    /* calls not recorded (nested in the shim, or after truncation), at finish */
    uint64_t data_offset;   /* packed traces: offset of the first frame; raw traces: 0 (chunk 1 follows) */
    uint64_t packed_frames; /* packed traces: frames written (0: not recorded, older files); raw: 0 */
    uint8_t reserved[128];
} mt_file_header_t;

_Static_assert(sizeof(mt_file_header_t) == 256, "file header is 256 bytes");
_Static_assert(sizeof(mt_file_header_t) <= MT_HEADER_STRINGS_OFFSET, "strings follow the header");

/* Chunk header: the first 32 bytes of every record chunk. */
typedef struct mt_chunk_header {
    uint32_t magic;     /* MT_CHUNK_MAGIC, stored last by the writer */
    uint16_t kind;      /* MT_CHUNK_THREAD */
    uint16_t flags;     /* MT_CHUNK_SEALED */
    uint32_t thread;    /* sequential thread number, 1 = the first thread seen */
    uint32_t tid;       /* OS thread id */
    uint32_t seq;       /* chunk number within its thread, from 0 */
    uint32_t used;      /* record bytes, valid when sealed */
    uint64_t base_time; /* time base of the first record's delta */
} mt_chunk_header_t;

_Static_assert(sizeof(mt_chunk_header_t) == MT_CHUNK_HEADER_SIZE, "chunk header is 32 bytes");

enum { MT_CHUNK_THREAD = 1 };
enum { MT_CHUNK_SEALED = 1 };

/* Record opcodes: low 5 bits of a record's first byte. 0 ends a chunk's records. */
typedef enum mt_op {
    MT_OP_NONE = 0,
    MT_OP_MALLOC = 1,
    MT_OP_FREE = 2,
    MT_OP_CALLOC = 3,
    MT_OP_REALLOC = 4,
    MT_OP_REALLOCARRAY = 5,
    MT_OP_MEMALIGN = 6,
    MT_OP_POSIX_MEMALIGN = 7,
    MT_OP_ALIGNED_ALLOC = 8,
    MT_OP_VALLOC = 9,
    MT_OP_PVALLOC = 10,
    MT_OP_USABLE_SIZE = 11,
    MT_OP_MALLOPT = 12,
    MT_OP_MALLOC_TRIM = 13, /* version 4 */
    MT_OP_LAST_CALL = 13,   /* the highest call opcode of MT_TRACE_VERSION */
    /* events: op, time delta, payload length, payload */
    MT_EV_THREAD_START = 16,
    MT_EV_THREAD_EXIT = 17,
    MT_EV_THREAD_CREATE = 18,
    MT_EV_FORK = 19,
    MT_EV_EXEC = 20,
    MT_EV_RSS = 21,
    MT_EV_MARK = 22,
    MT_EV_TRUNCATED = 23,
    MT_EV_STACK = 24,
    MT_EV_MODULE = 25,
    MT_EV_CONTROL = 26,
    MT_EV_LOST = 27,
    MT_EV_PAGES = 28, /* version 3: resident pages of a large block (MT_PAGES_*) */
    MT_EV_VM = 29,    /* version 3: anonymous memory the program maps or unmaps itself (MT_VM_*) */
    MT_EV_LAST = 29,  /* the highest event opcode of MT_TRACE_VERSION */
    MT_OP_MAX = 31,
} mt_op_t;

/* Recorded ticks as time, at `rate` ticks per second (the header's ticks_per_sec, or the readers'
 * estimate): one rule for the converter's op times, the report's lifetimes and its time axis. A rate
 * not known (0 or less) counts a tick as a nanosecond, the unit of the clock_gettime fallback.
 * Nanoseconds saturate at 2^64 - 1 (a damaged header, a rate of 1 tick/s, gets there; converting
 * such a double to an integer would be undefined). */
static inline double mt_ticks_seconds(uint64_t ticks, double rate)
{
    return (double)ticks / (rate > 0 ? rate : 1e9);
}

static inline uint64_t mt_ticks_ns(uint64_t ticks, double rate)
{
    const double ns = mt_ticks_seconds(ticks, rate) * 1e9;
    return ns < 18446744073709551616.0 ? (uint64_t)ns : UINT64_MAX;
}

/* The bytes a call asked for, "requested" wherever mtrace counts or compares sizes: count * size for
 * calloc and reallocarray, size for every other call (the aligned calls' size, not their alignment).
 * A product past 2^64 - 1 is 2^64 - 1, never the wrapped value: no call that returned a block asked
 * for that much, so only a failed call or a damaged trace has one. */
static inline uint64_t mt_requested(unsigned op, uint64_t count, uint64_t size)
{
    uint64_t n = size;
    if ((op == MT_OP_CALLOC || op == MT_OP_REALLOCARRAY) && __builtin_mul_overflow(count, size, &n))
        n = UINT64_MAX;
    return n;
}

#define MT_FIRST_EVENT MT_EV_THREAD_START

/* Stack ids run from 1 to MT_STACK_ID_MAX in a file (doc/trace-format.md, "Callsites"): the shim
 * numbers no more, and readers take a larger id for damage. */
#define MT_STACK_ID_MAX ((1u << 24) - 1)

/* Flag bits in a record's first byte (calls only). */
enum {
    MT_RF_OPMASK = 0x1f,
    MT_RF_NULL = 0x20,    /* the call returned NULL (or posix_memalign an error): no result field */
    MT_RF_MMAPPED = 0x40, /* the block is an mmapped chunk (glibc) */
    MT_RF_EXT = 0x80,     /* an extension flags byte follows */
};

/* Extension flag bits (second byte when MT_RF_EXT). */
enum {
    MT_XF_HEAP_GREW = 0x01, /* the heap top (brk) moved during the call (glibc) */
    MT_XF_STACK = 0x02,     /* a stack id follows the call's fields */
};

/* Decoded flags as reported by the reader (mt_record_t.flags). */
enum {
    MT_FLAG_NULL = 1u << 0,
    MT_FLAG_MMAPPED = 1u << 1,
    MT_FLAG_HEAP_GREW = 1u << 2,
    MT_FLAG_STACK = 1u << 3,
};

/* Whether call `op` is one that hands out a block (malloc, calloc, realloc, the aligned ones): not
 * free, malloc_usable_size, mallopt, malloc_trim, nor an event. A bit test: readers ask it per record. */
#define MT_OPS_ALLOCATING                                                                                              \
    ((1u << MT_OP_MALLOC) | (1u << MT_OP_CALLOC) | (1u << MT_OP_REALLOC) | (1u << MT_OP_REALLOCARRAY) |                \
     (1u << MT_OP_MEMALIGN) | (1u << MT_OP_POSIX_MEMALIGN) | (1u << MT_OP_ALIGNED_ALLOC) | (1u << MT_OP_VALLOC) |      \
     (1u << MT_OP_PVALLOC))
static inline int mt_op_allocates(unsigned op)
{
    return op < 32 && ((MT_OPS_ALLOCATING >> op) & 1);
}

/* Whether a call failed, as `mtrace info` and `mtrace report` count failures: flagged NULL (no
 * block, or a mallopt refused), except realloc(p, 0), which freed p and returns NULL by design.
 * `requested` as mt_requested() gives it. */
static inline int mt_call_failed(unsigned op, unsigned flags, uint64_t requested)
{
    return (flags & MT_FLAG_NULL) && !(op == MT_OP_REALLOC && requested == 0);
}

/* The highest call opcode a trace of format `version` may hold. */
static inline unsigned mt_last_call(unsigned version)
{
    return version >= 4 ? MT_OP_LAST_CALL : MT_OP_MALLOPT;
}

/* The highest event opcode a trace of format `version` may hold. */
static inline unsigned mt_last_event(unsigned version)
{
    return version >= 3 ? MT_EV_LAST : MT_EV_LOST;
}

/* MT_EV_PAGES: how many pages of a large block are resident (mincore), so that a replay writes the
 * pages the program wrote and no others. Payload: four uvarints: the block's address, its whole
 * pages (those that lie entirely inside its usable bytes), how many of them are resident, and when
 * the count was taken (MT_PAGES_AT_*). Written for blocks of at least MT_PAGES_MIN usable bytes
 * only: a smaller block has at most 15 whole pages, and the syscall would cost more than its
 * allocation. */
#define MT_PAGES_MIN (64u * 1024u)
/* The whole pages of the `bytes` bytes at address a (pages of `page` bytes, a power of two): those
 * lying entirely inside them, from *first on. What PAGES events count, and replays write a share of. */
static inline uint64_t mt_whole_pages(uint64_t a, uint64_t bytes, uint64_t page, uint64_t *first)
{
    const uint64_t lo = (a + page - 1) & ~(page - 1), hi = (a + bytes) & ~(page - 1);
    *first = lo;
    return hi > lo ? (hi - lo) / page : 0;
}

enum {
    MT_PAGES_AT_ALLOC = 0,  /* after the call that made the block (before the program used it) */
    MT_PAGES_AT_END = 1,    /* before the free or realloc that ends it */
    MT_PAGES_UNCOUNTED = 2, /* or'ed in: not counted (the thread's time for counting is spent); the
                             * resident field is 0 and means nothing */
    MT_PAGES_AT_EXIT = 4,   /* at the process's exit, for a block still live (a reader that knows only
                             * the values above takes it as AT_END: the same count, the block not ended) */
    MT_PAGES_AT_SAMPLE = 8, /* right after an RSS sample, in its thread's stream, for a large block of
                             * fresh memory still live whose count changed (a reader that knows only the
                             * values above takes it as AT_END: the block's real end comes after and
                             * replaces it) */
    MT_PAGES_EDGE = 16,     /* or'ed into AT_END or AT_EXIT: not a count but an edge block's last bytes
                             * (MT_PAGES_EDGE_*): a fifth uvarint, 1 if the program wrote them since the
                             * block was made, else 0; the whole and resident fields are 0 (a reader
                             * that knows only the values above takes it as AT_END with no page) */
};

/* Edge blocks: glibc blocks of 4 KiB to 64 KiB whose chunk is a multiple of MT_PAGES_EDGE_PAGE bytes,
 * or 16 more. Mapped for themselves (an mmap threshold below their size), such a block's last bytes
 * lie alone on a page of their own behind the mapped chunk's 16-byte header: a block of 16384 bytes
 * takes five pages, the fifth for its last 16 bytes. A pool that carves the block up leaves them
 * unwritten, and the page is then never resident; a buffer filled to its end writes it. The heap the
 * block was recorded in cannot tell (that page holds the next chunk's header), so the shim compares
 * those bytes (MT_PAGES_EDGE_BYTES or fewer, up to the block's usable end) when the block is made and
 * when it ends or the process exits. */
#define MT_PAGES_EDGE_PAGE 4096u
#define MT_PAGES_EDGE_BYTES 16u
/* The bytes of a block of `requested` bytes that lie alone on the last page of a chunk mapped for it
 * (behind a 16-byte header): 1 to MT_PAGES_EDGE_BYTES, else 0. */
static inline uint64_t mt_pages_edge_bytes(uint64_t requested)
{
    const uint64_t last = (requested + 16) & (MT_PAGES_EDGE_PAGE - 1);
    return requested >= MT_PAGES_EDGE_PAGE - 16 && last && last <= MT_PAGES_EDGE_BYTES ? last : 0;
}

/* MT_EV_VM: anonymous memory mapped or unmapped by the program itself (not by the allocator, not by
 * the shim), so that a replay holds the whole program's anonymous memory, not the heap's alone.
 * Payload: four uvarints: what happened (MT_VM_*), the address, the length in bytes, and the whole
 * pages of the range resident (mincore): for MT_VM_UNMAP before the call, for MT_VM_MAP after it
 * (0 without asking for a fresh mapping). mremap is an unmap of the old range and a map of the new;
 * mmap with MAP_FIXED over memory is an unmap of that range first. A reader ignores a kind it does
 * not know. */
enum {
    MT_VM_MAP = 0,
    MT_VM_UNMAP = 1,
    MT_VM_ADVISE = 2,  /* madvise() that drops pages: a fifth field, the advice (MADV_DONTNEED, MADV_FREE,
                        * MADV_REMOVE); the resident pages are those of the range before the call */
    MT_VM_AT_EXIT = 3, /* at the process's exit, for a mapping still live (as mapped, less the heads and
                        * tails unmapped since): its pages resident then; the range may hold holes */
};
/* MT_VM_MAP and MT_VM_UNMAP's optional fifth field: what made or removed the memory (absent: mmap). */
enum {
    MT_VM_VIA_MMAP = 0, /* mmap, munmap, mremap */
    MT_VM_VIA_BRK = 1,  /* brk or sbrk called by the program: the pages the break gained or lost */
};

/* Control commands (MT_EV_CONTROL payload, and mtrace_control()). */
enum {
    MT_CTL_START = 1,
    MT_CTL_STOP = 2,
    MT_CTL_PAUSE = 3,
    MT_CTL_RESUME = 4,
    MT_CTL_SYNC = 5,
    MT_CTL_MARK = 6,
};

/* Longest encoded call record: op, ext, time, and five 10-byte varints, plus a stack id. */
#define MT_MAX_CALL_RECORD 72u

static inline uint8_t *mt_put_uvarint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint64_t mt_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t mt_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline uint8_t *mt_put_svarint(uint8_t *p, int64_t v)
{
    return mt_put_uvarint(p, mt_zigzag(v));
}

/* Decodes one varint from [*pp, end). Returns 0, or -1 when the input ends or runs past 10 bytes. */
static inline int mt_get_uvarint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (p >= end)
            return -1;
        const uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *out = v;
            return 0;
        }
    }
    return -1;
}

static inline uint64_t mt_load_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint32_t mt_load_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* ---- the record encoder: the one writer of records, used by the shim and by mt_writer -------- */

/* Delta bases of one chunk's records; both start at the chunk's base_time and 0. */
typedef struct mt_enc {
    uint64_t prev_time;
    uint64_t prev_ptr;
} mt_enc_t;

/* A pointer field (the spec's "p"), after the previous pointer field `prev` of its chunk. Version 1:
 * the svarint of the difference. Version 2: the difference of the two pointers' 16-byte units,
 * zigzagged and shifted left one bit, as a uvarint whose bit 0 says that one byte with the pointer's
 * low 4 bits (1 to 15) follows. Blocks are 16-byte aligned on x86-64, so that byte is rare and the
 * field 4 bits shorter: 3.10 bytes per record instead of 3.87 in a malloc-heavy loop. */
static inline __attribute__((always_inline)) uint8_t *mt_put_ptr(uint8_t *q, uint64_t prev, uint64_t v,
                                                                 unsigned version)
{
    if (version < 2)
        return mt_put_svarint(q, (int64_t)(v - prev));
    const unsigned lo = (unsigned)(v & 15);
    const uint64_t u = mt_zigzag((int64_t)((v >> 4) - (prev >> 4))) << 1;
    if (__builtin_expect(lo == 0, 1)) /* one test for the aligned block, not a flag bit to compute */
        return mt_put_uvarint(q, u);
    q = mt_put_uvarint(q, u | 1);
    *q++ = (uint8_t)lo;
    return q;
}

/* Version 2: the pointer that the uvarint u of a pointer field after `prev` stands for, less its low
 * byte; when u & 1 that byte follows and must be 1 to 15 (mt_ptr_low_ok). */
static inline uint64_t mt_ptr_v2(uint64_t prev, uint64_t u)
{
    return ((prev >> 4) + (uint64_t)mt_unzigzag(u >> 1)) << 4;
}

static inline int mt_ptr_low_ok(uint8_t lo)
{
    return lo >= 1 && lo <= 15;
}

static inline __attribute__((always_inline)) uint8_t *mt_enc_ptr(mt_enc_t *e, uint8_t *q, uint64_t v, unsigned version)
{
    q = mt_put_ptr(q, e->prev_ptr, v, version);
    e->prev_ptr = v;
    return q;
}

/* A call record's fields (see the spec's table "Call records"), in the syntax of trace format
 * `version` (the preload shim writes MT_TRACE_VERSION; mt_writer also the older ones):
 *   n1, n2     the op's size fields in order (size; count, size; align, size; param, value; pad)
 *   ptr        the argument pointer of realloc, reallocarray, free, malloc_usable_size
 *   result     the block returned, or posix_memalign's error when MT_RF_NULL; mallopt's and
 *              malloc_trim's return
 *   slack      usable size minus requested size (block ops, result not NULL)
 * b0 holds the op and the MT_RF_* bits; MT_RF_EXT is set here when ext is nonzero.
 * Writes the record at p with its first byte stored last and returns the end. At most
 * MT_MAX_CALL_RECORD bytes. Always inlined: with a constant op (the preload shim's hot path) the
 * switch and the op tests below fold away, about 20 instructions of every recorded call. */
static inline __attribute__((always_inline)) uint8_t *mt_enc_call(mt_enc_t *e, uint8_t *p, unsigned version,
                                                                  unsigned b0, uint8_t ext, uint64_t time, uint64_t ptr,
                                                                  uint64_t n1, uint64_t n2, uint64_t result,
                                                                  int64_t slack, uint32_t stack)
{
    const unsigned op = b0 & MT_RF_OPMASK;
    uint8_t *q = p + 1;
    if (ext) {
        b0 |= MT_RF_EXT;
        *q++ = ext;
    }
    q = mt_put_svarint(q, (int64_t)(time - e->prev_time));
    e->prev_time = time;
    switch (op) {
    case MT_OP_FREE:
        q = mt_enc_ptr(e, q, ptr, version);
        break;
    case MT_OP_USABLE_SIZE:
        q = mt_enc_ptr(e, q, ptr, version);
        q = mt_put_uvarint(q, n1);
        break;
    case MT_OP_MALLOPT:
        q = mt_put_svarint(q, (int64_t)n1);
        q = mt_put_svarint(q, (int64_t)n2);
        q = mt_put_svarint(q, (int64_t)result);
        break;
    case MT_OP_MALLOC_TRIM:
        q = mt_put_uvarint(q, n1);
        q = mt_put_svarint(q, (int64_t)result);
        break;
    default: {
        if (op == MT_OP_REALLOC || op == MT_OP_REALLOCARRAY)
            q = mt_enc_ptr(e, q, ptr, version);
        q = mt_put_uvarint(q, n1);
        if (op == MT_OP_CALLOC || op == MT_OP_REALLOCARRAY || op == MT_OP_MEMALIGN || op == MT_OP_ALIGNED_ALLOC ||
            op == MT_OP_POSIX_MEMALIGN)
            q = mt_put_uvarint(q, n2);
        if (!(b0 & MT_RF_NULL)) {
            q = mt_enc_ptr(e, q, result, version);
            q = mt_put_svarint(q, slack);
        } else if (op == MT_OP_POSIX_MEMALIGN) {
            q = mt_put_uvarint(q, result);
        }
    }
    }
    if (ext & MT_XF_STACK)
        q = mt_put_uvarint(q, stack);
    /* Publish: a process killed at any instruction leaves the whole record or a zero byte. */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    *p = (uint8_t)b0;
    return q;
}

/* An event record: op, time delta, payload length, payload. Needs len + 21 bytes. */
static inline uint8_t *mt_enc_event(mt_enc_t *e, uint8_t *p, unsigned op, uint64_t time, const void *payload,
                                    size_t len)
{
    uint8_t *q = mt_put_svarint(p + 1, (int64_t)(time - e->prev_time));
    e->prev_time = time;
    q = mt_put_uvarint(q, len);
    memcpy(q, payload, len);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    *p = (uint8_t)op;
    return q + len;
}

/* Name of an opcode as used by every tool ("malloc", "thread_start", ...); NULL if unknown. */
const char *mt_op_name(unsigned op);

#ifdef __cplusplus
}
#endif
#endif
