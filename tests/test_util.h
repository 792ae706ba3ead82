/* Helpers shared by the Check tests: temporary directories, reading a whole trace into memory,
 * comparing decoded records field by field, and building the records a test expects. */
#ifndef MTRACE_TEST_UTIL_H
#define MTRACE_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "mtrace/trace_reader.h"
#include "mtrace/trace_writer.h"

/* A growable list of decoded records. Event payloads are copied, so the records outlive the cursor. */
typedef struct rec_list {
    mt_record_t *v;
    size_t n, cap;
} rec_list_t;

void rec_list_push(rec_list_t *l, const mt_record_t *r);
void rec_list_free(rec_list_t *l);

/* Every record of every chunk, in file order. Stops at the first error: returns it (negative, the
 * message in err) with the records decoded before it in `out`. */
int read_file_order(const char *path, rec_list_t *out, mt_error_t *err);
/* The records of one thread (by index in the trace's thread list), in order. */
int read_thread(const mt_trace_t *t, size_t thread_index, rec_list_t *out, mt_error_t *err);

/* Equal in every decoded field (payload bytes compared, the record offset and the payload pointer not). */
int record_eq(const mt_record_t *a, const mt_record_t *b);
/* Describes a record in one line (for failure messages). Returns buf. */
char *record_str(const mt_record_t *r, char *buf, size_t cap);
/* ck_assert that got equals want, naming `what` and index i and both records when they differ. */
void assert_record_eq(const mt_record_t *got, const mt_record_t *want, const char *what, size_t i);
/* ck_assert that two lists are equal, record by record. */
void assert_lists_eq(const rec_list_t *got, const rec_list_t *want, const char *what);

/* Expected records, in the form the reader gives them. */
mt_record_t exp_call(unsigned op, uint64_t time);
/* An event whose payload is `n` varints (the reader returns them in arg[]). The payload lives in a
 * buffer the next call reuses: push the record to a rec_list (which copies it) first. */
mt_record_t exp_event_varints(unsigned op, uint64_t time, unsigned n, const uint64_t *values);
/* An event with an opaque payload (mark, exec, stack, module: no arg[]); data is not copied. */
mt_record_t exp_event_bytes(unsigned op, uint64_t time, const void *data, size_t len);

/* Feeds records to the writer on one thread: calls with mt_writer_call, events with mt_writer_event. */
int write_record(mt_writer_t *w, uint32_t thread, uint32_t tid, const mt_record_t *r);

/* A fresh directory under $TMPDIR (or /tmp); remove_tree deletes it and all it holds. */
char *make_temp_dir(const char *tag);
void remove_tree(const char *dir);
/* Removes *dir and all it holds, frees the path and sets *dir to NULL; where the environment
 * variable keep_env (NULL: none) is set, keeps the directory and names it on stderr instead. */
void temp_dir_discard(char **dir, const char *keep_env);

/* The fixture pair of a test program whose test cases each work in a fresh directory, held in its
 * `static char *var`: dir_setup makes it (make_temp_dir(tag)), dir_teardown discards it
 * (temp_dir_discard(&var, keep_env)). Add them with tcase_add_unchecked_fixture: the runner runs
 * those, so the directory goes even when a test fails (Check skips a checked teardown then). */
#define TEST_DIR_FIXTURE(var, tag, keep_env)                                                                           \
    static void dir_setup(void)                                                                                        \
    {                                                                                                                  \
        var = make_temp_dir(tag);                                                                                      \
    }                                                                                                                  \
    static void dir_teardown(void)                                                                                     \
    {                                                                                                                  \
        temp_dir_discard(&var, keep_env);                                                                              \
    }
/* dir + "/" + name, in malloc'd memory. */
char *path_in(const char *dir, const char *name);
/* Whether two files hold the same bytes (ck_asserts that both can be read). */
int files_same(const char *a, const char *b);

/* Small deterministic generator (xorshift64*), so a failing case can be replayed. */
typedef struct rng {
    uint64_t s;
} rng_t;
uint64_t rng_next(rng_t *r);
uint64_t rng_below(rng_t *r, uint64_t n);

/* The stride of a sweep that cuts or damages a file at each of its offsets: 1 (every offset) unless
 * MTRACE_SWEEP_STRIDE (meson option sweep_stride) says more. With k > 1 a sweep tries every k-th
 * offset and every offset at a boundary of the structure it sweeps, so that each kind of boundary is
 * still hit: the sanitizer build (scripts/test.sh), many times slower per offset, runs it so. */
unsigned sweep_stride(void);

/* Runs every test of a Check suite (Check's summary on stdout): EXIT_SUCCESS if all passed, else
 * EXIT_FAILURE. The body of a test program's main. */
struct Suite;
int run_suite(struct Suite *s);

#endif
