/* Command-line options, one rule for every command of mtrace, trace2wl and mtrace-sim: getopt_long
 * (permuting, --opt=value and --opt value), numbers read by one function each with a range, and
 * usage errors, exit status 2: a bad value is one line naming the option, the value and what it must
 * be (the line says it all); an unknown option, a missing value or operand is its line, then the
 * usage lines (mt_usage_error). Header-only: mtrace-sim and trace2wl
 * are built before cli/ and include it too. */
#ifndef MTRACE_CLI_OPTIONS_H
#define MTRACE_CLI_OPTIONS_H

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The exit status of a usage error, everywhere. */
#define MT_EXIT_USAGE 2

/* The values of --timing and --touch, as mtrace-sim takes them: replay and sweep check them first, so
 * that a bad one is their usage error, not the simulator's. */
#define MT_TIMING_CHOICES                                                                                              \
    {                                                                                                                  \
        "asap", "recorded", NULL                                                                                       \
    }
#define MT_TOUCH_CHOICES                                                                                               \
    {                                                                                                                  \
        "auto", "pages", "ends", "none", NULL                                                                          \
    }

/* -j, --jobs: threads a reader may use, at most; the default is mt_online_cpus(). */
#define MT_JOBS_MAX 1024

/* The CPUs online (1 when the system does not say): the threads a command uses unless -j says. */
static inline unsigned mt_online_cpus(void)
{
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MT_JOBS_MAX ? MT_JOBS_MAX : (unsigned)n;
}

/* A decimal option value from min to max into *out (when out is not NULL), else a message naming the
 * command, the option and the value, and -1. strtoull alone would take " 7", "+7" and "-1" (as
 * ULLONG_MAX). */
static inline int mt_uint_option(const char *cmd, const char *name, const char *v, unsigned long min, unsigned long max,
                                 unsigned long *out)
{
    char *end;
    errno = 0;
    const unsigned long long n = strtoull(v, &end, 10);
    if (!*v || *end || errno || n < min || n > max || v[0] == '-' || v[0] == '+' || v[0] == ' ') {
        fprintf(stderr, "%s: %s '%s': expected a whole number from %lu to %lu\n", cmd, name, v, min, max);
        return -1;
    }
    if (out)
        *out = (unsigned long)n;
    return 0;
}

/* A decimal option value from min to max (no nan, no inf) into *out, else a message and -1. */
static inline int mt_double_option(const char *cmd, const char *name, const char *v, double min, double max,
                                   double *out)
{
    char *end;
    errno = 0;
    const double d = strtod(v, &end);
    if (!*v || *end || errno || !isfinite(d) || d < min || d > max || v[0] == ' ') {
        fprintf(stderr, "%s: %s '%s': expected a number from %g to %g\n", cmd, name, v, min, max);
        return -1;
    }
    *out = d;
    return 0;
}

/* The index of v in the NULL-ended list choices, else a message listing them and -1. */
static inline int mt_choice_option(const char *cmd, const char *name, const char *v, const char *const *choices)
{
    for (int i = 0; choices[i]; i++)
        if (!strcmp(v, choices[i]))
            return i;
    fprintf(stderr, "%s: %s '%s': expected one of", cmd, name, v);
    for (int i = 0; choices[i]; i++)
        fprintf(stderr, "%s %s", i ? "," : "", choices[i]);
    fputc('\n', stderr);
    return -1;
}

/* getopt_long that names a bad option itself, as "CMD: unknown option '--bogus'" or "CMD: option
 * '--json' needs a value", and then returns '?'. shortopts as getopt's, without a leading ':'.
 * A command sets optind to 0, not 1, before its first call: glibc then starts afresh, its ordering
 * (permuting, or '+') too, which optind = 1 keeps from mtrace's own parse of its options. */
static inline int mt_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
                            const struct option *longopts)
{
    char so[128];
    const int plus = shortopts[0] == '+';
    snprintf(so, sizeof so, "%s:%s", plus ? "+" : "", shortopts + plus);
    opterr = 0;
    const int c = getopt_long(argc, argv, so, longopts, NULL);
    if (c == '?' || c == ':') {
        const char *what = c == '?' ? "unknown option" : "a value is missing after";
        const char *arg = optind >= 1 && optind <= argc ? argv[optind - 1] : "";
        if (!strncmp(arg, "--", 2) || !optopt)
            fprintf(stderr, "%s: %s '%s'\n", cmd, what, arg);
        else
            fprintf(stderr, "%s: %s '-%c'\n", cmd, what, optopt);
        return '?';
    }
    return c;
}

/* The one operand left after the options (argv[optind]), else a message naming what is missing or
 * extra, and NULL. */
static inline const char *mt_one_operand(const char *cmd, const char *what, int argc, char **argv)
{
    if (optind == argc - 1)
        return argv[optind];
    if (optind >= argc)
        fprintf(stderr, "%s: no %s given\n", cmd, what);
    else
        fprintf(stderr, "%s: one %s only ('%s' is one too many)\n", cmd, what, argv[argc - 1]);
    return NULL;
}

/* The usage lines of a help text (up to its first empty line) and where the rest is, to stderr:
 * what a usage error prints after its one line. */
static inline int mt_usage_error(const char *prog, const char *help)
{
    const char *end = strstr(help, "\n\n");
    fprintf(stderr, "%.*s\n'%s --help' describes every option.\n", end ? (int)(end - help) : (int)strlen(help), help,
            prog);
    return MT_EXIT_USAGE;
}

#endif
