/* Leak suppressions: reading the pattern file and matching a function name against it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/suppress.h"

void mt_suppressions_free(mt_suppressions_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->pattern[i]);
    free(s->pattern);
    s->pattern = NULL;
    s->n = 0;
}

/* The pattern of one line, trimmed and without its "leak:" prefix; NULL for a blank or comment line. */
static char *line_pattern(char *line)
{
    char *p = line + strspn(line, " \t\r\n");
    if (!*p || *p == '#')
        return NULL;
    if (!strncmp(p, "leak:", 5))
        p += 5;
    p += strspn(p, " \t");
    size_t len = strlen(p);
    while (len && strchr(" \t\r\n", p[len - 1]))
        p[--len] = 0;
    return len ? p : NULL;
}

int mt_suppressions_load(mt_suppressions_t *s, const char *path, mt_error_t *err)
{
    memset(s, 0, sizeof *s);
    FILE *f = fopen(path, "r");
    if (!f) {
        const int e = errno;
        snprintf(err->msg, sizeof err->msg, "%s: cannot read the suppressions: %s", path, strerror(e));
        return -e;
    }
    char *line = NULL;
    size_t cap = 0, line_cap = 0;
    ssize_t len;
    int rc = 0;
    for (unsigned no = 1; (len = getline(&line, &line_cap, f)) >= 0; no++) {
        if (strlen(line) != (size_t)len) {
            snprintf(err->msg, sizeof err->msg, "%s:%u: a NUL byte in the line; expected a pattern", path, no);
            rc = -EINVAL;
            break;
        }
        const char *pat = line_pattern(line);
        if (!pat)
            continue;
        if (s->n == cap) {
            cap = cap ? cap * 2 : 16;
            char **np = realloc(s->pattern, cap * sizeof *np);
            if (!np) {
                rc = -ENOMEM;
                break;
            }
            s->pattern = np;
        }
        if (!(s->pattern[s->n] = strdup(pat))) {
            rc = -ENOMEM;
            break;
        }
        s->n++;
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err->msg, sizeof err->msg, "%s: cannot read the suppressions: %s", path, strerror(errno));
        rc = -EIO;
    }
    if (rc == -ENOMEM)
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", path);
    free(line);
    fclose(f);
    if (rc < 0)
        mt_suppressions_free(s);
    return rc;
}

const char *mt_suppressions_match(const mt_suppressions_t *s, const char *function)
{
    for (size_t i = 0; function && i < s->n; i++)
        if (fnmatch(s->pattern[i], function, 0) == 0)
            return s->pattern[i];
    return NULL;
}
