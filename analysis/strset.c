/* A set of strings, one copy of each (strset.h). */
#include "strset.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

const char *mt_strset_get(mt_strset_t *set, const char *s)
{
    if (!s)
        return NULL;
    if ((set->n + 1) * 2 > set->cap) {
        const size_t cap = set->cap ? set->cap * 2 : 1024;
        char **v = calloc(cap, sizeof *v);
        if (!v)
            return NULL;
        for (size_t i = 0; i < set->cap; i++) {
            if (!set->v[i])
                continue;
            size_t j = str_hash(set->v[i]) & (cap - 1);
            while (v[j])
                j = (j + 1) & (cap - 1);
            v[j] = set->v[i];
        }
        free(set->v);
        set->v = v;
        set->cap = cap;
    }
    size_t j = str_hash(s) & (set->cap - 1);
    for (; set->v[j]; j = (j + 1) & (set->cap - 1))
        if (!strcmp(set->v[j], s))
            return set->v[j];
    if (!(set->v[j] = strdup(s)))
        return NULL;
    set->n++;
    return set->v[j];
}

void mt_strset_fini(mt_strset_t *set)
{
    for (size_t i = 0; i < set->cap; i++)
        free(set->v[i]);
    free(set->v);
    memset(set, 0, sizeof *set);
}
