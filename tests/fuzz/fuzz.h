/* Fuzz targets for mtrace's readers of untrusted files (tests/fuzz/README.md).
 *
 * Each target is one file defining LLVMFuzzerTestOneInput. It links either with libFuzzer
 * (-Dfuzzer=true, clang) or with replay_main.c, which runs it over corpus files in the normal tests.
 * The helpers here put an input where the readers want it (a file) and turn the fuzzer-friendly
 * "plain" container forms into the real formats (see fz_trace_expand and fz_wl_expand).
 */
#ifndef MTRACE_FUZZ_H
#define MTRACE_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Stops the process (abort) with a message: an invariant that must hold for any input broke. */
void fz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Puts the bytes in an in-memory file (one per `slot`, reused across calls) and returns a path that
 * opens it ("/proc/self/fd/N"). Aborts if no memory file can be made. */
const char *fz_memfile(int slot, const uint8_t *data, size_t size);

/* A private directory for outputs, mtrace-fuzz.PID in $TMPDIR, else /dev/shm, else /tmp; made once per
 * process, removed at exit, and by a later process when this one ended without running atexit. */
const char *fz_tmpdir(void);

/* A growable byte buffer. */
typedef struct fz_buf {
    uint8_t *p;
    size_t n, cap;
} fz_buf_t;
void fz_put(fz_buf_t *b, const void *data, size_t len);
void fz_zero(fz_buf_t *b, size_t len);
void fz_buf_free(fz_buf_t *b);

/* Traces. Any input is used as it is, except two plain forms that keep inputs small and let the
 * fuzzer reach records (both have a header whose data_offset D is 256..65536, as a packed trace):
 *   - header flag MT_HDR_PACKED: a packed trace whose frames may hold their chunk's records
 *     uncompressed; such a frame (one that does not start with the zstd magic) is compressed here,
 *     and its size and the chunk header's `used` are set to match. Frames already in zstd stay as
 *     they are. Whatever follows the last well-formed frame is kept as it is.
 *   - no MT_HDR_PACKED: a compact raw trace. The header chunk is bytes 0..D, zero-padded to 64 KiB,
 *     and each frame (packed frame header, chunk header, records) becomes one raw chunk, padded to
 *     64 KiB except the last: the file ends after the last frame's records, inside a frame that is
 *     cut short. Bytes after the frames that are not a frame are a raw chunk of their own (at most
 *     64 KiB). At most 64 chunks. data_offset is written as 0.
 * force_packed sets MT_HDR_PACKED first, so that every input takes the packed path. */
void fz_trace_expand(const uint8_t *in, size_t n, int force_packed, fz_buf_t *out);

/* Workloads. Any input is used as it is, except that frames (reached by walking them from the
 * header's end up to the index) that do not start with the zstd magic are compressed here, their
 * sizes set, the frames moved accordingly and the index's frame offsets that named them rewritten.
 * decompress = 1 does the reverse (used to make plain seeds from real workloads). */
void fz_wl_expand(const uint8_t *in, size_t n, int decompress, fz_buf_t *out);

/* Trace plain forms from a real trace file (the inverse of fz_trace_expand; for make_seeds). */
int fz_trace_compact(const char *path, fz_buf_t *out);

/* Walks everything a trace offers: header strings, every chunk, every thread, stack and module
 * payloads. Returns the number of records read, or -1 if the trace does not open. */
long long fz_walk_trace(const char *path);

typedef struct fz_wl_stats {
    int opened;
    int damaged;       /* a cursor reported damage */
    uint64_t ops;      /* ops read */
    uint64_t max_slot; /* largest slot named */
    int bad_wait;      /* a WAIT names a thread out of range, itself, or more ops than it has */
    int ops_mismatch;  /* a thread's op count differs from its index entry */
} fz_wl_stats_t;

/* Opens a workload and reads every thread's stream to its end with the reader's cursors. */
void fz_walk_wl(const char *path, fz_wl_stats_t *st);

#endif
