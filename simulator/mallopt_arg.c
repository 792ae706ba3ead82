/* A glibc setting as the replays take it (mtrace-sim --mallopt, mtrace replay and sweep --mallopt):
 * one reader for every command, so that a setting mtrace-sim would refuse is refused before any
 * replay runs. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <malloc.h>
#include <string.h>
#include <strings.h>
#include <stdlib.h>

#include "mtrace/replay.h"

static const struct {
    const char *name;
    int param;
} mallopt_names[] = {
    { "mmap_threshold", M_MMAP_THRESHOLD },
    { "trim_threshold", M_TRIM_THRESHOLD },
    { "top_pad", M_TOP_PAD },
    { "mmap_max", M_MMAP_MAX },
    { "arena_max", M_ARENA_MAX },
    { "arena_test", M_ARENA_TEST },
    { "perturb", M_PERTURB },
    { "mxfast", M_MXFAST },
    { "check_action", M_CHECK_ACTION },
};

int mt_mallopt_parse(const char *arg, int *param, int *value)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return MT_MALLOPT_UNREADABLE;
    char name[64];
    size_t n = (size_t)(eq - arg);
    if (n >= sizeof name)
        return MT_MALLOPT_UNKNOWN; /* longer than any name the table holds */
    memcpy(name, arg, n);
    name[n] = 0;
    const char *bare = !strncasecmp(name, "M_", 2) ? name + 2 : name;
    char *end;
    *param = 0;
    int found = 0;
    for (size_t i = 0; i < sizeof mallopt_names / sizeof mallopt_names[0]; i++)
        if (!strcasecmp(bare, mallopt_names[i].name)) {
            *param = mallopt_names[i].param;
            found = 1;
        }
    if (!found) {
        errno = 0;
        const long v = strtol(name, &end, 0);
        if (*end)
            return MT_MALLOPT_UNKNOWN;
        if (errno == ERANGE || v > INT_MAX || v < INT_MIN)
            return MT_MALLOPT_RANGE;
        *param = (int)v;
    }
    errno = 0;
    const long long v = strtoll(eq + 1, &end, 0);
    const int range = errno == ERANGE, digits = end != eq + 1;
    long long mult = 1, bytes;
    if (*end == 'k' || *end == 'K')
        mult = 1024, end++;
    else if (*end == 'm' || *end == 'M')
        mult = 1024 * 1024, end++;
    if (*end || !digits)
        return MT_MALLOPT_UNREADABLE;
    /* checked multiplication: a wrapped product could land in range (2^44 m wraps to 1 m) */
    if (range || __builtin_mul_overflow(v, mult, &bytes) || bytes > INT_MAX || bytes < INT_MIN)
        return MT_MALLOPT_RANGE;
    *value = (int)bytes;
    return 0;
}

char *mt_mallopt_names(char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof mallopt_names / sizeof mallopt_names[0] && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", mallopt_names[i].name);
    return buf;
}
