/* Helpers of the simulator tests: building small workloads op by op with the workload writer,
 * running mtrace-sim and mtrace under a time limit, and reading their results. */
#ifndef MTRACE_SIM_UTIL_H
#define MTRACE_SIM_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "mtrace/json_reader.h"
#include "mtrace/workload.h"
#include "test_output.h" /* read_text, for the tests that include this */

/* Built with a sanitizer (meson -Db_sanitize=...): mtrace-sim's malloc is then the sanitizer's, which
 * ignores mallopt and cannot be replaced by a preloaded allocator. Tests of glibc's own behaviour
 * return early (and say so) in such a build. */
#ifdef SIM_SANITIZED
#define SIM_SANITIZER_ALLOCATOR 1
#else
#define SIM_SANITIZER_ALLOCATOR 0
#endif
/* Returns 1 (after a note on stderr) if the test must stop here because of the sanitizer. */
int sanitizer_skip(const char *what);

/* ---- workload builder ----
 * Threads are streams 0..n-1; each stream starts with THREAD_START (written by wlb_thread). Every op
 * gets the builder's clock, which advances 1 us per op (wlb_gap adds more), so ops written in a valid
 * global order carry increasing times. The builder follows live bytes in the order ops are written
 * and puts the peak into the header, as trace2wl does; slots = the highest slot named. */
typedef struct wlb {
    mt_wl_writer_t *w;
    char *path;
    uint64_t now_ns;
    uint64_t *slot_size; /* live size per slot; UINT64_MAX: free */
    size_t slot_cap;
    uint64_t max_slot;
    uint64_t live, peak, peak_ns;
    uint32_t nthreads;
    int pages_evidence; /* wlb_set_touch was called: the workload says it has page evidence */
    uint64_t maps;      /* MMAP ops written */
    uint64_t advises;   /* MADVISE ops written */
    /* the traced program's RSS figures for the header (0: no RSS samples), set before wlb_close */
    uint64_t source_peak_rss_kb, source_peak_anon_kb;
} wlb_t;

void wlb_open(wlb_t *b, const char *path);
/* As wlb_open, with the header's strings naming `allocator` as the traced program's (MT_STR_ALLOCATOR;
 * NULL: none). */
void wlb_open_traced(wlb_t *b, const char *path, const char *allocator);
/* The program's own mappings: MT_WL_MMAP of len bytes on a slot; MT_WL_MUNMAP of a part of it. */
void wlb_mmap(wlb_t *b, uint32_t th, uint64_t slot, uint64_t len);
void wlb_munmap(wlb_t *b, uint32_t th, uint64_t slot, uint64_t off, uint64_t len, int last);
/* MT_WL_MADVISE of a part of it: write its first `pages` pages, then give `advice`. */
void wlb_madvise(wlb_t *b, uint32_t th, uint64_t slot, uint64_t off, uint64_t len, int advice, uint64_t pages);
/* The touch table to write at close (kept by the caller until then); marks the page evidence. */
void wlb_set_touch(wlb_t *b, const mt_wl_touch_entry_t *entries, uint64_t n);
/* Adds a stream; creator_plus1 = creator's index + 1, or 0. Writes its THREAD_START. Returns its index. */
uint32_t wlb_thread(wlb_t *b, uint32_t creator_plus1);
void wlb_gap(wlb_t *b, uint64_t ns);
void wlb_malloc(wlb_t *b, uint32_t th, uint64_t slot, uint64_t size);
void wlb_calloc(wlb_t *b, uint32_t th, uint64_t slot, uint64_t count, uint64_t size);
void wlb_realloc(wlb_t *b, uint32_t th, uint64_t old_slot, uint64_t new_slot, uint64_t size);
/* memalign, posix_memalign, aligned_alloc (op with its alignment), valloc or pvalloc (align unused). */
void wlb_aligned(wlb_t *b, uint32_t th, unsigned op, uint64_t slot, uint64_t align, uint64_t size);
void wlb_reallocarray(wlb_t *b, uint32_t th, uint64_t old_slot, uint64_t new_slot, uint64_t count, uint64_t size);
void wlb_free(wlb_t *b, uint32_t th, uint64_t slot);
void wlb_usable(wlb_t *b, uint32_t th, uint64_t slot);
void wlb_wait(wlb_t *b, uint32_t th, uint32_t other, uint64_t count);
void wlb_exit(wlb_t *b, uint32_t th);
/* Any op, as given (time set by the builder; no live-byte accounting). */
void wlb_put(wlb_t *b, uint32_t th, mt_wl_rec_t *r);
/* Ops written so far to a stream: after WAIT(th, wlb_ops(th)), that thread has done all of them. */
uint64_t wlb_ops(const wlb_t *b, uint32_t th);
void wlb_close(wlb_t *b);

/* ---- running programs ---- */

#define RUN_TIMEOUT (-1000) /* run() result: the program ran past its time limit and was killed */

/* Runs argv (NULL-terminated) with stdout and stderr into files (NULL: /dev/null), extra environment
 * entries NAME=VALUE (NULL-terminated list, or NULL), within `timeout_s`. Returns the exit status,
 * 128 + signal if it died of a signal, or RUN_TIMEOUT (killed with its process group). */
int run(const char *const *argv, const char *out, const char *err, const char *const *env, double timeout_s);

/* Lines in the text (a last line without newline counts). */
size_t count_lines(const char *text);
/* ck_asserts that `err` holds exactly one line, and that it contains each of the NULL-terminated
 * `needles` (a needle "a|b" is satisfied by either). Returns nothing; `what` names the case. */
void assert_one_line(const char *err_path, const char *what, const char *const *needles);

/* Loads a JSON file, ck_asserting that it parses. */
mt_jval_t *load_json(const char *path);
/* obj[key][sub] as a number; ck_asserts that it exists. */
double jnum2(const mt_jval_t *obj, const char *key, const char *sub);
/* obj[key] as a number; ck_asserts that it exists. */
double jnum(const mt_jval_t *obj, const char *key);

/* Is the library for an allocator name installed? Fills `why` (naming the Debian package) if not. */
int allocator_installed(const char *name, char *why, size_t why_cap);

#endif
