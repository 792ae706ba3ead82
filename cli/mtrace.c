/* mtrace: the front end. One command per pipeline step, each a function in the table at the end;
 * record (record_cmd.c), info (info_cmd.c) and dump (dump_cmd.c) live in files of their own
 * (commands.h). */
#define _GNU_SOURCE
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "mtrace/workload.h"
#include "mtrace/json_reader.h"
#include "mtrace/compare.h"
#include "mtrace/report.h"
#include "mtrace/trace_reader.h"
#include "cli_util.h"
#include "commands.h"
#include "mtrace/workload_format.h"
#include "trace_list.h"
#include "help_text.h"
#include "convert_cli.h"
#include "mtrace/replay.h"
#include "sweep.h"
#include "mtrace/report_diff.h"
#include "export_cmd.h"
#include "mtrace/plot.h"
#include "mtrace/file_io.h" /* mt_put_safe: strings from files are shown as \xNN, never sent to the terminal */
#include "mtrace/tmp_cleanup.h"

extern char **environ;

/* Values --timing and --touch take (mtrace-sim's): checked here, so that a bad one is replay's usage
 * error rather than the simulator's. */
static const char *const mt_timing_names[] = MT_TIMING_CHOICES, *const mt_touch_names[] = MT_TOUCH_CHOICES;

/* ---- mtrace pack ------------------------------------------------------------------------------- */

static int cmd_pack(int argc, char **argv)
{
    static const struct option opts[] = {
        { "output", required_argument, 0, 'o' },
        { "level", required_argument, 0, 'l' },
        { "plain", no_argument, 0, 'P' },
        { "force", no_argument, 0, 'f' },
        { "jobs", required_argument, 0, 'j' },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    const char *out = NULL;
    unsigned long level = 9, njobs;
    int force = 0, c;
    unsigned flags = 0, jobs = mt_online_cpus();
    optind = 0; /* afresh: see mt_getopt */
    while ((c = mt_getopt("mtrace pack", argc, argv, "o:l:fhj:", opts)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'j':
            if (mt_uint_option("mtrace pack", "--jobs", optarg, 1, MT_JOBS_MAX, &njobs) < 0)
                return MT_EXIT_USAGE;
            jobs = (unsigned)njobs;
            break;
        case 'l':
            if (mt_uint_option("mtrace pack", "--level", optarg, 1, 22, &level) < 0)
                return MT_EXIT_USAGE;
            break;
        case 'P':
            flags |= MT_PACK_PLAIN;
            break;
        case 'f':
            force = 1;
            break;
        case 'h':
            return mt_help_print("pack");
        default:
            return mt_help_usage_error("pack");
        }
    }
    const char *in = mt_one_operand("mtrace pack", "TRACE", argc, argv);
    if (!in)
        return mt_help_usage_error("pack");
    char def[PATH_MAX];
    if (!out) {
        const size_t n = strlen(in);
        if (n > 4 && !strcmp(in + n - 4, ".mtr"))
            snprintf(def, sizeof def, "%.*s.mtz", (int)(n - 4), in);
        else
            snprintf(def, sizeof def, "%s.mtz", in);
        out = def;
    }
    if (!force && access(out, F_OK) == 0) {
        fprintf(stderr, "mtrace: %s exists; remove it or pass --force\n", out);
        return 2;
    }
    mt_error_t err;
    if (mt_trace_pack_jobs(in, out, (int)level, flags, jobs, &err) < 0)
        return mt_fail(&err);
    struct stat a, b;
    if (stat(in, &a) == 0 && stat(out, &b) == 0)
        fprintf(stderr, "mtrace: packed %s (%lld bytes) into %s (%lld bytes, %.1fx)\n", in, (long long)a.st_size, out,
                (long long)b.st_size, b.st_size ? (double)a.st_size / (double)b.st_size : 0.0);
    return 0;
}

/* ---- dispatch ---------------------------------------------------------------------------------- */

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} command_t;

static int cmd_convert(int argc, char **argv)
{
    return mt_convert_main("mtrace convert", argc, argv);
}

/* ---- mtrace replay and compare ---------------------------------------------------------------- */

static int cmd_replay(int argc, char **argv)
{
    static const struct option opts[] = {
        { "allocator", required_argument, 0, 'a' },
        { "mallopt", required_argument, 0, 'm' },
        { "tunables", required_argument, 0, 'T' },
        { "json", required_argument, 0, 'j' },
        { "rss-series", required_argument, 0, 's' },
        { "timing", required_argument, 0, 't' },
        { "touch", required_argument, 0, 'u' },
        { "repeat", required_argument, 0, 'r' },
        { "quiet", no_argument, 0, 'q' },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    mt_replay_opts_t o = { .repeat = 1 };
    unsigned long repeat = 1;
    int c;
    optind = 0; /* afresh: see mt_getopt */
    while ((c = mt_getopt("mtrace replay", argc, argv, "h", opts)) != -1) {
        switch (c) {
        case 'a':
        case 'm':
            if ((c == 'a' ? o.nallocators : o.nmallopts) == MT_REPLAY_MAX) {
                fprintf(stderr, "mtrace replay: at most %d %s\n", MT_REPLAY_MAX, c == 'a' ? "allocators" : "settings");
                return 2;
            }
            if (c == 'm' && mt_mallopt_usage("mtrace replay", optarg, optarg) < 0)
                return 2;
            if (c == 'a')
                o.allocators[o.nallocators++] = optarg;
            else
                o.mallopts[o.nmallopts++] = optarg;
            break;
        case 'T':
            o.tunables = optarg;
            break;
        case 'j':
            o.json = optarg;
            break;
        case 's':
            o.series = optarg;
            break;
        case 't':
            if (mt_choice_option("mtrace replay", "--timing", optarg, mt_timing_names) < 0)
                return MT_EXIT_USAGE;
            o.timing = optarg;
            break;
        case 'u':
            if (mt_choice_option("mtrace replay", "--touch", optarg, mt_touch_names) < 0)
                return MT_EXIT_USAGE;
            o.touch = optarg;
            break;
        case 'r':
            if (mt_uint_option("mtrace replay", "--repeat", optarg, 1, MT_REPLAY_MAX_REPEAT, &repeat) < 0)
                return MT_EXIT_USAGE;
            o.repeat = (int)repeat;
            break;
        case 'q':
            o.quiet = 1;
            break;
        case 'h':
            return mt_help_print("replay");
        default:
            return mt_help_usage_error("replay");
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "mtrace replay: %s\n", optind == argc ? "no WORKLOAD given" : "one WORKLOAD only");
        return mt_help_usage_error("replay");
    }
    o.workload = argv[optind];
    if (!o.nallocators)
        o.allocators[o.nallocators++] = "glibc";
    /* A bad workload is reported once, here, rather than by every child. */
    mt_error_t err;
    mt_wl_t *w;
    if (mt_wl_open(&w, o.workload, &err) < 0)
        return mt_fail(&err);
    mt_wl_close(w);
    const int total = o.nallocators * o.repeat;
    char(*results)[4096] = calloc((size_t)total, sizeof *results);
    const char **paths = calloc((size_t)total, sizeof *paths);
    if (!results || !paths) {
        free(results);
        free(paths);
        fprintf(stderr, "mtrace: out of memory\n");
        return 1;
    }
    int n = 0;
    mt_replay_outcome_t out;
    const int ran = mt_replay_run(&o, results, &n, &out, &err);
    int rc = mt_replay_exit_status(ran, &out, &err);
    /* A table for several allocators, and for the runs of one: its median and spread. Runs in which
     * calls failed are in it too; the exit status (3) still says they failed. */
    if (ran == 0 && n > 1) {
        for (int i = 0; i < n; i++)
            paths[i] = results[i];
        printf("\n");
        if (mt_compare_print(stdout, paths, n, MT_TABLE_TEXT, 0, &err) < 0)
            rc = mt_fail(&err);
    }
    if (!o.json)
        for (int i = 0; i < n; i++)
            unlink(results[i]);
    free(results);
    free(paths);
    return rc;
}

static int cmd_compare(int argc, char **argv)
{
    static const struct option opts[] = {
        { "csv", no_argument, 0, 'c' },
        { "json", no_argument, 0, 'j' },
        { "recordings", no_argument, 0, 'r' },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    mt_table_fmt_t fmt = MT_TABLE_TEXT;
    unsigned flags = 0;
    int c;
    optind = 0; /* afresh: see mt_getopt */
    while ((c = mt_getopt("mtrace compare", argc, argv, "h", opts)) != -1) {
        switch (c) {
        case 'c':
            fmt = MT_TABLE_CSV;
            break;
        case 'j':
            fmt = MT_TABLE_JSON;
            break;
        case 'r':
            flags |= MT_COMPARE_RECORDINGS;
            break;
        case 'h':
            return mt_help_print("compare");
        default:
            return mt_help_usage_error("compare");
        }
    }
    const int n = argc - optind;
    if (n < 1 || n > 256) {
        fprintf(stderr, "mtrace compare: %s\n", n < 1 ? "no RESULT.json given" : "at most 256 results");
        return mt_help_usage_error("compare");
    }
    const char *const *paths = (const char *const *)argv + optind;
    mt_error_t err;
    return mt_compare_print(stdout, paths, n, fmt, flags, &err) < 0 ? mt_fail(&err) : 0;
}

/* ---- mtrace report ------------------------------------------------------------------------------ */

#define SKIP_MAX 64 /* --skip-frames patterns */

/* Splits a --skip-frames list at its commas into `v` (up to `cap` patterns); the count. */
static size_t split_patterns(char *list, const char **v, size_t n, size_t cap)
{
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && n < cap; tok = strtok_r(NULL, ",", &save))
        if (*tok)
            v[n++] = tok;
    return n;
}

/* The options report and diff share (their long options' values): 1 if c was one of them, 0 if not,
 * -1 after a message for a bad value. */
static int report_diff_option(const char *cmd, int c, mt_table_fmt_t *fmt, const char **html, unsigned *top,
                              mt_report_opts_t *o, const char *skip[SKIP_MAX])
{
    unsigned long n;
    switch (c) {
    case 'J':
        *fmt = MT_TABLE_JSON;
        return 1;
    case 'H':
        *html = optarg;
        return 1;
    case 't':
        if (mt_uint_option(cmd, "--top", optarg, 0, 1000000, &n) < 0)
            return -1;
        *top = (unsigned)n;
        return 1;
    case 's':
        o->nskip = split_patterns(optarg, skip, o->nskip, SKIP_MAX);
        return 1;
    case 'n':
        o->no_auto_skip = 1;
        return 1;
    default:
        return 0;
    }
}

/* ---- several traces as one report ---------------------------------------------------------------- */

static int out_of_memory(void)
{
    fprintf(stderr, "mtrace report: out of memory\n");
    return 1;
}

/* The option that named an output of the stacks (--folded, --callsites-csv, and --flamegraph when
 * flame_is_users), or NULL. */
static const char *stacks_asked(const mt_report_opts_t *o, int flame_is_users)
{
    return o->folded                         ? "--folded"
           : o->callsites_csv                ? "--callsites-csv"
           : flame_is_users && o->flamegraph ? "--flamegraph"
                                             : NULL;
}

static void no_stacks_error(mt_error_t *err, const char *path, const char *asked)
{
    /* a path that long is cut: the message still says what to do */
    snprintf(err->msg, sizeof err->msg, "%.900s: the trace has no stacks for %s: record it with --stacks N", path,
             asked);
}

static void say_no_stacks(const char *path, const char *asked)
{
    mt_error_t err;
    no_stacks_error(&err, path, asked);
    mt_fail(&err);
}

/* Whether the user named an output of the stacks for a trace recorded without them: then says so
 * (the file is never written, and a report without it must not pass for the whole that was asked)
 * and returns 1. */
static int no_stacks_for(const mt_report_opts_t *o, int flame_is_users, const mt_report_t *r)
{
    const char *asked = stacks_asked(o, flame_is_users);
    if (!asked || r->has_stacks)
        return 0;
    say_no_stacks(r->path, asked);
    return 1;
}

/* The same from the trace's header, before a pass over it: a recorder run without MTRACE_STACKS
 * says so there (max_frames 0). One whose stacks could not be taken after all is found by the pass
 * (no_stacks_for). A trace that cannot be opened is left to the pass, for its error. */
static int no_stacks_in_header(const char *path, const mt_report_opts_t *o)
{
    const char *asked = stacks_asked(o, 1);
    mt_trace_t *t;
    mt_error_t err;
    if (!asked || mt_trace_open(&t, path, &err) < 0)
        return 0;
    const int none = !mt_trace_header(t)->max_frames;
    mt_trace_close(t);
    if (none)
        say_no_stacks(path, asked);
    return none;
}

/* The files a report is to write, each tried before any trace is read (mt_out_try): a folder that
 * is missing or not writable is said at once, not after a pass over the traces. 0, or the exit
 * status with the error said. */
static int try_report_outputs(const char *html, const mt_report_opts_t *o)
{
    const char *const outs[] = { html, o->folded, o->flamegraph, o->callsites_csv };
    mt_error_t err;
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
        if (outs[i] && mt_out_try(outs[i], &err) < 0)
            return mt_fail(&err);
    return 0;
}

/* A trace of several that cannot be read (its error said on stderr, as it comes) or that lacks the
 * stacks asked for: the rest are still reported, as wc(1) and du(1) go on past a file they cannot
 * read, and the totals, of the traces read, name it (text and JSON) so as never to pass for the
 * whole. 0, or -ENOMEM. */
static int report_many_failed(mt_report_total_t *total, const char *path, const mt_error_t *err)
{
    fflush(stdout); /* the reports before it, then its error */
    mt_fail(err);
    return mt_report_total_fail(total, path, err->msg);
}

/* The outputs of several traces' report that hold all of them at once: written only when every
 * trace was read (one trace's file, or some traces', would pass for all of them). */
enum { MANY_FOLDED, MANY_FLAME, MANY_CSV, MANY_NOUT };

/* Opens the outputs asked for, before the work, as one trace's report does. 0, or the exit status
 * with the error said. */
static int many_outputs_open(mt_out_t out[MANY_NOUT], const mt_report_opts_t *o)
{
    const char *const path[MANY_NOUT] = { o->folded, o->flamegraph, o->callsites_csv };
    mt_error_t err;
    for (int k = 0; k < MANY_NOUT; k++)
        if (path[k] && mt_out_open(&out[k], path[k], &err) < 0)
            return mt_fail(&err);
    return 0;
}

/* Writes the outputs opened from the totals and renames them into place: the folded stacks and the
 * flame graph of every process (each under its "COMMAND (pid N)" frame), the merged callsites. The
 * exit status. */
static int many_outputs_write(mt_out_t out[MANY_NOUT], const mt_report_total_t *total, const mt_report_opts_t *o)
{
    const char *weight = o->flame_weight ? o->flame_weight : "bytes";
    char title[200];
    snprintf(title, sizeof title, "mtrace: %" PRIu64 " traces (%s)", total->traces, weight);
    int wrc = 0;
    if (out[MANY_FOLDED].f)
        wrc = mt_folded_write(out[MANY_FOLDED].f, total->folded, total->nfolded);
    if (wrc == 0 && out[MANY_FLAME].f)
        wrc = mt_flamegraph_svg(out[MANY_FLAME].f, title, weight, total->folded, total->nfolded);
    if (wrc == 0 && out[MANY_CSV].f)
        wrc = mt_report_total_callsites_csv(total, out[MANY_CSV].f);
    if (wrc < 0 && wrc != -EIO) /* a failed write is the commit's to say, with its reason */
        return out_of_memory();
    mt_error_t err;
    for (int k = 0; k < MANY_NOUT; k++)
        if (out[k].f && mt_out_commit(&out[k], &err) < 0)
            return mt_fail(&err);
    return 0;
}

/* The report of each trace in turn (one in memory at a time), then what adds up across them. A
 * trace that cannot be read is said and skipped (report_many_failed): exit 1. The JSON is one
 * object whatever happens, closed even when memory runs out ("total": null). --folded and
 * --flamegraph draw the stacks of every trace, each process under a frame of its own;
 * --callsites-csv writes the callsites merged across the traces; each only when every trace was
 * read (many_outputs_write). */
static int report_many(const mt_trace_list_t *traces, const mt_report_opts_t *o, mt_table_fmt_t fmt, const char *html,
                       unsigned top)
{
    if (html || fmt == MT_TABLE_CSV) {
        fprintf(stderr, "mtrace report: several traces give text or --json, not %s\n", html ? "--html" : "--csv");
        return MT_EXIT_USAGE;
    }
    int rc = try_report_outputs(NULL, o);
    if (rc)
        return rc;
    mt_report_opts_t each = *o;
    each.folded = each.flamegraph = each.callsites_csv = NULL;
    each.keep_folded = o->folded || o->flamegraph;
    mt_out_t out[MANY_NOUT] = { { 0 } };
    mt_error_t err;
    if ((rc = many_outputs_open(out, o)) != 0) {
        for (int k = 0; k < MANY_NOUT; k++)
            mt_out_abort(&out[k]);
        return rc;
    }
    mt_report_total_t total = { 0 };
    if (fmt == MT_TABLE_JSON)
        printf("{\"kind\":\"reports\",\"reports\":[\n");
    int printed = 0, out_of_mem = 0;
    for (size_t i = 0; i < traces->n && !out_of_mem; i++) {
        const char *path = traces->v[i];
        mt_report_t r;
        const int built = mt_report_build(&r, path, &each, &err);
        const char *asked = built < 0 || r.has_stacks ? NULL : stacks_asked(o, 1);
        if (asked) /* as one trace's report: a file asked for would lack it */
            no_stacks_error(&err, path, asked);
        if (built < 0 || asked) {
            mt_report_free(&r);
            rc = 1;
            out_of_mem = report_many_failed(&total, path, &err) < 0;
            continue;
        }
        if (printed++)
            printf(fmt == MT_TABLE_JSON ? "," : "\n");
        mt_report_print(&r, stdout, fmt, top);
        if (mt_report_total_add(&total, &r) < 0)
            out_of_mem = 1;
        mt_report_free(&r);
    }
    if (fmt == MT_TABLE_JSON)
        printf("],\"total\":");
    if (out_of_mem || mt_report_total_print(&total, stdout, fmt, top) < 0) {
        if (fmt == MT_TABLE_JSON)
            printf("null"); /* mt_report_total_print printed nothing */
        rc = out_of_memory();
    }
    if (fmt == MT_TABLE_JSON)
        printf("}\n");
    if (rc == 0)
        rc = many_outputs_write(out, &total, o);
    for (int k = 0; k < MANY_NOUT; k++)
        mt_out_abort(&out[k]);
    mt_report_total_free(&total);
    return rc;
}

/* mtrace report's options, as its command line gives them. */
typedef struct report_args {
    mt_table_fmt_t fmt;
    mt_report_opts_t o;
    unsigned top;
    const char *html;
    const char *skip[SKIP_MAX]; /* o.skip */
} report_args_t;

/* Reads the options into *a, leaving optind at the first operand. -1 to go on, else the exit
 * status (a usage error, --help). */
static int report_options(int argc, char **argv, report_args_t *a)
{
    static const struct option opts[] = {
        { "json", no_argument, 0, 'J' },
        { "csv", no_argument, 0, 'c' },
        { "top", required_argument, 0, 't' },
        { "folded", required_argument, 0, 'F' },
        { "flamegraph", required_argument, 0, 'g' },
        { "flame-weight", required_argument, 0, 'w' },
        { "callsites-csv", required_argument, 0, 'C' },
        { "skip-frames", required_argument, 0, 's' },
        { "no-auto-skip", no_argument, 0, 'n' },
        { "tree-depth", required_argument, 0, 'd' },
        { "html", required_argument, 0, 'H' },
        { "help", no_argument, 0, 'h' },
        { "suppress", required_argument, 0, 'S' },
        { "temporary", required_argument, 0, 'T' },
        { "jobs", required_argument, 0, 'j' },
        { 0, 0, 0, 0 },
    };
    static const char *const weights[] = { "bytes", "calls", "leaked", "peak", NULL };
    static const char *const temporary_rules[] = { "thread", "heaptrack", NULL }; /* MT_TEMP_* order */
    mt_report_opts_t *o = &a->o;
    *a = (report_args_t){ .fmt = MT_TABLE_TEXT };
    o->skip = a->skip;
    o->jobs = mt_online_cpus();
    unsigned long n;
    int c;
    optind = 0; /* afresh: see mt_getopt */
    while ((c = mt_getopt("mtrace report", argc, argv, "hj:", opts)) != -1) {
        const int shared = report_diff_option("mtrace report", c, &a->fmt, &a->html, &a->top, o, a->skip);
        if (shared < 0)
            return MT_EXIT_USAGE;
        if (shared)
            continue;
        switch (c) {
        case 'c':
            a->fmt = MT_TABLE_CSV;
            break;
        case 'F':
            o->folded = optarg;
            break;
        case 'g':
            o->flamegraph = optarg;
            break;
        case 'w':
            if (mt_choice_option("mtrace report", "--flame-weight", optarg, weights) < 0)
                return MT_EXIT_USAGE;
            o->flame_weight = optarg;
            break;
        case 'C':
            o->callsites_csv = optarg;
            break;
        case 'd':
            if (mt_uint_option("mtrace report", "--tree-depth", optarg, 1, 64, &n) < 0)
                return MT_EXIT_USAGE;
            o->tree_depth = (unsigned)n;
            break;
        case 'S':
            o->suppress = optarg;
            break;
        case 'j':
            if (mt_uint_option("mtrace report", "--jobs", optarg, 1, MT_JOBS_MAX, &n) < 0)
                return MT_EXIT_USAGE;
            o->jobs = (unsigned)n;
            break;
        case 'T':
            if (mt_choice_option("mtrace report", "--temporary", optarg, temporary_rules) < 0)
                return MT_EXIT_USAGE;
            o->temporary_rule = !strcmp(optarg, "heaptrack") ? MT_TEMP_HEAPTRACK : MT_TEMP_THREAD;
            break;
        case 'h':
            return mt_help_print("report");
        default:
            return mt_help_usage_error("report");
        }
    }
    return -1;
}

/* One trace's report, printed or as the HTML page with the replay results. The exit status. */
static int report_one(const char *path, const char *const *results, int nresults, report_args_t *a)
{
    mt_report_opts_t *o = &a->o;
    if (no_stacks_in_header(path, o))
        return 1;
    /* The page gets a flame graph of its own when the user did not ask for one. */
    char flame_tmp[PATH_MAX];
    mt_tmp_template(flame_tmp, sizeof flame_tmp, "flame", ".svg");
    int flame_fd = -1;
    if (a->html && !o->flamegraph && (flame_fd = mkstemps(flame_tmp, 4)) >= 0) {
        close(flame_fd);
        mt_cleanup_add(flame_tmp, 0); /* a stop signal removes it too */
        o->flamegraph = flame_tmp;
    }
    mt_report_t r;
    mt_error_t err;
    int rc = 0;
    if (mt_report_build(&r, path, o, &err) < 0)
        rc = mt_fail(&err);
    else if (no_stacks_for(o, flame_fd < 0, &r))
        rc = 1;
    else if (!a->html)
        mt_report_print(&r, stdout, a->fmt, a->top);
    else if (mt_report_html(&r, a->html, results, nresults, r.has_stacks ? o->flamegraph : NULL, &err) < 0)
        rc = mt_fail(&err);
    if (a->html && rc == 0)
        fprintf(stderr, "mtrace: wrote %s\n", a->html);
    mt_report_free(&r);
    if (flame_fd >= 0) {
        unlink(flame_tmp);
        mt_cleanup_del(flame_tmp);
        o->flamegraph = NULL; /* it named flame_tmp, which ends here */
    }
    return rc;
}

static int cmd_report(int argc, char **argv)
{
    report_args_t a;
    const int opt_rc = report_options(argc, argv, &a);
    if (opt_rc >= 0)
        return opt_rc;
    if (optind == argc) {
        fprintf(stderr, "mtrace report: no TRACE given\n");
        return mt_help_usage_error("report");
    }
    /* Several traces (files with a trace's magic, or directories of them: a process tree's files)
     * make one report of several processes; the operands after them are replay results. A first
     * operand that is neither is read as the trace, for its error. */
    mt_trace_list_t traces = { 0 };
    const int first = optind;
    if (mt_collect_traces("mtrace report", argc, argv, &optind, &traces) < 0) {
        mt_trace_list_free(&traces);
        return 1;
    }
    if (traces.n >= 2) {
        const int rc = report_many(&traces, &a.o, a.fmt, a.html, a.top);
        mt_trace_list_free(&traces);
        return rc;
    }
    /* One trace: named once or more, or alone in a directory named. None: the first operand is
     * read as the trace, for its error. */
    char one[PATH_MAX];
    snprintf(one, sizeof one, "%s", traces.n ? traces.v[0] : argv[first]);
    if (!traces.n)
        optind = first + 1;
    mt_trace_list_free(&traces);
    /* Replay results go on the HTML page only. */
    const int nresults = argc - optind;
    for (int i = optind; i < argc; i++) {
        if (mt_file_has_magic(argv[i], MT_WL_MAGIC, sizeof MT_WL_MAGIC - 1)) {
            fprintf(stderr,
                    "mtrace report: %s is a workload, not a trace or a replay result (mtrace replay --json "
                    "writes those)\n",
                    argv[i]);
            return mt_help_usage_error("report");
        }
    }
    if (nresults && (!a.html || nresults > 64)) {
        fprintf(stderr, "mtrace report: %s\n",
                a.html ? "at most 64 replay results" : "replay results go with --html only");
        return mt_help_usage_error("report");
    }
    const int rc = try_report_outputs(a.html, &a.o);
    return rc ? rc : report_one(one, (const char *const *)argv + optind, nresults, &a);
}

/* ---- mtrace diff -------------------------------------------------------------------------------- */

static int cmd_diff(int argc, char **argv)
{
    mt_table_fmt_t fmt = MT_TABLE_TEXT;
    mt_report_opts_t o = { 0 };
    const char *skip[SKIP_MAX], *path[2] = { NULL, NULL }, *html = NULL;
    unsigned top = 0;
    o.skip = skip;
    static const struct option opts[] = {
        { "json", no_argument, 0, 'J' },
        { "html", required_argument, 0, 'H' },
        { "top", required_argument, 0, 't' },
        { "skip-frames", required_argument, 0, 's' },
        { "no-auto-skip", no_argument, 0, 'n' },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    int c;
    optind = 0; /* afresh: see mt_getopt */
    while ((c = mt_getopt("mtrace diff", argc, argv, "h", opts)) != -1) {
        const int shared = report_diff_option("mtrace diff", c, &fmt, &html, &top, &o, skip);
        if (shared < 0)
            return MT_EXIT_USAGE;
        if (!shared && c != 'h')
            return mt_help_usage_error("diff");
        if (c == 'h')
            return mt_help_print("diff");
    }
    if (argc - optind != 2) {
        fprintf(stderr, "mtrace diff: expected two traces, BEFORE and AFTER, not %d\n", argc - optind);
        return mt_help_usage_error("diff");
    }
    path[0] = argv[optind];
    path[1] = argv[optind + 1];
    mt_report_t ra, rb;
    mt_error_t err;
    if (html && mt_out_try(html, &err) < 0) /* before two traces are read */
        return mt_fail(&err);
    if (mt_report_diff_build(&ra, &rb, path[0], path[1], &o, &err) < 0)
        return mt_fail(&err);
    int rc = 0;
    if (html && mt_report_diff_html(&ra, &rb, html, top, &err) < 0)
        rc = mt_fail(&err);
    else if (html)
        fprintf(stderr, "mtrace: wrote %s\n", html);
    else
        mt_report_diff_print(&ra, &rb, stdout, fmt, top);
    mt_report_free(&ra);
    mt_report_free(&rb);
    return rc;
}

/* ---- mtrace plot -------------------------------------------------------------------------------- */

static int cmd_plot(int argc, char **argv)
{
    static const struct option opts[] = {
        { "output", required_argument, 0, 'o' },
        { "kind", required_argument, 0, 'k' },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    const char *out = NULL, *kind = NULL;
    int c;
    optind = 0; /* afresh: see mt_getopt */
    while ((c = mt_getopt("mtrace plot", argc, argv, "o:h", opts)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'k':
            kind = optarg;
            break;
        case 'h':
            return mt_help_print("plot");
        default:
            return mt_help_usage_error("plot");
        }
    }
    const int n = argc - optind;
    const char *const *inputs = (const char *const *)argv + optind;
    if (!out || n < 1 || n > 256) {
        fprintf(stderr, "mtrace plot: %s\n",
                !out    ? "no -o OUT given"
                : n < 1 ? "no INPUT given"
                        : "at most 256 inputs");
        return mt_help_usage_error("plot");
    }
    mt_error_t err;
    if (mt_gp_check_output(out, &err) < 0) { /* before a large trace is read */
        mt_fail(&err);
        return 2;
    }
    const int trace_kind = kind && (!strcmp(kind, "live") || !strcmp(kind, "sizes"));
    if (kind && !trace_kind && strcmp(kind, "rss") && strcmp(kind, "compare")) {
        fprintf(stderr, "mtrace: unknown --kind %s: live or sizes for a trace, rss or compare for replay results\n",
                kind);
        return 2;
    }
    /* A trace, or replay results (JSON). */
    mt_trace_t *t;
    if (mt_trace_open(&t, inputs[0], &err) == 0) {
        mt_trace_close(t);
        if (n > 1) {
            fprintf(stderr, "mtrace: %s is a trace: plot draws one trace, or replay results\n", inputs[0]);
            return 2;
        }
        if (kind && !trace_kind) {
            fprintf(stderr, "mtrace: --kind %s draws replay results; %s is a trace (--kind live or sizes)\n", kind,
                    inputs[0]);
            return 2;
        }
        if (mt_out_try(out, &err) < 0) /* before the trace is read */
            return mt_fail(&err);
        mt_report_t r;
        if (mt_report_build(&r, inputs[0], NULL, &err) < 0) {
            mt_report_free(&r);
            return mt_fail(&err);
        }
        const int rc = kind && !strcmp(kind, "sizes") ? mt_plot_sizes(&r, out, &err) : mt_plot_trace(&r, out, &err);
        mt_report_free(&r);
        if (rc < 0)
            return mt_fail(&err);
        fprintf(stderr, "mtrace: wrote %s\n", out);
        return 0;
    }
    mt_error_t jerr;
    int all_series = 1;
    for (int i = 0; i < n; i++) {
        mt_jval_t *j;
        if (mt_json_load(inputs[i], &j, &jerr) < 0) {
            /* Neither a trace nor JSON: the trace reader's complaint is the more useful one. */
            return mt_fail(inputs[i][0] && strstr(inputs[i], ".json") ? &jerr : &err);
        }
        if (strcmp(mt_json_str_at(j, "kind", ""), "replay")) {
            fprintf(stderr, "mtrace: %s: offset 0: expected a trace or a replay result\n", inputs[i]);
            mt_json_free(j);
            return 1;
        }
        all_series &= mt_json_str_at(j, "rss_series", NULL) != NULL;
        mt_json_free(j);
    }
    if (!kind)
        kind = all_series ? "rss" : "compare";
    int rc;
    if (!strcmp(kind, "rss"))
        rc = mt_plot_replays(inputs, n, out, &err);
    else if (!strcmp(kind, "compare"))
        rc = mt_plot_compare(inputs, n, out, &err);
    else {
        fprintf(stderr, "mtrace: --kind %s draws a trace; %s %s replay results (--kind rss or compare)\n", kind,
                inputs[0], n > 1 ? "and the others are" : "is");
        return 2;
    }
    if (rc < 0)
        return mt_fail(&err);
    fprintf(stderr, "mtrace: wrote %s\n", out);
    return 0;
}

/* The names are those of the help pages (help_text.c), which hold each command's summary. */
static const command_t commands[] = {
    { "record", cmd_record }, { "info", cmd_info },       { "dump", cmd_dump },         { "pack", cmd_pack },
    { "report", cmd_report }, { "diff", cmd_diff },       { "export", mt_export_main }, { "convert", cmd_convert },
    { "replay", cmd_replay }, { "compare", cmd_compare }, { "sweep", mt_sweep_main },   { "plot", cmd_plot },
};

/* mtrace help [COMMAND]: mtrace's help, or the command's, as --help prints it (git's and perf's way
 * of asking). */
static int help_command(int argc, char **argv)
{
    if (argc > 2) {
        fprintf(stderr, "mtrace help: one COMMAND at most\n");
        return mt_help_usage_error("mtrace");
    }
    if (argc == 1)
        return mt_stdout_finish("mtrace", mt_help_print("mtrace"));
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return mt_stdout_finish("mtrace", mt_help_print(commands[i].name));
    fprintf(stderr, "mtrace help: unknown command '%s'\n", argv[1]);
    return mt_help_usage_error("mtrace");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, 'V' },
        { 0, 0, 0, 0 },
    };
    int c;
    /* Options of mtrace itself come before the command: the command's own are its business. */
    while ((c = mt_getopt("mtrace", argc, argv, "+hV", opts)) != -1) {
        switch (c) {
        case 'h':
            return mt_help_print("mtrace");
        case 'V':
            printf("mtrace %s\n", MT_VERSION);
            return 0;
        default:
            return mt_help_usage_error("mtrace");
        }
    }
    if (optind == argc) {
        fprintf(stderr, "mtrace: no command given\n");
        return mt_help_usage_error("mtrace");
    }
    /* A command stopped by SIGINT, SIGTERM or SIGHUP leaves no temporary (PATH.partial.*, gnuplot's
     * files) and no gnuplot behind. */
    mt_cleanup_on_signals();
    if (!strcmp(argv[optind], "help"))
        return help_command(argc - optind, argv + optind);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[optind], commands[i].name))
            return mt_stdout_finish("mtrace", commands[i].run(argc - optind, argv + optind));
    fprintf(stderr, "mtrace: unknown command '%s'\n", argv[optind]);
    return mt_help_usage_error("mtrace");
}
