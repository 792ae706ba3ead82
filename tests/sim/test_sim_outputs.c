/* The simulator's outputs and the comparison table, as a hostile or failing run meets them:
 *  - mtrace-sim's --json and --rss-series replace a symlink planted at their names, never follow
 *    it (the file it points to stays as it was), and get the mode a new file gets (0666 & ~umask);
 *  - a run that fails (a bad workload, an output that cannot be made, a write that fails for lack
 *    of room) leaves no output and no temporary file, and says why in one line naming the file;
 *  - mtrace compare shows the control characters of a result's allocator and settings strings as
 *    \xNN on its text table, never sends them to the terminal; its CSV quotes them and its JSON
 *    keeps them (escaped by the JSON writer).
 * regression (fixed): the outputs were written in place with fopen(PATH, "w"), and compare printed
 * the strings raw. */
#define _GNU_SOURCE
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_checks.h"
#include "sim_util.h"
#include "test_util.h"

static char *g_dir;
TEST_DIR_FIXTURE(g_dir, "sim-outputs", "SIM_KEEP")

static char *write_wl(void)
{
    char *path = path_in(g_dir, "w.wl");
    wlb_t b;
    wlb_open(&b, path);
    const uint32_t t0 = wlb_thread(&b, 0);
    for (uint64_t i = 0; i < 2000; i++) {
        wlb_malloc(&b, t0, 1 + i % 50, 64 + i % 500);
        if (i % 50 == 49)
            for (uint64_t s = 1; s <= 50; s++)
                wlb_free(&b, t0, s);
    }
    wlb_close(&b);
    return path;
}

static mode_t new_file_mode(void)
{
    const mode_t mask = umask(022);
    umask(mask);
    return 0666 & ~mask;
}

START_TEST(symlinks_replaced)
{
    char *wl = write_wl(), *json = path_in(g_dir, "r.json"), *series = path_in(g_dir, "r.tsv");
    char *victim = path_in(g_dir, "victim");
    write_text(victim, "precious\n");
    chmod(victim, 0600);
    ck_assert_int_eq(symlink(victim, json), 0);
    ck_assert_int_eq(symlink(victim, series), 0);
    char *err = path_in(g_dir, "stderr");
    const char *const argv[] = { SIM_EXE, wl, "--json", json, "--rss-series", series, "--quiet", NULL };
    ck_assert_int_eq(run(argv, NULL, err, NULL, 60), 0);
    char *text = read_text(victim, NULL);
    ck_assert_msg(text && !strcmp(text, "precious\n"), "the symlink's target was written: %s", text ? text : "(gone)");
    free(text);
    struct stat st;
    const char *const outs[] = { json, series };
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(lstat(outs[k], &st), 0);
        ck_assert_msg(S_ISREG(st.st_mode), "%s is not a regular file: the symlink stayed", outs[k]);
        ck_assert_msg((st.st_mode & 0777) == new_file_mode(), "%s: mode %o, expected %o", outs[k],
                      (unsigned)(st.st_mode & 0777), (unsigned)new_file_mode());
    }
    mt_jval_t *j = load_json(json);
    ck_assert_str_eq(mt_json_str_at(j, "kind", ""), "replay");
    mt_json_free(j);
    text = read_text(series, NULL);
    ck_assert_msg(text && !strncmp(text, "# t_s", 5), "the series: %s", text ? text : "(none)");
    free(text);
    const char *const expected[] = { "w.wl", "r.json", "r.tsv", "victim", "stderr", NULL };
    assert_only_files(g_dir, "symlinks", expected);
    free(wl);
    free(json);
    free(series);
    free(victim);
    free(err);
}
END_TEST

/* Not a workload: nothing written. Then a good one whose series cannot be made (its directory does
 * not exist): the JSON, which would name it, is not left either. */
START_TEST(failing_runs_leave_nothing)
{
    char *bad = path_in(g_dir, "bad.wl"), *json = path_in(g_dir, "r.json"), *series = path_in(g_dir, "r.tsv");
    char *err = path_in(g_dir, "stderr");
    write_text(bad, "not a workload at all, not even close\n");
    const char *const bad_argv[] = { SIM_EXE, bad, "--json", json, "--rss-series", series, "--quiet", NULL };
    ck_assert_int_eq(run(bad_argv, NULL, err, NULL, 60), 1);
    const char *const bad_needles[] = { bad, NULL };
    assert_one_line(err, "bad workload", bad_needles);
    const char *const bad_expected[] = { "bad.wl", "stderr", NULL };
    assert_only_files(g_dir, "bad workload", bad_expected);
    free(series);

    char *wl = write_wl();
    series = path_in(g_dir, "no-such-dir/r.tsv");
    const char *const argv[] = { SIM_EXE, wl, "--json", json, "--rss-series", series, "--quiet", NULL };
    ck_assert_int_eq(run(argv, NULL, err, NULL, 60), 1);
    const char *const needles[] = { series, "No such file or directory", NULL };
    assert_one_line(err, "unwritable series", needles);
    const char *const expected[] = { "bad.wl", "w.wl", "stderr", NULL };
    assert_only_files(g_dir, "unwritable series", expected);
    free(bad);
    free(wl);
    free(json);
    free(series);
    free(err);
}
END_TEST

/* The JSON does not fit under RLIMIT_FSIZE (writes fail with EFBIG; SIGXFSZ is ignored, and stays
 * ignored across exec): no partial result, no temporary. */
START_TEST(failed_write_leaves_nothing)
{
    char *wl = write_wl(), *json = path_in(g_dir, "r.json"), *err = path_in(g_dir, "stderr");
    signal(SIGXFSZ, SIG_IGN);
    /* the soft limit, for the run only: Check's own reports are files too */
    struct rlimit old, lim;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = (struct rlimit){ 512, old.rlim_max };
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    const char *const argv[] = { SIM_EXE, wl, "--json", json, "--quiet", NULL };
    const int rc = run(argv, NULL, err, NULL, 60);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    ck_assert_int_eq(rc, 1);
    const char *const needles[] = { json, "File too large", NULL };
    assert_one_line(err, "EFBIG", needles);
    const char *const expected[] = { "w.wl", "stderr", NULL };
    assert_only_files(g_dir, "EFBIG", expected);
    free(wl);
    free(json);
    free(err);
}
END_TEST

/* A result whose allocator and settings carry escape sequences (an ESC, a BEL, a quote). */
static char *write_hostile_result(void)
{
    char *path = path_in(g_dir, "evil.json");
    write_text(path, "{\"kind\": \"replay\", \"allocator\": \"evil\\u001b[2J\\u001b]0;owned\\u0007\\\"q\","
                     " \"settings\": [\"m=\\u001b[31m1\"], \"wall_us\": 1000, \"max_rss_kb\": 2048}\n");
    return path;
}

START_TEST(compare_escapes_text)
{
    char *res = write_hostile_result(), *out = path_in(g_dir, "stdout"), *err = path_in(g_dir, "stderr");
    const char *const argv[] = { MTRACE_EXE, "compare", res, NULL };
    ck_assert_int_eq(run(argv, out, err, NULL, 60), 0);
    size_t len;
    char *text = read_printable(out, &len);
    ck_assert_msg(strstr(text, "evil\\x1b[2J"), "the ESC is not shown as \\x1b:\n%s", text);
    free(text);
    free(res);
    free(out);
    free(err);
}
END_TEST

/* CSV: one quoted field, its quote doubled, no control byte; JSON: the strings as they were. */
START_TEST(compare_escapes_csv_json)
{
    char *res = write_hostile_result(), *out = path_in(g_dir, "stdout"), *err = path_in(g_dir, "stderr");
    const char *const csv_argv[] = { MTRACE_EXE, "compare", "--csv", res, NULL };
    ck_assert_int_eq(run(csv_argv, out, err, NULL, 60), 0);
    char *text = read_text(out, NULL);
    ck_assert_ptr_nonnull(text);
    const char *row = strchr(text, '\n');
    ck_assert_ptr_nonnull(row);
    const char *want = "\"evil\\x1b[2J\\x1b]0;owned\\x07\"\"q m=\\x1b[31m1\",";
    ck_assert_msg(!strncmp(row + 1, want, strlen(want)), "CSV row: %s, expected it to start with %s", row + 1, want);
    free(text);
    const char *const json_argv[] = { MTRACE_EXE, "compare", "--json", res, NULL };
    ck_assert_int_eq(run(json_argv, out, err, NULL, 60), 0);
    mt_jval_t *j;
    mt_error_t jerr;
    ck_assert_msg(mt_json_load(out, &j, &jerr) == 0, "%s", jerr.msg);
    ck_assert_int_eq(j->type, MT_JARR);
    ck_assert_uint_eq(j->n, 1);
    ck_assert_str_eq(mt_json_str_at(&j->items[0], "name", ""), "evil\033[2J\033]0;owned\a\"q m=\033[31m1");
    mt_json_free(j);
    free(res);
    free(out);
    free(err);
}
END_TEST

static Suite *outputs_suite(void)
{
    Suite *s = suite_create("sim_outputs");
    const struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        { "symlinks_replaced", symlinks_replaced },
        { "failing_runs_leave_nothing", failing_runs_leave_nothing },
        { "failed_write_leaves_nothing", failed_write_leaves_nothing },
        { "compare_escapes_text", compare_escapes_text },
        { "compare_escapes_csv_json", compare_escapes_csv_json },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
        tcase_set_timeout(tc, 200);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    return run_suite(outputs_suite());
}
