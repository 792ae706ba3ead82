/* mtrace export: the command line of analysis/export.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_util.h"
#include "export_cmd.h"
#include "help_text.h"
#include "mtrace/export.h"
#include "trace_list.h"

/* One trace's export to o->dir, and its line on stderr. 0, 1 (a damaged trace: what came before the
 * damage is written), or the exit status of a failure. */
static int export_one(const char *trace, const mt_export_opts_t *o)
{
    mt_export_stats_t st;
    mt_error_t err;
    const int rc = mt_export_trace(trace, o, &st, &err);
    if (rc < 0)
        return mt_fail(&err);
    if (rc > 0) {
        fprintf(stderr, "mtrace: %s; exported the %llu call records before it to %s\n", err.msg,
                (unsigned long long)st.records, o->dir);
        return 1;
    }
    fprintf(
        stderr,
        "mtrace: exported %s to %s: %llu call records, %llu stacks, %llu threads, %llu RSS samples (trace id %llu)\n",
        trace, o->dir, (unsigned long long)st.records, (unsigned long long)st.stacks, (unsigned long long)st.threads,
        (unsigned long long)st.rss, (unsigned long long)st.trace_id);
    return 0;
}

/* A path into out, of at most PATH_MAX bytes: 0, or -1 when it would be longer (then empty). */
static int path_of(char out[PATH_MAX], const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int path_of(char out[PATH_MAX], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(out, PATH_MAX, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= PATH_MAX) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

/* Removes what export_many made under tmp: sub-directories 0 .. n-1 and their tables, the joined
 * tables not yet renamed, tmp itself. */
static void remove_scratch(const char *tmp, size_t n)
{
    char path[PATH_MAX];
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < MT_EXPORT_NTABLES; k++) {
            path_of(path, "%s/%zu/%s.rowbinary", tmp, i, mt_export_table_names[k]);
            unlink(path);
        }
        path_of(path, "%s/%zu", tmp, i);
        rmdir(path);
    }
    for (int k = 0; k < MT_EXPORT_NTABLES; k++) {
        path_of(path, "%s/%s.rowbinary", tmp, mt_export_table_names[k]);
        unlink(path);
    }
    rmdir(tmp);
}

/* Appends the file at `from` to fd. 0 or -1 (errno set). */
static int append_file(int fd, const char *from)
{
    const int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return errno == ENOENT ? 0 : -1; /* a table with no rows may be absent: nothing to add */
    char buf[1 << 16];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        for (ssize_t off = 0; off < n;) {
            const ssize_t w = write(fd, buf + off, (size_t)(n - off));
            if (w < 0) {
                const int e = errno;
                close(in);
                errno = e;
                return -1;
            }
            off += w;
        }
    const int e = errno;
    close(in);
    errno = e;
    return n < 0 ? -1 : 0;
}

/* Several traces into one set of tables: each exported on its own into a scratch directory in
 * o->dir, then each table's files joined in the traces' order (RowBinary rows follow each other;
 * every row carries its trace's id) and renamed into place together. A trace that cannot be read
 * stops it and leaves nothing; a damaged one gives its rows before the damage, and the exit status
 * is then 1. */
static int export_many(const mt_trace_list_t *traces, const mt_export_opts_t *o)
{
    if (mkdir(o->dir, 0777) < 0 && errno != EEXIST) {
        fprintf(stderr, "mtrace export: %s: cannot make the directory: %s\n", o->dir, strerror(errno));
        return 1;
    }
    char tmp[PATH_MAX];
    /* Room for the scratch paths under it: an index and a table's name. */
    if (strlen(o->dir) > PATH_MAX - 128) {
        fprintf(stderr, "mtrace export: %s: the directory's path is too long\n", o->dir);
        return 1;
    }
    if (path_of(tmp, "%s/.mtrace-export.XXXXXX", o->dir) < 0 || !mkdtemp(tmp)) {
        fprintf(stderr, "mtrace export: %s: cannot make a scratch directory: %s\n", o->dir, strerror(errno));
        return 1;
    }
    int status = 0;
    size_t done = 0;
    uint64_t records = 0;
    for (; done < traces->n; done++) {
        char sub[PATH_MAX];
        path_of(sub, "%s/%zu", tmp, done);
        mt_export_opts_t one = *o;
        one.dir = sub;
        mt_export_stats_t st;
        mt_error_t err;
        const int rc = mt_export_trace(traces->v[done], &one, &st, &err);
        if (rc < 0) {
            remove_scratch(tmp, done + 1);
            return mt_fail(&err);
        }
        records += st.records;
        if (rc > 0) {
            fprintf(stderr, "mtrace: %s; exported the %llu call records before it\n", err.msg,
                    (unsigned long long)st.records);
            status = 1;
        } else {
            fprintf(stderr,
                    "mtrace: exported %s: %llu call records, %llu stacks, %llu threads, %llu RSS samples (trace id "
                    "%llu)\n",
                    traces->v[done], (unsigned long long)st.records, (unsigned long long)st.stacks,
                    (unsigned long long)st.threads, (unsigned long long)st.rss, (unsigned long long)st.trace_id);
        }
    }
    for (int k = 0; k < MT_EXPORT_NTABLES; k++) {
        char joined[PATH_MAX], part[PATH_MAX];
        path_of(joined, "%s/%s.rowbinary", tmp, mt_export_table_names[k]);
        const int fd = open(joined, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        int ok = fd >= 0;
        for (size_t i = 0; ok && i < traces->n; i++) {
            path_of(part, "%s/%zu/%s.rowbinary", tmp, i, mt_export_table_names[k]);
            ok = append_file(fd, part) == 0;
        }
        if (fd >= 0 && close(fd) < 0)
            ok = 0;
        if (!ok) {
            fprintf(stderr, "mtrace export: %s: %s\n", joined, strerror(errno));
            remove_scratch(tmp, traces->n);
            return 1;
        }
    }
    for (int k = 0; k < MT_EXPORT_NTABLES; k++) {
        char from[PATH_MAX], to[PATH_MAX];
        path_of(from, "%s/%s.rowbinary", tmp, mt_export_table_names[k]);
        path_of(to, "%s/%s.rowbinary", o->dir, mt_export_table_names[k]);
        if (rename(from, to) < 0) {
            fprintf(stderr, "mtrace export: %s: %s\n", to, strerror(errno));
            for (int j = 0; j < k; j++) { /* the tables renamed already: none of a half-done set stays */
                path_of(to, "%s/%s.rowbinary", o->dir, mt_export_table_names[j]);
                unlink(to);
            }
            remove_scratch(tmp, traces->n);
            return 1;
        }
    }
    remove_scratch(tmp, traces->n);
    fprintf(stderr, "mtrace: exported %zu traces to %s: %llu call records\n", traces->n, o->dir,
            (unsigned long long)records);
    return status;
}

int mt_export_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "output", required_argument, NULL, 'o' }, { "trace-id", required_argument, NULL, 'i' },
        { "force", no_argument, NULL, 'f' },        { "skip-frames", required_argument, NULL, 's' },
        { "no-auto-skip", no_argument, NULL, 'n' }, { "jobs", required_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },         { NULL, 0, NULL, 0 },
    };
    mt_export_opts_t o = { .jobs = mt_online_cpus() };
    const char *skip[64];
    o.skip = skip;
    int force = 0, c;
    unsigned long id, jobs;
    optind = 0; /* afresh: see mt_getopt */
    while ((c = mt_getopt("mtrace export", argc, argv, "o:j:h", opts)) != -1) {
        switch (c) {
        case 'o':
            o.dir = optarg;
            break;
        case 'i':
            if (mt_uint_option("mtrace export", "--trace-id", optarg, 1, ULONG_MAX, &id) < 0)
                return MT_EXIT_USAGE;
            o.trace_id = id;
            break;
        case 'f':
            force = 1;
            break;
        case 's': /* comma-separated fnmatch patterns, as report takes them */
            for (char *save = NULL, *p = strtok_r(optarg, ",", &save); p && o.nskip < 64;
                 p = strtok_r(NULL, ",", &save))
                skip[o.nskip++] = p;
            break;
        case 'n':
            o.no_auto_skip = 1;
            break;
        case 'j':
            if (mt_uint_option("mtrace export", "--jobs", optarg, 1, MT_JOBS_MAX, &jobs) < 0)
                return MT_EXIT_USAGE;
            o.jobs = (unsigned)jobs;
            break;
        case 'h':
            return mt_help_print("export");
        default:
            return mt_help_usage_error("export");
        }
    }
    if (optind >= argc || !o.dir) {
        if (optind < argc)
            fprintf(stderr, "mtrace export: no -o DIR given\n");
        else
            fprintf(stderr, "mtrace export: no TRACE given\n");
        return mt_help_usage_error("export");
    }
    mt_trace_list_t traces = { 0 };
    struct stat st;
    const int one = argc - optind == 1 && !(stat(argv[optind], &st) == 0 && S_ISDIR(st.st_mode));
    if (one) { /* one file: read as it is, so that a file that is no trace says why */
        if (!(traces.v = malloc(sizeof *traces.v)) || !(traces.v[0] = strdup(argv[optind]))) {
            free(traces.v);
            fprintf(stderr, "mtrace export: out of memory\n");
            return 1;
        }
        traces.n = traces.cap = 1;
    } else {
        if (mt_collect_traces("mtrace export", argc, argv, &optind, &traces) < 0) {
            mt_trace_list_free(&traces);
            return 1;
        }
        if (optind < argc) { /* bad input, not a usage error: exit 1 */
            if (stat(argv[optind], &st) < 0)
                fprintf(stderr, "mtrace export: %s: cannot open: %s\n", argv[optind], strerror(errno));
            else
                fprintf(stderr, "mtrace export: %s: neither a trace nor a directory of traces\n", argv[optind]);
            mt_trace_list_free(&traces);
            return 1;
        }
    }
    if (traces.n > 1 && o.trace_id) {
        fprintf(stderr, "mtrace export: --trace-id names one trace's rows; %zu traces each take their own\n", traces.n);
        mt_trace_list_free(&traces);
        return mt_help_usage_error("export");
    }
    for (int k = 0; k < MT_EXPORT_NTABLES && !force; k++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s.rowbinary", o.dir, mt_export_table_names[k]);
        if (access(path, F_OK) == 0) {
            fprintf(stderr, "mtrace: %s exists; remove it or pass --force\n", path);
            mt_trace_list_free(&traces);
            return 2;
        }
    }
    const int rc = traces.n == 1 ? export_one(traces.v[0], &o) : export_many(&traces, &o);
    mt_trace_list_free(&traces);
    return rc;
}
