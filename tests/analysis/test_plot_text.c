/* Text that goes into a gnuplot script: a command line as a plot's title fits the picture (the
 * program by its file name, the middle elided when too long, the end kept), and stays one quoted
 * gnuplot string whatever the command holds (quotes doubled, control characters made spaces). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "plot_internal.h"
#include "mtrace/plot.h"
#include "test_util.h"

START_TEST(short_command_kept)
{
    char t[256];
    ck_assert_str_eq(mt_gp_title(t, sizeof t, "/usr/bin/python3 -c pass", 70), "python3 -c pass");
    ck_assert_str_eq(mt_gp_title(t, sizeof t, "cc1", 70), "cc1");
    ck_assert_str_eq(mt_gp_title(t, sizeof t, "", 70), "");
    ck_assert_str_eq(mt_gp_title(t, sizeof t, NULL, 70), "");
    /* a slash in an argument is not the program's path */
    ck_assert_str_eq(mt_gp_title(t, sizeof t, "make -C /src/dir", 70), "make -C /src/dir");
}
END_TEST

START_TEST(long_command_elided_in_the_middle)
{
    char cmd[2048], t[1200];
    strcpy(cmd, "/usr/lib/gcc/x86_64-linux-gnu/12/cc1 -quiet");
    for (int i = 0; i < 40; i++)
        strcat(cmd, " -I/some/include/dir");
    strcat(cmd, " -o LAST.s");
    mt_gp_title(t, sizeof t, cmd, 70);
    ck_assert_uint_le(strlen(t), 70);
    ck_assert_msg(!strncmp(t, "cc1 -quiet", 10), "'%s' does not start with the program", t);
    ck_assert_msg(strstr(t, " ... "), "'%s' does not mark what it left out", t);
    ck_assert_msg(strstr(t, "LAST.s") && !strcmp(strstr(t, "LAST.s"), "LAST.s"), "'%s' lost the end", t);
}
END_TEST

START_TEST(title_stays_one_gnuplot_string)
{
    char t[256];
    mt_gp_title(t, sizeof t, "prog 'it''s'\nsystem('x')", 70);
    ck_assert_ptr_null(strchr(t, '\n'));
    for (const char *q = strchr(t, '\''); q; q = strchr(q + 2, '\''))
        ck_assert_msg(q[1] == '\'', "an undoubled quote in '%s'", t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plot_text");
    TCase *tc = tcase_create("titles");
    tcase_add_test(tc, short_command_kept);
    tcase_add_test(tc, long_command_elided_in_the_middle);
    tcase_add_test(tc, title_stays_one_gnuplot_string);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
