/* mtrace report's totals over several traces: the callsites of each trace merged by what they mean
 * (function, file, line, module; module and offset without a symbol), never by where a trace's
 * strings or code happened to lie; their figures summed, the traces that allocated and leaked at
 * each counted; one entry per distinct callsite however many traces come; the text and JSON rank
 * them by bytes and by leaks. Reports are made by hand here: only their callsites matter. */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/json_reader.h"
#include "mtrace/report.h"
#include "test_util.h"

/* A callsite whose strings are fresh copies, as each trace's report interns its own. */
static mt_callsite_t site(const char *fn, const char *file, unsigned line, const char *mod, uint64_t off)
{
    return (mt_callsite_t){
        .function = strdup(fn), .file = file ? strdup(file) : NULL, .line = line, .module = strdup(mod), .offset = off
    };
}

static void free_sites(mt_callsite_t *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free((char *)c[i].function);
        free((char *)c[i].file);
        free((char *)c[i].module);
    }
}

/* Adds a report of these callsites (stacks recorded) to the total. */
static void add_trace(mt_report_total_t *t, mt_callsite_t *c, size_t n)
{
    mt_report_t r = { .path = "t.mtr", .callsites = c, .ncallsites = n, .has_stacks = 1, .complete = 1 };
    ck_assert_int_eq(mt_report_total_add(t, &r), 0);
}

static const mt_callsite_t *find(const mt_report_total_t *t, const char *fn, unsigned line, const char *mod,
                                 uint64_t off, size_t *at)
{
    for (size_t i = 0; i < t->ncallsites; i++) {
        const mt_callsite_t *c = &t->callsites[i];
        if (!strcmp(c->function, fn) && c->line == line && !strcmp(c->module, mod) && c->offset == off) {
            *at = i;
            return c;
        }
    }
    return NULL;
}

/* Two processes: one line leaks in both, a stripped function at one offset of its library in
 * both; a line of the same file, another offset, the same line in another module stay apart. */
START_TEST(callsites_merged_by_meaning_not_by_address)
{
    mt_report_total_t t = { 0 };
    mt_callsite_t a[] = {
        site("work", "/src/w.c", 12, "prog", 0),
        site("??", NULL, 0, "libx.so", 0x1121),
        site("work", "/src/w.c", 13, "prog", 0),
    };
    a[0].calls = 1, a[0].bytes = 100, a[0].leaked_blocks = 1, a[0].leaked_bytes = 100, a[0].peak_bytes = 100;
    a[1].calls = 2, a[1].bytes = 96, a[1].leaked_blocks = 1, a[1].leaked_bytes = 48;
    a[2].calls = 5, a[2].bytes = 320, a[2].added = 320;
    mt_callsite_t b[] = {
        site("??", NULL, 0, "libx.so", 0x1121),
        site("work", "/src/w.c", 12, "prog", 0),
        site("??", NULL, 0, "libx.so", 0x2000),
        site("work", "/src/w.c", 12, "liby.so", 0),
    };
    b[0].calls = 1, b[0].bytes = 48, b[0].leaked_blocks = 1, b[0].leaked_bytes = 48;
    b[1].calls = 1, b[1].bytes = 200, b[1].leaked_blocks = 1, b[1].leaked_bytes = 200, b[1].peak_bytes = 200;
    b[2].calls = 7, b[2].bytes = 7;
    b[3].calls = 1, b[3].bytes = 1;
    add_trace(&t, a, 3);
    add_trace(&t, b, 4);
    free_sites(a, 3);
    free_sites(b, 4);

    ck_assert_uint_eq(t.traces, 2);
    ck_assert_uint_eq(t.with_stacks, 2);
    ck_assert_uint_eq(t.ncallsites, 5);
    size_t at;
    const mt_callsite_t *c = find(&t, "work", 12, "prog", 0, &at);
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(c->file, "/src/w.c");
    ck_assert_uint_eq(c->calls, 2);
    ck_assert_uint_eq(c->bytes, 300);
    ck_assert_uint_eq(c->leaked_blocks, 2);
    ck_assert_uint_eq(c->leaked_bytes, 300);
    ck_assert_uint_eq(c->peak_bytes, 300);
    ck_assert_uint_eq(t.site_traces[at].traces, 2);
    ck_assert_uint_eq(t.site_traces[at].leaking, 2);
    c = find(&t, "??", 0, "libx.so", 0x1121, &at);
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_null(c->file);
    ck_assert_uint_eq(c->calls, 3);
    ck_assert_uint_eq(c->leaked_bytes, 96);
    ck_assert_uint_eq(t.site_traces[at].traces, 2);
    c = find(&t, "work", 13, "prog", 0, &at);
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(c->added, 320);
    ck_assert_uint_eq(t.site_traces[at].traces, 1);
    ck_assert_uint_eq(t.site_traces[at].leaking, 0);
    ck_assert_ptr_nonnull(find(&t, "??", 0, "libx.so", 0x2000, &at));
    ck_assert_ptr_nonnull(find(&t, "work", 12, "liby.so", 0, &at));
    mt_report_total_free(&t);
}
END_TEST

/* A trace without stacks adds no callsite; sums stop at UINT64_MAX. */
START_TEST(callsites_sums_saturate_and_traces_without_stacks_add_none)
{
    mt_report_total_t t = { 0 };
    mt_report_t plain = { .path = "plain.mtr", .complete = 1 };
    ck_assert_int_eq(mt_report_total_add(&t, &plain), 0);
    mt_callsite_t a[] = { site("f", "f.c", 1, "prog", 0) };
    a[0].bytes = UINT64_MAX - 1, a[0].calls = 1;
    add_trace(&t, a, 1);
    a[0].bytes = 5;
    add_trace(&t, a, 1);
    free_sites(a, 1);
    ck_assert_uint_eq(t.traces, 3);
    ck_assert_uint_eq(t.with_stacks, 2);
    ck_assert_uint_eq(t.ncallsites, 1);
    ck_assert_uint_eq(t.callsites[0].bytes, UINT64_MAX);
    ck_assert_uint_eq(t.callsites[0].calls, 2);
    mt_report_total_free(&t);
}
END_TEST

/* 2000 traces of the same 300 callsites, each with strings of its own: 300 entries; and 200,000
 * distinct callsites over 20 traces in well under the time limit (an index, not a list search). */
START_TEST(callsites_bounded_by_distinct_callsites)
{
    mt_report_total_t t = { 0 };
    enum { NSITES = 300 };
    mt_callsite_t c[NSITES];
    for (int k = 0; k < 2000; k++) {
        for (unsigned i = 0; i < NSITES; i++) {
            c[i] = site("f", "f.c", i + 1, "prog", 0);
            c[i].calls = 1, c[i].bytes = 8;
        }
        add_trace(&t, c, NSITES);
        free_sites(c, NSITES);
    }
    ck_assert_uint_eq(t.ncallsites, NSITES);
    for (unsigned i = 0; i < NSITES; i++) {
        ck_assert_uint_eq(t.callsites[i].calls, 2000);
        ck_assert_uint_eq(t.site_traces[i].traces, 2000);
    }
    mt_report_total_free(&t);

    enum { NEACH = 10000 };
    mt_callsite_t *many = calloc(NEACH, sizeof *many);
    ck_assert_ptr_nonnull(many);
    for (unsigned k = 0; k < 20; k++) {
        for (unsigned i = 0; i < NEACH; i++)
            many[i] =
                (mt_callsite_t){ .function = "g", .file = "g.c", .line = k * NEACH + i, .module = "prog", .calls = 1 };
        add_trace(&t, many, NEACH);
    }
    ck_assert_uint_eq(t.ncallsites, 20 * NEACH);
    free(many);
    mt_report_total_free(&t);
}
END_TEST

/* The text's tables by bytes and by leaks, and the JSON lists, highest first, with the traces. */
START_TEST(total_ranks_callsites_by_bytes_and_by_leaks)
{
    mt_report_total_t t = { 0 };
    mt_callsite_t a[] = { site("big", "a.c", 1, "prog", 0), site("leaky", "a.c", 2, "prog", 0),
                          site("small", "a.c", 3, "prog", 0) };
    a[0].calls = 1, a[0].bytes = 1 << 19;
    a[1].calls = 1, a[1].bytes = 4096, a[1].leaked_blocks = 1, a[1].leaked_bytes = 4096;
    a[2].calls = 1, a[2].bytes = 10, a[2].leaked_blocks = 1, a[2].leaked_bytes = 10;
    add_trace(&t, a, 3);
    add_trace(&t, a, 2);
    free_sites(a, 3);

    char *dir = make_temp_dir("report-total");
    char *txt = path_in(dir, "total.txt"), *js = path_in(dir, "total.json");
    FILE *f = fopen(txt, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(mt_report_total_print(&t, f, MT_TABLE_TEXT, 0), 0);
    ck_assert_int_eq(fclose(f), 0);
    static char text[1 << 14];
    f = fopen(txt, "r");
    ck_assert_ptr_nonnull(f);
    text[fread(text, 1, sizeof text - 1, f)] = 0;
    fclose(f);
    const char *tables = strstr(text, "\ntop callsites by bytes requested");
    ck_assert_msg(tables, "no callsite table in:\n%s", text);
    ck_assert_msg(!strcmp(tables, "\ntop callsites by bytes requested, all 2 traces\n"
                                  "       1.0 MiB  big  a.c:1  allocated in 2 traces\n"
                                  "       8.0 KiB  leaky  a.c:2  allocated in 2 traces\n"
                                  "          10 B  small  a.c:3  allocated in 1 trace\n"
                                  "\ntop callsites by leaks, all 2 traces\n"
                                  "       8.0 KiB  leaky  a.c:2  leaked in 2 traces\n"
                                  "          10 B  small  a.c:3  leaked in 1 trace\n"),
                  "the callsite tables:\n%s", tables);

    f = fopen(js, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(mt_report_total_print(&t, f, MT_TABLE_JSON, 0), 0);
    ck_assert_int_eq(fclose(f), 0);
    mt_jval_t *root;
    mt_error_t err;
    ck_assert_msg(mt_json_load(js, &root, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(mt_json_num(root, "traces_with_stacks", -1), 2);
    const mt_jval_t *sites = mt_json_get(root, "callsites"), *leaking = mt_json_get(root, "leaking_callsites");
    ck_assert(sites && sites->type == MT_JARR && sites->n == 3);
    ck_assert(leaking && leaking->type == MT_JARR && leaking->n == 2);
    static const char *const by_bytes[] = { "big", "leaky", "small" };
    for (size_t i = 0; i < 3; i++)
        ck_assert_str_eq(mt_json_str_at(&sites->items[i], "function", ""), by_bytes[i]);
    ck_assert_str_eq(mt_json_str_at(&leaking->items[0], "function", ""), "leaky");
    ck_assert_int_eq(mt_json_num(&leaking->items[0], "leaked_bytes", -1), 8192);
    ck_assert_int_eq(mt_json_num(&leaking->items[0], "traces", -1), 2);
    ck_assert_int_eq(mt_json_num(&leaking->items[0], "leaking_traces", -1), 2);
    ck_assert_int_eq(mt_json_num(&leaking->items[1], "leaking_traces", -1), 1);
    mt_json_free(root);

    f = fopen(js, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(mt_report_total_print(&t, f, MT_TABLE_JSON, 1), 0);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_msg(mt_json_load(js, &root, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(mt_json_get(root, "callsites")->n, 1);
    ck_assert_uint_eq(mt_json_get(root, "leaking_callsites")->n, 1);
    mt_json_free(root);

    mt_report_total_free(&t);
    remove_tree(dir);
    free(txt);
    free(js);
    free(dir);
}
END_TEST

/* The text total's lines and its JSON, printed to files in dir. text must hold 4096 bytes. */
static mt_jval_t *print_total(const mt_report_total_t *t, const char *dir, char *text)
{
    char *txt = path_in(dir, "total.txt"), *js = path_in(dir, "total.json");
    FILE *f = fopen(txt, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(mt_report_total_print(t, f, MT_TABLE_TEXT, 0), 0);
    ck_assert_int_eq(fclose(f), 0);
    f = fopen(txt, "r");
    ck_assert_ptr_nonnull(f);
    text[fread(text, 1, 4095, f)] = 0;
    fclose(f);
    f = fopen(js, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(mt_report_total_print(t, f, MT_TABLE_JSON, 0), 0);
    ck_assert_int_eq(fclose(f), 0);
    mt_jval_t *root;
    mt_error_t err;
    ck_assert_msg(mt_json_load(js, &root, &err) == 0, "%s", err.msg);
    free(txt);
    free(js);
    return root;
}

/* A shell that runs three commands and ends at an exec: 5 traces of 4 processes (the exec'd image's
 * trace goes on from the shell's, whichever is added first), its thread once; one killed process
 * apart. Before, every trace counted as a thread, and the exec as "did not finish". */
START_TEST(total_tells_exec_from_unfinished_and_counts_processes)
{
    char *dir = make_temp_dir("report-total-exec");
    static const char *const names[] = { "sh", "sh.1", "ls1", "ls2", "killed" };
    char *path[5];
    for (int i = 0; i < 5; i++) {
        path[i] = path_in(dir, names[i]);
        FILE *f = fopen(path[i], "w");
        ck_assert_ptr_nonnull(f);
        fclose(f);
    }
    /* the continuation named through another spelling of the same directory */
    char *via = path_in(dir, "./sh.1");
    for (int order = 0; order < 2; order++) {
        mt_report_total_t t = { 0 };
        mt_report_t sh = { .path = path[0], .threads = 1, .ended_at_exec = 1, .continued_in = via };
        mt_report_t next = { .path = path[1], .threads = 1, .complete = 1 };
        mt_report_t ls1 = { .path = path[2], .threads = 1, .complete = 1 };
        mt_report_t ls2 = { .path = path[3], .threads = 2, .complete = 1 };
        mt_report_t killed = { .path = path[4], .threads = 1 };
        mt_report_t *const in[2][5] = { { &sh, &next, &ls1, &ls2, &killed }, { &next, &ls1, &killed, &ls2, &sh } };
        for (int i = 0; i < 5; i++)
            ck_assert_int_eq(mt_report_total_add(&t, in[order][i]), 0);
        ck_assert_uint_eq(t.traces, 5);
        ck_assert_uint_eq(t.continuing, 1);
        ck_assert_uint_eq(t.ended_at_exec, 1);
        ck_assert_uint_eq(t.incomplete, 1);

        char text[4096];
        mt_jval_t *root = print_total(&t, dir, text);
        static const char head[] = "\nall 5 traces (4 processes): 5 threads\n"
                                   "ended at exec  1 trace: the process went on in the program it ran\n"
                                   "not finished   1 trace: the process was killed or crashed, or left by a bare "
                                   "exit_group system call\n";
        ck_assert_msg(!strncmp(text, head, strlen(head)), "the total's first lines:\n%s", text);
        ck_assert_int_eq(mt_json_num(root, "traces", -1), 5);
        ck_assert_int_eq(mt_json_num(root, "processes", -1), 4);
        ck_assert_int_eq(mt_json_num(root, "threads", -1), 5);
        ck_assert_int_eq(mt_json_num(root, "ended_at_exec_traces", -1), 1);
        ck_assert_int_eq(mt_json_num(root, "incomplete_traces", -1), 1);
        mt_json_free(root);
        mt_report_total_free(&t);
    }
    /* the continuation not among the traces: the shell's trace is one process still */
    mt_report_total_t t = { 0 };
    mt_report_t sh = { .path = path[0], .threads = 1, .ended_at_exec = 1, .continued_in = via };
    ck_assert_int_eq(mt_report_total_add(&t, &sh), 0);
    ck_assert_uint_eq(t.continuing, 0);
    mt_report_total_free(&t);
    for (int i = 0; i < 5; i++)
        free(path[i]);
    free(via);
    remove_tree(dir);
    free(dir);
}
END_TEST

static Suite *report_total_suite(void)
{
    Suite *s = suite_create("report-total");
    TCase *tc = tcase_create("callsites");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, callsites_merged_by_meaning_not_by_address);
    tcase_add_test(tc, callsites_sums_saturate_and_traces_without_stacks_add_none);
    tcase_add_test(tc, callsites_bounded_by_distinct_callsites);
    tcase_add_test(tc, total_ranks_callsites_by_bytes_and_by_leaks);
    tcase_add_test(tc, total_tells_exec_from_unfinished_and_counts_processes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(report_total_suite());
}
