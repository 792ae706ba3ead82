/* mtrace workload writer and reader: the one implementation of the workload format
 * (include/mtrace/workload_format.h, doc/workload-format.md). */
#ifndef MTRACE_WORKLOAD_H
#define MTRACE_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "mtrace/trace_reader.h"
#include "mtrace/workload_format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One op, decoded. Fields by op (see workload_format.h):
 *   alloc ops      slot (0: the call returned NULL), size, count (calloc, reallocarray), align
 *   realloc ops    slot = old slot, slot2 = new slot
 *   free, usable   slot
 *   mallopt        a = param, b = value
 *   wait           thread, count
 *   rss            rss_kb, vm_kb
 *   mark           data, len */
typedef struct mt_wl_rec {
    uint8_t op;
    uint64_t time_ns; /* since the start of the trace */
    uint64_t slot, slot2;
    uint64_t size, count, align;
    int64_t a, b;
    uint32_t thread;
    uint64_t n;
    uint64_t rss_kb, vm_kb;
    const uint8_t *data;
    uint32_t len;
} mt_wl_rec_t;

const char *mt_wl_op_name(unsigned op);

/* ---- writer ---- */
typedef struct mt_wl_writer mt_wl_writer_t;

/* Writes to PATH.partial.XXXXXX and renames to PATH on a successful close, so a failed conversion
 * leaves nothing behind. `strings` is a TLV list as in the trace header (may be NULL). */
int mt_wl_writer_open(mt_wl_writer_t **w, const char *path, const mt_wl_header_t *tmpl, const uint8_t *strings,
                      size_t strings_len, mt_error_t *err);
/* Adds a thread stream; returns its index. */
int mt_wl_writer_add_thread(mt_wl_writer_t *w, uint32_t thread_no, uint32_t tid, uint32_t creator_index_plus1);
/* Sets a thread's creator (its index + 1; 0: none). */
void mt_wl_writer_set_creator(mt_wl_writer_t *w, uint32_t thread, uint32_t creator_index_plus1);
/* Appends an op to a thread's stream. */
int mt_wl_writer_put(mt_wl_writer_t *w, uint32_t thread, const mt_wl_rec_t *r, mt_error_t *err);
/* Ops written so far to a thread's stream (the next op's sequence number). */
uint64_t mt_wl_writer_thread_ops(const mt_wl_writer_t *w, uint32_t thread);
/* Finishes (counts from `final`: slots, waits, peak, repairs) and renames into place. */
int mt_wl_writer_close(mt_wl_writer_t *w, const mt_wl_header_t *final, mt_error_t *err);
/* Abandons the output: nothing is left behind. */
void mt_wl_writer_abort(mt_wl_writer_t *w);

/* ---- reader ---- */
typedef struct mt_wl mt_wl_t;

int mt_wl_open(mt_wl_t **out, const char *path, mt_error_t *err);
void mt_wl_close(mt_wl_t *w);
const char *mt_wl_path(const mt_wl_t *w);
const mt_wl_header_t *mt_wl_header(const mt_wl_t *w);
const char *mt_wl_string(const mt_wl_t *w, unsigned tag, unsigned n, size_t *len);
uint64_t mt_wl_file_size(const mt_wl_t *w);
size_t mt_wl_thread_count(const mt_wl_t *w);
const mt_wl_thread_entry_t *mt_wl_thread(const mt_wl_t *w, size_t i);

/* A cursor over one thread's ops; each cursor has its own buffers, so threads may read in parallel. */
typedef struct mt_wl_cursor mt_wl_cursor_t;
int mt_wl_cursor_open(mt_wl_cursor_t **c, const mt_wl_t *w, uint32_t thread);
/* 1: an op; 0: the stream ended; negative: damage (message in err). */
int mt_wl_cursor_next(mt_wl_cursor_t *c, mt_wl_rec_t *r, mt_error_t *err);
void mt_wl_cursor_close(mt_wl_cursor_t *c);

/* Low-level access for a replayer that keeps its buffers out of the allocator it measures: where a
 * thread's frames are, and the decoder of one op. mt_wl_decode_op reads one op at *pp (time relative
 * to *prev_ns, which it updates) and returns 0, or -1 if the bytes are damaged or cut. */
uint32_t mt_wl_thread_frame_count(const mt_wl_t *w, uint32_t thread);
const mt_wl_frame_entry_t *mt_wl_thread_frame(const mt_wl_t *w, uint32_t thread, uint32_t k);
int mt_wl_fd(const mt_wl_t *w);
int mt_wl_decode_op(const uint8_t **pp, const uint8_t *end, mt_wl_rec_t *r, uint64_t *prev_ns);

/* Is this file a workload (by its magic)? 1 yes, 0 no, negative on I/O error. */
int mt_file_is_workload(const char *path);

#ifdef __cplusplus
}
#endif
#endif
