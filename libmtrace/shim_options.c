/* Every MTRACE_* environment option, in one table. README.md documents the same table. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/auxv.h>
#include <string.h>

#include "shim.h"

typedef enum { OPT_PATH, OPT_UINT, OPT_MIB } opt_kind_t;

typedef struct opt_desc {
    const char *name;
    opt_kind_t kind;
    size_t offset;
    const char *dflt;
    unsigned long long min, max; /* numbers: a value outside is reported and the default used */
} opt_desc_t;

#define OPT(name, kind, field, dflt, min, max)                                                                         \
    {                                                                                                                  \
        name, kind, offsetof(mt_options_t, field), dflt, min, max                                                      \
    }

static const opt_desc_t opt_table[] = {
    OPT("MTRACE_OUT", OPT_PATH, out, "mtrace.%p.mtr", 0, 0),
    OPT("MTRACE_INDEX", OPT_PATH, index, "", 0, 0),
    OPT("MTRACE_STACKS", OPT_UINT, stacks, "0", 0, 64),
    OPT("MTRACE_RSS_MS", OPT_UINT, rss_ms, "10", 0, 1000000000u),
    OPT("MTRACE_PAUSED", OPT_UINT, paused, "0", 0, 1000000000u),
    OPT("MTRACE_FOLLOW_FORK", OPT_UINT, follow_fork, "1", 0, 1000000000u),
    OPT("MTRACE_MAX_SIZE", OPT_MIB, max_bytes, "65536", 1, UINT64_MAX >> 20),
    OPT("MTRACE_QUIET", OPT_UINT, quiet, "0", 0, 1000000000u),
    OPT("MTRACE_CLOCK_EVERY", OPT_UINT, clock_every, "8", 0, 1024),
};

/* A decimal number up to max, without locale or errno side effects (the shim may run before the
 * program's main); 0, or -1 for anything else. */
static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
    unsigned long long v = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (max - (unsigned)(*s - '0')) / 10)
            return -1;
        v = v * 10 + (unsigned)(*s - '0');
    }
    *out = v;
    return 0;
}

void mt_options_read(mt_options_t *opt)
{
    /* A setuid or setgid program (secure-execution mode) is not traced at all: with no option
     * trusted, the trace would land where the caller's working directory says, owned by the
     * program's user. */
    opt->secure = getauxval(AT_SECURE) != 0;
    size_t bad[sizeof opt_table / sizeof opt_table[0]], nbad = 0;
    for (size_t i = 0; i < sizeof opt_table / sizeof opt_table[0]; i++) {
        const opt_desc_t *d = &opt_table[i];
        /* secure_getenv: a setuid program must not write files where its caller points it. */
        const char *v = secure_getenv(d->name);
        if (!v)
            v = d->dflt;
        char *field = (char *)opt + d->offset;
        if (d->kind == OPT_PATH) {
            const size_t cap = sizeof opt->out;
            size_t n = strlen(v);
            if (n >= cap)
                n = cap - 1;
            memcpy(field, v, n);
            field[n] = 0;
            continue;
        }
        unsigned long long n = 0;
        if (parse_uint(v, d->max, &n) < 0 || n < d->min) {
            bad[nbad++] = i;
            parse_uint(d->dflt, UINT64_MAX, &n);
        }
        if (d->kind == OPT_MIB)
            *(uint64_t *)field = (uint64_t)n << 20;
        else
            *(unsigned *)field = (unsigned)n;
    }
    /* Said once all are read: MTRACE_QUIET may come after the bad one. */
    for (size_t k = 0; k < nbad; k++) {
        const opt_desc_t *d = &opt_table[bad[k]];
        mt_say("mtrace: %s=%s is not a number from %llu to %llu; using %s", d->name, secure_getenv(d->name), d->min,
               d->max, d->dflt);
    }
}
