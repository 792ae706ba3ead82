/* mtrace workload format, version 7: what trace2wl writes and the simulator replays.
 *
 * doc/workload-format.md is the normative description. A workload is one op stream per traced
 * thread. Blocks are named by slots (1..slots; 0 = none), recycled when freed, so the replayer's
 * slot table is as large as the peak live set. Cross-thread dependencies are WAIT ops: "wait until
 * thread T has completed N ops", so no sync table exists at all and a sync costs one counter read
 * when the dependency is already met. Streams are cut into zstd frames a reader takes one at a time.
 */
#ifndef MTRACE_WORKLOAD_FORMAT_H
#define MTRACE_WORKLOAD_FORMAT_H

#include <stdint.h>

#include "mtrace/trace_format.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MT_WL_MAGIC "\x89MTW\r\n\x1a\n"
#define MT_WL_VERSION 7u
#define MT_WL_VERSION_MIN 2u          /* version 2: the same without the touch table */
#define MT_WL_FRAME_MAGIC 0x46574c4du /* "MLWF" read as a little-endian u32 */
#define MT_WL_INDEX_MAGIC 0x58494c4du /* "MLIX" */
#define MT_WL_FRAME_RAW_MAX 65536u    /* ops of one thread per frame, before compression */
#define MT_WL_HEADER_STRINGS_OFFSET 256u

/* File header, little-endian, at offset 0. Strings (the trace's TLV list: command line, exe,
 * glibc, allocator, MALLOC_* settings, plus MT_STR_PATH = the source trace) follow at offset 256
 * up to header_size, where frames begin. */
typedef struct mt_wl_header {
    uint8_t magic[8];
    uint32_t version;
    uint32_t header_size; /* offset of the first frame */
    uint32_t threads;
    uint32_t flags;        /* MT_WLH_* */
    uint64_t slots;        /* peak live blocks: the replayer's slot table size */
    uint64_t ops;          /* ops in all streams */
    uint64_t waits;        /* WAIT ops */
    uint64_t index_offset; /* the frame index; 0 if the writer did not finish */
    uint64_t frames;
    uint64_t source_pid;
    uint64_t source_start_realtime_ns;
    uint64_t peak_live_bytes; /* requested bytes live at the peak */
    uint64_t peak_live_time_ns;
    uint64_t source_peak_rss_kb; /* from the trace's RSS samples; 0 if none */
    uint64_t duration_ns;        /* first to last op */
    /* what the conversion dropped or repaired */
    uint64_t unknown_frees; /* frees/reallocs of blocks allocated before tracing began */
    uint64_t double_frees;
    uint64_t inversions; /* records applied out of timestamp order to respect causality */
    uint64_t forced;     /* live blocks dropped to get past an inconsistency */
    /* version 3: the pages a replay writes in large blocks (MT_WLH_PAGES; see mt_wl_touch_entry_t) */
    uint64_t touch_offset; /* the touch table, after the index's frame entries; 0: none */
    uint64_t touch_entries;
    uint64_t large_blocks;        /* blocks the trace has page evidence for */
    uint64_t large_exact;         /* of which made of fresh memory: the pages written are known */
    uint64_t large_estimated;     /* of which the pages written were estimated (see the spec) */
    uint64_t large_pages;         /* their whole pages */
    uint64_t large_touched;       /* of which written, as the table says */
    uint64_t program_maps;        /* MMAP ops: anonymous mappings the program made itself */
    uint64_t program_peak_bytes;  /* the most bytes of them mapped at once */
    uint64_t source_peak_anon_kb; /* from the RSS samples: resident less file-backed; 0 if none */
    /* version 4 (0 in older versions) */
    uint64_t program_brk_peak_bytes; /* of program_peak_bytes, the most the program's brk/sbrk held */
    uint64_t program_advises;        /* MADVISE ops */
    /* the traced program's anonymous pages at its first RSS sample, before its main: its relocated
     * data, static variables and stack, and blocks made before the recorder started, which no
     * allocator changes and no op replays (clang: 10.9 MB of libLLVM's relocations); 0 if none
     * (and in workloads written before it) */
    uint64_t source_start_anon_kb;
    uint8_t reserved[8];
} mt_wl_header_t;

_Static_assert(sizeof(mt_wl_header_t) == 256, "workload header is 256 bytes");

enum {
    MT_WLH_COMPLETE = 1u << 0,      /* the writer finished: index and counts are valid */
    MT_WLH_SRC_TRUNCATED = 1u << 1, /* the source trace was truncated */
    MT_WLH_PAGES = 1u << 2,         /* the source trace has page evidence (format 3 under glibc) */
};

/* The touch table, sorted by thread, then op, then slot. An entry of slot 0 names an allocation op
 * whose block the program wrote only in part: the replay writes the first frac/65536 of the block's
 * whole pages (and its first byte, a block's only) instead of every page; or (version 7, frac 65536
 * and a size) the block's first `size` bytes as it writes a whole block, a byte every page from its
 * first and their last: the program left the rest unwritten (an edge block, trace_format.h,
 * MT_PAGES_EDGE). An allocation op without one writes every page. An entry of another slot (version
 * 6) names a later op of the thread that made the block, by which the program had written more of
 * it: after that op the replay writes the first frac/65536 of the whole pages of the block of `size`
 * bytes that lives in that slot. */
typedef struct mt_wl_touch_entry {
    uint64_t op;     /* the op's number in its thread's stream, from 1 (the count once it completes) */
    uint32_t thread; /* thread index, 0-based */
    uint32_t frac;   /* share of the block's whole pages written, in 1/65536; below 65536 at its allocation
                      * but with a size (version 7) */
    uint64_t size;   /* slot != 0: the block's requested bytes; slot 0: 0, or its bytes written (version 7) */
    uint64_t slot;   /* 0: the block op `op` makes; else the live block in this slot */
} mt_wl_touch_entry_t;

_Static_assert(sizeof(mt_wl_touch_entry_t) == 32, "touch entry is 32 bytes");
#define MT_WL_TOUCH_ENTRY_V5 16u /* versions 3 to 5: op, thread, frac */

#define MT_WL_TOUCH_ONE 65536u

/* Frame: header then zstd data holding raw_size bytes of one thread's ops. */
typedef struct mt_wl_frame_header {
    uint32_t magic;
    uint32_t thread; /* thread index, 0-based */
    uint32_t raw_size;
    uint32_t zsize;
    uint64_t first_op; /* sequence number of the frame's first op in its thread */
    uint32_t nops;
    uint32_t reserved;
} mt_wl_frame_header_t;

_Static_assert(sizeof(mt_wl_frame_header_t) == 32, "frame header is 32 bytes");

/* Index, at index_offset: u32 magic, u32 threads, then per thread an mt_wl_thread_entry_t, then
 * per frame (file order) an mt_wl_frame_entry_t. */
typedef struct mt_wl_thread_entry {
    uint32_t thread_no; /* the trace's sequential thread number */
    uint32_t tid;
    uint32_t creator; /* thread index of the creator + 1, 0 if none */
    uint32_t frames;
    uint64_t ops;
    uint64_t start_ns; /* time of its first op, from the start of the trace */
    uint64_t end_ns;
} mt_wl_thread_entry_t;

typedef struct mt_wl_frame_entry {
    uint64_t offset;
    uint32_t thread;
    uint32_t nops;
} mt_wl_frame_entry_t;

/* Ops: a byte, then a varint time delta in ns from the thread's previous op, then the fields. */
typedef enum mt_wl_op {
    MT_WL_NONE = 0,
    MT_WL_MALLOC = 1,       /* slot, size */
    MT_WL_FREE = 2,         /* slot (0: free(NULL)), then the block's requested size if slot != 0 */
    MT_WL_CALLOC = 3,       /* slot, count, size */
    MT_WL_REALLOC = 4,      /* old slot (0: NULL), new slot (0: NULL returned), size, then the old
                             * block's requested size if old slot != 0 */
    MT_WL_REALLOCARRAY = 5, /* old slot, new slot, count, size, old size as for realloc */
    MT_WL_MEMALIGN = 6,     /* slot, align, size */
    MT_WL_POSIX_MEMALIGN = 7,
    MT_WL_ALIGNED_ALLOC = 8,
    MT_WL_VALLOC = 9, /* slot, size */
    MT_WL_PVALLOC = 10,
    MT_WL_USABLE_SIZE = 11,  /* slot */
    MT_WL_MALLOPT = 12,      /* param (zigzag), value (zigzag) */
    MT_WL_MALLOC_TRIM = 13,  /* version 5: pad */
    MT_WL_LAST_CALL = 13,    /* the calls are ops 1 to this */
    MT_WL_THREAD_START = 16, /* first op of every stream */
    MT_WL_THREAD_EXIT = 17,  /* last op of a stream whose thread exited */
    MT_WL_WAIT = 18,         /* thread index, count: wait until that thread has completed count ops */
    MT_WL_RSS = 19,          /* the traced program's VmRSS and VmSize in KiB at this point */
    MT_WL_MARK = 20,         /* label length, label */
    MT_WL_MMAP = 21,         /* version 3: slot, length: anonymous memory the program mapped itself */
    MT_WL_MUNMAP = 22,       /* version 3: slot, offset, length, last (1: nothing of it is left mapped) */
    MT_WL_MADVISE = 23,      /* version 4: slot, offset, length, advice, pages to write first */
    MT_WL_OP_MAX = 23,
} mt_wl_op_t;

/* Same numbers as the trace's call opcodes, so names and counts line up. */
_Static_assert((int)MT_WL_MALLOPT == (int)MT_OP_MALLOPT && (int)MT_WL_MALLOC_TRIM == (int)MT_OP_MALLOC_TRIM &&
                   (int)MT_WL_LAST_CALL == (int)MT_OP_LAST_CALL,
               "call ops share numbers");
_Static_assert((int)MT_WL_CALLOC == (int)MT_OP_CALLOC && (int)MT_WL_REALLOCARRAY == (int)MT_OP_REALLOCARRAY,
               "mt_requested() reads workload ops too");

#define MT_WL_MAX_OP_BYTES 64u

#ifdef __cplusplus
}
#endif
#endif
