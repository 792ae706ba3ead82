/* The classic summary's shape, line by line, as the parsers of the original simulator's output read
 * it: five figure lines (thousands separators), then "Avg OP time: X in N calls" for malloc, calloc,
 * realloc and free; its figures agree with the JSON result of the same run. Also the RSS series file
 * and the command line's refusals. */
#define _GNU_SOURCE
#include <check.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_util.h"
#include "test_util.h"

static char *g_dir;
TEST_DIR_FIXTURE(g_dir, "sim-summary", "SIM_KEEP")

/* 1 thread or 3; 1500 mallocs (so counts get a separator); one thread: 2 MiB live at the peak. */
static char *write_wl(uint32_t threads)
{
    char *wl = path_in(g_dir, threads == 1 ? "one.mtw" : "three.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    for (uint32_t t = 0; t < threads; t++)
        wlb_thread(&b, 0);
    const uint64_t per = 1500 / threads;
    for (uint32_t t = 0; t < threads; t++) {
        const uint64_t base = 1 + t * (per + 10);
        for (uint64_t i = 0; i < per; i++)
            wlb_malloc(&b, t, base + i, 2 * 1024 * 1024 / 1500 + 1);
        for (uint64_t i = 0; i < 7; i++)
            wlb_calloc(&b, t, base + per + i, 3, 100);
        wlb_realloc(&b, t, base, base, 99);
        for (uint64_t i = 0; i < per; i++)
            wlb_free(&b, t, base + i);
        for (uint64_t i = 0; i < 7; i++)
            wlb_free(&b, t, base + per + i);
    }
    wlb_close(&b);
    return wl;
}

static regex_t *re(const char *pattern)
{
    static regex_t cache[32];
    static const char *pats[32];
    for (int i = 0; i < 32; i++) {
        if (pats[i] && !strcmp(pats[i], pattern))
            return &cache[i];
        if (!pats[i]) {
            ck_assert_int_eq(regcomp(&cache[i], pattern, REG_EXTENDED | REG_NEWLINE), 0);
            pats[i] = pattern;
            return &cache[i];
        }
    }
    ck_abort_msg("too many patterns");
    return NULL;
}

/* The n-th line (0-based) of text, copied. */
static char *line_at(const char *text, size_t n)
{
    const char *p = text;
    for (size_t i = 0; i < n; i++) {
        p = strchr(p, '\n');
        ck_assert_msg(p != NULL, "the summary has fewer than %zu lines:\n%s", n + 1, text);
        p++;
    }
    const size_t len = strcspn(p, "\n");
    return strndup(p, len);
}

static long long figure(const char *s) /* "  1,234,567 ..." -> 1234567 */
{
    long long v = 0;
    while (*s == ' ')
        s++;
    for (; (*s >= '0' && *s <= '9') || *s == ','; s++)
        if (*s != ',')
            v = v * 10 + (*s - '0');
    return v;
}

static void match(const char *line, const char *pattern, const char *what)
{
    ck_assert_msg(regexec(re(pattern), line, 0, NULL, 0) == 0, "%s: '%s' does not match /%s/", what, line, pattern);
}

/* The rules by which allocator benchmark suites read the original simulator's summary (allocbench's
 * dj_trace benchmark, as published): each figure is taken from a fixed line (counted from 0) with a
 * pattern anchored at the line's start, the figure being digits with optional thousands separators
 * ("(?:\\d*(?:,\\d*)?)*" there, written here in POSIX ERE), read with the commas removed. Line 4's
 * rule is applied as its authors meant it (the published pattern lacks its f-string prefix and so
 * would match no output at all). */
#define BENCH_NUMBER "(([0-9]*(,[0-9]*)?)*)"
static const struct {
    size_t line;
    const char *pattern, *json, *json_sub; /* the JSON figure the line's figure must equal */
} bench_rules[] = {
    { 0, "^" BENCH_NUMBER " cycles$", NULL, NULL },
    { 2, "^" BENCH_NUMBER " usec across.*threads$", "thread_us", NULL },
    { 3, "^" BENCH_NUMBER " Kb Max RSS", NULL, NULL },
    { 4, "^" BENCH_NUMBER " Kb Max Ideal RSS", "ideal_rss_kb", NULL },
    { 7, "^Avg malloc time:[[:space:]]*" BENCH_NUMBER " in.*calls$", "avg_cycles", "malloc" },
    { 8, "^Avg calloc time:[[:space:]]*" BENCH_NUMBER " in.*calls$", "avg_cycles", "calloc" },
    { 9, "^Avg realloc time:[[:space:]]*" BENCH_NUMBER " in.*calls$", "avg_cycles", "realloc" },
    { 10, "^Avg free time:[[:space:]]*" BENCH_NUMBER " in.*calls$", "avg_cycles", "free" },
};

/* The figure a rule captures (group 1), as the suites read it: commas dropped, then a whole number. */
static long long bench_figure(const char *line, const char *pattern, const char *what)
{
    regmatch_t m[2];
    ck_assert_msg(regexec(re(pattern), line, 2, m, 0) == 0, "%s: '%s' does not match /%s/", what, line, pattern);
    ck_assert_msg(m[1].rm_eo > m[1].rm_so, "%s: '%s': /%s/ captures no figure", what, line, pattern);
    long long v = 0;
    for (regoff_t i = m[1].rm_so; i < m[1].rm_eo; i++)
        if (line[i] != ',')
            v = v * 10 + (line[i] - '0');
    return v;
}

/* Checks the summary that starts at line `first` of `text` against the JSON of the same run, and
 * against the benchmark suites' rules. */
static void check_summary(const char *text, size_t first, const mt_jval_t *j, uint32_t threads)
{
    static const char *const shape[] = {
        "^[0-9,]+ cycles$",
        "^[0-9,]+ usec wall time$",
        "^[0-9,]+ usec across [0-9]+ threads$",
        "^[0-9,]+ Kb Max RSS \\([0-9,]+ -> [0-9,]+\\)$",
        "^[0-9,]+ Kb Max Ideal RSS$",
        "^allocator [^;]+; waited at [0-9]+ of [0-9]+ sync points \\([0-9]+ slept\\), bookkeeping [0-9]+ Kb",
        "^averages below leave out [0-9,]+ calls timed at [0-9,]+ cycles or more",
        "^Avg malloc time: [0-9,]+ in [0-9,]+ calls$",
        "^Avg calloc time: [0-9,]+ in [0-9,]+ calls$",
        "^Avg realloc time: [0-9,]+ in [0-9,]+ calls$",
        "^Avg free time: [0-9,]+ in [0-9,]+ calls$",
    };
    enum { LINES = sizeof shape / sizeof shape[0] };
    char *l[LINES];
    for (size_t i = 0; i < LINES; i++) {
        l[i] = line_at(text, first + i);
        match(l[i], shape[i], "summary");
    }
    /* separators in the right places */
    for (size_t i = 0; i < 5; i++)
        match(l[i], "^[0-9]{1,3}(,[0-9]{3})* [A-Za-z]", "separators");
    match(l[3], "\\([0-9]{1,3}(,[0-9]{3})* -> [0-9]{1,3}(,[0-9]{3})*\\)$", "separators");
    match(l[7], " in 1,5[0-9]{2} calls$", "malloc count");

    /* against the JSON */
    char want[64];
    snprintf(want, sizeof want, " usec across %u threads", threads);
    ck_assert_msg(strstr(l[2], want), "'%s' lacks '%s'", l[2], want);
    ck_assert_int_eq(figure(l[2]), (long long)jnum(j, "thread_us"));
    const long long max = (long long)jnum(j, "max_rss_kb"), start = (long long)jnum(j, "start_rss_kb");
    ck_assert_int_eq(figure(l[3]), max - start);
    ck_assert_int_eq(figure(strchr(l[3], '(') + 1), start);
    ck_assert_int_eq(figure(strstr(l[3], "-> ") + 3), max);
    ck_assert_int_eq(figure(l[4]), (long long)jnum(j, "ideal_rss_kb"));
    /* the waits that happened, of the workload's sync points (mtrace info's), named apart */
    ck_assert_int_eq(figure(strstr(l[5], "waited at ") + 10), (long long)jnum(j, "sync_waits"));
    ck_assert_int_eq(figure(strstr(l[5], " of ") + 4), (long long)jnum(j, "sync_points"));
    ck_assert_int_le(jnum(j, "sync_waits"), jnum(j, "sync_points"));
    if (threads == 1)
        ck_assert_int_ge(figure(l[4]), 2048);
    static const char *const ops[] = { "malloc", "calloc", "realloc", "free" };
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(figure(strstr(l[7 + i], " in ") + 4), (long long)jnum2(j, "calls", ops[i]));
    ck_assert_int_eq((long long)jnum2(j, "calls", "malloc"), 1500);
    ck_assert_int_eq((long long)jnum2(j, "calls", "calloc"), 7 * threads);
    ck_assert_int_eq((long long)jnum2(j, "calls", "realloc"), threads);

    /* the suites' rules, line by line, each figure equal to the result's (averages rounded to whole) */
    for (size_t r = 0; r < sizeof bench_rules / sizeof bench_rules[0]; r++) {
        const long long v = bench_figure(l[bench_rules[r].line], bench_rules[r].pattern, "benchmark rule");
        if (!bench_rules[r].json)
            continue;
        const double want_v = bench_rules[r].json_sub ? jnum2(j, bench_rules[r].json, bench_rules[r].json_sub)
                                                      : jnum(j, bench_rules[r].json);
        /* averages are rounded to whole cycles; the result keeps 6 significant digits */
        const double tol = bench_rules[r].json_sub ? 0.5 + want_v * 5e-6 : 0;
        ck_assert_msg(fabs((double)v - want_v) <= tol, "line %zu: %lld, the result says %.6g", bench_rules[r].line, v,
                      want_v);
    }
    ck_assert_int_eq(bench_figure(l[3], bench_rules[2].pattern, "max RSS"), max - start);
    for (size_t i = 0; i < LINES; i++)
        free(l[i]);
}

START_TEST(summary_shape)
{
    for (uint32_t threads = 1; threads <= 3; threads += 2) {
        char *wl = write_wl(threads), *out = path_in(g_dir, "stdout"), *json = path_in(g_dir, "r.json"),
             *err = path_in(g_dir, "stderr");
        const char *const argv[] = { SIM_EXE, wl, "--json", json, NULL };
        ck_assert_int_eq(run(argv, out, err, NULL, 60), 0);
        char *text = read_text(out, NULL), *e = read_text(err, NULL);
        ck_assert_msg(!e[0], "stderr: %s", e);
        mt_jval_t *j = load_json(json);
        check_summary(text, 0, j, threads);
        ck_assert_uint_eq((uint64_t)jnum(j, "threads"), threads);
        mt_json_free(j);
        free(text);
        free(e);
        free(wl);
        free(out);
        free(json);
        free(err);
    }
}
END_TEST

/* Through mtrace replay: "== glibc" and then the same summary. */
START_TEST(summary_through_replay)
{
    char *wl = write_wl(1), *out = path_in(g_dir, "stdout"), *json = path_in(g_dir, "r.json");
    const char *const argv[] = { MTRACE_EXE, "replay", wl, "--json", json, NULL };
    ck_assert_int_eq(run(argv, out, NULL, NULL, 60), 0);
    char *text = read_text(out, NULL);
    char *l0 = line_at(text, 0);
    ck_assert_str_eq(l0, "== glibc");
    mt_jval_t *j = load_json(json);
    check_summary(text, 1, j, 1);
    ck_assert_str_eq(mt_json_str_at(j, "allocator", ""), "glibc");
    mt_json_free(j);
    free(l0);
    free(text);
    free(wl);
    free(out);
    free(json);
}
END_TEST

/* --quiet: no summary; --label names the allocator in the result. */
START_TEST(quiet_and_label)
{
    char *wl = write_wl(1), *out = path_in(g_dir, "stdout"), *json = path_in(g_dir, "r.json");
    const char *const argv[] = { SIM_EXE, wl, "--json", json, "--quiet", "--label", "my-alloc", NULL };
    ck_assert_int_eq(run(argv, out, NULL, NULL, 60), 0);
    char *text = read_text(out, NULL);
    ck_assert_str_eq(text, "");
    mt_jval_t *j = load_json(json);
    ck_assert_str_eq(mt_json_str_at(j, "allocator", ""), "my-alloc");
    mt_json_free(j);
    /* without a label, the library that answers malloc */
    const char *const argv2[] = { SIM_EXE, wl, "--json", json, "--quiet", NULL };
    ck_assert_int_eq(run(argv2, out, NULL, NULL, 60), 0);
    j = load_json(json);
    if (!sanitizer_skip("the allocator's library"))
        ck_assert_msg(strstr(mt_json_str_at(j, "allocator", ""), "libc.so"), "allocator %s",
                      mt_json_str_at(j, "allocator", ""));
    mt_json_free(j);
    free(text);
    free(wl);
    free(out);
    free(json);
}
END_TEST

/* --rss-series: a header and rows of six numbers, time and ops done not going back, ideal never above
 * the peak, the last row with every op done. */
START_TEST(rss_series)
{
    char *wl = path_in(g_dir, "paced.mtw"), *series = path_in(g_dir, "series.tsv"), *json = path_in(g_dir, "r.json");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t = wlb_thread(&b, 0);
    for (uint64_t i = 1; i <= 20; i++) {
        wlb_malloc(&b, t, i, 1024 * 1024);
        wlb_gap(&b, 10000000); /* 10 ms: 200 ms in all at the recorded pace */
    }
    for (uint64_t i = 1; i <= 20; i++)
        wlb_free(&b, t, i);
    wlb_close(&b);
    const char *const argv[] = { SIM_EXE, wl,         "--json",   json,          "--quiet", "--rss-series",
                                 series,  "--timing", "recorded", "--sample-ms", "5",       NULL };
    ck_assert_int_eq(run(argv, NULL, NULL, NULL, 60), 0);
    mt_jval_t *j = load_json(json);
    char *text = read_text(series, NULL);
    ck_assert_ptr_nonnull(text);
    char *l0 = line_at(text, 0);
    ck_assert_str_eq(l0, "# t_s\trss_kb\tvmsize_kb\tideal_kb\tsource_rss_kb\tops_done");
    const size_t rows = count_lines(text) - 1;
    ck_assert_msg(rows >= 10, "%zu rows for 200 ms sampled every 5 ms", rows);
    double prev_t = -1, prev_done = 0, done = 0;
    unsigned long long max_rss = 0, max_ideal = 0;
    for (size_t i = 1; i <= rows; i++) {
        char *l = line_at(text, i);
        match(l, "^[0-9]+\\.[0-9]{4}\t[0-9]+\t[0-9]+\t[0-9]+\t[0-9]+\t[01]\\.[0-9]{6}$", "series row");
        double ts;
        unsigned long long rss, vm, ideal, src;
        ck_assert_int_eq(sscanf(l, "%lf %llu %llu %llu %llu %lf", &ts, &rss, &vm, &ideal, &src, &done), 6);
        ck_assert(ts >= prev_t);
        ck_assert_msg(done >= prev_done && done <= 1, "ops done %f after %f", done, prev_done);
        ck_assert(rss <= vm);
        ck_assert_uint_eq(src, 0); /* the workload has no RSS records */
        prev_t = ts;
        prev_done = done;
        if (rss > max_rss)
            max_rss = rss;
        if (ideal > max_ideal)
            max_ideal = ideal;
        free(l);
    }
    ck_assert_uint_le(max_ideal, (uint64_t)jnum(j, "ideal_rss_kb"));
    ck_assert_uint_ge(max_ideal, 10 * 1024);                                    /* sampled while blocks were live */
    ck_assert_msg(done == 1.0, "the last sample has %f of the ops done", done); /* taken after the threads */
    ck_assert_msg(prev_t > 0 && rows > 2, "a series of %zu rows", rows);
    /* the peak is the kernel's high-water mark: never below what the samples saw */
    ck_assert_uint_le(max_rss, (uint64_t)jnum(j, "max_rss_kb"));
    mt_json_free(j);
    free(l0);
    free(text);
    free(wl);
    free(series);
    free(json);
}
END_TEST

/* "usec across N threads" (thread_us) is the replay threads' CPU time: thread 1 makes 4 calls 100 ms
 * apart (--timing recorded: it sleeps in between) while thread 0 waits for it, asleep. Counted as
 * wall time from each thread's start to its end, as before, it was 0.8 s, twice the wall time; as
 * CPU time it is a small part of the wall time (the bound: a quarter). */
START_TEST(thread_time_is_cpu_time)
{
    char *wl = path_in(g_dir, "sleepy.mtw"), *json = path_in(g_dir, "r.json");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t0 = wlb_thread(&b, 0), t1 = wlb_thread(&b, 0);
    for (uint64_t i = 1; i <= 4; i++) {
        wlb_gap(&b, 100000000);
        wlb_malloc(&b, t1, i, 100);
    }
    wlb_wait(&b, t0, t1, wlb_ops(&b, t1));
    for (uint64_t i = 1; i <= 4; i++)
        wlb_free(&b, t0, i);
    wlb_close(&b);
    const char *const argv[] = { SIM_EXE, wl, "--json", json, "--quiet", "--timing", "recorded", NULL };
    ck_assert_int_eq(run(argv, NULL, NULL, NULL, 60), 0);
    mt_jval_t *j = load_json(json);
    const double wall_us = jnum(j, "wall_us"), thread_us = jnum(j, "thread_us");
    ck_assert_msg(wall_us >= 300000, "wall %.0f us for 400 ms of recorded gaps", wall_us);
    ck_assert_msg(thread_us * 4 < wall_us, "%.0f us across the threads, %.0f us of wall time", thread_us, wall_us);
    mt_json_free(j);
    free(wl);
    free(json);
}
END_TEST

/* Replays 1000 pairs of malloc(size) and free on sleepy_malloc.so through mtrace replay: its JSON
 * result, and its output in *text (the caller frees both). */
static mt_jval_t *replay_on_sleepy(uint64_t size, char **text)
{
    char *wl = path_in(g_dir, "sleepy.mtw"), *json = path_in(g_dir, "r.json"), *out = path_in(g_dir, "stdout"),
         *err = path_in(g_dir, "stderr");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t = wlb_thread(&b, 0);
    for (uint64_t i = 1; i <= 1000; i++) {
        wlb_malloc(&b, t, 1, size);
        wlb_free(&b, t, 1);
    }
    wlb_close(&b);
    const char *const argv[] = { MTRACE_EXE, "replay", wl, "--allocator", SLEEPY_MALLOC, "--json", json, NULL };
    const int rc = run(argv, out, err, NULL, 60);
    char *e = read_text(err, NULL);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, e);
    *text = read_text(out, NULL);
    mt_jval_t *j = load_json(json);
    free(e);
    free(wl);
    free(json);
    free(out);
    free(err);
    return j;
}

/* Calls during which the thread was off its CPU are left out of the averages, and the summary and
 * the JSON say how many and by which rule: on sleepy_malloc.so, 20 of 1000 mallocs of 4321 bytes
 * sleep 5 ms (10 million cycles and more at 2 GHz). Counted in, as before, they made the average
 * malloc 100 000 cycles and more, for a median in the tens; the bound is 20 000. They stay in the
 * calls and the maximum, and in avg_cycles_all. */
START_TEST(descheduled_calls_left_out_of_averages)
{
    if (sanitizer_skip("descheduled_calls_left_out_of_averages"))
        return;
    char *text;
    mt_jval_t *j = replay_on_sleepy(4321, &text);
    const double avg = jnum2(j, "avg_cycles", "malloc");
    ck_assert_msg(avg < 20000, "average malloc %.1f cycles", avg);
    const double all = jnum2(j, "avg_cycles_all", "malloc"), out_calls = jnum2(j, "descheduled_calls", "malloc");
    ck_assert_msg(out_calls >= 20 && out_calls < 100, "%.0f mallocs left out", out_calls);
    ck_assert_msg(all > avg, "average malloc %.1f cycles, %.1f with every call", avg, all);
    ck_assert_uint_ge((uint64_t)jnum2(j, "max_cycles", "malloc"), (uint64_t)jnum(j, "descheduled_cycles"));
    ck_assert_uint_eq((uint64_t)jnum2(j, "calls", "malloc"), 1000);
    ck_assert_msg(strstr(mt_json_str_at(j, "avg_rule", ""), "descheduled"), "avg_rule: %s",
                  mt_json_str_at(j, "avg_rule", ""));
    char want[128];
    snprintf(want, sizeof want, "\naverages below leave out %.0f calls timed at 1,048,576 cycles or more (descheduled)",
             out_calls + jnum2(j, "descheduled_calls", "free"));
    ck_assert_msg(strstr(text, want), "the summary lacks '%s':\n%s", want + 1, text);
    mt_json_free(j);
    free(text);
}
END_TEST

/* The replay's own cost per op is its threads' time outside the allocator's calls: an allocator
 * whose malloc of 1234 bytes works 20 us of CPU (sleepy_malloc.so) shows in the allocator's time,
 * not in the replay's own. */
START_TEST(replay_overhead_leaves_the_allocator_out)
{
    if (sanitizer_skip("replay_overhead_leaves_the_allocator_out"))
        return;
    char *text;
    mt_jval_t *j = replay_on_sleepy(1234, &text);
    const double alloc_us = jnum(j, "allocator_us"), own = jnum(j, "replay_overhead_ns_per_op");
    const double per_call = jnum(j, "allocator_ns_per_call"), wall_us = jnum(j, "wall_us");
    /* 1000 mallocs of 20 us of CPU each, and 1000 quick frees: at least 10 us per call */
    ck_assert_msg(alloc_us >= 18000 && alloc_us <= wall_us, "%.0f us in the allocator, %.0f us of wall time", alloc_us,
                  wall_us);
    ck_assert_msg(per_call >= 9000, "%.0f ns per allocator call", per_call);
    ck_assert_msg(own > 0 && own < 2000, "the replay's own cost: %.1f ns per op", own);
    ck_assert_msg(strstr(text, "\ntime: ") && strstr(text, "usec in the allocator's calls, ") &&
                      strstr(text, " usec writing their blocks; the replay's own "),
                  "the summary lacks the time line:\n%s", text);
    mt_json_free(j);
    free(text);
}
END_TEST

/* Writing the blocks the allocator returns is counted apart from the replay's own cost: the page
 * faults of fresh memory are the allocator's doing (reused memory faults no more). 64 blocks of
 * 1 MiB, live at once, written page by page: 16 384 faults, milliseconds, in block_writes_us; counted
 * as the replay's own, they made it tens of microseconds per op of the 130. */
START_TEST(block_writes_apart_from_the_replays_own)
{
    if (sanitizer_skip("block_writes_apart_from_the_replays_own"))
        return;
    char *wl = path_in(g_dir, "writes.mtw"), *json = path_in(g_dir, "r.json");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t = wlb_thread(&b, 0);
    for (uint64_t i = 1; i <= 64; i++)
        wlb_malloc(&b, t, i, 1 << 20);
    for (uint64_t i = 1; i <= 64; i++)
        wlb_free(&b, t, i);
    wlb_close(&b);
    const char *const argv[] = { SIM_EXE, wl, "--json", json, "--quiet", "--touch", "pages", "--timing", "asap", NULL };
    ck_assert_int_eq(run(argv, NULL, NULL, NULL, 60), 0);
    mt_jval_t *j = load_json(json);
    const double writes_us = jnum(j, "block_writes_us"), own = jnum(j, "replay_overhead_ns_per_op");
    ck_assert_msg(writes_us >= 1000, "%.0f us writing 64 MiB of fresh blocks", writes_us);
    /* counted as the replay's own, the writes would be all of it: its 130 ops' own time stays under
     * half of theirs, a ratio that a loaded machine's preemptions (11 us per op seen) leave alone */
    ck_assert_msg(own * 130 < writes_us * 1000 / 2, "the replay's own cost: %.1f ns per op, %.0f us writing blocks",
                  own, writes_us);
    mt_json_free(j);
    free(wl);
    free(json);
}
END_TEST

/* Pacing (--timing recorded, the default) is not the replay's time: a gap of 1.5 s between two calls
 * is slept, not spun. A sleep asked for in one piece of more than a second was refused by
 * nanosleep(), and the thread spun until the gap was under a second: 0.5 s of CPU time. */
START_TEST(pacing_sleeps_long_gaps)
{
    char *wl = path_in(g_dir, "gap.mtw"), *json = path_in(g_dir, "r.json");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t = wlb_thread(&b, 0);
    wlb_malloc(&b, t, 1, 100);
    wlb_gap(&b, 1500000000);
    wlb_free(&b, t, 1);
    wlb_close(&b);
    const char *const argv[] = { SIM_EXE, wl, "--json", json, "--quiet", NULL };
    ck_assert_int_eq(run(argv, NULL, NULL, NULL, 60), 0);
    mt_jval_t *j = load_json(json);
    ck_assert_str_eq(mt_json_str_at(j, "timing", ""), "recorded");
    const double wall_us = jnum(j, "wall_us"), thread_us = jnum(j, "thread_us"), cpu_us = jnum(j, "cpu_us");
    ck_assert_msg(wall_us >= 1400000, "wall %.0f us for a recorded gap of 1.5 s", wall_us);
    ck_assert_msg(thread_us < 100000 && cpu_us < 250000, "%.0f us across the threads, %.0f us of the process's CPU",
                  thread_us, cpu_us);
    mt_json_free(j);
    free(wl);
    free(json);
}
END_TEST

/* Nor are short gaps spun: 10 000 calls 50 us apart (0.5 s) are paced by sleeping when the replay is
 * a millisecond ahead: 20 ms of CPU. Spinning until each call's time, the replay took 0.32 s of it
 * (on this shared 2-CPU VM; the bound: 0.15 s). */
START_TEST(pacing_sleeps_short_gaps)
{
    char *wl = path_in(g_dir, "gaps.mtw"), *json = path_in(g_dir, "r.json");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t = wlb_thread(&b, 0);
    for (uint64_t i = 1; i <= 10000; i++) {
        wlb_gap(&b, 50000);
        wlb_malloc(&b, t, 1, 100);
        wlb_free(&b, t, 1);
    }
    wlb_close(&b);
    const char *const argv[] = { SIM_EXE, wl, "--json", json, "--quiet", NULL };
    ck_assert_int_eq(run(argv, NULL, NULL, NULL, 60), 0);
    mt_jval_t *j = load_json(json);
    const double wall_us = jnum(j, "wall_us"), thread_us = jnum(j, "thread_us"), cpu_us = jnum(j, "cpu_us");
    ck_assert_msg(wall_us >= 450000, "wall %.0f us for 0.5 s of recorded gaps", wall_us);
    ck_assert_msg(thread_us < 100000 && cpu_us < 150000,
                  "%.0f us across the threads, %.0f us of the process's CPU, for "
                  "%.0f us of wall time",
                  thread_us, cpu_us, wall_us);
    mt_json_free(j);
    free(wl);
    free(json);
}
END_TEST

/* Usage errors: exit 2, and a message that names what is wrong: a bad value in one line with the
 * option and the value, anything else with the usage lines. */
START_TEST(usage_errors)
{
    char *wl = write_wl(1), *err = path_in(g_dir, "stderr");
    const char *const cases[][6] = {
        { SIM_EXE, NULL },
        { SIM_EXE, wl, "--timing", "sometimes", NULL },
        { SIM_EXE, wl, "--touch", "all", NULL },
        { SIM_EXE, wl, "--no-such-option", NULL },
        { SIM_EXE, wl, "--sample-ms", "0", NULL },
        { SIM_EXE, wl, wl, NULL },
        { MTRACE_EXE, "replay", NULL },
        { MTRACE_EXE, "replay", wl, "--bogus", NULL },
    };
    static const char *const said[] = {
        "usage:",          "--timing 'sometimes'", "--touch 'all'", "unknown option '--no-such-option'",
        "--sample-ms '0'", "one WORKLOAD only",    "usage:",        "unknown option '--bogus'",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int rc = run(cases[i], NULL, err, NULL, 30);
        ck_assert_msg(rc == 2, "case %zu: exit %d", i, rc);
        char *e = read_text(err, NULL);
        ck_assert_msg(strstr(e, said[i]), "case %zu: '%s' not in: %s", i, said[i], e);
        free(e);
    }
    free(wl);
    free(err);
}
END_TEST

static Suite *summary_suite(void)
{
    Suite *s = suite_create("sim_summary");
    const struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        { "summary_shape", summary_shape },
        { "summary_through_replay", summary_through_replay },
        { "quiet_and_label", quiet_and_label },
        { "rss_series", rss_series },
        { "usage_errors", usage_errors },
        { "thread_time_is_cpu_time", thread_time_is_cpu_time },
        { "descheduled_calls_left_out_of_averages", descheduled_calls_left_out_of_averages },
        { "replay_overhead_leaves_the_allocator_out", replay_overhead_leaves_the_allocator_out },
        { "block_writes_apart_from_the_replays_own", block_writes_apart_from_the_replays_own },
        { "pacing_sleeps_long_gaps", pacing_sleeps_long_gaps },
        { "pacing_sleeps_short_gaps", pacing_sleeps_short_gaps },
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
    return run_suite(summary_suite());
}
