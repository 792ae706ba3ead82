/* syncbench: writes synthetic two-thread workloads (mt_wl_writer) that isolate the replayer's own
 * costs: the per-op loop, a WAIT whose condition is already met, and a WAIT that hands over to the
 * other thread. Replay them with mtrace-sim (bench/pipeline.sh does) and divide by the op counts
 * that syncbench prints.
 *
 *   syncbench MODE N OUT.wl
 *
 * MODE:
 *   marks      thread 0: thread_start. thread 1: thread_start, WAIT(0, 1), then N zero-length MARK
 *              ops: the replay loop's cost per op (decode, dispatch, progress counter), no call.
 *   satisfied  as marks, but the N ops are WAIT(0, 1): each finds its condition met at once.
 *              (satisfied - marks) / N is what a met sync point adds to an op.
 *   pingpong   thread 0 mallocs slot 1 (16 bytes), thread 1 waits for that malloc and frees the
 *              slot, thread 0 waits for that free before its next malloc: N round trips, 2N - 1
 *              WAITs that each must wait for the other thread (spin, or futex sleep when the spin
 *              runs out: force that with `taskset -c 0`, both threads on one CPU).
 *   nosync     the same mallocs and frees as pingpong, each thread on its own slot, no WAIT: the
 *              calls' own cost, to subtract from pingpong.
 *
 * Prints one line: mode=M n=N ops=OPS waits=W (W: the WAITs that matter for the mode).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/workload.h"

static mt_wl_writer_t *w;
static mt_error_t err;
static uint64_t now_ns;

static void put(uint32_t thread, mt_wl_rec_t r)
{
    r.time_ns = ++now_ns;
    if (mt_wl_writer_put(w, thread, &r, &err) < 0) {
        fprintf(stderr, "syncbench: %s\n", err.msg);
        exit(1);
    }
}

static uint64_t ops(uint32_t thread)
{
    return mt_wl_writer_thread_ops(w, thread);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: syncbench marks|satisfied|pingpong|nosync N OUT.wl\n");
        return 2;
    }
    const char *mode = argv[1], *out = argv[3];
    char *end;
    const uint64_t n = strtoull(argv[2], &end, 0);
    if (*end || n == 0) {
        fprintf(stderr, "syncbench: N must be a positive number\n");
        return 2;
    }
    mt_wl_header_t tmpl = { 0 };
    if (mt_wl_writer_open(&w, out, &tmpl, NULL, 0, &err) < 0) {
        fprintf(stderr, "syncbench: %s\n", err.msg);
        return 1;
    }
    /* Both threads exist from the start (no creator). */
    if (mt_wl_writer_add_thread(w, 1, 1, 0) < 0 || mt_wl_writer_add_thread(w, 2, 2, 0) < 0) {
        fprintf(stderr, "syncbench: out of memory\n");
        return 1;
    }
    put(0, (mt_wl_rec_t){ .op = MT_WL_THREAD_START });
    put(1, (mt_wl_rec_t){ .op = MT_WL_THREAD_START });
    uint64_t slots = 0, waits = 0;
    if (!strcmp(mode, "marks") || !strcmp(mode, "satisfied")) {
        const int wait = !strcmp(mode, "satisfied");
        put(1, (mt_wl_rec_t){ .op = MT_WL_WAIT, .thread = 0, .n = 1 });
        for (uint64_t k = 0; k < n; k++) {
            if (wait)
                put(1, (mt_wl_rec_t){ .op = MT_WL_WAIT, .thread = 0, .n = 1 });
            else
                put(1, (mt_wl_rec_t){ .op = MT_WL_MARK, .len = 0 });
        }
        waits = wait ? n : 0;
    } else if (!strcmp(mode, "pingpong")) {
        slots = 1;
        for (uint64_t k = 0; k < n; k++) {
            if (k) { /* wait for thread 1's free of the previous block */
                put(0, (mt_wl_rec_t){ .op = MT_WL_WAIT, .thread = 1, .n = ops(1) });
                waits++;
            }
            put(0, (mt_wl_rec_t){ .op = MT_WL_MALLOC, .slot = 1, .size = 16 });
            put(1, (mt_wl_rec_t){ .op = MT_WL_WAIT, .thread = 0, .n = ops(0) });
            waits++;
            put(1, (mt_wl_rec_t){ .op = MT_WL_FREE, .slot = 1 });
        }
    } else if (!strcmp(mode, "nosync")) {
        slots = 2;
        for (uint64_t k = 0; k < n; k++) {
            put(0, (mt_wl_rec_t){ .op = MT_WL_MALLOC, .slot = 1, .size = 16 });
            put(0, (mt_wl_rec_t){ .op = MT_WL_FREE, .slot = 1 });
            put(1, (mt_wl_rec_t){ .op = MT_WL_MALLOC, .slot = 2, .size = 16 });
            put(1, (mt_wl_rec_t){ .op = MT_WL_FREE, .slot = 2 });
        }
    } else {
        fprintf(stderr, "syncbench: unknown mode '%s'\n", mode);
        mt_wl_writer_abort(w);
        return 2;
    }
    mt_wl_header_t fin = { .slots = slots, .peak_live_bytes = 16 * slots, .duration_ns = now_ns };
    const uint64_t total = ops(0) + ops(1);
    if (mt_wl_writer_close(w, &fin, &err) < 0) {
        fprintf(stderr, "syncbench: %s\n", err.msg);
        return 1;
    }
    printf("mode=%s n=%" PRIu64 " ops=%" PRIu64 " waits=%" PRIu64 "\n", mode, n, total, waits);
    return 0;
}
