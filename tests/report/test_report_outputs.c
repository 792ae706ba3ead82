/* mtrace report's and mtrace plot's output files, and the report's text, as a hostile trace or a
 * failing run meets them (through the mtrace command):
 *  - --folded, --flamegraph and --callsites-csv replace a symlink planted at their names, never
 *    follow it (the file it points to stays as it was; a plot's .dat: plots.sh);
 *  - a run that fails (a bad trace, one output that cannot be made, a plot with nothing to draw)
 *    leaves none of the outputs and no temporary file, and says why in one line naming the file;
 *  - the base name of a MODULE path (an unresolved callsite's "where") reaches the text tables with
 *    its control characters shown as \xNN, never sent to the terminal; the JSON keeps it (escaped by
 *    the JSON writer) and the callsites CSV quotes it.
 * regressions (fixed): the outputs were written in place with fopen(PATH, "w"), and the text tables
 * printed module names raw; a plot with nothing to draw left its .dat behind. */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mtrace/json_reader.h"
#include "mtrace/trace_format.h"
#include "mtrace/trace_writer.h"
#include "file_checks.h"
#include "sim_util.h" /* run, read_text, assert_one_line */
#include "test_util.h"

static char *g_dir;
TEST_DIR_FIXTURE(g_dir, "report-outputs", "SIM_KEEP")

#define EVIL_MODULE "/nonexistent-mtrace/lib\033[2J\033]0;owned\aevil.so"
#define MODULE_BASE 0x7f0000000000ull

/* One module (a file that does not exist: its addresses stay unresolved, shown by the module's base
 * name), two stacks inside it, a few mallocs on each. */
/* The trace of these tests: a module, two stacks, `calls` mallocs (6 unless said). */
static char *write_trace_calls(uint64_t calls)
{
    char *path = path_in(g_dir, "t.mtr");
    mt_file_header_t h;
    mt_writer_default_header(&h);
    h.flags |= MT_HDR_STACKS;
    h.max_frames = 8;
    mt_writer_t *w;
    mt_error_t err;
    ck_assert_msg(mt_writer_open(&w, path, &h, &err) == 0, "%s", err.msg);
    uint8_t payload[512], *q = payload;
    q = mt_put_uvarint(q, 1); /* generation */
    q = mt_put_uvarint(q, MODULE_BASE);
    q = mt_put_uvarint(q, 1); /* one PT_LOAD segment: vaddr, memsz, offset */
    q = mt_put_uvarint(q, 0);
    q = mt_put_uvarint(q, 0x10000);
    q = mt_put_uvarint(q, 0);
    q = mt_put_uvarint(q, 0); /* no build-id */
    memcpy(q, EVIL_MODULE, strlen(EVIL_MODULE));
    q += strlen(EVIL_MODULE);
    ck_assert_int_eq(mt_writer_event(w, 1, 1001, MT_EV_MODULE, 10, payload, (size_t)(q - payload)), 0);
    for (uint32_t id = 1; id <= 2; id++) {
        q = payload;
        q = mt_put_uvarint(q, id);
        q = mt_put_uvarint(q, 1);
        q = mt_put_svarint(q, (int64_t)(MODULE_BASE + 0x1000 * id + 0x24));
        ck_assert_int_eq(mt_writer_event(w, 1, 1001, MT_EV_STACK, 20, payload, (size_t)(q - payload)), 0);
    }
    for (uint64_t i = 0; i < calls; i++) {
        mt_record_t r = { .op = MT_OP_MALLOC,
                          .time = 100 + i,
                          .result = 0x1000 + 0x100 * i,
                          .size = 32 + i,
                          .usable = 32 + i,
                          .flags = MT_FLAG_STACK,
                          .stack = 1 + (uint32_t)(i % 2) };
        ck_assert_msg(mt_writer_call(w, 1, 1001, &r) == 0, "%s", mt_writer_error(w));
    }
    ck_assert_msg(mt_writer_close(w, 1, &err) == 0, "%s", err.msg);
    return path;
}

static char *write_trace(void)
{
    return write_trace_calls(6);
}

static void assert_replaced(const char *path, const char *victim)
{
    char *text = read_text(victim, NULL);
    ck_assert_msg(text && !strcmp(text, "precious\n"), "%s: the symlink's target was written: %s", path,
                  text ? text : "(gone)");
    free(text);
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert_msg(S_ISREG(st.st_mode), "%s is not a regular file: the symlink stayed", path);
    ck_assert_msg(st.st_size > 0, "%s is empty", path);
}

START_TEST(report_symlinks_replaced)
{
    char *trace = write_trace(), *victim = path_in(g_dir, "victim"), *err = path_in(g_dir, "stderr");
    char *folded = path_in(g_dir, "f.folded"), *flame = path_in(g_dir, "f.svg"), *csv = path_in(g_dir, "c.csv");
    write_text(victim, "precious\n");
    ck_assert_int_eq(symlink(victim, folded), 0);
    ck_assert_int_eq(symlink(victim, flame), 0);
    ck_assert_int_eq(symlink(victim, csv), 0);
    const char *const argv[] = { MTRACE_EXE, "report",          trace, "--folded", folded, "--flamegraph",
                                 flame,      "--callsites-csv", csv,   NULL };
    ck_assert_int_eq(run(argv, NULL, err, NULL, 60), 0);
    assert_replaced(folded, victim);
    assert_replaced(flame, victim);
    assert_replaced(csv, victim);
    const char *const expected[] = { "t.mtr", "victim", "stderr", "f.folded", "f.svg", "c.csv", NULL };
    assert_only_files(g_dir, "report outputs", expected);
    free(trace);
    free(victim);
    free(err);
    free(folded);
    free(flame);
    free(csv);
}
END_TEST

/* A plot that fails leaves nothing: not the .dat beside the picture either, which used to be
 * committed before the trace was found to have nothing to draw (and before gnuplot ran). A symlink
 * planted at the .dat's name stays as it was, its target unwritten. (That a successful plot replaces
 * such a symlink is checked in plots.sh, which needs gnuplot.) */
START_TEST(plot_failure_leaves_no_data)
{
    char *trace = write_trace_calls(0), *victim = path_in(g_dir, "victim"), *err = path_in(g_dir, "stderr");
    char *png = path_in(g_dir, "p.png"), *dat = path_in(g_dir, "p.dat");
    write_text(victim, "precious\n");
    ck_assert_int_eq(symlink(victim, dat), 0);
    const char *const argv[] = { MTRACE_EXE, "plot", "-o", png, trace, NULL };
    /* this trace has no RSS sample and no call: nothing to draw over time, said in one line */
    ck_assert_int_eq(run(argv, NULL, err, NULL, 60), 1);
    char *why = read_text(err, NULL);
    size_t lines = 0;
    for (const char *c = why; c && *c; c++)
        lines += *c == '\n';
    ck_assert_msg(why && strstr(why, "0 points in time") && lines == 1, "the message: %s", why ? why : "(none)");
    free(why);
    char *text = read_text(victim, NULL);
    ck_assert_msg(text && !strcmp(text, "precious\n"), "the symlink's target was written: %s", text ? text : "(gone)");
    free(text);
    struct stat st;
    ck_assert_int_eq(lstat(dat, &st), 0);
    ck_assert_msg(S_ISLNK(st.st_mode), "%s: the planted symlink was replaced by a failing plot", dat);
    const char *const expected[] = { "t.mtr", "victim", "stderr", "p.dat", NULL };
    assert_only_files(g_dir, "failing plot", expected);

    /* the same with nothing planted: no p.dat appears */
    ck_assert_int_eq(unlink(dat), 0);
    ck_assert_int_eq(run(argv, NULL, err, NULL, 60), 1);
    const char *const expected2[] = { "t.mtr", "victim", "stderr", NULL };
    assert_only_files(g_dir, "failing plot", expected2);
    free(trace);
    free(victim);
    free(err);
    free(png);
    free(dat);
}
END_TEST

/* A bad trace: no output at all. Then a good one whose CSV cannot be made (its directory does not
 * exist): the folded stacks and the flame graph, which could be, are not left either. */
START_TEST(failing_runs_leave_nothing)
{
    char *bad = path_in(g_dir, "bad.mtr"), *err = path_in(g_dir, "stderr");
    write_text(bad, "hello, this is not a trace\n");
    const char *const bad_argv[] = { MTRACE_EXE, "report",          bad,     "--folded", "f.folded", "--flamegraph",
                                     "f.svg",    "--callsites-csv", "c.csv", NULL };
    char *cwd = getcwd(NULL, 0);
    ck_assert_int_eq(chdir(g_dir), 0);
    const int rc = run(bad_argv, NULL, err, NULL, 60);
    ck_assert_int_eq(chdir(cwd), 0);
    free(cwd);
    ck_assert_int_eq(rc, 1);
    const char *const bad_needles[] = { bad, NULL };
    assert_one_line(err, "bad trace", bad_needles);
    const char *const bad_expected[] = { "bad.mtr", "stderr", NULL };
    assert_only_files(g_dir, "bad trace", bad_expected);
    free(bad);

    char *trace = write_trace();
    char *folded = path_in(g_dir, "f.folded"), *flame = path_in(g_dir, "f.svg");
    char *csv = path_in(g_dir, "no-such-dir/c.csv");
    const char *const argv[] = { MTRACE_EXE, "report",          trace, "--folded", folded, "--flamegraph",
                                 flame,      "--callsites-csv", csv,   NULL };
    ck_assert_int_eq(run(argv, NULL, err, NULL, 60), 1);
    const char *const needles[] = { csv, "No such file or directory", NULL };
    assert_one_line(err, "unwritable CSV", needles);
    const char *const expected[] = { "bad.mtr", "t.mtr", "stderr", NULL };
    assert_only_files(g_dir, "unwritable CSV", expected);
    free(trace);
    free(err);
    free(folded);
    free(flame);
    free(csv);
}
END_TEST

START_TEST(module_name_escaped)
{
    char *trace = write_trace(), *out = path_in(g_dir, "stdout"), *err = path_in(g_dir, "stderr");
    const char *const argv[] = { MTRACE_EXE, "report", trace, NULL };
    ck_assert_int_eq(run(argv, out, err, NULL, 60), 0);
    size_t len;
    char *text = read_printable(out, &len);
    ck_assert_msg(strstr(text, "lib\\x1b[2J\\x1b]0;owned\\x07evil.so"), "the module is not shown escaped:\n%s", text);
    free(text);

    /* JSON: the name as it is, escaped by the JSON writer */
    const char *const json_argv[] = { MTRACE_EXE, "report", "--json", trace, NULL };
    ck_assert_int_eq(run(json_argv, out, err, NULL, 60), 0);
    mt_jval_t *j;
    mt_error_t jerr;
    ck_assert_msg(mt_json_load(out, &j, &jerr) == 0, "%s", jerr.msg);
    const mt_jval_t *sites = mt_json_get(j, "callsites");
    ck_assert_msg(sites && sites->type == MT_JARR && sites->n > 0, "no callsites in the JSON");
    ck_assert_str_eq(mt_json_str_at(&sites->items[0], "module", ""), strrchr(EVIL_MODULE, '/') + 1);
    mt_json_free(j);

    /* CSV: a quoted field, nothing raw */
    char *csv = path_in(g_dir, "c.csv");
    const char *const csv_argv[] = { MTRACE_EXE, "report", trace, "--callsites-csv", csv, NULL };
    ck_assert_int_eq(run(csv_argv, NULL, err, NULL, 60), 0);
    text = read_text(csv, &len);
    ck_assert_ptr_nonnull(text);
    ck_assert_msg(strstr(text, ",\"lib\\x1b[2J\\x1b]0;owned\\x07evil.so\","), "CSV:\n%s", text);
    ck_assert_ptr_null(memchr(text, '\033', len));
    free(text);
    free(csv);
    free(trace);
    free(out);
    free(err);
}
END_TEST

static Suite *outputs_suite(void)
{
    Suite *s = suite_create("report_outputs");
    const struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        { "report_symlinks_replaced", report_symlinks_replaced },
        { "plot_failure_leaves_no_data", plot_failure_leaves_no_data },
        { "failing_runs_leave_nothing", failing_runs_leave_nothing },
        { "module_name_escaped", module_name_escaped },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    return run_suite(outputs_suite());
}
