/* mt_convert of a program that ran many threads one after another (a thread per request, a pool
 * that is torn down and made again): its memory follows the threads running at once, not every
 * thread of the trace. The conversion runs under an address-space limit of the test's own size plus
 * LIMIT_MIB; a converter that held a frame buffer, a chunk buffer and a ring of records for every
 * thread from the start took about 135 KiB a thread, 160 MiB for these 1200, and failed there. It
 * runs with the caller decoding (-j 1) and with decoders (-j 2), which must write the same bytes. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mtrace/convert.h"
#include "mtrace/workload.h"
#include "t2w_util.h"
#include "test_util.h"

/* Fewer than MT_ORDERED_DECODED_THREADS_MAX, so that -j 2 converts with decoders. */
#define THREADS 1200u
#define CALLS 10u
#define LIMIT_MIB 64u

/* Thread 1 creates threads 2 .. THREADS + 1 one at a time; each makes CALLS malloc/free pairs and
 * exits before the next starts (what tests/prog_shortthreads does). */
static void write_trace(const char *path, uint64_t *records)
{
    tb_t b;
    tb_open(&b, path);
    uint64_t t = 1000;
    tb_start(&b, 1, t++, 0);
    *records = 1;
    for (uint32_t k = 2; k <= THREADS + 1; k++) {
        tb_create(&b, 1, t++, k);
        tb_start(&b, k, t++, 1);
        for (uint32_t c = 0; c < CALLS; c++) {
            tb_malloc(&b, k, t++, 64 + c, 0x100000 + 0x100 * c);
            tb_free(&b, k, t++, 0x100000 + 0x100 * c);
        }
        tb_exit(&b, k, t++);
        *records += 3 + 2 * CALLS;
    }
    tb_close(&b);
}

/* The address space this process has mapped, in bytes (VmSize). */
static uint64_t mapped_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    ck_assert_ptr_nonnull(f);
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %llu kB", &kb) == 1)
            break;
    fclose(f);
    ck_assert_uint_gt(kb, 0);
    return kb * 1024;
}

/* mt_convert in a child whose address space may grow by LIMIT_MIB: its error message, "" on success. */
static void convert_limited(const char *trace, const char *wl, unsigned jobs, mt_convert_stats_t *st, char *msg,
                            size_t cap)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        const struct rlimit lim = { mapped_bytes() + ((uint64_t)LIMIT_MIB << 20), RLIM_INFINITY };
        mt_convert_opts_t opts = { .force = 1, .jobs = jobs };
        mt_convert_stats_t s;
        mt_error_t err = { "" };
        int rc = setrlimit(RLIMIT_AS, &lim);
        if (rc < 0)
            snprintf(err.msg, sizeof err.msg, "setrlimit: %s", strerror(errno));
        else if ((rc = mt_convert(trace, wl, &opts, &s, &err)) < 0 && !err.msg[0])
            snprintf(err.msg, sizeof err.msg, "error %d", rc);
        const int ok = write(fds[1], &s, sizeof s) == (ssize_t)sizeof s &&
                       write(fds[1], err.msg, sizeof err.msg) == (ssize_t)sizeof err.msg;
        _exit(ok ? 0 : 1);
    }
    close(fds[1]);
    mt_error_t err;
    const int got = read(fds[0], st, sizeof *st) == (ssize_t)sizeof *st &&
                    read(fds[0], err.msg, sizeof err.msg) == (ssize_t)sizeof err.msg;
    close(fds[0]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(got && WIFEXITED(status) && WEXITSTATUS(status) == 0, "the converting child failed (status %d)",
                  status);
    snprintf(msg, cap, "%s", err.msg);
}

START_TEST(short_threads_convert_in_the_memory_of_those_running)
{
    char *dir = make_temp_dir("t2w-many");
    char *trace = path_in(dir, "t.mtr"), *wl1 = path_in(dir, "j1.mtw"), *wl2 = path_in(dir, "j2.mtw");
    uint64_t records;
    write_trace(trace, &records);

    char msg[1024];
    mt_convert_stats_t st;
    convert_limited(trace, wl1, 1, &st, msg, sizeof msg);
    ck_assert_msg(!msg[0], "-j 1, within %u MiB: %s", LIMIT_MIB, msg);
    ck_assert_uint_eq(st.threads, THREADS + 1);
    ck_assert_uint_eq(st.records, records);
    convert_limited(trace, wl2, 2, &st, msg, sizeof msg);
    ck_assert_msg(!msg[0], "-j 2, within %u MiB: %s", LIMIT_MIB, msg);
    ck_assert_uint_eq(st.records, records);

    ck_assert_msg(files_same(wl1, wl2), "-j 1 and -j 2 wrote different workloads");

    wl_mem_t m;
    wl_load(&m, wl1);
    ck_assert_uint_eq(m.nthreads, THREADS + 1);
    for (uint32_t k = 1; k <= THREADS; k++) {
        /* thread_start, its waits (for its creation, for slots the thread before it freed), the
         * pairs, thread_exit */
        const wl_stream_t *ws = &m.s[k];
        uint32_t mallocs = 0;
        for (size_t i = 0; i < ws->n; i++)
            mallocs += ws->ops[i].op == MT_WL_MALLOC;
        ck_assert_uint_eq(mallocs, CALLS);
        ck_assert_uint_eq(ws->ops[0].op, MT_WL_THREAD_START);
        ck_assert_uint_eq(ws->ops[ws->n - 1].op, MT_WL_THREAD_EXIT);
    }
    wl_free(&m);
    remove_tree(dir);
    free(trace);
    free(wl1);
    free(wl2);
    free(dir);
}
END_TEST

static Suite *many_threads_suite(void)
{
    Suite *s = suite_create("trace2wl-many-threads");
    TCase *tc = tcase_create("memory");
    tcase_add_test(tc, short_threads_convert_in_the_memory_of_those_running);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(many_threads_suite());
}
