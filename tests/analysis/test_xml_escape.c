/* The one escaping rule of the flame graph's SVG and the HTML pages (analysis/xml_escape.h): the five
 * characters XML gives a meaning become entities, the apostrophe too; control characters XML 1.0
 * refuses and every byte that starts no valid UTF-8 character (overlong, surrogate, past U+10FFFF,
 * cut short, U+FFFE/U+FFFF) become '?'; valid UTF-8 passes whole; a cut counts characters, never
 * splits one. */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xml_escape.h"
#include "test_util.h"

/* What mt_xml_escape writes for s, and the count it returns in *chars. */
static char *escaped(const char *s, size_t max_chars, size_t *chars)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    *chars = mt_xml_escape(f, s, max_chars);
    ck_assert_int_eq(fclose(f), 0);
    return buf;
}

static void check_escape(const char *in, const char *want, size_t want_chars)
{
    size_t chars;
    char *got = escaped(in, MT_XML_ALL, &chars);
    ck_assert_msg(!strcmp(got, want), "escape of \"%s\": \"%s\", expected \"%s\"", in, got, want);
    ck_assert_uint_eq(chars, want_chars);
    ck_assert_uint_eq(mt_xml_chars(in), want_chars);
    free(got);
}

START_TEST(specials_become_entities)
{
    check_escape("plain text", "plain text", 10);
    check_escape("<&\"'>", "&lt;&amp;&quot;&apos;&gt;", 5);
    check_escape("operator<<(std::ostream&, int)", "operator&lt;&lt;(std::ostream&amp;, int)", 30);
    check_escape("it's", "it&apos;s", 4);
    check_escape("", "", 0);
    check_escape(NULL, "", 0);
}
END_TEST

START_TEST(controls_but_tab_newline_cr_become_question_marks)
{
    check_escape("a\x01"
                 "b\x1b[2J\x1f",
                 "a?b?[2J?", 8);
    check_escape("t\tn\nr\r", "t\tn\nr\r", 6);
    check_escape("del\x7f", "del\x7f", 4); /* XML 1.0 allows U+007F */
}
END_TEST

START_TEST(invalid_utf8_becomes_question_marks)
{
    check_escape("ok\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80", "ok\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80", 7);
    check_escape("bad\xff\xfeutf8", "bad??utf8", 9);
    check_escape("\xc0\xaf", "??", 2);                     /* overlong */
    check_escape("\xed\xa0\x80", "???", 3);                /* a surrogate */
    check_escape("\xf4\x90\x80\x80", "????", 4);           /* past U+10FFFF */
    check_escape("\xe6\x97", "??", 2);                     /* cut short */
    check_escape("\xef\xbf\xbe\xef\xbf\xbf", "??????", 6); /* U+FFFE, U+FFFF: not XML */
    check_escape("\x80<", "?&lt;", 2);                     /* a lone continuation byte */
}
END_TEST

START_TEST(cut_by_characters)
{
    size_t chars;
    char *got = escaped("a&\xc3\xa9\xff"
                        "bc",
                        3, &chars);
    ck_assert_str_eq(got, "a&amp;\xc3\xa9");
    ck_assert_uint_eq(chars, 6);
    free(got);
    got = escaped("abc", 0, &chars);
    ck_assert_str_eq(got, "");
    ck_assert_uint_eq(chars, 3);
    free(got);
}
END_TEST

static Suite *xml_escape_suite(void)
{
    Suite *s = suite_create("xml_escape");
    TCase *tc = tcase_create("escape");
    tcase_add_test(tc, specials_become_entities);
    tcase_add_test(tc, controls_but_tab_newline_cr_become_question_marks);
    tcase_add_test(tc, invalid_utf8_becomes_question_marks);
    tcase_add_test(tc, cut_by_characters);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(xml_escape_suite());
}
