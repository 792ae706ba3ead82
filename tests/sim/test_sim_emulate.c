/* What the replay does with an allocator that lacks some of the functions a workload calls, and with
 * a library that is no allocator at all.
 *
 * A preloaded allocator replaces only what it defines: a workload's pvalloc on Debian's jemalloc
 * used to call glibc's, whose block jemalloc's free then crashed on, and the allocators after it
 * never ran. The replay now emulates each missing function with those the allocator defines and
 * names them in the result ("emulated"). Checked on scatter_malloc.c built without some functions
 * (meson.build): PARTIAL_MALLOC lacks valloc, pvalloc and reallocarray; BASIC_MALLOC has only malloc,
 * free, calloc, realloc (and mallopt), so that the aligned calls cannot be emulated and the replay
 * must say so. Both abort on any pointer they did not hand out, so a glibc block handed to them fails
 * the replay instead of passing unnoticed.
 *
 * And a library that does not define malloc (NOT_AN_ALLOCATOR), or a file the dynamic loader cannot
 * load, used to replay glibc under its name with exit status 0: now refused in one line with exit
 * status 2. With several allocators, a library that is not an ELF file is refused before any replay;
 * one that loads but defines no malloc stops the run where it comes, as any failed replay does.
 *
 * The preloaded cases are skipped in a sanitized build (the sanitizer's runtime must come first in
 * the process and answers malloc itself). */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim_util.h"
#include "test_util.h"

static char *g_dir;
TEST_DIR_FIXTURE(g_dir, "sim-emulate", "SIM_KEEP")

/* Every allocation function a workload may name, each block touched and freed, 20 rounds: if
 * `aligned` is 0, only those that need no aligned allocation (reallocarray, malloc_usable_size). */
static char *write_all_calls(const char *name, int aligned)
{
    char *wl = path_in(g_dir, name);
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t = wlb_thread(&b, 0);
    for (int round = 0; round < 20; round++) {
        wlb_malloc(&b, t, 1, 100);
        wlb_reallocarray(&b, t, 1, 2, 10, 30 + (uint64_t)round);
        wlb_usable(&b, t, 2);
        wlb_free(&b, t, 2);
        if (aligned) {
            wlb_aligned(&b, t, MT_WL_MEMALIGN, 3, 64, 200);
            wlb_aligned(&b, t, MT_WL_POSIX_MEMALIGN, 4, 4096, 5000);
            wlb_aligned(&b, t, MT_WL_ALIGNED_ALLOC, 5, 32, 64);
            wlb_aligned(&b, t, MT_WL_VALLOC, 6, 0, 100);
            wlb_aligned(&b, t, MT_WL_PVALLOC, 7, 0, 100);
            wlb_aligned(&b, t, MT_WL_PVALLOC, 8, 0, 0);
            wlb_usable(&b, t, 7);
            for (uint64_t s = 3; s <= 8; s++)
                wlb_free(&b, t, s);
        }
    }
    wlb_close(&b);
    return wl;
}

/* The result's "emulated" list, joined with spaces ("" if empty); ck_asserts that it is there. */
static void emulated(const mt_jval_t *j, char *out, size_t cap)
{
    const mt_jval_t *a = mt_json_get(j, "emulated");
    ck_assert_msg(a && a->type == MT_JARR, "the result has no \"emulated\" array");
    out[0] = 0;
    for (size_t i = 0; i < a->n; i++) {
        ck_assert(a->items[i].type == MT_JSTR);
        const size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s%s", i ? " " : "", a->items[i].str);
    }
}

static void check_counts(const mt_jval_t *j, int aligned)
{
    static const char *const ops[] = { "malloc",   "reallocarray",   "malloc_usable_size",
                                       "memalign", "posix_memalign", "aligned_alloc",
                                       "valloc",   "pvalloc" };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        const uint64_t want = i < 3 ? (i == 2 && aligned ? 40 : 20) : aligned ? (i == 7 ? 40 : 20) : 0;
        ck_assert_msg((uint64_t)jnum2(j, "calls", ops[i]) == want, "%s: %g calls, expected %llu", ops[i],
                      jnum2(j, "calls", ops[i]), (unsigned long long)want);
        ck_assert_msg(jnum2(j, "failed", ops[i]) == 0, "%s: %g failed", ops[i], jnum2(j, "failed", ops[i]));
    }
}

/* mtrace replay WL --allocator LIB --json JSON: its exit status; stdout and stderr in the files. */
static int replay(const char *wl, const char *lib, const char *json, const char *out, const char *err)
{
    const char *const argv[] = { MTRACE_EXE, "replay", wl, "--allocator", lib, "--json", json, NULL };
    return run(argv, out, err, NULL, 120);
}

/* valloc, pvalloc and reallocarray, which the allocator lacks, are emulated, and said to be in the
 * JSON and in the summary; the others are its own. */
START_TEST(emulated_on_partial)
{
    if (sanitizer_skip("emulated_on_partial"))
        return;
    char *wl = write_all_calls("all.mtw", 1), *json = path_in(g_dir, "r.json"), *out = path_in(g_dir, "stdout"),
         *err = path_in(g_dir, "stderr");
    const int rc = replay(wl, PARTIAL_MALLOC, json, out, err);
    char *e = read_text(err, NULL), *o = read_text(out, NULL);
    ck_assert_msg(rc == 0, "replay on %s: exit %d: %s", PARTIAL_MALLOC, rc, e);
    mt_jval_t *j = load_json(json);
    char list[256];
    emulated(j, list, sizeof list);
    ck_assert_str_eq(list, "reallocarray valloc pvalloc");
    check_counts(j, 1);
    ck_assert_msg(strstr(o, "emulated (the allocator does not define them): reallocarray valloc pvalloc\n"),
                  "the summary does not name the emulated functions:\n%s", o);
    mt_json_free(j);
    free(e);
    free(o);
    free(wl);
    free(json);
    free(out);
    free(err);
}
END_TEST

/* Only malloc, free, calloc and realloc: reallocarray and malloc_usable_size are emulated; an
 * aligned allocation cannot be, and the replay says so in one line instead of crashing. */
START_TEST(basic_allocator)
{
    if (sanitizer_skip("basic_allocator"))
        return;
    char *wl = write_all_calls("plain.mtw", 0), *json = path_in(g_dir, "r.json"), *err = path_in(g_dir, "stderr");
    int rc = replay(wl, BASIC_MALLOC, json, NULL, err);
    char *e = read_text(err, NULL);
    ck_assert_msg(rc == 0, "replay on %s: exit %d: %s", BASIC_MALLOC, rc, e);
    free(e);
    mt_jval_t *j = load_json(json);
    char list[256];
    emulated(j, list, sizeof list);
    ck_assert_str_eq(list, "reallocarray malloc_usable_size");
    check_counts(j, 0);
    mt_json_free(j);
    free(wl);

    wl = write_all_calls("all.mtw", 1);
    unlink(json);
    rc = replay(wl, BASIC_MALLOC, json, NULL, err);
    e = read_text(err, NULL);
    ck_assert_msg(rc == 1, "aligned calls on %s: exit %d, expected 1: %s", BASIC_MALLOC, rc, e);
    free(e);
    const char *const needles[] = { "none of memalign, posix_memalign and aligned_alloc", "memalign cannot be replayed",
                                    NULL };
    assert_one_line(err, "aligned calls on an allocator without any", needles);
    ck_assert_msg(access(json, F_OK) != 0, "a failed replay wrote its result");
    free(wl);
    free(json);
    free(err);
}
END_TEST

/* glibc defines every function: nothing is emulated (nor in a sanitizer's runtime). */
START_TEST(nothing_emulated_on_glibc)
{
    char *wl = write_all_calls("all.mtw", 1), *json = path_in(g_dir, "r.json"), *out = path_in(g_dir, "stdout"),
         *err = path_in(g_dir, "stderr");
    const int rc = replay(wl, "glibc", json, out, err);
    char *e = read_text(err, NULL), *o = read_text(out, NULL);
    ck_assert_msg(rc == 0, "replay on glibc: exit %d: %s", rc, e);
    mt_jval_t *j = load_json(json);
    char list[256];
    emulated(j, list, sizeof list);
    ck_assert_str_eq(list, "");
    check_counts(j, 1);
    ck_assert_msg(!strstr(o, "emulated"), "the summary names emulated functions:\n%s", o);
    mt_json_free(j);
    free(e);
    free(o);
    free(wl);
    free(json);
    free(out);
    free(err);
}
END_TEST

/* A library without malloc, and files the dynamic loader would ignore (text, a directory): exit
 * status 2, one line naming the file, no result. */
START_TEST(not_an_allocator_refused)
{
    char *wl = write_all_calls("plain.mtw", 0), *json = path_in(g_dir, "r.json"), *err = path_in(g_dir, "stderr"),
         *text = path_in(g_dir, "libtext.so");
    FILE *f = fopen(text, "w");
    ck_assert_ptr_nonnull(f);
    fputs("not a library\n", f);
    ck_assert_int_eq(fclose(f), 0);
    const struct {
        const char *lib, *says;
        int preloaded; /* refused by mtrace-sim once preloaded (not checked under a sanitizer) */
    } cases[] = {
        { NOT_AN_ALLOCATOR, "does not define malloc", 1 },
        { text, "cannot be loaded as an allocator: not an ELF file", 0 },
        { g_dir, "cannot be loaded as an allocator", 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].preloaded && sanitizer_skip("not_an_allocator_refused, a library without malloc"))
            continue;
        const int rc = replay(wl, cases[i].lib, json, NULL, err);
        char *e = read_text(err, NULL);
        ck_assert_msg(rc == 2, "--allocator %s: exit %d, expected 2: %s", cases[i].lib, rc, e);
        free(e);
        const char *const needles[] = { cases[i].lib, cases[i].says, NULL };
        assert_one_line(err, cases[i].lib, needles);
        ck_assert_msg(access(json, F_OK) != 0, "--allocator %s: a result was written", cases[i].lib);
    }

    /* Several: the file that is no library is refused before the first replay runs. */
    char *out = path_in(g_dir, "stdout"), *first = path_in(g_dir, "r.glibc.json");
    const char *const two[] = { MTRACE_EXE,    "replay", wl,       "--allocator", "glibc",
                                "--allocator", text,     "--json", json,          NULL };
    ck_assert_int_eq(run(two, out, err, NULL, 120), 2);
    const char *const needles[] = { text, "not an ELF file", NULL };
    assert_one_line(err, "glibc, then a text file", needles);
    ck_assert_msg(access(first, F_OK) != 0, "glibc was replayed before the text file was refused");

    /* A library without malloc stops the run where it comes, as a failed replay does: the replay
     * before it stands, none after it runs, no comparison table. */
    if (!sanitizer_skip("not_an_allocator_refused, several allocators")) {
        char *second = path_in(g_dir, "r.basic_malloc.json");
        const char *const three[] = { MTRACE_EXE,       "replay",      wl,
                                      "--allocator",    "glibc",       "--allocator",
                                      NOT_AN_ALLOCATOR, "--allocator", BASIC_MALLOC,
                                      "--json",         json,          NULL };
        ck_assert_int_eq(run(three, out, err, NULL, 120), 2);
        const char *const n3[] = { NOT_AN_ALLOCATOR, "does not define malloc", NULL };
        assert_one_line(err, "glibc, then a library without malloc", n3);
        ck_assert_msg(access(first, F_OK) == 0, "glibc's result is missing");
        ck_assert_msg(access(second, F_OK) != 0, "the allocator after the failed one ran");
        char *o = read_text(out, NULL);
        ck_assert_msg(!strstr(o, "peak RSS MiB"), "a comparison table after a failure:\n%s", o);
        free(o);
        free(second);
    }
    free(first);
    free(out);
    free(text);
    free(wl);
    free(json);
    free(err);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_emulate");
    const struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        { "emulated_on_partial", emulated_on_partial },
        { "basic_allocator", basic_allocator },
        { "nothing_emulated_on_glibc", nothing_emulated_on_glibc },
        { "not_an_allocator_refused", not_an_allocator_refused },
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
