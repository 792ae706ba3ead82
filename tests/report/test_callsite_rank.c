/* mtrace report's "top callsites by ..." tables: each ranks every callsite by its key, highest first,
 * equal keys in the report's own order (by calls), and the ranking takes O(n log n) steps: a program
 * with 200,000 callsites whose bytes grow with their rank by calls was the worst case of the
 * insertion sort used before (n^2/2 moves, 2e10 here: minutes of CPU; a sort takes milliseconds).
 * The printing runs in a child under RLIMIT_CPU of 20 s, CPU time rather than wall time, so a busy
 * machine does not make it fail; the margin is three orders of magnitude. */
#define _GNU_SOURCE
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mtrace/report.h"
#include "test_util.h"

#define NSITES 200000u

/* Callsite i: calls NSITES - i (the report's order), bytes i + 1 (the reverse), peak 7 for every
 * third and 0 else (ties), leaked bytes 5 for all (all tied). */
static mt_report_t *make_report(char (**names)[16])
{
    mt_report_t *r = calloc(1, sizeof *r);
    mt_callsite_t *c = calloc(NSITES, sizeof *c);
    *names = calloc(NSITES, sizeof **names);
    ck_assert(r && c && *names);
    for (size_t i = 0; i < NSITES; i++) {
        snprintf((*names)[i], sizeof **names, "f%zu", i);
        c[i] = (mt_callsite_t){ .function = (*names)[i],
                                .module = "prog",
                                .calls = NSITES - i,
                                .bytes = i + 1,
                                .peak_bytes = i % 3 == 0 ? 7 : 0,
                                .leaked_bytes = 5 };
    }
    r->path = "many-callsites.mtr";
    r->callsites = c;
    r->ncallsites = NSITES;
    r->has_stacks = 1;
    return r;
}

/* The function names of a table's first rows ("  VALUE  FUNCTION  WHERE", VALUE may hold a blank:
 * the name is the next to last word), after its title line. */
static void table_rows(const char *text, const char *title, char rows[3][16])
{
    const char *p = strstr(text, title);
    ck_assert_msg(p, "no table \"%s\" in:\n%s", title, text);
    for (int i = 0; i < 3; i++) {
        p = strchr(p, '\n');
        ck_assert_ptr_nonnull(p);
        p++;
        char line[256], words[4][64];
        ck_assert_int_eq(sscanf(p, "%255[^\n]", line), 1);
        const int n = sscanf(line, "%63s %63s %63s %63s", words[0], words[1], words[2], words[3]);
        ck_assert_msg(n >= 3, "row %d of \"%s\": %s", i, title, line);
        snprintf(rows[i], 16, "%s", words[n - 2]);
    }
}

START_TEST(callsites_ranked_in_n_log_n_equal_keys_in_report_order)
{
    char *dir = make_temp_dir("callsite-rank");
    char *out = path_in(dir, "report.txt");
    char(*names)[16];
    mt_report_t *r = make_report(&names);

    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        const struct rlimit cpu = { 20, 20 };
        FILE *f = fopen(out, "w");
        if (!f || setrlimit(RLIMIT_CPU, &cpu) != 0)
            _exit(3);
        mt_report_print(r, f, MT_TABLE_TEXT, 3);
        _exit(fclose(f) == 0 ? 0 : 4);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(!WIFSIGNALED(status), "mt_report_print died of signal %d (SIGXCPU %d, or SIGKILL: over 20 s of CPU)",
                  WIFSIGNALED(status) ? WTERMSIG(status) : 0, SIGXCPU);
    ck_assert_int_eq(WEXITSTATUS(status), 0);

    static char text[1 << 16];
    FILE *f = fopen(out, "r");
    ck_assert_ptr_nonnull(f);
    const size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    ck_assert_uint_lt(len, sizeof text - 1);
    text[len] = 0;
    char rows[3][16];
    static const struct {
        const char *title, *want[3];
    } tables[] = {
        { "top callsites by calls", { "f0", "f1", "f2" } },
        { "top callsites by bytes", { "f199999", "f199998", "f199997" } },
        { "top callsites by peak", { "f0", "f3", "f6" } },
        { "top callsites by leaks", { "f0", "f1", "f2" } },
    };
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
        table_rows(text, tables[t].title, rows);
        for (int i = 0; i < 3; i++)
            ck_assert_msg(strcmp(rows[i], tables[t].want[i]) == 0, "%s, row %d: %s, want %s", tables[t].title, i,
                          rows[i], tables[t].want[i]);
    }
    free(r->callsites);
    free(r);
    free(names);
    remove_tree(dir);
    free(out);
    free(dir);
}
END_TEST

static Suite *callsite_rank_suite(void)
{
    Suite *s = suite_create("report-callsite-rank");
    TCase *tc = tcase_create("rank");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, callsites_ranked_in_n_log_n_equal_keys_in_report_order);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(callsite_rank_suite());
}
