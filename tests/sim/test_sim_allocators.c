/* Every named allocator loads and answers: test_sim_allocators NAME (glibc, jemalloc, tcmalloc or
 * mimalloc). Exits 77 (skipped) when NAME's library is not installed, naming the Debian package, and
 * for the preloaded allocators under a sanitizer (the sanitizer's runtime must come first in the
 * process and answers malloc itself).
 *
 * That the replay really ran on the allocator is shown two ways, each of which fails if the driver
 * dropped or mixed up LD_PRELOAD: the real mtrace-sim, run by `mtrace replay`, is made to print the
 * allocator's own statistics at exit (each allocator has an environment switch for it, which the
 * others ignore); and the replay driver, given which_malloc as its simulator, shows which library
 * answers malloc in the child. For glibc, a mallopt setting changes the replay's peak RSS (see
 * test_sim_rss.c), which it would not on another allocator. */
#define _GNU_SOURCE
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/replay.h"
#include "sim_util.h"
#include "test_util.h"

static const char *g_name;
static char *g_dir;
TEST_DIR_FIXTURE(g_dir, "sim-alloc", "SIM_KEEP")

/* Each allocator's switch for printing statistics at exit, and a line of what it prints. */
static const struct {
    const char *name, *env, *says, *lib;
} stats[] = {
    { "jemalloc", "MALLOC_CONF=stats_print:true", "Begin jemalloc statistics", "libjemalloc" },
    { "tcmalloc", "MALLOCSTATS=1", "Bytes in use by application", "libtcmalloc" },
    { "mimalloc", "MIMALLOC_SHOW_STATS=1", "heap stats", "libmimalloc" },
};
#define NSTATS (sizeof stats / sizeof stats[0])

/* Two threads, every kind of call the classic summary counts, blocks freed by the other thread. */
static char *write_small(void)
{
    char *wl = path_in(g_dir, "small.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t a = wlb_thread(&b, 0), c = wlb_thread(&b, 0);
    for (uint64_t r = 0; r < 100; r++) {
        const uint64_t s = 1 + (r % 2) * 3;
        wlb_malloc(&b, a, s, 40 + r);
        wlb_calloc(&b, a, s + 1, 10, 30);
        wlb_realloc(&b, a, s, s + 2, 5000 + r);
        const uint64_t done = wlb_ops(&b, a);
        wlb_wait(&b, c, a, done);
        wlb_free(&b, c, s + 1);
        wlb_free(&b, c, s + 2);
        wlb_wait(&b, a, c, wlb_ops(&b, c));
    }
    wlb_close(&b);
    return wl;
}

static void check_counts(const mt_jval_t *j)
{
    ck_assert_uint_eq((uint64_t)jnum2(j, "calls", "malloc"), 100);
    ck_assert_uint_eq((uint64_t)jnum2(j, "calls", "calloc"), 100);
    ck_assert_uint_eq((uint64_t)jnum2(j, "calls", "realloc"), 100);
    ck_assert_uint_eq((uint64_t)jnum2(j, "calls", "free"), 200);
    ck_assert_uint_eq((uint64_t)jnum2(j, "failed", "malloc"), 0);
    ck_assert_uint_eq((uint64_t)jnum(j, "threads"), 2);
}

/* The real replay: mtrace replay WL --allocator NAME --json F, with every allocator's statistics
 * switch set: exactly the named allocator's statistics show. */
START_TEST(replay_on_allocator)
{
    char *wl = write_small(), *json = path_in(g_dir, "r.json"), *out = path_in(g_dir, "stdout"),
         *err = path_in(g_dir, "stderr");
    const char *const argv[] = { MTRACE_EXE, "replay", wl, "--allocator", g_name, "--json", json, NULL };
    const char *env[NSTATS + 1];
    for (size_t i = 0; i < NSTATS; i++)
        env[i] = stats[i].env;
    env[NSTATS] = NULL;
    const int rc = run(argv, out, err, env, 120);
    char *e = read_text(err, NULL), *o = read_text(out, NULL);
    ck_assert_msg(rc == 0, "mtrace replay --allocator %s: exit %d: %s", g_name, rc, e);
    mt_jval_t *j = load_json(json);
    ck_assert_str_eq(mt_json_str_at(j, "allocator", ""), g_name);
    check_counts(j);
    for (size_t i = 0; i < NSTATS; i++) {
        const int mine = !strcmp(stats[i].name, g_name);
        ck_assert_msg(!!strstr(e, stats[i].says) == mine, "replay on %s: %s's statistics %s on stderr", g_name,
                      stats[i].name, mine ? "missing" : "shown");
    }
    /* The file pages of the libraries the allocator brings (simulator/sim_libs.c): none for glibc,
     * its own library's at least for the others (Debian's jemalloc and tcmalloc also bring
     * libstdc++); part of the predicted peak when the workload has RSS samples (this one has none). */
    const double file_kb = jnum(j, "allocator_file_kb");
    if (!strcmp(g_name, "glibc"))
        ck_assert_msg(file_kb == 0, "glibc: allocator_file_kb %.0f, expected 0", file_kb);
    else
        ck_assert_msg(file_kb >= 8 && file_kb < 64 * 1024, "%s: allocator_file_kb %.0f, expected its library's pages",
                      g_name, file_kb);
    /* the summary names the allocator and where it came from */
    char head[256];
    snprintf(head, sizeof head, "== %s", g_name);
    ck_assert_msg(strncmp(o, head, strlen(head)) == 0, "stdout starts: %.80s", o);
    mt_json_free(j);
    free(e);
    free(o);
    free(wl);
    free(json);
    free(out);
    free(err);
}
END_TEST

/* The driver with which_malloc as its simulator: in the child, malloc comes from the named library;
 * for glibc, from libc even when the caller's environment preloads something else. */
START_TEST(driver_preloads)
{
    char *json = path_in(g_dir, "which.json");
    if (!strcmp(g_name, "glibc"))
        setenv("LD_PRELOAD", "/nonexistent/libother.so", 1); /* the child must not inherit it */
    mt_replay_opts_t o;
    memset(&o, 0, sizeof o);
    o.workload = "unused.mtw";
    o.allocators[0] = g_name;
    o.nallocators = 1;
    o.json = json;
    o.sim = WHICH_MALLOC;
    o.quiet = 1;
    static char results[MT_REPLAY_MAX][4096];
    int n = 0;
    mt_replay_outcome_t out;
    mt_error_t err;
    ck_assert_msg(mt_replay_run(&o, results, &n, &out, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(out.failed_calls, 0);
    unsetenv("LD_PRELOAD");
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(results[0], json);
    mt_jval_t *j = load_json(json);
    const char *from = mt_json_str_at(j, "malloc_from", "");
    const char *want = "libc.so";
    for (size_t i = 0; i < NSTATS; i++)
        if (!strcmp(stats[i].name, g_name))
            want = stats[i].lib;
    if (SIM_SANITIZER_ALLOCATOR) {
        /* glibc under a sanitizer: its runtime answers malloc; no other allocator may */
        for (size_t i = 0; i < NSTATS; i++)
            ck_assert_msg(strstr(from, stats[i].lib) == NULL, "allocator %s: malloc comes from %s", g_name, from);
    } else {
        ck_assert_msg(strstr(from, want) != NULL, "allocator %s: malloc comes from %s", g_name, from);
    }
    if (!strcmp(g_name, "glibc"))
        ck_assert_str_eq(mt_json_str_at(j, "ld_preload", "?"), "");
    ck_assert_str_eq(mt_json_str_at(j, "allocator", ""), g_name);
    mt_json_free(j);
    free(json);
}
END_TEST

/* glibc: a setting reaches it (peak RSS changes, see test_sim_rss.c); other allocators: several in
 * one run write a result each with the name inserted and end with the comparison table, and the
 * library given by path answers too. */
START_TEST(more_through_replay)
{
    char *json = path_in(g_dir, "r.json"), *out = path_in(g_dir, "stdout"), *err = path_in(g_dir, "stderr");
    if (!strcmp(g_name, "glibc")) {
        /* an unknown name is refused in one line naming the choices */
        char *wl = write_small();
        const char *const bad[] = { MTRACE_EXE, "replay", wl, "--allocator", "nosuchalloc", NULL };
        ck_assert_int_eq(run(bad, NULL, err, NULL, 60), 2);
        const char *const needles[] = { "nosuchalloc", "jemalloc", NULL };
        assert_one_line(err, "unknown allocator", needles);
        free(wl);
        if (sanitizer_skip("mallopt through mtrace replay"))
            goto out;
        wl = path_in(g_dir, "layers.mtw");
        wlb_t b;
        wlb_open(&b, wl);
        const uint32_t t = wlb_thread(&b, 0);
        for (uint64_t i = 0; i < 200; i++) {
            wlb_malloc(&b, t, 1 + i, 256 * 1024);
            wlb_malloc(&b, t, 201 + i, 64);
        }
        for (uint64_t i = 0; i < 200; i++)
            wlb_free(&b, t, 1 + i);
        for (uint64_t i = 0; i < 200; i++)
            wlb_malloc(&b, t, 401 + i, 512 * 1024);
        wlb_close(&b);
        char *json2 = path_in(g_dir, "r2.json");
        const char *const def[] = { MTRACE_EXE, "replay", wl, "--json", json, "--quiet", NULL };
        const char *const thr[] = { MTRACE_EXE,          "replay", wl, "--json", json2, "--quiet", "--mallopt",
                                    "mmap_threshold=1m", NULL };
        ck_assert_int_eq(run(def, NULL, err, NULL, 120), 0);
        ck_assert_int_eq(run(thr, NULL, err, NULL, 120), 0);
        mt_jval_t *jd = load_json(json), *jt = load_json(json2);
        ck_assert_msg(jnum(jt, "max_rss_kb") > jnum(jd, "max_rss_kb") + 30 * 1024,
                      "mmap_threshold=1m: max RSS %g KiB, default %g KiB", jnum(jt, "max_rss_kb"),
                      jnum(jd, "max_rss_kb"));
        mt_json_free(jd);
        mt_json_free(jt);
        free(json2);
        free(wl);
    } else {
        char *wl = write_small();
        const char *const argv[] = { MTRACE_EXE,    "replay", wl,       "--allocator", "glibc",
                                     "--allocator", g_name,   "--json", json,          NULL };
        const int rc = run(argv, out, err, NULL, 120);
        char *e = read_text(err, NULL);
        ck_assert_msg(rc == 0, "exit %d: %s", rc, e);
        free(e);
        const char *names[2] = { "glibc", g_name };
        for (int i = 0; i < 2; i++) {
            char name[64];
            snprintf(name, sizeof name, "r.%s.json", names[i]);
            char *p = path_in(g_dir, name);
            mt_jval_t *j = load_json(p);
            ck_assert_str_eq(mt_json_str_at(j, "allocator", ""), names[i]);
            check_counts(j);
            mt_json_free(j);
            free(p);
        }
        char *o = read_text(out, NULL);
        ck_assert_msg(strstr(o, "peak RSS MiB") && strstr(o, "%)"), "no comparison table:\n%s", o);
        free(o);
        /* by path: the label is the library's base name */
        char path[PATH_MAX];
        mt_error_t why;
        ck_assert_msg(mt_allocator_path(g_name, path, sizeof path, &why) == 0, "%s", why.msg);
        const char *const bypath[] = { MTRACE_EXE, "replay", wl, "--allocator", path, "--json", json, "--quiet", NULL };
        ck_assert_int_eq(run(bypath, NULL, err, NULL, 120), 0);
        mt_jval_t *j = load_json(json);
        const char *label = mt_json_str_at(j, "allocator", "");
        ck_assert_msg(strstr(label, g_name) && !strchr(label, '/') && !strstr(label, ".so"), "label %s", label);
        check_counts(j);
        mt_json_free(j);
        /* a --mallopt setting cannot reach an allocator without mallopt (jemalloc, mimalloc): said in
         * one warning, and the replay runs; tcmalloc defines one of its own, which gets it */
        const char *const opt[] = { MTRACE_EXE, "replay",  wl,          "--allocator",       g_name, "--json",
                                    json,       "--quiet", "--mallopt", "mmap_threshold=1m", NULL };
        ck_assert_int_eq(run(opt, NULL, err, NULL, 120), 0);
        if (strcmp(g_name, "tcmalloc") != 0) {
            const char *const needles[] = { "does not define mallopt", "replayed without them", NULL };
            assert_one_line(err, "--mallopt on an allocator without mallopt", needles);
        }
        free(wl);
    }
out:
    free(json);
    free(out);
    free(err);
}
END_TEST

/* The small workload as traced on the library `traced` (MT_STR_ALLOCATOR), with RSS samples (peak
 * 20 MB, of which 5 anonymous), replayed on the allocator under test: the result. */
static mt_jval_t *replay_traced_on(const char *traced, const char *file)
{
    char *wl = path_in(g_dir, file), *json = path_in(g_dir, "traced.json"), *err = path_in(g_dir, "stderr");
    wlb_t b;
    wlb_open_traced(&b, wl, traced);
    const uint32_t t = wlb_thread(&b, 0);
    for (uint64_t i = 0; i < 100; i++)
        wlb_malloc(&b, t, 1 + i, 4000);
    for (uint64_t i = 0; i < 100; i++)
        wlb_free(&b, t, 1 + i);
    b.source_peak_rss_kb = 20000;
    b.source_peak_anon_kb = 5000;
    wlb_close(&b);
    const char *const argv[] = { MTRACE_EXE, "replay", wl, "--allocator", g_name, "--json", json, "--quiet", NULL };
    const int rc = run(argv, NULL, err, NULL, 120);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, read_text(err, NULL));
    mt_jval_t *j = load_json(json);
    /* the prediction: the replay's anonymous peak less its bookkeeping, the program's file pages, and
     * the allocator's libraries' pages where the program did not have them */
    ck_assert_uint_eq(
        (uint64_t)jnum(j, "predicted_peak_rss_kb"),
        (uint64_t)(jnum(j, "max_anon_rss_kb") - jnum(j, "bookkeeping_kb") + 15000 + jnum(j, "allocator_file_kb")));
    free(wl);
    free(json);
    free(err);
    return j;
}

static int json_true(const mt_jval_t *j, const char *key)
{
    const mt_jval_t *v = mt_json_get(j, key);
    ck_assert_msg(v && v->type == MT_JBOOL, "no boolean %s", key);
    return v->num != 0;
}

/* A program that ran on this allocator (redis-server, linked with jemalloc) has its library and the
 * libraries it needs among its file pages: the prediction does not add them again (it did: 1.9 MB,
 * redis predicted 25 % over its native peak). One traced on glibc's does not have them. The trace
 * may name the library by another path to the same file (/lib for /usr/lib). */
START_TEST(allocator_pages_added_only_if_not_traced_on_it)
{
    if (!strcmp(g_name, "glibc"))
        return; /* glibc's library is mtrace-sim's own: never added */
    char path[PATH_MAX], elsewhere[PATH_MAX + 16];
    mt_error_t why;
    ck_assert_msg(mt_allocator_path(g_name, path, sizeof path, &why) == 0, "%s", why.msg);
    snprintf(elsewhere, sizeof elsewhere, "/lib/elsewhere/%s", strrchr(path, '/') + 1);
    mt_jval_t *same = replay_traced_on(elsewhere, "same.mtw");
    ck_assert_msg(jnum(same, "allocator_file_kb") == 0, "traced on %s, replayed on %s: allocator_file_kb %g", elsewhere,
                  path, jnum(same, "allocator_file_kb"));
    ck_assert_msg(json_true(same, "allocator_traced"), "traced on %s, replayed on %s: not seen as one", elsewhere,
                  path);
    mt_json_free(same);
    mt_jval_t *other = replay_traced_on("/lib/x86_64-linux-gnu/libc.so.6", "glibc.mtw");
    ck_assert_msg(!json_true(other, "allocator_traced"), "traced on glibc, replayed on %s: seen as one", g_name);
    ck_assert_msg(jnum(other, "allocator_file_kb") >= 8, "traced on glibc: allocator_file_kb %g",
                  jnum(other, "allocator_file_kb"));
    mt_json_free(other);
}
END_TEST

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_sim_allocators glibc|jemalloc|tcmalloc|mimalloc\n");
        return 2;
    }
    g_name = argv[1];
    char why[512];
    if (!allocator_installed(g_name, why, sizeof why)) {
        printf("skipped: %s\n", why);
        return 77;
    }
    if (SIM_SANITIZER_ALLOCATOR && strcmp(g_name, "glibc")) {
        printf("skipped: %s cannot be preloaded into a sanitized mtrace-sim (the sanitizer's runtime must "
               "come first "
               "and answers malloc itself)\n",
               g_name);
        return 77;
    }
    Suite *s = suite_create("sim_allocators");
    const struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        { "replay_on_allocator", replay_on_allocator },
        { "driver_preloads", driver_preloads },
        { "more_through_replay", more_through_replay },
        { "allocator_pages_added_only_if_not_traced_on_it", allocator_pages_added_only_if_not_traced_on_it },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
        tcase_set_timeout(tc, 200);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return run_suite(s);
}
