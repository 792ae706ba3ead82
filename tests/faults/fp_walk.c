/* Reads traces the way the tests require: opens each with the reader and walks every thread's
 * records with a thread cursor. Prints one line per trace:
 *   FILE threads T records R calls C thread_starts S lost L complete 0|1 exec E allocator A
 * and exits 1 at the first trace that does not open or holds a record that does not decode.
 *   usage: fp_walk TRACE... */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mtrace/trace_reader.h"

static int walk(const char *path)
{
    mt_trace_t *t;
    mt_error_t err = { "" };
    if (mt_trace_open(&t, path, &err) < 0) {
        fprintf(stderr, "fp_walk: %s: %s\n", path, err.msg);
        return -1;
    }
    uint64_t records = 0, calls = 0, starts = 0, execs = 0, lost = 0;
    for (size_t i = 0; i < mt_trace_thread_count(t); i++) {
        mt_thread_cursor_t tc;
        if (mt_thread_cursor_init(&tc, t, i) < 0) {
            fprintf(stderr, "fp_walk: %s: no cursor for thread %zu\n", path, i);
            mt_trace_close(t);
            return -1;
        }
        mt_record_t r;
        int rc;
        while ((rc = mt_thread_cursor_next(&tc, &r, &err)) > 0) {
            records++;
            calls += r.op <= MT_OP_LAST_CALL;
            starts += r.op == MT_EV_THREAD_START;
            execs += r.op == MT_EV_EXEC;
            if (r.op == MT_EV_THREAD_EXIT && r.nargs > 0)
                lost += (uint64_t)r.arg[0];
        }
        mt_thread_cursor_fini(&tc);
        if (rc < 0) {
            fprintf(stderr, "fp_walk: %s: thread %zu: %s\n", path, i, err.msg);
            mt_trace_close(t);
            return -1;
        }
    }
    const mt_file_header_t *h = mt_trace_header(t);
    size_t alen = 0;
    const char *alloc = mt_trace_string(t, MT_STR_ALLOCATOR, 0, &alen);
    printf("%s threads %zu records %" PRIu64 " calls %" PRIu64 " thread_starts %" PRIu64 " lost %" PRIu64
           " complete %d exec %" PRIu64 " allocator %.*s\n",
           path, mt_trace_thread_count(t), records, calls, starts, lost + h->lost_calls,
           (h->flags & MT_HDR_COMPLETE) != 0, execs, alloc ? (int)alen : 1, alloc ? alloc : "-");
    mt_trace_close(t);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: fp_walk TRACE...\n");
        return 2;
    }
    for (int i = 1; i < argc; i++)
        if (walk(argv[i]) < 0)
            return 1;
    return 0;
}
