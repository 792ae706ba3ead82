/* Text that goes into a gnuplot script: a command line as a plot's title fits the picture (the
 * program by its file name, the middle elided when too long, the end kept, no character cut in
 * two), and stays one quoted gnuplot string whatever the command holds (quotes doubled, control
 * characters made spaces), with '?' for each byte that starts no character XML allows (gnuplot's
 * SVG is XML). A data file's quoted column: quotes made spaces, backslashes doubled. */
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

START_TEST(what_xml_refuses_becomes_question_marks)
{
    char t[256];
    /* not UTF-8, overlong, a surrogate, U+FFFF, cut short: '?' a byte; U+1F600 and U+00E9 kept */
    ck_assert_str_eq(
        mt_gp_text(t, sizeof t, "pr\xff\xfeg \xc0\xaf \xed\xa0\x80 \xef\xbf\xbf \xf0\x9f\x98\x80 \xc3\xa9 \xe6\x97"),
        "pr??g ?? ??? ??? \xf0\x9f\x98\x80 \xc3\xa9 ??");
    /* gnuplot's single quotes read no escape: a backslash stays; a quote is doubled */
    ck_assert_str_eq(mt_gp_text(t, sizeof t, "it's \\377\x01\x7f\""), "it''s \\377  \"");
    /* a data file's double quotes read escapes and cannot hold a quote */
    ck_assert_str_eq(mt_gp_data_text(t, sizeof t, "it's \"b\\377_x\"\n\xff"), "it's  b\\\\377_x  ?");
    /* cut to fit: never inside a character nor between a doubled quote's two halves */
    ck_assert_str_eq(mt_gp_text(t, 6, "abc\xf0\x9f\x98\x80"), "abc");
    ck_assert_str_eq(mt_gp_text(t, 5, "abc'"), "abc");
    ck_assert_str_eq(mt_gp_text(t, 1, "abc"), "");
    ck_assert_str_eq(mt_gp_text(t, sizeof t, NULL), "");
}
END_TEST

START_TEST(elided_title_cuts_no_character)
{
    /* 3-byte characters, wherever the cut falls: the title is still UTF-8, with no '?' */
    for (int pad = 0; pad < 3; pad++) {
        char cmd[1024] = "prog ", t[1200];
        for (int i = 0; i < pad; i++)
            strcat(cmd, "x");
        for (int i = 0; i < 60; i++)
            strcat(cmd, "\xe6\x97\xa5");
        mt_gp_title(t, sizeof t, cmd, 70);
        ck_assert_msg(strstr(t, " ... "), "'%s' is not elided", t);
        ck_assert_msg(!strchr(t, '?'), "'%s' has a character cut in two", t);
        for (size_t i = 0, len = strlen(t), k; i < len; i += k) {
            k = mt_utf8_len(t + i, len - i);
            ck_assert_msg(k > 0, "'%s': not UTF-8 at byte %zu", t, i);
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plot_text");
    TCase *tc = tcase_create("titles");
    tcase_add_test(tc, short_command_kept);
    tcase_add_test(tc, long_command_elided_in_the_middle);
    tcase_add_test(tc, title_stays_one_gnuplot_string);
    tcase_add_test(tc, what_xml_refuses_becomes_question_marks);
    tcase_add_test(tc, elided_title_cuts_no_character);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
