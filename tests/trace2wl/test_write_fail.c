/* mt_convert when the workload cannot be written: the error names the write that failed, never "out
 * of memory", and no workload is left behind. The output is limited with RLIMIT_FSIZE to its header,
 * so the first frame written fails (EFBIG, as a full disk would fail with ENOSPC).
 *
 * A thread's last op (its thread_exit) is written by the converter's end-of-thread step; when that op
 * fills the thread's frame, the frame is written there, and a failure there was reported as "out of
 * memory". The trace is shaped so that this happens: a mark whose label length is varied one byte at
 * a time until the frame is full exactly at the thread_exit. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "mtrace/convert.h"
#include "mtrace/workload.h"
#include "mtrace/workload_format.h"
#include "t2w_util.h"
#include "test_util.h"

/* One thread: a mark of label_len bytes, then `pairs` malloc/free pairs on one slot, then its exit. */
static void write_trace(const char *path, size_t label_len, uint32_t pairs)
{
    char label[256];
    memset(label, 'x', label_len);
    label[label_len] = 0;
    tb_t b;
    tb_open(&b, path);
    uint64_t t = 1000;
    tb_start(&b, 1, t++, 0);
    tb_mark(&b, 1, t++, label);
    for (uint32_t k = 0; k < pairs; k++) {
        tb_malloc(&b, 1, t++, 100, 0x10000);
        tb_free(&b, 1, t++, 0x10000);
    }
    tb_exit(&b, 1, t++);
    tb_close(&b);
}

typedef struct stream_shape {
    uint32_t frames;    /* of thread 0 */
    uint32_t last_raw;  /* raw bytes of its last frame */
    uint32_t last_nops; /* ops in its last frame */
    uint64_t ops;       /* of thread 0 */
    uint32_t header_size;
} stream_shape_t;

static void shape_of(const char *wl, stream_shape_t *s)
{
    mt_wl_t *w;
    mt_error_t err;
    ck_assert_msg(mt_wl_open(&w, wl, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(mt_wl_thread_count(w), 1);
    s->frames = mt_wl_thread_frame_count(w, 0);
    ck_assert_uint_ge(s->frames, 1);
    s->ops = mt_wl_thread(w, 0)->ops;
    s->header_size = mt_wl_header(w)->header_size;
    mt_wl_frame_header_t fh;
    const mt_wl_frame_entry_t *e = mt_wl_thread_frame(w, 0, s->frames - 1);
    ck_assert_int_eq(pread(mt_wl_fd(w), &fh, sizeof fh, (off_t)e->offset), (ssize_t)sizeof fh);
    s->last_raw = fh.raw_size;
    s->last_nops = fh.nops;
    mt_wl_close(w);
}

START_TEST(final_frame_write_failure_is_not_out_of_memory)
{
    char *dir = make_temp_dir("t2w-writefail");
    char *trace = path_in(dir, "t.mtr"), *wl = path_in(dir, "t.mtw");

    /* The bytes a malloc/free pair takes in a frame, from two sizes that fit in one frame. */
    stream_shape_t a, b;
    write_trace(trace, 0, 1000);
    convert_ok(trace, wl, NULL);
    shape_of(wl, &a);
    write_trace(trace, 0, 2000);
    convert_ok(trace, wl, NULL);
    shape_of(wl, &b);
    ck_assert_uint_eq(a.frames, 1);
    ck_assert_uint_eq(b.frames, 1);
    const uint32_t per_pair = (b.last_raw - a.last_raw) / 1000;
    ck_assert_uint_gt(per_pair, 0);
    /* Enough pairs to come within a long label of the frame's end, without reaching it. */
    const uint32_t pairs = (MT_WL_FRAME_RAW_MAX - a.last_raw) / per_pair + 1000 - 200 / per_pair - 1;

    /* The label length with which thread 0's one frame is full exactly at its thread_exit. */
    size_t found = SIZE_MAX;
    for (size_t len = 0; len < 256 && found == SIZE_MAX; len++) {
        write_trace(trace, len, pairs);
        convert_ok(trace, wl, NULL);
        stream_shape_t s;
        shape_of(wl, &s);
        if (s.frames == 1 && s.last_nops == s.ops && s.last_raw >= MT_WL_FRAME_RAW_MAX)
            found = len;
    }
    ck_assert_msg(found != SIZE_MAX, "no label length of 0-255 fills the frame at the thread_exit (%u pairs)", pairs);
    write_trace(trace, found, pairs);
    convert_ok(trace, wl, NULL);
    stream_shape_t s;
    shape_of(wl, &s);
    ck_assert_int_eq(unlink(wl), 0);

    /* Now the same conversion with the output limited to its header. */
    struct rlimit old, lim;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = s.header_size;
    void (*old_sig)(int) = signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    mt_convert_opts_t opts = { .force = 1 };
    mt_convert_stats_t st;
    mt_error_t err;
    memset(&err, 0, sizeof err);
    const int rc = mt_convert(trace, wl, &opts, &st, &err);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_sig);

    ck_assert_int_lt(rc, 0);
    ck_assert_msg(rc != -ENOMEM && !strstr(err.msg, "out of memory"), "rc %d: %s", rc, err.msg);
    ck_assert_msg(strstr(err.msg, wl) && strstr(err.msg, strerror(EFBIG)), "rc %d: %s", rc, err.msg);
    ck_assert_msg(access(wl, F_OK) != 0, "a workload was left behind after: %s", err.msg);

    remove_tree(dir);
    free(trace);
    free(wl);
    free(dir);
}
END_TEST

static Suite *write_fail_suite(void)
{
    Suite *s = suite_create("trace2wl-write-fail");
    TCase *tc = tcase_create("output");
    tcase_add_test(tc, final_frame_write_failure_is_not_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(write_fail_suite());
}
