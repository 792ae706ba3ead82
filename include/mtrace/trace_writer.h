/* mtrace trace writer: builds a raw trace file from records given one by one.
 *
 * For tests, golden files and fuzz seeds; the preload shim does not use it (it writes straight into
 * its mapped file). Records are encoded with mt_enc_call / mt_enc_event from trace_format.h, the one
 * record codec, so a file written here is what the shim would have written for the same calls.
 *
 * Chunks are laid out like the shim's: each thread fills its own 64 KiB chunk in memory; a chunk's
 * file slot is claimed when its first record arrives (so chunks appear in order of first use), and
 * a full chunk is sealed and written out with pwrite. The next chunk of that thread has seq + 1,
 * base_time = the time of its first record, and fresh delta bases.
 *
 * Errors are a negative errno; mt_writer_error() (or the mt_error_t of open/close) says why.
 */
#ifndef MTRACE_TRACE_WRITER_H
#define MTRACE_TRACE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "mtrace/trace_format.h"
#include "mtrace/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_writer mt_writer_t;

/* The header a NULL template stands for: current format version, 64 KiB chunks, this machine's
 * pointer size and page size, time in nanoseconds (ticks_per_sec 1e9), flags 0. pid, clocks and
 * times are 0 so that the same records always give the same bytes (golden files). */
void mt_writer_default_header(mt_file_header_t *h);

/* Creates (or truncates) `path`. The header is written as `tmpl` says, byte for byte (NULL: the
 * default header above), so tests can also write headers a reader must refuse; close adds the
 * finish fields when it seals. Records are written in the syntax of the header's version (1 or
 * 2: they differ in their pointer fields). */
int mt_writer_open(mt_writer_t **w, const char *path, const mt_file_header_t *tmpl, mt_error_t *err);

/* Appends a header string (TLV at MT_HEADER_STRINGS_OFFSET). -ENOSPC when it does not fit in the
 * header chunk, -EINVAL for tag 0 or a length over 65535. */
int mt_writer_header_string(mt_writer_t *w, unsigned tag, const void *s, size_t len);

/* Appends a call record to thread `thread` (1 or more; `tid` is written into its chunk headers).
 * The fields are read as mt_cursor_next() fills them (see mt_record_t): op and flags (MT_FLAG_NULL,
 * MT_FLAG_MMAPPED, MT_FLAG_HEAP_GREW, MT_FLAG_STACK with `stack`), time, then the op's fields:
 * ptr, size, count, align, result and usable (the slack written is usable minus the requested size:
 * count * size for calloc and reallocarray, size otherwise); posix_memalign's error in arg[0] when
 * MT_FLAG_NULL; mallopt's param, value and return in arg[0..2]. -EINVAL for an op that is not a
 * call or block flags on free, malloc_usable_size or mallopt. */
int mt_writer_call(mt_writer_t *w, uint32_t thread, uint32_t tid, const mt_record_t *r);

/* Appends an event record (op MT_EV_*) with its payload as given. -EINVAL for an op that is not a
 * known event, -EMSGSIZE when the payload cannot fit in a chunk. */
int mt_writer_event(mt_writer_t *w, uint32_t thread, uint32_t tid, unsigned op, uint64_t time, const void *payload,
                    size_t len);

/* Chunks written so far or still open (the header chunk not counted). */
uint64_t mt_writer_chunks(const mt_writer_t *w);

/* Why the latest call failed ("" if none has). */
const char *mt_writer_error(const mt_writer_t *w);

/* Writes the open chunks and the header chunk, closes the file and frees `w` (also on error).
 * seal != 0: as a process that finished tracing: open chunks are sealed, the header gets
 * MT_HDR_COMPLETE, chunks_used, threads, and end_time (the latest record time, unless the template
 * set one). seal == 0: as after a crash: open chunks stay unsealed and the header is the template's.
 * Chunks that filled up were sealed when they filled, either way. */
int mt_writer_close(mt_writer_t *w, int seal, mt_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
