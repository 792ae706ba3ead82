/* How mt_replay_run (the driver of mtrace replay and mtrace sweep) says that a run failed: a
 * negative errno and the message in err, how the child ended in the outcome, and nothing of its own
 * on stderr (the command line prints; a child's own words still go there). Shell scripts stand in
 * for mtrace-sim, each ending as a failing replay would:
 *  - an allocator not found: refused before any run;
 *  - a program that cannot be run: its errno, said by the driver (the child used to print it);
 *  - a child that exits non-zero: its status, its own message alone on stderr;
 *  - a child killed by a signal: the signal;
 *  - a child that exits MT_EXIT_FAILED_CALLS: success, with failed_calls set, every run made;
 *  - a stop signal to this process: passed on, the run's result removed, the signal returned. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mtrace/replay.h"
#include "sim_util.h"
#include "test_util.h"

static char *g_dir;
TEST_DIR_FIXTURE(g_dir, "sim-driver", "SIM_KEEP")

/* A stand-in for mtrace-sim: a shell script, run with mtrace-sim's arguments (WORKLOAD --label NAME
 * --json JSON ...). */
static void write_sim(const char *path, const char *body)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fprintf(f, "#!/bin/sh\n%s\n", body);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(path, 0755), 0);
}

/* How a replay on a stand-in ends: what mt_replay_run returns and fills, and all that goes on this
 * process's stderr (the children's too) meanwhile. */
static const struct ending {
    const char *name;
    const char *sim;    /* the stand-in's body; NULL: a program that does not exist */
    const char *second; /* a second allocator after glibc, or NULL */
    int rc, n;
    mt_replay_outcome_t out;
    const char *msg;  /* err's message when rc < 0; %s: the stand-in's path */
    const char *said; /* stderr */
} endings[] = {
    {
        .name = "an unknown allocator is refused before any run",
        .sim = "echo ran >&2",
        .second = "nosuch",
        .rc = -EINVAL,
        .msg = "unknown allocator 'nosuch': use glibc, jemalloc, tcmalloc, mimalloc or a path to a .so",
        .said = "",
    },
    {
        .name = "a program that cannot run is said by the driver, not by the child",
        .rc = -ENOENT,
        .msg = "cannot run %s: No such file or directory",
        .said = "",
    },
    {
        .name = "a child's exit status is returned, its own words alone on stderr",
        .sim = "echo 'mtrace-sim: bad workload' >&2; exit 1",
        .rc = -ECHILD,
        .out = { .child_status = 1 },
        .msg = "the replay on glibc failed: %s exited with status 1",
        .said = "mtrace-sim: bad workload\n",
    },
    {
        .name = "a child killed by a signal is returned",
        .sim = "kill -SEGV $$",
        .rc = -ECHILD,
        .out = { .child_signal = SIGSEGV },
        .msg = "the replay on glibc died of signal 11",
        .said = "",
    },
    {
        .name = "failed calls end every run with success",
        .sim = "echo '{}' > \"$5\"; exit 3",
        .second = "glibc",
        .n = 2,
        .out = { .failed_calls = 1 },
        .msg = "",
        .said = "",
    },
    {
        .name = "a stop signal is passed on, the run's result removed",
        .sim = "echo '{}' > \"$5\"; kill -INT $PPID; exec sleep 60",
        .rc = -EINTR,
        .out = { .stop_signal = SIGINT },
        .msg = "the replay on glibc was interrupted (signal 2); no result written",
        .said = "",
    },
};

START_TEST(replay_ends_as_its_child)
{
    const struct ending *want = &endings[_i];
    char sim[PATH_MAX], json[PATH_MAX], log[PATH_MAX];
    /* One directory for every ending (the fixture's): files of their own */
    snprintf(sim, sizeof sim, "%s/%s-%d", g_dir, want->sim ? "sim.sh" : "no-such-sim", _i);
    snprintf(json, sizeof json, "%s/r-%d.json", g_dir, _i);
    snprintf(log, sizeof log, "%s/stderr-%d", g_dir, _i);
    if (want->sim)
        write_sim(sim, want->sim);
    mt_replay_opts_t o;
    memset(&o, 0, sizeof o);
    o.workload = "unused.mtw";
    o.allocators[o.nallocators++] = "glibc";
    if (want->second)
        o.allocators[o.nallocators++] = want->second;
    o.json = json;
    o.sim = sim;
    o.quiet = 1;

    static char results[2][4096];
    int n = -1;
    mt_replay_outcome_t out;
    mt_error_t err = { "" };
    fflush(stderr);
    const int saved = dup(STDERR_FILENO), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ck_assert(saved >= 0 && fd >= 0);
    ck_assert_int_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
    close(fd);
    const int rc = mt_replay_run(&o, results, &n, &out, &err);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);

    char msg[4096];
    snprintf(msg, sizeof msg, want->msg, sim);
    ck_assert_msg(rc == want->rc && !strcmp(err.msg, rc < 0 ? msg : ""), "%s: returned %d (%s), expected %d (%s)",
                  want->name, rc, err.msg, want->rc, msg);
    ck_assert_msg(n == want->n, "%s: %d results", want->name, n);
    ck_assert_msg(!memcmp(&out, &want->out, sizeof out), "%s: outcome %d %d %d %d", want->name, out.failed_calls,
                  out.child_status, out.child_signal, out.stop_signal);
    char *said = read_text(log, NULL);
    ck_assert_msg(!strcmp(said, want->said), "%s: stderr: %s", want->name, said);
    free(said);
    for (int k = 0; k < n; k++)
        ck_assert_msg(access(results[k], F_OK) == 0, "%s: %s missing", want->name, results[k]);
    ck_assert_msg(rc == 0 || access(json, F_OK) != 0, "%s: a failed run left %s", want->name, json);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_driver");
    TCase *tc = tcase_create("endings");
    tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, replay_ends_as_its_child, 0, (int)(sizeof endings / sizeof endings[0]));
    suite_add_tcase(s, tc);
    return run_suite(s);
}
