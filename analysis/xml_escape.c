/* Text escaped for XML and HTML: the one rule analysis/xml_escape.h describes. */
#include "xml_escape.h"

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 when the byte starts none. U+FFFE and
 * U+FFFF are refused too: XML 1.0 does not allow them. */
static int utf8_len(const unsigned char *s)
{
    const unsigned c = s[0];
    int n;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, min = 0x10000;
    else
        return 0;
    unsigned cp = c & (0x7f >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
        return 0;
    return n;
}

/* One ASCII character, escaped. */
static void put_ascii(FILE *f, unsigned char c)
{
    switch (c) {
    case '&':
        fputs("&amp;", f);
        break;
    case '<':
        fputs("&lt;", f);
        break;
    case '>':
        fputs("&gt;", f);
        break;
    case '"':
        fputs("&quot;", f);
        break;
    case '\'':
        fputs("&apos;", f);
        break;
    default:
        /* XML 1.0 allows tab, newline and carriage return of the control characters */
        putc(c < 0x20 && c != '\t' && c != '\n' && c != '\r' ? '?' : c, f);
    }
}

size_t mt_xml_escape(FILE *f, const char *str, size_t max_chars)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    size_t chars = 0;
    while (*s) {
        const int n = utf8_len(s);
        if (chars < max_chars) {
            if (n == 0)
                putc('?', f);
            else if (n == 1)
                put_ascii(f, *s);
            else
                fwrite(s, 1, (size_t)n, f);
        }
        s += n ? n : 1;
        chars++;
    }
    return chars;
}

size_t mt_xml_chars(const char *str)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    size_t chars = 0;
    while (*s) {
        const int n = utf8_len(s);
        s += n ? n : 1;
        chars++;
    }
    return chars;
}
