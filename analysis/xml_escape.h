/* Text from traces and results put into the SVG and HTML that analysis/ writes (not installed): one
 * rule for both, so that a name shown in the flame graph and in the page is escaped alike. */
#ifndef MTRACE_XML_ESCAPE_H
#define MTRACE_XML_ESCAPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* mt_xml_escape's max_chars: the whole string. */
#define MT_XML_ALL SIZE_MAX

/* Writes at most `max_chars` characters of s (NULL: none) to f, with XML's five special characters
 * as entities (&amp; &lt; &gt; &quot; &apos;: all five are HTML's too, so the text is safe in an
 * element or a quoted attribute of either). Control characters XML 1.0 does not allow (all of C0
 * but tab, newline and carriage return) and each byte that starts no valid UTF-8 character become
 * '?': a trace's names are bytes, and one bad byte must not make the whole SVG unreadable. Returns
 * the number of characters in s, an invalid byte counting as one. */
size_t mt_xml_escape(FILE *f, const char *s, size_t max_chars);

/* The length of the character at s (within len bytes) as mt_xml_escape reads it: mt_utf8_len's
 * (mtrace/file_io.h: 1 for ASCII, 2 to 4 for well-formed UTF-8), but 0, as for a malformed byte,
 * for U+FFFE and U+FFFF, which XML 1.0 forbids. A control counts 1: which ones XML allows is the
 * writer's rule. The gnuplot plots, whose SVG is XML too, take their titles' characters by it. */
size_t mt_xml_char_len(const char *s, size_t len);

/* The number of characters mt_xml_escape counts in s (NULL: 0), to decide whether it fits. */
size_t mt_xml_chars(const char *s);

#endif
