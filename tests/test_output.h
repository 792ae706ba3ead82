/* Reading what a test's programs wrote: a file whole, and a child's stdout and stderr, captured in
 * files while it runs. Shared by the Check tests that run programs (test_output.c). */
#ifndef MTRACE_TEST_OUTPUT_H
#define MTRACE_TEST_OUTPUT_H

#include <stddef.h>

/* The whole of a file, NUL-terminated, in malloc'd memory, its length in *len (when len is not
 * NULL); NULL if it cannot be opened. */
char *read_text(const char *path, size_t *len);
/* The same, for a file the test made or must find: ck_asserts that it can be opened. */
char *read_text_ok(const char *path);
/* The same, "" for a file that cannot be opened: one a program may or may not have written. */
char *read_text_or_empty(const char *path);

/* A child's output: its stdout and stderr go to two files of the test's directory while it runs,
 * files rather than pipes, so that a child that writes much never waits for the test to read. */
typedef struct capture {
    char *out_path, *err_path;
    int out_fd, err_fd; /* for the child: dup2 them onto 1 and 2 */
} capture_t;

/* A program's end: its status (from waitpid) and what it wrote, NUL-terminated. */
typedef struct run_result {
    int status;
    char *out; /* stdout */
    char *err; /* stderr */
} run_result_t;

/* Creates dir/stdout.N and dir/stderr.N, N new for each capture of this process. */
void capture_open(capture_t *c, const char *dir);
/* Once the child is forked: closes the test's own descriptors of the two files. */
void capture_started(capture_t *c);
/* Once the child has ended: reads the two files into r->out and r->err (read_text_ok) and removes
 * them. */
void capture_finish(capture_t *c, run_result_t *r);
void run_result_free(run_result_t *r);

#endif
