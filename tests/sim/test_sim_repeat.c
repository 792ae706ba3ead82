/* Repeated replays and the figures made of them:
 *  - mtrace replay --repeat N runs every allocator N times, in rounds (each allocator once, then
 *    again), each run its own result file with the run's number in its name, all labelled with the
 *    allocator's name; --repeat outside 1..100 is refused in one line. */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mtrace/replay.h"
#include "sim_util.h"
#include "test_util.h"

static char *g_dir;

static void dir_setup(void)
{
    g_dir = sim_dir_make("sim-repeat");
}

static void dir_teardown(void)
{
    sim_dir_remove();
    g_dir = NULL;
}

/* One thread: 400 small blocks and 40 of 200 KiB, freed in rounds; about 8 MiB live at the peak. */
static char *write_wl(void)
{
    char *path = path_in(g_dir, "w.mtw");
    wlb_t b;
    wlb_open(&b, path);
    const uint32_t t = wlb_thread(&b, 0);
    for (uint64_t round = 0; round < 4; round++) {
        for (uint64_t i = 0; i < 100; i++)
            wlb_malloc(&b, t, 1 + i, 32 + i);
        for (uint64_t i = 0; i < 10 * (round + 1); i++)
            wlb_malloc(&b, t, 101 + i, 200 * 1024);
        for (uint64_t i = 0; i < 100; i++)
            wlb_free(&b, t, 1 + i);
        for (uint64_t i = 0; i < 10 * (round + 1); i++)
            wlb_free(&b, t, 101 + i);
    }
    wlb_close(&b);
    return path;
}

static int exists(const char *dir, const char *name)
{
    char *p = path_in(dir, name);
    const int rc = access(p, F_OK) == 0;
    free(p);
    return rc;
}

static void assert_label(const char *path, const char *label)
{
    mt_jval_t *j = load_json(path);
    ck_assert_str_eq(mt_json_str_at(j, "kind", ""), "replay");
    ck_assert_str_eq(mt_json_str_at(j, "allocator", ""), label);
    mt_json_free(j);
}

START_TEST(replay_repeat_runs_n_replays)
{
    char *wl = write_wl(), *json = path_in(g_dir, "r.json"), *out = path_in(g_dir, "out"),
         *err = path_in(g_dir, "err");
    const char *const argv[] = { MTRACE_EXE, "replay", wl, "--repeat", "3", "--json", json, "--quiet", NULL };
    const int rc = run(argv, out, err, NULL, 240);
    ck_assert_msg(rc == 0, "mtrace replay --repeat 3: exit %d: %s", rc, read_text(err, NULL));
    static const char *const runs[] = { "r.1.json", "r.2.json", "r.3.json" };
    for (size_t i = 0; i < 3; i++) {
        ck_assert_msg(exists(g_dir, runs[i]), "no %s", runs[i]);
        char *p = path_in(g_dir, runs[i]);
        assert_label(p, "glibc");
        free(p);
    }
    ck_assert_msg(!exists(g_dir, "r.4.json"), "a fourth run");
    ck_assert_msg(!exists(g_dir, "r.json"), "r.json written beside the runs' files");
}
END_TEST

/* Through the driver: two allocators (the same library twice, named apart), two rounds, results in
 * the order run: a round is every allocator once. */
START_TEST(driver_runs_rounds_of_every_allocator)
{
    char *wl = write_wl(), *json = path_in(g_dir, "d.json");
    if (SIM_SANITIZER_ALLOCATOR) /* the children inherit this process's environment: as run() sets it */
        setenv("ASAN_OPTIONS", "detect_leaks=0:allocator_may_return_null=1", 1);
    mt_replay_opts_t o;
    memset(&o, 0, sizeof o);
    o.workload = wl;
    o.allocators[0] = "glibc";
    o.allocators[1] = "glibc";
    o.nallocators = 2;
    o.repeat = 2;
    o.json = json;
    o.sim = SIM_EXE;
    o.quiet = 1;
    static char results[4][4096];
    int n = 0;
    ck_assert_int_eq(mt_replay_run(&o, results, &n), 0);
    ck_assert_int_eq(n, 4);
    static const char *const want[][2] = {
        { "d.glibc.1.json", "glibc" },
        { "d.glibc-2.1.json", "glibc-2" },
        { "d.glibc.2.json", "glibc" },
        { "d.glibc-2.2.json", "glibc-2" },
    };
    for (int i = 0; i < 4; i++) {
        char *p = path_in(g_dir, want[i][0]);
        ck_assert_str_eq(results[i], p);
        assert_label(p, want[i][1]);
        free(p);
    }
}
END_TEST

START_TEST(repeat_out_of_range_refused)
{
    char *wl = write_wl(), *err = path_in(g_dir, "err");
    static const char *const bad[] = { "0", "101", "x", "-1", "", "3x", " 3", "99999999999999999999" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *const argv[] = { MTRACE_EXE, "replay", wl, "--repeat", bad[i], "--quiet", NULL };
        const int rc = run(argv, NULL, err, NULL, 60);
        ck_assert_msg(rc == 2, "--repeat '%s': exit %d, expected 2", bad[i], rc);
        const char *const needles[] = { "--repeat", "from 1 to 100", NULL };
        assert_one_line(err, bad[i], needles);
    }
}
END_TEST

static Suite *repeat_suite(void)
{
    Suite *s = suite_create("sim_repeat");
    const struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        { "replay_repeat_runs_n_replays", replay_repeat_runs_n_replays },
        { "driver_runs_rounds_of_every_allocator", driver_runs_rounds_of_every_allocator },
        { "repeat_out_of_range_refused", repeat_out_of_range_refused },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(repeat_suite());
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
