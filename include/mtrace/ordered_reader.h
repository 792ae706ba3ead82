/* mtrace ordered reader: a trace's records in time order, its threads merged, read by worker threads.
 *
 * The order is the one every serial reader of the project gives (mtrace/merge_heap.h: by time, ties
 * by thread index), and so are the errors: a damaged record ends the stream where the serial merge
 * would meet it, with the same message (the damaged thread's record before it is handed out first:
 * it came before the damage in time order). With 2 jobs one worker decodes and merges while the caller
 * uses the records; with N > 2, N - 2 workers decode the threads' chunks (each with its own zstd
 * context and chunk buffers), one merges them, the caller makes N. Memory, whatever the trace's
 * length: a 64 KiB chunk buffer per trace thread being read (as a serial reader's), with decoders
 * 128 KiB of decoded records per trace thread being read, and 2 MiB of merged records. A thread is
 * read from the consumer's first request for its records to their end.
 */
#ifndef MTRACE_ORDERED_READER_H
#define MTRACE_ORDERED_READER_H

#include <stdint.h>

#include "mtrace/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_ordered mt_ordered_t;

/* A merge reads every thread's first record at its start, so its decoders hold 128 KiB of decoded
 * records per trace thread: past this many threads (a program that made thousands of short ones)
 * the merger decodes the threads itself, holding a chunk buffer per thread whose records interleave
 * as a serial reader does, and mt_ordered_open_threads refuses (-E2BIG). */
#define MT_ORDERED_DECODED_THREADS_MAX 1024u

/* Starts reading t with `jobs` threads in all (2 or more, the caller's included). t must stay open
 * and no other cursor of it may load chunks in the meantime. 0, or -ENOMEM / -EAGAIN with the
 * message in err. */
int mt_ordered_open(mt_ordered_t **out, mt_trace_t *t, unsigned jobs, mt_error_t *err);
/* The next records in time order: *n of them in rec[], thread[k] the index of rec[k]'s thread (as
 * mt_trace_thread): 1; 0 at the end; negative on damage, with the message in err (the records
 * before the damage come first). They and their payloads stay valid until the next call. */
int mt_ordered_batch(mt_ordered_t *m, const mt_record_t **rec, const uint32_t **thread, size_t *n, mt_error_t *err);
/* The threads' records without the merge: `decoders` workers (1 or more; at most one per trace
 * thread) decode each trace thread's chunks ahead into a few batches of its own, and the caller takes
 * each thread's records in order, the threads in whatever interleaving it needs (trace2wl holds a
 * thread back while others go on). A worker decodes a thread from the caller's first request for
 * its records, and its batches go at their end: threads not begun or done hold nothing. It waits
 * only when every thread it decodes has its batches full. 0, or -ENOMEM / -EAGAIN with the message
 * in err. */
int mt_ordered_open_threads(mt_ordered_t **out, mt_trace_t *t, unsigned decoders, mt_error_t *err);
/* Thread i's next record, of a reader opened with mt_ordered_open_threads: 1; 0 at its end; negative
 * on damage, with the message in err (as mt_thread_cursor_next). *r and its payload stay valid until
 * the next call for thread i. */
int mt_ordered_thread_next(mt_ordered_t *m, uint32_t i, const mt_record_t **r, mt_error_t *err);
/* Stops the workers (also before the end) and frees everything. */
void mt_ordered_close(mt_ordered_t *m);

#ifdef __cplusplus
}
#endif
#endif
