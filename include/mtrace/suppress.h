/* Leak suppressions: a file of fnmatch(3) patterns, one a line, matched against the function names
 * of a leak's stack (the names mtrace report prints: demangled, as mt_symbol_label makes them).
 * A leak is suppressed when any frame of its stack matches any pattern. '#' starts a comment line;
 * blank lines are skipped; a leading "leak:" (heaptrack's and LeakSanitizer's prefix) is accepted, so
 * their files of plain names work unchanged. Spaces around a pattern are dropped. */
#ifndef MTRACE_SUPPRESS_H
#define MTRACE_SUPPRESS_H

#include <stddef.h>

#include "mtrace/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_suppressions {
    char **pattern;
    size_t n;
} mt_suppressions_t;

/* Reads the file. 0, or negative with the message (file, line) in err; s is then empty. */
int mt_suppressions_load(mt_suppressions_t *s, const char *path, mt_error_t *err);
/* The first pattern that matches `function`, or NULL. */
const char *mt_suppressions_match(const mt_suppressions_t *s, const char *function);
void mt_suppressions_free(mt_suppressions_t *s);

#ifdef __cplusplus
}
#endif
#endif
