/* Text escaped for XML and HTML: the one rule analysis/xml_escape.h describes. */
#include "xml_escape.h"

#include <string.h>

#include "mtrace/file_io.h"

size_t mt_xml_char_len(const char *s, size_t len)
{
    const size_t n = mt_utf8_len(s, len); /* the one UTF-8 rule (mtrace/file_io.h) */
    /* XML's own rule on top of it: U+FFFE (EF BF BE) and U+FFFF (EF BF BF) are well-formed UTF-8,
     * but XML 1.0 allows neither in a document */
    if (n == 3 && (unsigned char)s[0] == 0xef && (unsigned char)s[1] == 0xbf && (unsigned char)s[2] >= 0xbe)
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
    const char *s = str ? str : "";
    const char *const end = s + strlen(s);
    size_t chars = 0;
    while (s < end) {
        const size_t n = mt_xml_char_len(s, (size_t)(end - s));
        if (chars < max_chars) {
            if (n == 0)
                putc('?', f);
            else if (n == 1)
                put_ascii(f, (unsigned char)*s);
            else
                fwrite(s, 1, n, f);
        }
        s += n ? n : 1;
        chars++;
    }
    return chars;
}

size_t mt_xml_chars(const char *str)
{
    const char *s = str ? str : "";
    const char *const end = s + strlen(s);
    size_t chars = 0;
    while (s < end) {
        const size_t n = mt_xml_char_len(s, (size_t)(end - s));
        s += n ? n : 1;
        chars++;
    }
    return chars;
}
