/* Folded stacks and the SVG flame graph: exact folded text; an SVG that is well-formed XML (checked
 * here, and by python3's XML parser when python3 is installed) with one rectangle per visible frame,
 * laid out by weight, names escaped, narrow frames hidden, the same bytes whatever the input order. */
#define _GNU_SOURCE
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/flamegraph.h"
#include "test_util.h"

#define FRAMES(...) ((const char *const[]){ __VA_ARGS__ })
#define STACK(w, ...)                                                                                                  \
    {                                                                                                                  \
        FRAMES(__VA_ARGS__), sizeof FRAMES(__VA_ARGS__) / sizeof(const char *), w                                      \
    }

static char *folded(const mt_folded_t *st, size_t n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(mt_folded_write(f, st, n), 0);
    fclose(f);
    return buf;
}

static char *svg(const char *title, const char *unit, const mt_folded_t *st, size_t n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(mt_flamegraph_svg(f, title, unit, st, n), 0);
    fclose(f);
    ck_assert_uint_eq(strlen(buf), len); /* no NUL inside */
    return buf;
}

/* ---- a small XML well-formedness check --------------------------------------------------------- */

static int is_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.' || c == ':';
}

/* An entity reference at p ('&'): its length, or 0 when invalid. */
static size_t entity(const char *p)
{
    static const char *const names[] = { "&amp;", "&lt;", "&gt;", "&quot;", "&apos;" };
    for (size_t i = 0; i < 5; i++)
        if (!strncmp(p, names[i], strlen(names[i])))
            return strlen(names[i]);
    if (p[1] == '#') {
        const char *q = p + 2;
        int hex = *q == 'x';
        q += hex;
        const char *digits = q;
        while (hex ? isxdigit((unsigned char)*q) : isdigit((unsigned char)*q))
            q++;
        if (q > digits && *q == ';')
            return (size_t)(q + 1 - p);
    }
    return 0;
}

/* Character data up to `stop` (a '<' or a quote): no raw '<' or '&' but entities; control
 * characters only tab, CR, LF. 0 or -1. */
static int check_chars(const char **pp, char stop)
{
    const char *p = *pp;
    while (*p && *p != stop) {
        if (*p == '<')
            return -1;
        if (*p == '&') {
            const size_t n = entity(p);
            if (!n)
                return -1;
            p += n;
            continue;
        }
        if ((unsigned char)*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')
            return -1;
        p++;
    }
    *pp = p;
    return 0;
}

/* 0 when the document is well-formed (one root element, tags nested and matched, attributes
 * quoted, entities valid), else the offset of the first error + 1. */
static size_t xml_error(const char *doc)
{
    const char *stack[256];
    size_t lens[256], depth = 0;
    int roots = 0;
    const char *p = doc;
    if (!strncmp(p, "<?xml", 5)) {
        p = strstr(p, "?>");
        if (!p)
            return 1;
        p += 2;
    }
    while (*p) {
        if (*p != '<') {
            if (depth == 0) {
                if (!isspace((unsigned char)*p))
                    return (size_t)(p - doc) + 1;
                p++;
                continue;
            }
            if (check_chars(&p, '<') < 0)
                return (size_t)(p - doc) + 1;
            continue;
        }
        if (!strncmp(p, "<!--", 4)) {
            const char *e = strstr(p + 4, "-->");
            if (!e)
                return (size_t)(p - doc) + 1;
            p = e + 3;
        } else if (!strncmp(p, "<![CDATA[", 9)) {
            const char *e = strstr(p + 9, "]]>");
            if (!e || depth == 0)
                return (size_t)(p - doc) + 1;
            p = e + 3;
        } else if (p[1] == '/') {
            const char *name = p + 2, *q = name;
            while (is_name_char(*q))
                q++;
            if (depth == 0 || (size_t)(q - name) != lens[depth - 1] || strncmp(name, stack[depth - 1], lens[depth - 1]))
                return (size_t)(p - doc) + 1;
            while (isspace((unsigned char)*q))
                q++;
            if (*q != '>')
                return (size_t)(q - doc) + 1;
            depth--;
            p = q + 1;
        } else {
            const char *name = p + 1, *q = name;
            while (is_name_char(*q))
                q++;
            if (q == name || depth == 256)
                return (size_t)(p - doc) + 1;
            if (depth == 0 && roots++)
                return (size_t)(p - doc) + 1; /* a second root */
            for (;;) {
                const char *ws = q;
                while (isspace((unsigned char)*q))
                    q++;
                if (*q == '>' || (q[0] == '/' && q[1] == '>'))
                    break;
                if (q == ws || !is_name_char(*q))
                    return (size_t)(q - doc) + 1;
                while (is_name_char(*q))
                    q++;
                if (*q++ != '=')
                    return (size_t)(q - doc);
                const char quote = *q++;
                if (quote != '"' && quote != '\'')
                    return (size_t)(q - doc);
                if (check_chars(&q, quote) < 0 || *q != quote)
                    return (size_t)(q - doc) + 1;
                q++;
            }
            if (*q == '>') {
                size_t n = 0;
                while (is_name_char(name[n]))
                    n++;
                stack[depth] = name;
                lens[depth++] = n;
                p = q + 1;
            } else {
                p = q + 2;
            }
        }
    }
    return depth == 0 && roots == 1 ? 0 : (size_t)(p - doc) + 1;
}

/* Well-formed by the check above; with `python`, also by python3's parser where there is one (a
 * few seconds a run through pyenv's shims: only for the richest documents). */
static void assert_xml_by(const char *doc, int python)
{
    const size_t e = xml_error(doc);
    ck_assert_msg(e == 0, "not well-formed at offset %zu: ...%.60s", e - 1, doc + (e > 20 ? e - 20 : 0));
    if (!python || system("command -v python3 >/dev/null 2>&1") != 0)
        return;
    char *dir = make_temp_dir("flamegraph");
    char *path = path_in(dir, "fg.svg");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(doc, f);
    ck_assert_int_eq(fclose(f), 0);
    char *cmd = NULL;
    ck_assert_int_ge(
        asprintf(&cmd, "python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' '%s'", path), 0);
    const int st = system(cmd);
    ck_assert_msg(st == 0, "python3's XML parser refuses the SVG (status %d)", st);
    free(cmd);
    remove_tree(dir);
    free(path);
    free(dir);
}

static void assert_xml(const char *doc)
{
    assert_xml_by(doc, 0);
}

/* ---- reading the SVG back ---------------------------------------------------------------------- */

typedef struct rect {
    double x, y, width;
    unsigned r, g, b;
} rect_t;

/* Frames whose title starts with "NAME (": how many; the first one's rect in *out. */
static int frame_rect(const char *doc, const char *name, rect_t *out)
{
    char *key = NULL;
    ck_assert_int_ge(asprintf(&key, "<g class=\"frame\"><title>%s (", name), 0);
    int count = 0;
    for (const char *p = strstr(doc, key); p; p = strstr(p + 1, key)) {
        if (count++ == 0) {
            const char *r = strstr(p, "<rect ");
            ck_assert_ptr_nonnull(r);
            ck_assert_int_eq(sscanf(r, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"15\" fill=\"rgb(%u,%u,%u)\"",
                                    &out->x, &out->y, &out->width, &out->r, &out->g, &out->b),
                             6);
        }
    }
    free(key);
    return count;
}

static int count_str(const char *doc, const char *s)
{
    int n = 0;
    for (const char *p = strstr(doc, s); p; p = strstr(p + 1, s))
        n++;
    return n;
}

static void assert_near(double got, double want, const char *what)
{
    ck_assert_msg(got > want - 0.011 && got < want + 0.011, "%s: %.3f, expected %.3f", what, got, want);
}

/* ---- tests ------------------------------------------------------------------------------------- */

START_TEST(folded_text)
{
    const char *const none[] = { NULL };
    const mt_folded_t st[] = {
        STACK(10, "main", "a", "b"),
        STACK(5, "main", "a", "c"),
        STACK(3, "main", "d;e"),
        { none, 0, 2 },        /* no frames */
        STACK(0, "main", "x"), /* no weight: left out */
        STACK(1, "main", NULL),
        STACK(4, "main", "new\nline"),
        STACK(18446744073709551615ull, "big"),
    };
    char *text = folded(st, sizeof st / sizeof st[0]);
    ck_assert_str_eq(text, "main;a;b 10\n"
                           "main;a;c 5\n"
                           "main;d:e 3\n"
                           "[no stack] 2\n"
                           "main;[unknown] 1\n"
                           "main;new line 4\n"
                           "big 18446744073709551615\n");
    free(text);
    text = folded(NULL, 0);
    ck_assert_str_eq(text, "");
    free(text);
}
END_TEST

/* total 1200 in 1180 px (1200 minus 10 px on each side) */
static const mt_folded_t g_stacks[] = {
    STACK(600, "main", "a", "b"),
    STACK(300, "main", "a", "c"),
    STACK(100, "main", "d"),
    STACK(200, "other"),
};

START_TEST(svg_layout)
{
    char *doc = svg("Allocations", "bytes", g_stacks, 4);
    assert_xml_by(doc, 1);
    ck_assert_ptr_nonnull(strstr(doc, "<svg "));
    ck_assert_ptr_nonnull(strstr(doc, "width=\"1200\""));
    ck_assert_ptr_nonnull(strstr(doc, ">Allocations</text>"));
    ck_assert_ptr_null(strstr(doc, "href")); /* self-contained */
    ck_assert_ptr_null(strstr(doc, "http://www.w3.org/1999/xlink"));

    /* one rect per frame: all, main, a, b, c, d, other */
    ck_assert_int_eq(count_str(doc, "<g class=\"frame\">"), 7);
    ck_assert_int_eq(count_str(doc, "<rect x="), 7 + 1); /* and the background */
    rect_t all, m, a, b, c, d, o;
    ck_assert_int_eq(frame_rect(doc, "all", &all), 1);
    ck_assert_int_eq(frame_rect(doc, "main", &m), 1);
    ck_assert_int_eq(frame_rect(doc, "a", &a), 1);
    ck_assert_int_eq(frame_rect(doc, "b", &b), 1);
    ck_assert_int_eq(frame_rect(doc, "c", &c), 1);
    ck_assert_int_eq(frame_rect(doc, "d", &d), 1);
    ck_assert_int_eq(frame_rect(doc, "other", &o), 1);

    /* widths proportional to weights */
    assert_near(all.width, 1180, "all width");
    assert_near(b.width, 590, "b width");
    assert_near(c.width, 295, "c width");
    assert_near(b.width / c.width, 2.0, "b/c");
    assert_near(m.width, 1000 * 1180.0 / 1200, "main width");
    assert_near(o.width, 200 * 1180.0 / 1200, "other width");
    assert_near(a.width + d.width, m.width, "children of main");
    /* x by cumulative weight, children in order of name */
    assert_near(all.x, 10, "all x");
    assert_near(m.x, 10, "main x");
    assert_near(o.x, 10 + m.width, "other x");
    assert_near(b.x, 10, "b x");
    assert_near(c.x, 10 + b.width, "c x");
    assert_near(d.x, 10 + a.width, "d x");
    /* root at the bottom, 16 px per level */
    assert_near(all.y - m.y, 16, "level");
    assert_near(m.y - a.y, 16, "level");
    assert_near(a.y - b.y, 16, "level");
    assert_near(c.y, b.y, "same level");
    assert_near(o.y, m.y, "same level");
    ck_assert_ptr_nonnull(strstr(doc, "height=\"134\"")); /* 4 levels, 36 px above, 34 below */

    /* hover titles: name, weight, unit, share */
    ck_assert_ptr_nonnull(strstr(doc, "<title>a (900 bytes, 75.00%)</title>"));
    ck_assert_ptr_nonnull(strstr(doc, "<title>all (1200 bytes, 100.00%)</title>"));
    ck_assert_ptr_nonnull(strstr(doc, "<title>d (100 bytes, 8.33%)</title>"));
    /* warm colours, one per name */
    const rect_t *rs[] = { &all, &m, &a, &b, &c, &d, &o };
    for (size_t i = 0; i < 7; i++) {
        ck_assert_uint_ge(rs[i]->r, 205);
        ck_assert_uint_le(rs[i]->r, 255);
        ck_assert_uint_le(rs[i]->g, 230);
        ck_assert_uint_le(rs[i]->b, 55);
    }
    free(doc);
}
END_TEST

START_TEST(svg_merges_and_is_deterministic)
{
    /* the same stacks split and shuffled: the same picture, byte for byte */
    const mt_folded_t shuffled[] = {
        STACK(200, "other"),          STACK(250, "main", "a", "c"), STACK(100, "main", "d"),
        STACK(600, "main", "a", "b"), STACK(50, "main", "a", "c"),
    };
    char *one = svg("T", "bytes", g_stacks, 4);
    char *two = svg("T", "bytes", shuffled, 5);
    ck_assert_msg(!strcmp(one, two), "the order of the input changes the SVG");
    char *again = svg("T", "bytes", g_stacks, 4);
    ck_assert_msg(!strcmp(one, again), "the same input gives another SVG");

    /* the same name under two parents: two rects, one colour */
    const mt_folded_t twice[] = { STACK(10, "main", "x", "leaf"), STACK(10, "main", "y", "leaf") };
    char *doc = svg("T", "calls", twice, 2);
    assert_xml(doc);
    rect_t l1, l2;
    ck_assert_int_eq(frame_rect(doc, "leaf", &l1), 2);
    const char *second = strstr(strstr(doc, "<title>leaf (") + 1, "<title>leaf (");
    ck_assert_int_eq(sscanf(strstr(second, "<rect "),
                            "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"15\" fill=\"rgb(%u,%u,%u)\"", &l2.x,
                            &l2.y, &l2.width, &l2.r, &l2.g, &l2.b),
                     6);
    ck_assert(l1.r == l2.r && l1.g == l2.g && l1.b == l2.b);
    assert_near(l1.width, l2.width, "leaf widths");
    ck_assert_ptr_nonnull(strstr(doc, "<title>leaf (10 calls, 50.00%)</title>"));
    free(doc);
    free(one);
    free(two);
    free(again);
}
END_TEST

START_TEST(svg_hides_narrow_frames)
{
    const mt_folded_t st[] = {
        STACK(1000000, "big"),
        STACK(1, "tiny"),
        STACK(1, "big", "tiny_child"),
        STACK(100000, "mid", "deeper", "deepest"),
    };
    char *doc = svg("narrow", "bytes", st, 4);
    assert_xml(doc);
    rect_t r;
    ck_assert_int_eq(frame_rect(doc, "big", &r), 1);
    ck_assert_int_eq(frame_rect(doc, "deepest", &r), 1);
    ck_assert_ptr_null(strstr(doc, "tiny"));                    /* 1/1100002 of 1180 px: under 0.1 px */
    ck_assert_int_eq(count_str(doc, "<g class=\"frame\">"), 5); /* all, big, mid, deeper, deepest */
    free(doc);

    /* only hidden frames above the root: the height has one level */
    const mt_folded_t st2[] = { STACK(100000000, "a"), STACK(1, "b", "c", "d", "e") };
    doc = svg("narrow", "bytes", st2, 2);
    assert_xml(doc);
    ck_assert_ptr_nonnull(strstr(doc, "height=\"102\"")); /* 2 levels: all, a */
    ck_assert_ptr_null(strstr(doc, ">e ("));
    free(doc);
}
END_TEST

START_TEST(svg_escapes_names)
{
    char longname[301];
    memset(longname, 'L', 300);
    longname[300] = 0;
    const mt_folded_t st[] = {
        STACK(50, "main", "a<b>&\"c'"),
        STACK(30, "main", "_ZN3fooltEv", "operator<<(std::ostream&, int)"),
        STACK(20,
              "ctl\x01\x1f"
              "chars",
              "bad\xff\xfeutf8", "ok\xc3\xa9"),
        STACK(5, "main", longname),
    };
    char *doc = svg("T & <\"x\">", "'u'", st, 4);
    assert_xml_by(doc, 1);
    ck_assert_ptr_nonnull(strstr(doc, "a&lt;b&gt;&amp;&quot;c&apos;"));
    ck_assert_ptr_nonnull(strstr(doc, "operator&lt;&lt;(std::ostream&amp;, int)"));
    ck_assert_ptr_nonnull(strstr(doc, "T &amp; &lt;&quot;x&quot;&gt;"));
    ck_assert_ptr_nonnull(strstr(doc, "&apos;u&apos;"));
    ck_assert_ptr_nonnull(strstr(doc, "ctl??chars"));
    ck_assert_ptr_nonnull(strstr(doc, "bad??utf8"));
    ck_assert_ptr_nonnull(strstr(doc, "ok\xc3\xa9"));
    ck_assert_ptr_null(strstr(doc, "\xff"));
    /* a long name: whole in the title, cut with ".." in a text that fits its rect */
    rect_t r;
    ck_assert_int_eq(frame_rect(doc, longname, &r), 1);
    const char *t = strstr(strstr(doc, longname), "<text ");
    ck_assert_ptr_nonnull(t);
    const char *body = strchr(t, '>') + 1, *end = strstr(body, "</text>");
    const size_t shown = (size_t)(end - body);
    ck_assert_msg(shown >= 5 && !strncmp(end - 2, "..", 2), "text %.*s", (int)shown, body);
    ck_assert_msg((double)shown * 12 * 0.59 <= r.width, "%zu characters in %.2f px", shown, r.width);
    free(doc);
}
END_TEST

START_TEST(svg_empty)
{
    char *doc = svg(NULL, NULL, NULL, 0);
    assert_xml(doc);
    ck_assert_ptr_nonnull(strstr(doc, "no data"));
    ck_assert_int_eq(count_str(doc, "<g class=\"frame\">"), 0);
    free(doc);
    const mt_folded_t zero[] = { STACK(0, "main") };
    doc = svg("zero", "bytes", zero, 1);
    assert_xml(doc);
    ck_assert_int_eq(count_str(doc, "<g class=\"frame\">"), 0);
    free(doc);
}
END_TEST

/* The well-formedness check itself: it must refuse what an XML parser refuses. */
START_TEST(xml_check_refuses_bad_documents)
{
    ck_assert_uint_eq(xml_error("<?xml version=\"1.0\"?>\n<a x=\"1\"><b/>t &amp; &#60;<![CDATA[<&]]></a>\n"), 0);
    static const char *const bad[] = {
        "<a>",
        "<a></b>",
        "<a><b></a></b>",
        "<a>x & y</a>",
        "<a>x < y</a>",
        "<a x=1/>",
        "<a x=\"<\"/>",
        "<a x=\"1\"y=\"2\"/>",
        "<a/><b/>",
        "text<a/>",
        "<a>\x01</a>",
        "<a>&bogus;</a>",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(xml_error(bad[i]) != 0, "taken as well-formed: %s", bad[i]);
}
END_TEST

static Suite *flamegraph_suite(void)
{
    Suite *s = suite_create("flamegraph");
    TCase *tc = tcase_create("folded");
    tcase_add_test(tc, folded_text);
    suite_add_tcase(s, tc);
    tc = tcase_create("svg");
    tcase_add_test(tc, svg_layout);
    tcase_add_test(tc, svg_merges_and_is_deterministic);
    tcase_add_test(tc, svg_hides_narrow_frames);
    tcase_add_test(tc, svg_escapes_names);
    tcase_add_test(tc, svg_empty);
    tcase_add_test(tc, xml_check_refuses_bad_documents);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(flamegraph_suite());
}
