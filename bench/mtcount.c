/* mtcount: counts the records of a trace with the reader API, for the benchmark scripts.
 *
 * usage: mtcount TRACE [-v]
 * Prints one line:
 *   calls=N events=E lost=L threads=T chunks=C file_bytes=B
 * calls counts malloc-family call records (ops 1..MT_OP_LAST_CALL), events the other records.
 * With -v, a second line gives the count of each op.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mtrace/trace_reader.h"

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "-v"))) {
        fprintf(stderr, "usage: mtcount TRACE [-v]\n");
        return 2;
    }
    mt_trace_t *t;
    mt_error_t err;
    if (mt_trace_open(&t, argv[1], &err) < 0) {
        fprintf(stderr, "mtcount: %s\n", err.msg);
        return 1;
    }
    const mt_file_header_t *h = mt_trace_header(t);
    uint64_t counts[MT_OP_MAX + 1] = { 0 };
    uint64_t calls = 0, events = 0;
    for (size_t i = 0; i < mt_trace_thread_count(t); i++) {
        mt_thread_cursor_t tc;
        if (mt_thread_cursor_init(&tc, t, i) < 0) {
            fprintf(stderr, "mtcount: out of memory\n");
            return 1;
        }
        mt_record_t r;
        int rc;
        while ((rc = mt_thread_cursor_next(&tc, &r, &err)) > 0) {
            counts[r.op & MT_OP_MAX]++;
            if (r.op >= 1 && r.op <= MT_OP_LAST_CALL)
                calls++;
            else
                events++;
        }
        mt_thread_cursor_fini(&tc);
        if (rc < 0) {
            fprintf(stderr, "mtcount: %s\n", err.msg);
            return 1;
        }
    }
    printf("calls=%" PRIu64 " events=%" PRIu64 " lost=%" PRIu64 " threads=%zu chunks=%zu file_bytes=%" PRIu64 "\n",
           calls, events, h->lost_calls, mt_trace_thread_count(t), mt_trace_chunk_count(t), mt_trace_file_size(t));
    if (argc == 3) {
        for (unsigned op = 0; op <= MT_OP_MAX; op++)
            if (counts[op])
                printf("%s=%" PRIu64 " ", mt_op_name(op) ? mt_op_name(op) : "?", counts[op]);
        printf("\n");
    }
    mt_trace_close(t);
    return 0;
}
