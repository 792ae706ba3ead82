/* Repeated replays and the figures made of them:
 *  - mtrace replay --repeat N runs every allocator N times, in rounds (each allocator once, then
 *    again), each run its own result file with the run's number in its name, all labelled with the
 *    allocator's name; --repeat outside 1..100 is refused in one line;
 *  - mtrace compare makes one row of the results of one allocator and settings: the median of each
 *    figure, its spread, and a verdict against the first row on the medians of CPU time and peak RSS,
 *    "within noise" when the spreads overlap (synthetic results, so that the figures are known);
 *  - mtrace sweep replays each allocator's default (no setting at all) first, as the baseline row
 *    named "dynamic (default)" for glibc's mmap_threshold; each row's changes are against its
 *    allocator's baseline; --repeat N runs every point N times and reports medians; --touch reaches
 *    every replay as given (a value the simulator refuses is refused by it). */
#define _GNU_SOURCE
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mtrace/replay.h"
#include "sim_util.h"
#include "test_util.h"

static char *g_dir;
TEST_DIR_FIXTURE(g_dir, "sim-repeat", "SIM_KEEP")

/* A path held in place, so that a test frees nothing (LeakSanitizer checks the sanitized build's). */
typedef struct path {
    char s[PATH_MAX];
} path_t;

static path_t in(const char *dir, const char *name)
{
    path_t p;
    const int n = snprintf(p.s, sizeof p.s, "%s/%s", dir, name);
    ck_assert_msg(n > 0 && (size_t)n < sizeof p.s, "%s/%s: too long a path", dir, name);
    return p;
}

/* One thread: 400 small blocks and 40 of 200 KiB, freed in rounds; about 8 MiB live at the peak. */
static path_t write_wl(void)
{
    const path_t path = in(g_dir, "w.mtw");
    wlb_t b;
    wlb_open(&b, path.s);
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
    return access(in(dir, name).s, F_OK) == 0;
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
    const path_t wl = write_wl(), json = in(g_dir, "r.json"), err = in(g_dir, "err");
    const char *const argv[] = { MTRACE_EXE, "replay", wl.s, "--repeat", "3", "--json", json.s, "--quiet", NULL };
    const int rc = run(argv, NULL, err.s, NULL, 240);
    ck_assert_msg(rc == 0, "mtrace replay --repeat 3: exit %d: %s", rc, read_text(err.s, NULL));
    static const char *const runs[] = { "r.1.json", "r.2.json", "r.3.json" };
    for (size_t i = 0; i < 3; i++) {
        ck_assert_msg(exists(g_dir, runs[i]), "no %s", runs[i]);
        assert_label(in(g_dir, runs[i]).s, "glibc");
    }
    ck_assert_msg(!exists(g_dir, "r.4.json"), "a fourth run");
    ck_assert_msg(!exists(g_dir, "r.json"), "r.json written beside the runs' files");
}
END_TEST

/* Through the driver: two allocators (the same library twice, named apart), two rounds, results in
 * the order run: a round is every allocator once. */
START_TEST(driver_runs_rounds_of_every_allocator)
{
    const path_t wl = write_wl(), json = in(g_dir, "d.json");
    if (SIM_SANITIZER_ALLOCATOR) /* the children inherit this process's environment: as run() sets it */
        setenv("ASAN_OPTIONS", "detect_leaks=0:allocator_may_return_null=1", 1);
    mt_replay_opts_t o;
    memset(&o, 0, sizeof o);
    o.workload = wl.s;
    o.allocators[0] = "glibc";
    o.allocators[1] = "glibc";
    o.nallocators = 2;
    o.repeat = 2;
    o.json = json.s;
    o.sim = SIM_EXE;
    o.quiet = 1;
    static char results[4][4096];
    int n = 0;
    mt_replay_outcome_t out;
    mt_error_t err;
    ck_assert_msg(mt_replay_run(&o, results, &n, &out, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(out.failed_calls, 0);
    ck_assert_int_eq(n, 4);
    static const char *const want[][2] = {
        { "d.glibc.1.json", "glibc" },
        { "d.glibc-2.1.json", "glibc-2" },
        { "d.glibc.2.json", "glibc" },
        { "d.glibc-2.2.json", "glibc-2" },
    };
    for (int i = 0; i < 4; i++) {
        const path_t p = in(g_dir, want[i][0]);
        ck_assert_str_eq(results[i], p.s);
        assert_label(p.s, want[i][1]);
    }
}
END_TEST

START_TEST(repeat_out_of_range_refused)
{
    const path_t wl = write_wl(), err = in(g_dir, "err");
    static const char *const bad[] = { "0", "101", "x", "-1", "", "3x", " 3", "99999999999999999999" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *const argv[] = { MTRACE_EXE, "replay", wl.s, "--repeat", bad[i], "--quiet", NULL };
        const int rc = run(argv, NULL, err.s, NULL, 60);
        ck_assert_msg(rc == 2, "--repeat '%s': exit %d, expected 2", bad[i], rc);
        const char *const needles[] = { "--repeat", "from 1 to 100", NULL };
        assert_one_line(err.s, bad[i], needles);
    }
}
END_TEST

/* A replay result as mtrace-sim writes it, with the figures given (times in us, RSS in KiB). */
static path_t write_result(const char *file, const char *allocator, double cpu_us, double wall_us, double rss_kb)
{
    const path_t path = in(g_dir, file);
    FILE *f = fopen(path.s, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "{\"kind\": \"replay\", \"allocator\": \"%s\", \"workload\": \"/w.wl\", \"settings\": [],"
            " \"timing\": \"asap\", \"touch\": \"pages\", \"wall_us\": %.0f, \"cpu_us\": %.0f,"
            " \"max_rss_kb\": %.0f, \"start_rss_kb\": 1024, \"ideal_pages_kb\": 1000}\n",
            allocator, wall_us, cpu_us, rss_kb);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

/* Rows A (the baseline), B, C of 3 runs each, their files interleaved as --repeat writes them, and
 * D of one run. CPU ms: A 10, 11, 12; B 11.5, 12.5, 13 (overlaps A); C 5, 6, 7 (below A); D 5.
 * Peak RSS KiB: A 102400 thrice; B 204800 thrice (above A); C 102400 thrice (the same); D 307200. */
static int write_four_rows(path_t *paths)
{
    static const struct {
        const char *name;
        double cpu_ms[3], rss_kb;
        int runs;
    } rows[] = {
        { "A", { 10, 11, 12 }, 102400, 3 },
        { "B", { 11.5, 12.5, 13 }, 204800, 3 },
        { "C", { 5, 6, 7 }, 102400, 3 },
        { "D", { 5, 0, 0 }, 307200, 1 },
    };
    int n = 0;
    for (int run = 0; run < 3; run++)
        for (size_t k = 0; k < 4; k++) {
            if (run >= rows[k].runs)
                continue;
            char file[64];
            snprintf(file, sizeof file, "%s.%d.json", rows[k].name, run + 1);
            /* wall time the other way round from CPU time: the verdict must not follow it */
            paths[n++] = write_result(file, rows[k].name, rows[k].cpu_ms[run] * 1000,
                                      50000 - rows[k].cpu_ms[run] * 1000, rows[k].rss_kb);
        }
    return n;
}

static path_t compare(const path_t *paths, int n, const char *fmt, const char *outname)
{
    const char *argv[32];
    int argc = 0;
    argv[argc++] = MTRACE_EXE;
    argv[argc++] = "compare";
    if (fmt)
        argv[argc++] = fmt;
    for (int i = 0; i < n; i++)
        argv[argc++] = paths[i].s;
    argv[argc] = NULL;
    const path_t out = in(g_dir, outname), err = in(g_dir, "err");
    const int rc = run(argv, out.s, err.s, NULL, 60);
    ck_assert_msg(rc == 0, "mtrace compare %s: exit %d: %s", fmt ? fmt : "", rc, read_text(err.s, NULL));
    return out;
}

/* compare --json's table: an array of rows (load_json wants an object) */
static mt_jval_t *load_table(const char *path)
{
    mt_jval_t *t;
    mt_error_t err;
    ck_assert_msg(mt_json_load(path, &t, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(t->type, MT_JARR);
    return t;
}

static const mt_jval_t *row_of(const mt_jval_t *table, const char *name)
{
    for (size_t i = 0; i < table->n; i++)
        if (!strcmp(mt_json_str_at(&table->items[i], "name", ""), name))
            return &table->items[i];
    ck_abort_msg("no row %s", name);
    return NULL;
}

static void assert_near(double got, double want, const char *what)
{
    ck_assert_msg(got > want - 1e-6 && got < want + 1e-6, "%s: %.9g, expected %.9g", what, got, want);
}

START_TEST(compare_groups_runs_into_rows)
{
    path_t paths[16];
    const int n = write_four_rows(paths);
    mt_jval_t *t = load_table(compare(paths, n, "--json", "t.json").s);
    ck_assert_uint_eq(t->n, 4);
    static const char *const order[] = { "A", "B", "C", "D" };
    static const double runs[] = { 3, 3, 3, 1 }, cpu[] = { 11, 12.5, 6, 5 };
    for (size_t i = 0; i < 4; i++) {
        ck_assert_str_eq(mt_json_str_at(&t->items[i], "name", ""), order[i]);
        assert_near(jnum(&t->items[i], "runs"), runs[i], "runs");
        assert_near(jnum(&t->items[i], "cpu_ms"), cpu[i], "cpu_ms (median)");
    }
    const mt_jval_t *a = row_of(t, "A"), *b = row_of(t, "B");
    assert_near(jnum(a, "cpu_ms_min"), 10, "A cpu_ms_min");
    assert_near(jnum(a, "cpu_ms_max"), 12, "A cpu_ms_max");
    assert_near(jnum(a, "cpu_ms_q1"), 10.5, "A cpu_ms_q1");
    assert_near(jnum(a, "cpu_ms_q3"), 11.5, "A cpu_ms_q3");
    assert_near(jnum(a, "peak_rss_mib"), 100, "A peak_rss_mib");
    /* the replay's growth (max less start) and its ratio to the ideal, each checkable from the other */
    assert_near(jnum(a, "rss_growth_mib"), 99, "A rss_growth_mib");
    assert_near(jnum(a, "rss_growth_over_ideal"), (102400 - 1024) / 1000.0, "A rss_growth_over_ideal");
    /* the change is the medians' */
    assert_near(jnum(b, "cpu_ms_change_pct"), 100.0 * (12.5 - 11) / 11, "B cpu_ms_change_pct");
    assert_near(jnum(b, "peak_rss_mib_change_pct"), 100, "B peak_rss_mib_change_pct");
    ck_assert_uint_eq(mt_json_get(b, "files")->n, 3);
    mt_json_free(t);
}
END_TEST

START_TEST(compare_verdict_is_within_noise_when_spreads_overlap)
{
    path_t paths[16];
    const int n = write_four_rows(paths);
    mt_jval_t *t = load_table(compare(paths, n, "--json", "t.json").s);
    static const struct {
        const char *row, *time, *memory;
        int measured;
    } want[] = {
        { "A", "baseline", "baseline", 1 },
        { "B", "within noise", "more memory", 1 }, /* CPU 11.5..13 meets 10..12 */
        { "C", "faster", "within noise", 1 },      /* CPU 5..7 below 10..12; RSS the same */
        { "D", "faster", "more memory", 0 },       /* one run: said */
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const mt_jval_t *r = row_of(t, want[i].row);
        ck_assert_str_eq(mt_json_str_at(r, "time_verdict", ""), want[i].time);
        ck_assert_str_eq(mt_json_str_at(r, "memory_verdict", ""), want[i].memory);
        const mt_jval_t *m = mt_json_get(r, "noise_measured");
        ck_assert_msg(m && m->type == MT_JBOOL, "%s: noise_measured is not a boolean", want[i].row);
        ck_assert_int_eq((int)m->num, want[i].measured);
    }
    mt_json_free(t);
    /* the text table: one row each, the verdict in words, then the spreads */
    char *text = read_text(compare(paths, n, NULL, "t.txt").s, NULL);
    ck_assert_msg(strstr(text, "verdict against A"), "no verdict column:\n%s", text);
    ck_assert_msg(strstr(text, "CPU time within noise, more memory\n"), "B's verdict:\n%s", text);
    ck_assert_msg(strstr(text, "faster, RSS within noise\n"), "C's verdict:\n%s", text);
    ck_assert_msg(strstr(text, "faster, more memory (1 run: noise unknown)\n"), "D's verdict:\n%s", text);
    ck_assert_msg(strstr(text, "10.0..12.0"), "A's CPU spread (min..max):\n%s", text);
    /* CSV: a header and a line per row */
    char *csv = read_text(compare(paths, n, "--csv", "t.csv").s, NULL);
    ck_assert_uint_eq(count_lines(csv), 5);
    ck_assert_msg(strstr(csv, ",runs,cpu_ms_min,cpu_ms_q1,cpu_ms_q3,cpu_ms_max,"), "CSV header:\n%s", csv);
    ck_assert_msg(strstr(csv, ",noise_measured,recordings\n"), "CSV header's end:\n%s", csv);
    ck_assert_msg(strstr(csv, ",within noise,more memory,1,1\n"), "B's CSV row:\n%s", csv);
    free(text);
    free(csv);
}
END_TEST

/* A result whose settings the allocator did not take (settings_not_applied) is its default again:
 * its row says "not applied" in every format, not a verdict on the settings. */
START_TEST(compare_row_not_applied_gets_no_verdict)
{
    path_t paths[2];
    paths[0] = write_result("A.json", "A", 10000, 50000, 102400);
    paths[1] = in(g_dir, "N.json");
    FILE *f = fopen(paths[1].s, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "{\"kind\": \"replay\", \"allocator\": \"A\", \"workload\": \"/w.wl\","
               " \"settings\": [\"mmap_threshold=4096\"], \"settings_not_applied\": [\"mmap_threshold=4096\"],"
               " \"timing\": \"asap\", \"touch\": \"pages\", \"wall_us\": 50000, \"cpu_us\": 5000,"
               " \"max_rss_kb\": 204800, \"start_rss_kb\": 1024, \"ideal_pages_kb\": 1000}\n");
    ck_assert_int_eq(fclose(f), 0);
    mt_jval_t *t = load_table(compare(paths, 2, "--json", "na.json").s);
    const mt_jval_t *n = row_of(t, "A mmap_threshold=4096");
    ck_assert_str_eq(mt_json_str_at(n, "time_verdict", ""), "not applied");
    ck_assert_str_eq(mt_json_str_at(n, "memory_verdict", ""), "not applied");
    mt_json_free(t);
    char *csv = read_text(compare(paths, 2, "--csv", "na.csv").s, NULL);
    ck_assert_msg(strstr(csv, ",not applied,not applied,"), "CSV:\n%s", csv);
    char *text = read_text(compare(paths, 2, NULL, "na.txt").s, NULL);
    ck_assert_msg(strstr(text, "  not applied: the allocator did not take the settings") && !strstr(text, "faster"),
                  "text:\n%s", text);
    free(csv);
    free(text);
}
END_TEST

/* From 4 runs the quartiles are the spread: one disturbed run of the baseline does not hide a
 * difference. */
START_TEST(compare_uses_quartiles_from_four_runs)
{
    path_t paths[16];
    int n = 0;
    static const double base[] = { 10, 10.1, 10.2, 10.3, 30 }, other[] = { 12, 12.1, 12.2, 12.3, 12.4 };
    for (int i = 0; i < 5; i++) {
        char file[32];
        snprintf(file, sizeof file, "A.%d.json", i + 1);
        paths[n++] = write_result(file, "A", base[i] * 1000, 1000, 1024);
        snprintf(file, sizeof file, "E.%d.json", i + 1);
        paths[n++] = write_result(file, "E", other[i] * 1000, 1000, 1024);
    }
    mt_jval_t *t = load_table(compare(paths, n, "--json", "t.json").s);
    ck_assert_uint_eq(t->n, 2);
    ck_assert_str_eq(mt_json_str_at(row_of(t, "E"), "time_verdict", ""), "slower");
    mt_json_free(t);
}
END_TEST

/* mtrace replay --repeat ends with the table of its runs: one row, their count, their spread. */
START_TEST(replay_repeat_prints_one_row_with_spread)
{
    const path_t wl = write_wl(), out = in(g_dir, "out"), err = in(g_dir, "err");
    const char *const argv[] = { MTRACE_EXE, "replay", wl.s, "--repeat", "3", "--quiet", NULL };
    const int rc = run(argv, out.s, err.s, NULL, 240);
    ck_assert_msg(rc == 0, "mtrace replay --repeat 3: exit %d: %s", rc, read_text(err.s, NULL));
    char *text = read_text(out.s, NULL);
    ck_assert_msg(strstr(text, "\nglibc                           3 "), "no row of 3 runs:\n%s", text);
    ck_assert_msg(strstr(text, "spread over the runs"), "no spread:\n%s", text);
    free(text);
}
END_TEST

/* ---- sweep ---- */

/* sweep.csv as rows of fields (no field of these sweeps holds a comma or a quote). */
typedef struct csv {
    char *text;
    char *cell[16][64];
    int nrows, ncols;
} csv_t;

static void csv_read(csv_t *c, const char *path)
{
    memset(c, 0, sizeof *c);
    c->text = read_text(path, NULL);
    ck_assert_msg(c->text != NULL, "no %s", path);
    char *save = NULL;
    for (char *line = strtok_r(c->text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        ck_assert_int_lt(c->nrows, 16);
        int n = 0;
        for (char *f = line; f; n++) {
            ck_assert_int_lt(n, 64);
            c->cell[c->nrows][n] = f;
            f = strchr(f, ',');
            if (f)
                *f++ = 0;
        }
        if (c->nrows == 0)
            c->ncols = n;
        ck_assert_msg(n == c->ncols, "row %d has %d fields, the header %d", c->nrows, n, c->ncols);
        c->nrows++;
    }
}

static void csv_free(csv_t *c)
{
    free(c->text);
}

/* Row `row` (1 = the first after the header), column `name`. */
static const char *csv_at(const csv_t *c, int row, const char *name)
{
    ck_assert_int_lt(row, c->nrows);
    for (int i = 0; i < c->ncols; i++)
        if (!strcmp(c->cell[0][i], name))
            return c->cell[row][i];
    ck_abort_msg("sweep.csv has no column %s", name);
    return NULL;
}

static double csv_num(const csv_t *c, int row, const char *name)
{
    return atof(csv_at(c, row, name));
}

/* Runs mtrace sweep with the arguments after the workload; DIR/sweep.csv must be written. */
static path_t sweep(const char *wl, const char *dir, const char *const *args)
{
    const char *argv[32];
    int argc = 0;
    argv[argc++] = MTRACE_EXE;
    argv[argc++] = "sweep";
    argv[argc++] = wl;
    argv[argc++] = "-o";
    argv[argc++] = dir;
    for (; *args; args++)
        argv[argc++] = *args;
    argv[argc] = NULL;
    const path_t out = in(g_dir, "sweep.out"), err = in(g_dir, "sweep.err");
    const int rc = run(argv, out.s, err.s, NULL, 280);
    ck_assert_msg(rc == 0, "mtrace sweep: exit %d: %s", rc, read_text(err.s, NULL));
    return in(dir, "sweep.csv");
}

/* The run's list `key` ("settings", "settings_not_applied"): [want], or [] when want is NULL. */
static void assert_list(const char *dir, const char *file, const char *key, const char *want)
{
    mt_jval_t *j = load_json(in(dir, file).s);
    const mt_jval_t *list = mt_json_get(j, key);
    ck_assert_msg(list && list->type == MT_JARR, "%s: no %s", file, key);
    if (!want)
        ck_assert_msg(list->n == 0, "%s: %zu %s", file, list->n, key);
    else
        ck_assert_msg(list->n == 1 && !strcmp(list->items[0].str, want), "%s: %s is not [%s]", file, key, want);
    mt_json_free(j);
}

static void assert_settings(const char *dir, const char *file, const char *want)
{
    assert_list(dir, file, "settings", want);
}

static void assert_not_applied(const char *dir, const char *file, const char *want)
{
    assert_list(dir, file, "settings_not_applied", want);
}

START_TEST(sweep_baseline_row_first_and_changes_against_it)
{
    const path_t wl = write_wl(), d = in(g_dir, "sw");
    const char *const dir = d.s;
    const char *const args[] = { "--mallopt", "mmap_threshold=4096,1m", "--repeat", "2", NULL };
    csv_t c;
    csv_read(&c, sweep(wl.s, dir, args).s);
    ck_assert_int_eq(c.nrows, 4); /* header, the default, 4096, 1m */
    ck_assert_str_eq(csv_at(&c, 1, "allocator"), "glibc");
    ck_assert_str_eq(csv_at(&c, 1, "mmap_threshold"), "dynamic (default)");
    ck_assert_str_eq(csv_at(&c, 1, "time_verdict"), "baseline");
    ck_assert_str_eq(csv_at(&c, 2, "mmap_threshold"), "4096");
    ck_assert_str_eq(csv_at(&c, 3, "mmap_threshold"), "1m");
    /* the baseline is a replay with no setting at all; the others with theirs */
    assert_settings(dir, "run-000.1.json", NULL);
    assert_settings(dir, "run-000.2.json", NULL);
    assert_settings(dir, "run-001.2.json", "mmap_threshold=4096");
    assert_settings(dir, "run-002.1.json", "mmap_threshold=1m");
    ck_assert_msg(!exists(dir, "run-000.3.json") && !exists(dir, "run-003.1.json"), "more runs than asked");
    const double base_cpu = csv_num(&c, 1, "cpu_ms"), base_rss = csv_num(&c, 1, "peak_rss_mib");
    for (int row = 1; row < 4; row++) {
        ck_assert_int_eq((int)csv_num(&c, row, "runs"), 2);
        const double cpu = csv_num(&c, row, "cpu_ms"), rss = csv_num(&c, row, "peak_rss_mib");
        const double want_cpu = 100 * (cpu - base_cpu) / base_cpu, want_rss = 100 * (rss - base_rss) / base_rss;
        /* the CSV rounds the figures to 0.001 and the changes to 0.01 */
        const double got_cpu = csv_num(&c, row, "cpu_change_pct");
        const double got_rss = csv_num(&c, row, "rss_change_pct_of_default_peak_rss");
        ck_assert_msg(got_cpu > want_cpu - 0.1 && got_cpu < want_cpu + 0.1, "row %d: cpu change %g, expected %g", row,
                      got_cpu, want_cpu);
        ck_assert_msg(got_rss > want_rss - 0.05 && got_rss < want_rss + 0.05, "row %d: RSS change %g, expected %g", row,
                      got_rss, want_rss);
        /* the median of two runs is their mean */
        char f1[32], f2[32];
        snprintf(f1, sizeof f1, "run-%03d.1.json", row - 1);
        snprintf(f2, sizeof f2, "run-%03d.2.json", row - 1);
        mt_jval_t *j1 = load_json(in(dir, f1).s), *j2 = load_json(in(dir, f2).s);
        const double med = (jnum(j1, "cpu_us") + jnum(j2, "cpu_us")) / 2000;
        ck_assert_msg(cpu > med - 0.002 && cpu < med + 0.002, "row %d: cpu_ms %g, runs' median %g", row, cpu, med);
        mt_json_free(j1);
        mt_json_free(j2);
    }
    /* RSS over the ideal is the replay's growth over it, both beside it: a reader can check it */
    for (int row = 1; row < 4; row++) {
        const double growth = csv_num(&c, row, "rss_growth_mib"), ideal = csv_num(&c, row, "ideal_mib"),
                     ratio = csv_num(&c, row, "rss_growth_over_ideal");
        ck_assert_msg(ideal > 0 && ratio > (growth - 0.001) / (ideal + 0.001) &&
                          ratio < (growth + 0.001) / (ideal - 0.001),
                      "row %d: growth over ideal %g, the growth %g MiB, the ideal %g MiB", row, ratio, growth, ideal);
    }
    mt_jval_t *r0 = load_json(in(dir, "run-000.1.json").s);
    const double grew = jnum(r0, "rss_growth_kb");
    ck_assert_msg(grew == jnum(r0, "max_rss_kb") - jnum(r0, "start_rss_kb"), "rss_growth_kb %g is not max less start",
                  grew);
    assert_near(jnum(r0, "rss_growth_over_ideal"), grew / jnum(r0, "ideal_pages_kb"), "rss_growth_over_ideal");
    mt_json_free(r0);
    char *text = read_text(in(g_dir, "sweep.out").s, NULL);
    const char *low = strstr(text, "\nlowest peak RSS: ");
    double grown, times, ideal_mib;
    ck_assert_msg(
        low && (low = strstr(low, "the replay's RSS grew ")) &&
            sscanf(low, "the replay's RSS grew %lf MiB, %lf x the ideal %lf MiB", &grown, &times, &ideal_mib) == 3,
        "the lowest-RSS line does not give the growth, its ratio and the ideal:\n%s", text);
    /* each figure rounded to 0.01 as printed */
    ck_assert_msg(times + 0.005 > (grown - 0.005) / (ideal_mib + 0.005) &&
                      times - 0.005 < (grown + 0.005) / (ideal_mib - 0.005),
                  "%.2f x the ideal %.2f MiB is not the growth %.2f MiB", times, ideal_mib, grown);
    ck_assert_msg(strstr(text, "\nglibc        mmap_threshold=dynamic (default)"), "table:\n%s", text);
    ck_assert_msg(strstr(text, "RSS chg %dflt"), "the RSS change's header does not name its base:\n%s", text);
    ck_assert_msg(strstr(text, "\nfastest: "), "no fastest line:\n%s", text);
    free(text);
    csv_free(&c);
}
END_TEST

/* Each allocator has a default row, all before the grid, and its rows compare with it. */
START_TEST(sweep_every_allocator_has_its_baseline)
{
    char why[256];
    if (sanitizer_skip("jemalloc preloaded into a sanitized mtrace-sim"))
        return;
    if (!allocator_installed("jemalloc", why, sizeof why)) {
        fprintf(stderr, "sweep_every_allocator_has_its_baseline: %s; not checked\n", why);
        return;
    }
    const path_t wl = write_wl(), dir = in(g_dir, "sw2");
    const char *const args[] = { "--mallopt", "arena_max=1", "--allocator", "glibc", "--allocator", "jemalloc", NULL };
    csv_t c;
    csv_read(&c, sweep(wl.s, dir.s, args).s);
    ck_assert_int_eq(c.nrows, 5);
    static const char *const want[][2] = {
        { "glibc", "default" }, { "jemalloc", "default" }, { "glibc", "1" }, { "jemalloc", "1" }
    };
    for (int row = 1; row < 5; row++) {
        ck_assert_str_eq(csv_at(&c, row, "allocator"), want[row - 1][0]);
        ck_assert_str_eq(csv_at(&c, row, "arena_max"), want[row - 1][1]);
    }
    const double jbase = csv_num(&c, 2, "peak_rss_mib"), jrss = csv_num(&c, 4, "peak_rss_mib");
    const double got = csv_num(&c, 4, "rss_change_pct_of_default_peak_rss"), exp = 100 * (jrss - jbase) / jbase;
    ck_assert_msg(got > exp - 0.05 && got < exp + 0.05, "jemalloc's change %g, against its own default %g", got, exp);
    ck_assert_str_eq(csv_at(&c, 2, "time_verdict"), "baseline");
    assert_settings(dir.s, "run-001.json", NULL);
    /* jemalloc has no mallopt: its row is its default again, said so, with no verdict */
    ck_assert_str_eq(csv_at(&c, 4, "time_verdict"), "not applied");
    ck_assert_str_eq(csv_at(&c, 4, "memory_verdict"), "not applied");
    ck_assert_str_ne(csv_at(&c, 3, "time_verdict"), "not applied");
    assert_not_applied(dir.s, "run-003.json", "arena_max=1");
    assert_not_applied(dir.s, "run-002.json", NULL);
    csv_free(&c);
}
END_TEST

/* A setting the allocator refuses (glibc's mxfast above its limit: mallopt returns 0) is no setting
 * of the replay: the row says "not applied", not a verdict on the setting, and is not named lowest
 * or fastest. */
START_TEST(sweep_setting_not_applied_gets_no_verdict)
{
    if (sanitizer_skip("mallopt under a sanitizer's allocator"))
        return;
    const path_t wl = write_wl(), dir = in(g_dir, "sw5");
    const char *const args[] = { "--mallopt", "mxfast=100000", NULL };
    csv_t c;
    csv_read(&c, sweep(wl.s, dir.s, args).s);
    ck_assert_int_eq(c.nrows, 3);
    ck_assert_str_eq(csv_at(&c, 2, "mxfast"), "100000");
    ck_assert_str_eq(csv_at(&c, 2, "time_verdict"), "not applied");
    ck_assert_str_eq(csv_at(&c, 2, "memory_verdict"), "not applied");
    assert_not_applied(dir.s, "run-001.json", "mxfast=100000");
    assert_not_applied(dir.s, "run-000.json", NULL);
    char *text = read_text(in(g_dir, "sweep.out").s, NULL);
    ck_assert_msg(strstr(text, "mxfast=100000") &&
                      strstr(text, "  not applied: the allocator did not take the setting"),
                  "the row does not say so:\n%s", text);
    ck_assert_msg(strstr(text, "\nlowest peak RSS: glibc mxfast=default: ") &&
                      strstr(text, "\nfastest:         glibc mxfast=default: "),
                  "a setting not applied named lowest or fastest:\n%s", text);
    free(text);
    csv_free(&c);
}
END_TEST

START_TEST(sweep_touch_passed_to_every_replay)
{
    const path_t wl = write_wl(), dir = in(g_dir, "sw3");
    const char *const args[] = { "--mallopt", "mmap_threshold=4096", "--touch", "ends", NULL };
    sweep(wl.s, dir.s, args);
    for (int k = 0; k < 2; k++) {
        char f[32];
        snprintf(f, sizeof f, "run-%03d.json", k);
        mt_jval_t *j = load_json(in(dir.s, f).s);
        ck_assert_str_eq(mt_json_str_at(j, "touch", ""), "ends");
        mt_json_free(j);
    }
    /* a value the simulator does not take is sweep's own usage error (exit 2, one line naming it and
     * the values it takes), before any replay, and nothing is written */
    const path_t bad = in(g_dir, "sw4"), err = in(g_dir, "err");
    const char *const argv[] = { MTRACE_EXE, "sweep",    wl.s, "-o", bad.s, "--mallopt", "mmap_threshold=4096",
                                 "--touch",  "sideways", NULL };
    ck_assert_int_eq(run(argv, NULL, err.s, NULL, 60), 2);
    char *e = read_text(err.s, NULL);
    ck_assert_msg(strstr(e, "mtrace sweep: --touch 'sideways': expected one of auto, pages, ends, none") &&
                      !strstr(e, "mtrace-sim"),
                  "not sweep's own refusal:\n%s", e);
    ck_assert_msg(!exists(bad.s, "sweep.csv"), "sweep.csv written");
    free(e);
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
        { "compare_groups_runs_into_rows", compare_groups_runs_into_rows },
        { "compare_verdict_is_within_noise_when_spreads_overlap",
          compare_verdict_is_within_noise_when_spreads_overlap },
        { "compare_uses_quartiles_from_four_runs", compare_uses_quartiles_from_four_runs },
        { "compare_row_not_applied_gets_no_verdict", compare_row_not_applied_gets_no_verdict },
        { "replay_repeat_prints_one_row_with_spread", replay_repeat_prints_one_row_with_spread },
        { "sweep_baseline_row_first_and_changes_against_it", sweep_baseline_row_first_and_changes_against_it },
        { "sweep_every_allocator_has_its_baseline", sweep_every_allocator_has_its_baseline },
        { "sweep_touch_passed_to_every_replay", sweep_touch_passed_to_every_replay },
        { "sweep_setting_not_applied_gets_no_verdict", sweep_setting_not_applied_gets_no_verdict },
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
    return run_suite(repeat_suite());
}
