/* A set of strings, one copy of each, so that the report's and the export's frames and callsites
 * compare by pointer (not installed). Open addressing, FNV-1a. */
#ifndef MTRACE_STRSET_H
#define MTRACE_STRSET_H

#include <stddef.h>

typedef struct mt_strset {
    char **v;
    size_t n, cap; /* cap: a power of two, or 0 */
} mt_strset_t;

/* The set's copy of s (made on first sight); NULL for s NULL, or when out of memory. */
const char *mt_strset_get(mt_strset_t *set, const char *s);
/* Frees every copy; the set is empty again. */
void mt_strset_fini(mt_strset_t *set);

#endif
