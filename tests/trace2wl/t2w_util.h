/* Helpers of the trace2wl tests: building small traces record by record, loading a workload into
 * memory, rendering ops as text for readable expected tables, and a replay checker that runs a
 * workload's streams under the replay semantics (WAIT = "until that thread completed N ops") and
 * checks slot use for every interleaving (happens-before through vector clocks). */
#ifndef MTRACE_T2W_UTIL_H
#define MTRACE_T2W_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "mtrace/convert.h"
#include "mtrace/trace_writer.h"
#include "mtrace/workload.h"
#include "test_output.h" /* read_text, for the tests that include this */

/* ---- trace builder: threads are numbered from 1; thread t has tid 1000 + t unless tb_tid says ---- */

#define TB_MAX_THREADS 2048

/* Builder failures end a Check test; a program outside Check sets this (it must not return). */
extern void (*t2w_fatal)(const char *msg);

typedef struct tb {
    mt_writer_t *w;
    uint32_t tid[TB_MAX_THREADS + 1];
    uint64_t calls; /* call records written */
} tb_t;

void tb_open(tb_t *b, const char *path);
void tb_open_header(tb_t *b, const char *path, const mt_file_header_t *h);
void tb_close(tb_t *b); /* sealed, as after a normal exit */
void tb_tid(tb_t *b, uint32_t thread, uint32_t tid);

/* Events, as libmtrace writes them: THREAD_START (payload: the creator's number, 0 for the first
 * thread) opens every thread's records; THREAD_CREATE (payload: the new thread's number) is written
 * by the creator; THREAD_EXIT (payload: the lost-call count, 0) closes an exited thread's records. */
void tb_start(tb_t *b, uint32_t th, uint64_t t, uint32_t creator);
void tb_create(tb_t *b, uint32_t th, uint64_t t, uint32_t child);
void tb_exit(tb_t *b, uint32_t th, uint64_t t);
void tb_mark(tb_t *b, uint32_t th, uint64_t t, const char *label);
/* MT_EV_PAGES: a large block's whole pages and how many are resident, when (MT_PAGES_AT_*). */
void tb_pages(tb_t *b, uint32_t th, uint64_t t, uint64_t ptr, uint64_t pages, uint64_t resident, unsigned when);
/* MT_EV_PAGES at a block's end, all its pages resident, with its prints: pages compared, changed,
 * zero both times. */
void tb_pages_printed(tb_t *b, uint32_t th, uint64_t t, uint64_t ptr, uint64_t pages, unsigned when, uint64_t sampled,
                      uint64_t changed, uint64_t zero);
/* MT_EV_VM: the program mapped (MT_VM_MAP) or unmapped (MT_VM_UNMAP) [addr, addr + len). */
void tb_vm(tb_t *b, uint32_t th, uint64_t t, unsigned kind, uint64_t addr, uint64_t len, uint64_t resident);
/* The same with the fifth field: the advice of MT_VM_ADVISE, or MT_VM_VIA_* of a map or unmap. */
void tb_vm5(tb_t *b, uint32_t th, uint64_t t, unsigned kind, uint64_t addr, uint64_t len, uint64_t resident,
            uint64_t fifth);

/* Calls. A result of 0 means the call returned NULL (MT_FLAG_NULL). usable = size rounded up to 16. */
void tb_malloc(tb_t *b, uint32_t th, uint64_t t, uint64_t size, uint64_t result);
void tb_calloc(tb_t *b, uint32_t th, uint64_t t, uint64_t count, uint64_t size, uint64_t result);
void tb_realloc(tb_t *b, uint32_t th, uint64_t t, uint64_t ptr, uint64_t size, uint64_t result);
void tb_reallocarray(tb_t *b, uint32_t th, uint64_t t, uint64_t ptr, uint64_t count, uint64_t size, uint64_t result);
/* op: MT_OP_MEMALIGN, MT_OP_ALIGNED_ALLOC or MT_OP_POSIX_MEMALIGN (a NULL result: error ENOMEM). */
void tb_aligned(tb_t *b, unsigned op, uint32_t th, uint64_t t, uint64_t align, uint64_t size, uint64_t result);
/* op: MT_OP_VALLOC or MT_OP_PVALLOC. */
void tb_valloc(tb_t *b, unsigned op, uint32_t th, uint64_t t, uint64_t size, uint64_t result);
void tb_free(tb_t *b, uint32_t th, uint64_t t, uint64_t ptr);
void tb_usable(tb_t *b, uint32_t th, uint64_t t, uint64_t ptr, uint64_t ret);
void tb_mallopt(tb_t *b, uint32_t th, uint64_t t, int64_t param, int64_t value, int64_t ret);

/* mt_convert with force; ck_asserts success. */
void convert_ok(const char *trace, const char *wl, mt_convert_stats_t *st);

/* ---- a workload in memory ---- */

typedef struct wl_stream {
    mt_wl_thread_entry_t entry;
    mt_wl_rec_t *ops; /* mark payloads copied (owned) */
    size_t n;
} wl_stream_t;

typedef struct wl_mem {
    mt_wl_header_t h;
    wl_stream_t *s;
    uint32_t nthreads;
} wl_mem_t;

void wl_load(wl_mem_t *m, const char *path); /* ck_asserts that the whole workload decodes */
void wl_free(wl_mem_t *m);
uint64_t wl_count_op(const wl_mem_t *m, unsigned op);

/* An op without its time, as `mtrace dump` prints it less the thread and time columns:
 *   thread_start | thread_exit | wait thread=T count=N | malloc #S SIZE | calloc #S CxS |
 *   realloc #A -> #B SIZE | reallocarray #A -> #B CxS | memalign #S align=A SIZE | free #S |
 *   malloc_usable_size #S | mallopt param=P value=V | mark "label" | rss rss_kb=R vm_kb=V */
char *op_str(const mt_wl_rec_t *r, char *buf, size_t cap);

/* ck_asserts that stream `thread` of the workload is exactly `want` (NULL-terminated lines). In the
 * expected lines runs of blanks count as one, so tables may be aligned, and "#?" matches any slot. */
void expect_stream(const wl_mem_t *m, uint32_t thread, const char *const *want);
/* The rendered stream, one op a line (for failure messages). malloc'd. */
char *stream_text(const wl_mem_t *m, uint32_t thread);

/* ---- replay checker ---- */

typedef enum {
    SCHED_TIME,    /* the runnable thread whose next op has the earliest time (ties: lowest index) */
    SCHED_RANDOM,  /* a random runnable thread (seeded) */
    SCHED_CAREFUL, /* as SCHED_TIME, among the threads whose next op also finds its slots as it needs
                    * them (live or free): shows that some order the WAITs allow replays cleanly */
} sched_t;

typedef struct replay_result {
    int ok;            /* no violation, all streams ran to their end */
    char why[512];     /* the first violation */
    uint64_t ops;      /* ops run */
    uint64_t allocs;   /* allocation ops that named a slot (made a block) */
    uint64_t live_end; /* live slots at the end */
    uint64_t max_live; /* most live slots at once in this schedule */
    uint64_t max_slot; /* highest slot named */
    int deadlock;
    int race; /* a slot access not ordered after the slot's previous access */
} replay_result_t;

/* Runs the workload's streams under `sched` and checks: WAITs name a thread and a reachable count,
 * every free/realloc/usable names a live slot, every allocation a free slot within header.slots,
 * streams begin with thread_start and end at thread_exit if they have one, no deadlock. With
 * `check_races`, every access to a slot must also happen after the slot's previous access in every
 * interleaving the WAITs allow (vector clocks), so the checks hold whatever the schedule. */
void replay(const wl_mem_t *m, sched_t sched, uint64_t seed, int check_races, replay_result_t *res);
/* Set: ops after a stream's thread_exit are no violation (see ops_after_thread_exit). */
extern int replay_allow_after_exit;
/* replay, then ck_assert that it was ok (the message names the violation). */
void replay_ok(const wl_mem_t *m, sched_t sched, uint64_t seed, int check_races, replay_result_t *res);
/* Runs the streams in a given order: at step k, thread order[k] runs its WAITs, which must be met
 * then, and its next other op. A record that makes no op is a step with ORDER_WAITS_ONLY: the
 * converter may have written WAITs for it (joins), so the thread runs the WAITs at its head that are
 * met. live_after[k] (if not NULL) gets the live slots after step k. Every op must have run after
 * the last step. strictness 0: WAITs are passed over unlooked at; 1: they must be met; 2: and
 * slot accesses are checked for races. */
#define ORDER_WAITS_ONLY 0x80000000u
void replay_order(const wl_mem_t *m, const uint32_t *order, size_t norder, uint64_t *live_after, int strictness,
                  replay_result_t *res);
void replay_order_ok(const wl_mem_t *m, const uint32_t *order, size_t norder, uint64_t *live_after, int strictness,
                     replay_result_t *res);

/* Runs a command with stdout to `out` and stderr to `err` (each: a file path, or NULL to inherit);
 * returns its exit status (-1 if it did not exit normally). */
int run_cmd(const char *out, const char *err, char *const argv[]);

#endif
