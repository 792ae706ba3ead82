/* The simulator's slot table on addresses it cannot pack into an entry. An entry holds a block's
 * address as the index of its 512 MiB window in a table of 62 and an offset (simulator/sim_thread.c);
 * an address in a window past those is kept whole in slot_far. No real allocator gets there, so the
 * replay runs on scatter_malloc.so (SCATTER_MALLOC), which maps every block on its own in one of 80
 * windows, and checks every pointer handed back to it (a wrong one aborts the replay).
 *
 * Checked: that the module spreads its blocks and aborts on a pointer it did not hand out (loaded
 * with dlopen, which interposes nothing: the test calls its functions through dlsym); that a replay
 * of mallocs, callocs, reallocs that move blocks between slots and frees by the other thread runs
 * on it to the end with some blocks kept whole, the calls counted, none failed and the ideal RSS the
 * workload's; and that the same replay on glibc keeps none whole. */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim_util.h"
#include "test_util.h"

#define WINDOW_SHIFT 29 /* the simulator's 512 MiB windows */
#define SIM_WINDOWS 62  /* and how many its table holds */

static char *g_dir;
TEST_DIR_FIXTURE(g_dir, "sim-slots", "SIM_KEEP")

/* ---- the module on its own ---------------------------------------------------------------------- */

typedef struct scatter {
    void *dl;
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*memalign)(size_t, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*valloc)(size_t);
    size_t (*usable)(void *);
} scatter_t;

static void *sym(void *dl, const char *name)
{
    void *const f = dlsym(dl, name);
    ck_assert_msg(f != NULL, "%s: no %s", SCATTER_MALLOC, name);
    return f;
}

/* RTLD_LOCAL: the module's functions are reached only through these pointers; the test's own
 * mallocs stay glibc's (or the sanitizer's). */
static void scatter_open(scatter_t *m)
{
    m->dl = dlopen(SCATTER_MALLOC, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(m->dl != NULL, "dlopen: %s", dlerror());
    m->malloc = (void *(*)(size_t))sym(m->dl, "malloc");
    m->free = (void (*)(void *))sym(m->dl, "free");
    m->calloc = (void *(*)(size_t, size_t))sym(m->dl, "calloc");
    m->realloc = (void *(*)(void *, size_t))sym(m->dl, "realloc");
    m->memalign = (void *(*)(size_t, size_t))sym(m->dl, "memalign");
    m->posix_memalign = (int (*)(void **, size_t, size_t))sym(m->dl, "posix_memalign");
    m->aligned_alloc = (void *(*)(size_t, size_t))sym(m->dl, "aligned_alloc");
    m->valloc = (void *(*)(size_t))sym(m->dl, "valloc");
    m->usable = (size_t(*)(void *))sym(m->dl, "malloc_usable_size");
}

/* 200 blocks land in more windows than the slot table holds (what the replay tests rely on), each
 * aligned as asked, zeroed by calloc, kept by realloc, and usable to its requested size. */
START_TEST(module_spreads_blocks)
{
    scatter_t m;
    scatter_open(&m);
    enum { NB = 200 };
    void *p[NB];
    uint64_t windows[NB];
    size_t nwindows = 0;
    for (int i = 0; i < NB; i++) {
        const size_t size = 1 + (size_t)i * 37;
        p[i] = m.malloc(size);
        ck_assert_ptr_nonnull(p[i]);
        ck_assert_msg(((uintptr_t)p[i] & 15) == 0, "malloc(%zu) = %p", size, p[i]);
        ck_assert_uint_ge(m.usable(p[i]), size);
        memset(p[i], 0xa5, size);
        const uint64_t w = (uintptr_t)p[i] >> WINDOW_SHIFT;
        size_t k = 0;
        while (k < nwindows && windows[k] != w)
            k++;
        if (k == nwindows)
            windows[nwindows++] = w;
    }
    /* In a sanitized build the placement may be refused (ThreadSanitizer reserves that part of the
     * address space): the blocks then come from wherever the kernel puts them. */
    if (!sanitizer_skip("module_spreads_blocks, windows"))
        ck_assert_msg(nwindows > SIM_WINDOWS, "%d blocks in only %zu windows of 512 MiB", NB, nwindows);
    for (int i = 0; i < NB; i += 2) {
        const size_t size = 1 + (size_t)i * 37;
        unsigned char *const q = m.realloc(p[i], size + 5000);
        ck_assert_ptr_nonnull(q);
        for (size_t b = 0; b < size; b++)
            ck_assert_msg(q[b] == 0xa5, "realloc lost byte %zu of %zu", b, size);
        p[i] = q;
    }
    for (int i = 0; i < NB; i++)
        m.free(p[i]);
    m.free(NULL);

    unsigned char *const z = m.calloc(1000, 33);
    ck_assert_ptr_nonnull(z);
    for (size_t b = 0; b < 33000; b++)
        ck_assert_uint_eq(z[b], 0);
    m.free(z);
    ck_assert_ptr_null(m.calloc(SIZE_MAX / 2, 3)); /* the product overflows */

    static const size_t aligns[] = { 16, 64, 4096, 65536, 1 << 21 };
    for (size_t k = 0; k < sizeof aligns / sizeof aligns[0]; k++) {
        const size_t a = aligns[k];
        void *b[3];
        b[0] = m.memalign(a, 100);
        ck_assert_int_eq(m.posix_memalign(&b[1], a, 3000), 0);
        b[2] = m.aligned_alloc(a, 70000);
        for (int i = 0; i < 3; i++) {
            ck_assert_msg(b[i] && ((uintptr_t)b[i] & (a - 1)) == 0, "alignment %zu: %p", a, b[i]);
            memset(b[i], 1, 100);
            m.free(b[i]);
        }
    }
    void *const v = m.valloc(10);
    ck_assert_uint_eq((uintptr_t)v % (uintptr_t)sysconf(_SC_PAGESIZE), 0);
    m.free(v);
    void *unused;
    ck_assert_int_eq(m.posix_memalign(&unused, 24, 10), EINVAL);
    dlclose(m.dl);
}
END_TEST

/* A pointer the module did not hand out: free, realloc and malloc_usable_size abort (the test passes
 * only if it dies of SIGABRT). The pointer is inside a live block, so reading its would-be header
 * does not fault first. */
START_TEST(module_aborts_on_bad_pointer)
{
    scatter_t m;
    scatter_open(&m);
    char *const p = m.malloc(256);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_ge(m.usable(p), 256); /* the good pointer passes */
    char *const bad = p + 64;
    switch (_i) {
    case 0:
        m.free(bad);
        break;
    case 1:
        (void)m.realloc(bad, 10);
        break;
    default:
        (void)m.usable(bad);
        break;
    }
    ck_abort_msg("call %d took a pointer 64 bytes into a block", _i);
}
END_TEST

/* ---- the replay --------------------------------------------------------------------------------- */

#define N 150                  /* blocks of each kind */
#define M(i) (1 + (i))         /* thread 0's mallocs */
#define C(i) (1 + N + (i))     /* thread 0's callocs */
#define R(i) (1 + 2 * N + (i)) /* where every third malloc moves by realloc */
#define T(i) (1 + 3 * N + (i)) /* thread 1's mallocs */

typedef struct counts {
    uint64_t malloc, calloc, realloc, free, usable, peak;
} counts_t;

/* Thread 0 mallocs and callocs; reallocs every third block into a new slot and every third in its
 * own slot, and asks the size of the others; thread 1, once thread 0 is done, mallocs blocks of its
 * own and frees the callocs and the moved blocks; thread 0, once thread 1 is done, frees the rest.
 * A few hundred blocks, so that the module's 80 windows come round several times. */
static char *write_scattered(counts_t *n)
{
    char *wl = path_in(g_dir, "scattered.mtw");
    memset(n, 0, sizeof *n);
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t a = wlb_thread(&b, 0), c = wlb_thread(&b, 0);
    for (uint64_t i = 0; i < N; i++) {
        /* sizes of a few bytes to a few pages, and every 16th of 50 pages */
        wlb_malloc(&b, a, M(i), i % 16 == 15 ? 200000 : 8 + (i * 97) % 3000);
        wlb_calloc(&b, a, C(i), 1 + i % 5, 40);
        n->malloc++;
        n->calloc++;
    }
    for (uint64_t i = 0; i < N; i++) {
        if (i % 3 == 0) {
            wlb_realloc(&b, a, M(i), R(i), 5000 + i);
            n->realloc++;
        } else if (i % 3 == 1) {
            wlb_realloc(&b, a, M(i), M(i), 1 + i);
            n->realloc++;
        } else {
            wlb_usable(&b, a, M(i));
            n->usable++;
        }
    }
    wlb_wait(&b, c, a, wlb_ops(&b, a));
    for (uint64_t i = 0; i < N / 2; i++) {
        wlb_malloc(&b, c, T(i), 100 + i);
        n->malloc++;
    }
    for (uint64_t i = 0; i < N; i++) {
        wlb_free(&b, c, C(i));
        n->free++;
        if (i % 3 == 0) {
            wlb_free(&b, c, R(i));
            n->free++;
        }
    }
    wlb_wait(&b, a, c, wlb_ops(&b, c));
    for (uint64_t i = 0; i < N / 2; i++) {
        wlb_free(&b, a, T(i));
        n->free++;
    }
    for (uint64_t i = 0; i < N; i++) {
        if (i % 3) {
            wlb_free(&b, a, M(i));
            n->free++;
        }
    }
    ck_assert_uint_eq(b.live, 0);
    n->peak = b.peak;
    wlb_close(&b);
    return wl;
}

/* mtrace replay WL --allocator ALLOC --json F (and the summary on stdout); ck_asserts exit 0 and
 * the counts; returns the parsed result and the summary. */
static mt_jval_t *replay(const char *wl, const char *alloc, const counts_t *n, char **summary)
{
    char *json = path_in(g_dir, "r.json"), *out = path_in(g_dir, "stdout"), *err = path_in(g_dir, "stderr");
    const char *const argv[] = { MTRACE_EXE, "replay", wl, "--allocator", alloc, "--json", json, NULL };
    const int rc = run(argv, out, err, NULL, 120);
    char *e = read_text(err, NULL);
    ck_assert_msg(rc == 0, "mtrace replay --allocator %s: exit %d: %s", alloc, rc, e ? e : "");
    free(e);
    mt_jval_t *j = load_json(json);
    *summary = read_text(out, NULL);
    ck_assert_ptr_nonnull(*summary);

    ck_assert_uint_eq((uint64_t)jnum(j, "threads"), 2);
    ck_assert_uint_eq((uint64_t)jnum2(j, "calls", "malloc"), n->malloc);
    ck_assert_uint_eq((uint64_t)jnum2(j, "calls", "calloc"), n->calloc);
    ck_assert_uint_eq((uint64_t)jnum2(j, "calls", "realloc"), n->realloc);
    ck_assert_uint_eq((uint64_t)jnum2(j, "calls", "free"), n->free);
    ck_assert_uint_eq((uint64_t)jnum2(j, "calls", "malloc_usable_size"), n->usable);
    static const char *const ops[] = { "malloc", "calloc", "realloc", "free" };
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        ck_assert_msg(jnum2(j, "failed", ops[k]) == 0, "failed.%s = %g", ops[k], jnum2(j, "failed", ops[k]));
    /* the ideal is the workload's peak of live bytes, whatever the allocator */
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    ck_assert_uint_eq((uint64_t)jnum(j, "ideal_rss_kb"), (n->peak + 1023) / 1024);
    ck_assert_uint_eq((uint64_t)jnum(j, "ideal_pages_kb"), (n->peak + page - 1) / page * (page / 1024));
    free(json);
    free(out);
    free(err);
    return j;
}

/* The line the summary prints for blocks kept whole; NULL if there is none. */
static const char *far_line(const char *summary)
{
    return strstr(summary, "blocks kept whole in the slot table");
}

/* On scatter_malloc: some blocks are kept whole (the module's blocks past the table's 62 windows),
 * and each is found again: a wrong address handed to free or realloc would abort the replay. */
START_TEST(replay_scattered)
{
    if (sanitizer_skip("replay_scattered (scatter_malloc cannot be preloaded)"))
        return;
    counts_t n;
    char *wl = write_scattered(&n), *summary;
    mt_jval_t *j = replay(wl, SCATTER_MALLOC, &n, &summary);
    ck_assert_str_eq(mt_json_str_at(j, "allocator", ""), "scatter_malloc");
    const uint64_t far = (uint64_t)jnum(j, "far_slots");
    const uint64_t stored = n.malloc + n.calloc + n.realloc; /* every block the replay got */
    ck_assert_msg(far > 0 && far <= stored, "far_slots %llu of %llu blocks", (unsigned long long)far,
                  (unsigned long long)stored);
    /* and the summary says so, with the same number */
    const char *l = far_line(summary);
    ck_assert_msg(l != NULL, "no line on blocks kept whole in the summary:\n%s", summary);
    while (l > summary && l[-1] != '\n')
        l--;
    ck_assert_uint_eq(strtoull(l, NULL, 10), far);
    mt_json_free(j);
    free(summary);
    free(wl);
}
END_TEST

/* On glibc: the same blocks all fit in their entries, and the summary has no such line. */
START_TEST(replay_glibc_packs_all)
{
    counts_t n;
    char *wl = write_scattered(&n), *summary;
    mt_jval_t *j = replay(wl, "glibc", &n, &summary);
    if (!sanitizer_skip("replay_glibc_packs_all, far_slots")) {
        ck_assert_uint_eq((uint64_t)jnum(j, "far_slots"), 0);
        ck_assert_msg(far_line(summary) == NULL, "summary:\n%s", summary);
    }
    mt_json_free(j);
    free(summary);
    free(wl);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_slots");
    TCase *tc = tcase_create("module");
    tcase_add_test(tc, module_spreads_blocks);
    tcase_add_loop_test_raise_signal(tc, module_aborts_on_bad_pointer, SIGABRT, 0, 3);
    suite_add_tcase(s, tc);
    const struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        { "replay_scattered", replay_scattered },
        { "replay_glibc_packs_all", replay_glibc_packs_all },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tc = tcase_create(cases[i].name);
        tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
        tcase_set_timeout(tc, 200);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return run_suite(s);
}
