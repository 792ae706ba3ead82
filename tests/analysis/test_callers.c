/* The caller trees and the wrapper rule (mtrace/callers.h), on synthetic frames and stacks: a
 * function that only allocates for three callers is skipped, for two it is not; a stack's end is no
 * caller; a frame without a symbol is no wrapper; a free through a function keeps it; a wrapper over a
 * wrapper is found in the second round; a stack cut inside a wrapper keeps the wrapper; patterns skip without
 * detection; the first frame of the user's code stands for out-of-line code of a system header; the trees add
 * up; the top-down tree starts at main and the threads' start routines, a stack cut at the frame limit
 * inside their entry included. */
#include <check.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/callers.h"
#include "test_util.h"

/* Frames by name: one interned string per name, as the report interns them. */
enum {
    F_MALLOC,
    F_XMALLOC,
    F_XCALLOC,
    F_A,
    F_B,
    F_C,
    F_MAIN,
    F_HEADER,
    /* the entry of processes and threads, as the report reads them: the C library's frames are
     * allocator frames (by module), one of them without a symbol; a stripped program's _start */
    F_START,
    F_LIBC_START,
    F_CALL_MAIN,
    F_START_THREAD,
    F_CLONE3,
    F_WORKER,
    F_STRIPPED_START,
    F_TRUNCATED,
    F_STRIPPED_MAIN,
    F_QSORT, /* a C library function that calls the program back */
    NFRAMES
};
static const char *const names[NFRAMES] = {
    "malloc",
    "xmalloc",
    "xcalloc",
    "a",
    "b",
    "c",
    "main",
    "vec_insert",
    "_start",
    "__libc_start_main",
    "libc.so.6+0x29d10",
    "start_thread",
    "clone3",
    "worker",
    "prog+0x1040",
    "[truncated]",
    "prog+0x1200",
    "msort_with_tmp",
};
static mt_frame_in_t g_frames[NFRAMES];

static void setup(void)
{
    for (int i = 0; i < NFRAMES; i++) {
        g_frames[i] = (mt_frame_in_t){ .sym = { names[i], "prog.c", 10u + (unsigned)i, "prog", 0, 0 } };
        g_frames[i].allocator = i == F_MALLOC;
    }
    g_frames[F_HEADER].sym.file = "/usr/include/c++/12/bits/vector.tcc";
    static const int libc[] = { F_LIBC_START, F_CALL_MAIN, F_START_THREAD, F_CLONE3, F_QSORT };
    for (size_t i = 0; i < sizeof libc / sizeof libc[0]; i++)
        g_frames[libc[i]].sym.module = "libc.so.6", g_frames[libc[i]].allocator = 1;
    g_frames[F_CALL_MAIN].unnamed = g_frames[F_STRIPPED_START].unnamed = g_frames[F_STRIPPED_MAIN].unnamed = 1;
    g_frames[F_CALL_MAIN].sym.file = g_frames[F_STRIPPED_START].sym.file = g_frames[F_STRIPPED_MAIN].sym.file = NULL;
    g_frames[F_TRUNCATED].cut = 1;
    g_frames[F_TRUNCATED].sym.file = NULL;
}

#define STACK(calls, ...)                                                                                              \
    (mt_stack_in_t)                                                                                                    \
    {                                                                                                                  \
        .frame = (const uint32_t[]){ __VA_ARGS__ }, .nframes = sizeof((uint32_t[]){ __VA_ARGS__ }) / 4, .fig = {       \
            calls,                                                                                                     \
            10 * (calls),                                                                                              \
            0,                                                                                                         \
            0,                                                                                                         \
            0                                                                                                          \
        }                                                                                                              \
    }

static const char *leaf_name(const mt_callers_t *c, const mt_stack_in_t *s, size_t i)
{
    return c->leaf[i] < s[i].nframes ? g_frames[s[i].frame[c->leaf[i]]].sym.function : "(none)";
}

static int skipped(const mt_callers_t *c, const char *fn)
{
    for (size_t i = 0; i < c->nskipped; i++)
        if (!strcmp(c->skipped[i].function, fn))
            return 1;
    return 0;
}

static const mt_caller_node_t *root_named(const mt_caller_tree_t *t, const char *fn)
{
    for (uint32_t i = t->node[0].first_child; i; i = t->node[i].next_sibling)
        if (!strcmp(t->node[i].sym->function, fn))
            return &t->node[i];
    return NULL;
}

START_TEST(wrapper_for_three_callers_is_skipped)
{
    const mt_stack_in_t s[] = {
        STACK(3, F_MALLOC, F_XMALLOC, F_A, F_MAIN),
        STACK(5, F_MALLOC, F_XMALLOC, F_B, F_MAIN),
        STACK(1, F_MALLOC, F_XMALLOC, F_C, F_MAIN),
    };
    mt_callers_t c;
    ck_assert_int_eq(mt_callers_build(&c, g_frames, s, 3, NULL), 0);
    ck_assert(skipped(&c, "xmalloc"));
    ck_assert_uint_eq(c.skipped[0].callers, MT_WRAPPER_MIN_CALLERS);
    ck_assert_str_eq(leaf_name(&c, s, 0), "a");
    ck_assert_str_eq(leaf_name(&c, s, 1), "b");
    const mt_caller_node_t *a = root_named(&c.bottom_up, "a"), *b = root_named(&c.bottom_up, "b");
    ck_assert(a && b && a->fig.calls == 3 && b->fig.calls == 5 && a->fig.bytes == 30);
    ck_assert_uint_eq(c.bottom_up.node[0].fig.calls, 9);
    ck_assert_ptr_null(root_named(&c.bottom_up, "xmalloc"));
    /* top-down: main, then b, a and c */
    const mt_caller_node_t *m = root_named(&c.top_down, "main");
    ck_assert(m && m->fig.calls == 9);
    uint32_t n;
    uint32_t *kids = mt_caller_children(&c.top_down, (uint32_t)(m - c.top_down.node), &n);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(c.top_down.node[kids[0]].sym->function, "b"); /* more calls first */
    free(kids);
    mt_callers_free(&c);
}
END_TEST

START_TEST(two_callers_and_the_stack_end_are_no_wrapper)
{
    /* xmalloc called from a and b, and in a stack cut right after it: the end is no third caller */
    const mt_stack_in_t s[] = {
        STACK(3, F_MALLOC, F_XMALLOC, F_A, F_MAIN),
        STACK(3, F_MALLOC, F_XMALLOC, F_B, F_MAIN),
        STACK(4, F_MALLOC, F_XMALLOC),
    };
    mt_callers_t c;
    ck_assert_int_eq(mt_callers_build(&c, g_frames, s, 3, NULL), 0);
    ck_assert_uint_eq(c.nskipped, 0);
    ck_assert_str_eq(leaf_name(&c, s, 0), "xmalloc");
    mt_callers_free(&c);
}
END_TEST

START_TEST(a_free_through_it_is_no_wrapper)
{
    mt_stack_in_t s[] = {
        STACK(3, F_MALLOC, F_XMALLOC, F_A, F_MAIN),
        STACK(5, F_MALLOC, F_XMALLOC, F_B, F_MAIN),
        STACK(5, F_MALLOC, F_XMALLOC, F_C, F_MAIN),
    };
    s[1].others = 1;
    mt_callers_t c;
    ck_assert_int_eq(mt_callers_build(&c, g_frames, s, 3, NULL), 0);
    ck_assert_uint_eq(c.nskipped, 0);
    mt_callers_free(&c);
}
END_TEST

START_TEST(a_frame_without_symbol_is_no_wrapper)
{
    const mt_stack_in_t s[] = {
        STACK(3, F_MALLOC, F_XMALLOC, F_A, F_MAIN),
        STACK(5, F_MALLOC, F_XMALLOC, F_B, F_MAIN),
        STACK(5, F_MALLOC, F_XMALLOC, F_C, F_MAIN),
    };
    g_frames[F_XMALLOC].unnamed = 1;
    mt_callers_t c;
    ck_assert_int_eq(mt_callers_build(&c, g_frames, s, 3, NULL), 0);
    ck_assert_uint_eq(c.nskipped, 0);
    mt_callers_free(&c);
}
END_TEST

START_TEST(wrapper_over_wrapper_in_the_second_round)
{
    /* xcalloc calls xmalloc: in round one xcalloc is a caller (not a leaf); once xmalloc is skipped
     * it only allocates, for a, b and c */
    const mt_stack_in_t s[] = {
        STACK(1, F_MALLOC, F_XMALLOC, F_A, F_MAIN),
        STACK(1, F_MALLOC, F_XMALLOC, F_MAIN),
        STACK(1, F_MALLOC, F_XMALLOC, F_XCALLOC, F_A, F_MAIN),
        STACK(2, F_MALLOC, F_XMALLOC, F_XCALLOC, F_B, F_MAIN),
        STACK(4, F_MALLOC, F_XMALLOC, F_XCALLOC, F_C, F_MAIN),
    };
    mt_callers_t c;
    ck_assert_int_eq(mt_callers_build(&c, g_frames, s, 5, NULL), 0);
    ck_assert(skipped(&c, "xmalloc") && skipped(&c, "xcalloc"));
    ck_assert_str_eq(leaf_name(&c, s, 3), "b");
    ck_assert_str_eq(leaf_name(&c, s, 4), "c");
    mt_callers_free(&c);
}
END_TEST

START_TEST(cut_inside_a_wrapper_keeps_it)
{
    const mt_stack_in_t s[] = {
        STACK(1, F_MALLOC, F_XMALLOC, F_A, F_MAIN),
        STACK(1, F_MALLOC, F_XMALLOC, F_B, F_MAIN),
        STACK(1, F_MALLOC, F_XMALLOC, F_C, F_MAIN),
        STACK(7, F_MALLOC, F_XMALLOC),
    };
    mt_callers_t c;
    ck_assert_int_eq(mt_callers_build(&c, g_frames, s, 4, NULL), 0);
    ck_assert(skipped(&c, "xmalloc"));
    ck_assert_str_eq(leaf_name(&c, s, 3), "xmalloc");
    const mt_caller_node_t *x = root_named(&c.bottom_up, "xmalloc");
    ck_assert(x && x->fig.calls == 7);
    mt_callers_free(&c);
}
END_TEST

START_TEST(patterns_without_detection)
{
    const char *const pats[] = { "x*alloc" };
    const mt_callers_opts_t o = { pats, 1, 1 };
    const mt_stack_in_t s[] = {
        STACK(3, F_MALLOC, F_XCALLOC, F_A, F_MAIN),
        STACK(5, F_MALLOC, F_XMALLOC, F_A, F_MAIN), /* one caller: never detected */
    };
    mt_callers_t c;
    ck_assert_int_eq(mt_callers_build(&c, g_frames, s, 2, &o), 0);
    ck_assert_uint_eq(c.nskipped, 2);
    ck_assert_str_eq(c.skipped[0].pattern, "x*alloc");
    ck_assert_str_eq(leaf_name(&c, s, 0), "a");
    ck_assert_str_eq(leaf_name(&c, s, 1), "a");
    ck_assert_uint_eq(root_named(&c.bottom_up, "a")->fig.calls, 8);
    /* no patterns, no detection: the wrappers are the leaves */
    const mt_callers_opts_t none = { NULL, 0, 1 };
    mt_callers_free(&c);
    ck_assert_int_eq(mt_callers_build(&c, g_frames, s, 2, &none), 0);
    ck_assert_uint_eq(c.nskipped, 0);
    ck_assert_str_eq(leaf_name(&c, s, 0), "xcalloc");
    mt_callers_free(&c);
}
END_TEST

START_TEST(system_header_code_stands_aside)
{
    /* out-of-line std::vector code between the allocator and the user's function: the user's frame */
    const mt_stack_in_t s[] = { STACK(2, F_MALLOC, F_HEADER, F_A, F_MAIN), STACK(1, F_MALLOC, F_HEADER) };
    const mt_callers_opts_t none = { NULL, 0, 1 };
    mt_callers_t c;
    ck_assert_int_eq(mt_callers_build(&c, g_frames, s, 2, &none), 0);
    ck_assert_str_eq(leaf_name(&c, s, 0), "a");
    ck_assert_str_eq(leaf_name(&c, s, 1), "vec_insert"); /* nothing after it: it stays */
    mt_callers_free(&c);
}
END_TEST

/* The top-down tree starts at main and the threads' start routines: what the C runtime and the
 * thread library put above them is left out and named, a stripped _start and a libc frame without a
 * symbol included; a stack cut at its depth keeps its [truncated] root. */
START_TEST(top_down_starts_at_main_and_thread_routines)
{
    const mt_stack_in_t s[] = {
        STACK(4, F_MALLOC, F_A, F_MAIN, F_CALL_MAIN, F_LIBC_START, F_START),
        STACK(2, F_MALLOC, F_B, F_WORKER, F_START_THREAD, F_CLONE3),
        STACK(1, F_MALLOC, F_C, F_MAIN, F_CALL_MAIN, F_LIBC_START, F_STRIPPED_START),
        STACK(1, F_MALLOC, F_C, F_TRUNCATED),
        STACK(1, F_MALLOC, F_A, F_MAIN),
    };
    mt_callers_t c;
    ck_assert_int_eq(mt_callers_build(&c, g_frames, s, 5, NULL), 0);
    uint32_t n;
    uint32_t *roots = mt_caller_children(&c.top_down, 0, &n);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(c.top_down.node[roots[0]].sym->function, "main");
    ck_assert_uint_eq(c.top_down.node[roots[0]].fig.calls, 6);
    ck_assert_str_eq(c.top_down.node[roots[1]].sym->function, "worker");
    ck_assert_uint_eq(c.top_down.node[roots[1]].fig.calls, 2);
    ck_assert_str_eq(c.top_down.node[roots[2]].sym->function, "[truncated]");
    free(roots);
    /* main's callees: a (4 + 1 calls) and c; worker's: b */
    const mt_caller_node_t *m = root_named(&c.top_down, "main");
    ck_assert_uint_eq(c.top_down.node[m->first_child].fig.calls +
                          c.top_down.node[c.top_down.node[m->first_child].next_sibling].fig.calls,
                      6);
    ck_assert_uint_eq(c.entry_cut_stacks, 3);
    static const char *const cut[] = { "_start", "__libc_start_main", "clone3", "start_thread" };
    ck_assert_uint_eq(c.nentry_cut, 4);
    for (size_t i = 0; i < 4; i++)
        ck_assert_str_eq(c.entry_cut[i], cut[i]);
    /* the bottom-up tree keeps every frame: a's callers go up to _start */
    const mt_caller_node_t *a = root_named(&c.bottom_up, "a");
    ck_assert(a && a->fig.calls == 5);
    mt_callers_free(&c);
}
END_TEST

/* A stack cut at the frame limit inside the C runtime's or the thread library's entry lost only
 * frames the top-down tree leaves out: it starts at main or the start routine, as the whole stacks
 * do, whether the frame under the cut is an entry frame by name, one that whole stacks have above
 * main (a libc frame without symbol), main itself, or a stripped main that whole stacks start at. A
 * stack cut in the program's own frames, or in a C library function that called the program back,
 * keeps its [truncated] root.
 * regression cut_entry_second_root (fixed): gdb under --stacks 16 showed a root "[truncated] ->
 * __libc_start_main -> __libc_start_call_main -> main" (1040 calls) beside main (8778). */
START_TEST(a_stack_cut_in_the_entry_starts_at_main)
{
    const mt_stack_in_t s[] = {
        STACK(4, F_MALLOC, F_A, F_MAIN, F_CALL_MAIN, F_LIBC_START, F_START),
        STACK(2, F_MALLOC, F_B, F_MAIN, F_CALL_MAIN, F_LIBC_START, F_TRUNCATED),
        STACK(3, F_MALLOC, F_C, F_MAIN, F_CALL_MAIN, F_TRUNCATED),
        STACK(1, F_MALLOC, F_A, F_MAIN, F_TRUNCATED),
        STACK(1, F_MALLOC, F_A, F_STRIPPED_MAIN, F_CALL_MAIN, F_LIBC_START, F_START),
        STACK(5, F_MALLOC, F_B, F_STRIPPED_MAIN, F_TRUNCATED),
        STACK(3, F_MALLOC, F_B, F_WORKER, F_START_THREAD, F_TRUNCATED),
        STACK(1, F_MALLOC, F_C, F_B, F_TRUNCATED),
        STACK(1, F_MALLOC, F_A, F_QSORT, F_TRUNCATED),
    };
    const size_t n = sizeof s / sizeof s[0];
    const mt_callers_opts_t no_wrappers = { .no_auto = 1 }; /* a, called from four places, is none */
    mt_callers_t c;
    ck_assert_int_eq(mt_callers_build(&c, g_frames, s, n, &no_wrappers), 0);
    static const struct {
        const char *fn;
        uint64_t calls;
    } want[] = { { "main", 10 }, { "prog+0x1200", 6 }, { "worker", 3 }, { "[truncated]", 2 } };
    uint32_t nroots;
    uint32_t *roots = mt_caller_children(&c.top_down, 0, &nroots);
    ck_assert_uint_eq(nroots, 4);
    for (size_t i = 0; i < 4; i++) {
        const mt_caller_node_t *r = &c.top_down.node[roots[i]];
        ck_assert_msg(!strcmp(r->sym->function, want[i].fn) && r->fig.calls == want[i].calls,
                      "root %zu: %s with %" PRIu64 " calls, expected %s with %" PRIu64, i, r->sym->function,
                      r->fig.calls, want[i].fn, want[i].calls);
    }
    free(roots);
    /* under [truncated]: the program's b and the C library's msort_with_tmp, both cut */
    const mt_caller_node_t *t = root_named(&c.top_down, "[truncated]");
    ck_assert(t && t->first_child && c.top_down.node[t->first_child].next_sibling);
    /* the left-out frames name no [truncated]: it is no function */
    for (size_t i = 0; i < c.nentry_cut; i++)
        ck_assert_str_ne(c.entry_cut[i], "[truncated]");
    ck_assert_uint_eq(c.entry_cut_stacks, 7);
    mt_callers_free(&c);
}
END_TEST

static Suite *callers_suite(void)
{
    Suite *s = suite_create("callers");
    TCase *tc = tcase_create("wrappers");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, wrapper_for_three_callers_is_skipped);
    tcase_add_test(tc, two_callers_and_the_stack_end_are_no_wrapper);
    tcase_add_test(tc, a_free_through_it_is_no_wrapper);
    tcase_add_test(tc, a_frame_without_symbol_is_no_wrapper);
    tcase_add_test(tc, wrapper_over_wrapper_in_the_second_round);
    tcase_add_test(tc, cut_inside_a_wrapper_keeps_it);
    tcase_add_test(tc, patterns_without_detection);
    tcase_add_test(tc, system_header_code_stands_aside);
    tcase_add_test(tc, top_down_starts_at_main_and_thread_routines);
    tcase_add_test(tc, a_stack_cut_in_the_entry_starts_at_main);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(callers_suite());
}
