/* mtrace: the front end. One command per pipeline step, each a function in the table at the end. */
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

#include "mtrace/trace_reader.h"
#include "mtrace/trace_scan.h"
#include "mtrace/workload.h"
#include "cli_util.h"
#include "help_text.h"
#include "convert_cli.h"
#include "mtrace/compare.h"
#include "mtrace/replay.h"
#include "sweep.h"
#include "mtrace/report.h"
#include "mtrace/report_diff.h"
#include "export_cmd.h"
#include "mtrace/plot.h"
#include "mtrace/json_reader.h"
#include "file_io.h" /* mt_put_safe: strings from files are shown as \xNN, never sent to the terminal */
#include "tmp_cleanup.h"

extern char **environ;

/* Values --timing and --touch take (mtrace-sim's): checked here, so that a bad one is replay's usage
 * error rather than the simulator's. */
static const char *const mt_timing_names[] = MT_TIMING_CHOICES, *const mt_touch_names[] = MT_TOUCH_CHOICES;

/* ---- mtrace record ----------------------------------------------------------------------------- */

/* The shim next to this executable in a build tree, else where the install puts it relative to this
 * executable (an installed tree copied elsewhere, or installed with --destdir, uses its own shim),
 * else at the installed path. */
static int find_shim(char *out, size_t cap)
{
    const char *env = getenv("MTRACE_SHIM");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return access(out, R_OK) == 0 ? 0 : -1;
    }
    char exe[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            static const char *const rel[] = { "../libmtrace/libmtrace.so", MT_SHIM_FROM_BINDIR };
            for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
                if (!rel[i][0])
                    continue; /* an absolute bindir or libdir: only the installed path below */
                const int w = snprintf(out, cap, "%s/%s", exe, rel[i]);
                if (w > 0 && (size_t)w < cap && access(out, R_OK) == 0)
                    return 0;
            }
        }
    }
    snprintf(out, cap, "%s", MT_SHIM_INSTALL_PATH);
    return access(out, R_OK) == 0 ? 0 : -1;
}

/* The recorder, finding its output directory unwritable, lets the program run untraced (it must
 * never stop its host); asked through mtrace record, that would be a run with no trace that exits 0.
 * So the directory is tried first, by creating a file in it: access() would answer yes to root on a
 * read-only file system. A directory named with %p is made per process: not checked. */
static int check_record_dir(const char *out)
{
    const char *slash = strrchr(out, '/');
    if (!slash || memchr(out, '%', (size_t)(slash - out)))
        return 0;
    char probe[PATH_MAX];
    if (snprintf(probe, sizeof probe, "%.*s/.mtrace-probe.XXXXXX", (int)(slash - out), out) >= (int)sizeof probe) {
        fprintf(stderr, "mtrace: %s: the output path is too long\n", out);
        return -1;
    }
    const int fd = mkostemp(probe, O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "mtrace: cannot write the trace into %.*s: %s\n", (int)(slash - out), out, strerror(errno));
        return -1;
    }
    close(fd);
    unlink(probe);
    return 0;
}

/* The loader ignores LD_PRELOAD for a program that gains privileges as it starts (set-user-ID or
 * set-group-ID to another user or group, or file capabilities, on a file system that honours them):
 * it runs untraced. Says so, once, for the command itself; returns whether it did. */
static int warn_if_privileged(const char *cmd)
{
    char path[PATH_MAX];
    struct stat st;
    int found = 0;
    if (strchr(cmd, '/')) {
        found = snprintf(path, sizeof path, "%s", cmd) < (int)sizeof path && stat(path, &st) == 0;
    } else { /* as execvp looks: the first executable file of that name along PATH */
        const char *dirs = getenv("PATH");
        if (!dirs || !*dirs)
            dirs = "/usr/local/bin:/usr/bin:/bin";
        for (const char *d = dirs; !found && *d;) {
            const size_t len = strcspn(d, ":");
            found = snprintf(path, sizeof path, "%.*s%s%s", (int)len, len ? d : ".", "/", cmd) < (int)sizeof path &&
                    stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
            d += len + (d[len] == ':');
        }
    }
    struct statvfs fs;
    if (!found || !S_ISREG(st.st_mode) || (statvfs(path, &fs) == 0 && (fs.f_flag & ST_NOSUID)))
        return 0;
    const char *how = NULL;
    if ((st.st_mode & S_ISUID) && st.st_uid != geteuid())
        how = "set-user-ID";
    else if ((st.st_mode & S_ISGID) && st.st_gid != getegid())
        how = "set-group-ID";
    else if (geteuid() != 0 && getxattr(path, "security.capability", NULL, 0) > 0)
        how = "given file capabilities";
    if (!how)
        return 0;
    char shown[1024];
    fprintf(stderr, "mtrace: %s is %s: the loader ignores LD_PRELOAD for it, so it runs untraced\n",
            mt_safe_str(shown, sizeof shown, path), how);
    return 1;
}

/* The trace's output path, absolute: a process of the command that changes directory must still
 * write next to the others (a shell script that cds, then runs a program, would otherwise leave its
 * trace there); its directory writable; an existing file replaced only with --force. NULL, said. */
static const char *record_output(const char *out, char abs_out[PATH_MAX], int force)
{
    if (out[0] != '/') {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) {
            fprintf(stderr, "mtrace: cannot get the current directory for %s: %s\n", out, strerror(errno));
            return NULL;
        }
        if (snprintf(abs_out, PATH_MAX, "%s/%s", cwd, out) >= PATH_MAX) {
            fprintf(stderr, "mtrace: output path %s/%s is too long\n", cwd, out);
            return NULL;
        }
        out = abs_out;
    }
    if (check_record_dir(out) < 0)
        return NULL;
    if (!strstr(out, "%p") && access(out, F_OK) == 0) {
        if (!force) {
            fprintf(stderr, "mtrace: %s exists; remove it or pass --force\n", out);
            return NULL;
        }
        unlink(out);
    }
    return out;
}

/* Says the traces the recorder wrote (their paths, from the index file), or that none was. */
static void say_written(const char *index, int status, int said_untraced, const char *prog)
{
    FILE *f = fopen(index, "r");
    char line[PATH_MAX + 2];
    int wrote = 0;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        fprintf(stderr, "mtrace: wrote %s\n", line);
        wrote++;
    }
    if (f)
        fclose(f);
    /* Nothing loaded the recorder: not silently (said once: not again after warn_if_privileged's). */
    if (f && !wrote && !said_untraced && !(WIFEXITED(status) && WEXITSTATUS(status) == 127))
        fprintf(stderr,
                "mtrace: no trace was written: %s did not load the recorder (a statically linked "
                "program, or one that is set-user-ID, set-group-ID or has file capabilities, runs "
                "without LD_PRELOAD)\n",
                prog);
}

static int cmd_record(int argc, char **argv)
{
    static const struct option opts[] = {
        { "output", required_argument, 0, 'o' },
        { "stacks", required_argument, 0, 's' },
        { "paused", no_argument, 0, 'p' },
        { "rss-ms", required_argument, 0, 'r' },
        { "force", no_argument, 0, 'f' },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    const char *out = "mtrace.%p.mtr", *stacks = NULL, *rss = NULL;
    int paused = 0, force = 0, c;
    optind = 0; /* afresh: see mt_getopt */
    while ((c = mt_getopt("mtrace record", argc, argv, "+o:s:pr:fh", opts)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 's':
            stacks = optarg;
            break;
        case 'p':
            paused = 1;
            break;
        case 'r':
            rss = optarg;
            break;
        case 'f':
            force = 1;
            break;
        case 'h':
            return mt_help_print("record");
        default:
            return mt_help_usage_error("record");
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "mtrace record: no command given to run\n");
        return mt_help_usage_error("record");
    }
    if ((stacks && mt_uint_option("mtrace record", "--stacks", stacks, 0, 64, NULL) < 0) ||
        (rss && mt_uint_option("mtrace record", "--rss-ms", rss, 0, 1000000000ul, NULL) < 0))
        return MT_EXIT_USAGE;
    char shim[PATH_MAX];
    if (find_shim(shim, sizeof shim) < 0) {
        fprintf(stderr, "mtrace: cannot find libmtrace.so (looked next to this program and at %s); set MTRACE_SHIM\n",
                MT_SHIM_INSTALL_PATH);
        return 2;
    }
    char abs_out[PATH_MAX];
    assert(out); /* -o takes a required argument: getopt_long never gives it NULL */
    if (!(out = record_output(out, abs_out, force)))
        return 2;
    char index[PATH_MAX];
    mt_tmp_template(index, sizeof index, "index", "");
    const int ifd = mkstemp(index);
    if (ifd < 0) {
        fprintf(stderr, "mtrace: cannot create %s: %s\n", index, strerror(errno));
        return 2;
    }
    close(ifd);
    mt_cleanup_add(index, 0); /* SIGTERM to mtrace record removes it (SIGINT is the program's) */

    char preload[PATH_MAX * 2];
    const char *old = getenv("LD_PRELOAD");
    snprintf(preload, sizeof preload, "%s%s%s", shim, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_PRELOAD", preload, 1);
    setenv("MTRACE_OUT", out, 1);
    setenv("MTRACE_INDEX", index, 1);
    if (stacks)
        setenv("MTRACE_STACKS", stacks, 1);
    if (rss)
        setenv("MTRACE_RSS_MS", rss, 1);
    if (paused)
        setenv("MTRACE_PAUSED", "1", 1);

    const int said_untraced = warn_if_privileged(argv[optind]);

    /* Like time(1): the terminal's signals are for the traced program, we wait for it. */
    struct sigaction ign = { .sa_handler = SIG_IGN }, old_int, old_quit;
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    const pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "mtrace: fork: %s\n", strerror(errno));
        unlink(index);
        mt_cleanup_del(index);
        return 2;
    }
    if (pid == 0) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        execvp(argv[optind], argv + optind);
        fprintf(stderr, "mtrace: cannot run %s: %s\n", argv[optind], strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    say_written(index, status, said_untraced, argv[optind]);
    unlink(index);
    mt_cleanup_del(index);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

/* ---- workloads in info and dump ---------------------------------------------------------------- */

typedef struct wl_stats {
    uint64_t per_op[MT_WL_OP_MAX + 1];
    uint64_t ops;
} wl_stats_t;

/* Walks every thread's stream: counts ops and checks that the workload decodes to its end. */
static int scan_workload(const mt_wl_t *w, wl_stats_t *s, int dump, mt_error_t *err)
{
    memset(s, 0, sizeof *s);
    for (uint32_t i = 0; i < mt_wl_thread_count(w); i++) {
        mt_wl_cursor_t *c;
        if (mt_wl_cursor_open(&c, w, i) < 0) {
            snprintf(err->msg, sizeof err->msg, "%s: out of memory", mt_wl_path(w));
            return -ENOMEM;
        }
        mt_wl_rec_t r;
        int rc;
        while ((rc = mt_wl_cursor_next(c, &r, err)) > 0) {
            s->per_op[r.op]++;
            s->ops++;
            if (!dump)
                continue;
            /* threads by the recorder's numbers, as a trace's dump prints them */
            printf("%u %.9f %s", mt_wl_thread(w, i)->thread_no, (double)r.time_ns / 1e9, mt_wl_op_name(r.op));
            switch (r.op) {
            case MT_WL_FREE:
            case MT_WL_USABLE_SIZE:
                printf(" #%" PRIu64, r.slot);
                if (r.op == MT_WL_FREE && r.slot)
                    printf(" (%" PRIu64 ")", r.old_size);
                break;
            case MT_WL_REALLOC:
            case MT_WL_REALLOCARRAY:
                printf(" #%" PRIu64, r.slot);
                if (r.slot)
                    printf(" (%" PRIu64 ")", r.old_size);
                printf(" -> #%" PRIu64, r.slot2);
                break;
            case MT_WL_MALLOPT:
                printf(" param=%" PRId64 " value=%" PRId64, r.a, r.b);
                break;
            case MT_WL_WAIT:
                printf(" thread=%u count=%" PRIu64,
                       r.thread < mt_wl_thread_count(w) ? mt_wl_thread(w, r.thread)->thread_no : r.thread, r.n);
                break;
            case MT_WL_RSS:
                printf(" rss_kb=%" PRIu64 " vm_kb=%" PRIu64, r.rss_kb, r.vm_kb);
                break;
            case MT_WL_MARK:
                printf(" \"");
                mt_put_safe(stdout, (const char *)r.data, r.len);
                printf("\"");
                break;
            case MT_WL_THREAD_START:
            case MT_WL_THREAD_EXIT:
                break;
            default:
                printf(" #%" PRIu64, r.slot);
            }
            if (r.op <= MT_WL_MALLOPT && r.op != MT_WL_FREE && r.op != MT_WL_USABLE_SIZE && r.op != MT_WL_MALLOPT) {
                if (r.align)
                    printf(" align=%" PRIu64, r.align);
                if (r.op == MT_WL_CALLOC || r.op == MT_WL_REALLOCARRAY)
                    printf(" %" PRIu64 "x%" PRIu64, r.count, r.size);
                else
                    printf(" %" PRIu64, r.size);
            }
            putchar('\n');
        }
        mt_wl_cursor_close(c);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int info_workload(const char *path, int json)
{
    mt_error_t err;
    mt_wl_t *w;
    if (mt_wl_open(&w, path, &err) < 0)
        return mt_fail(&err);
    wl_stats_t s;
    if (scan_workload(w, &s, 0, &err) < 0) {
        mt_wl_close(w);
        return mt_fail(&err);
    }
    const mt_wl_header_t *h = mt_wl_header(w);
    size_t len;
    const char *src = mt_wl_string(w, MT_STR_PATH, 0, &len);
    if (json) {
        mt_json_t j;
        mt_json_init(&j, stdout);
        mt_json_begin_object(&j);
        mt_json_kv_cstr(&j, "kind", "workload");
        mt_json_kv_cstr(&j, "file", path);
        mt_json_kv_u64(&j, "version", h->version);
        if (src)
            mt_json_kv_str(&j, "source", src, len);
        mt_json_kv_u64(&j, "source_pid", h->source_pid);
        mt_json_kv_u64(&j, "threads", h->threads);
        mt_json_kv_u64(&j, "slots", h->slots);
        mt_json_kv_u64(&j, "syncs", h->waits);
        mt_json_kv_u64(&j, "ops", s.ops);
        mt_json_kv_u64(&j, "frames", h->frames);
        mt_json_kv_u64(&j, "file_bytes", mt_wl_file_size(w));
        mt_json_kv_u64(&j, "peak_live_bytes", h->peak_live_bytes);
        mt_json_kv_double(&j, "peak_live_time_s", (double)h->peak_live_time_ns / 1e9);
        mt_json_kv_u64(&j, "source_peak_rss_kb", h->source_peak_rss_kb);
        mt_json_kv_double(&j, "duration_s", (double)h->duration_ns / 1e9);
        mt_json_kv_u64(&j, "unknown_frees", h->unknown_frees);
        mt_json_kv_u64(&j, "double_frees", h->double_frees);
        mt_json_kv_u64(&j, "inversions", h->inversions);
        mt_json_kv_u64(&j, "forced", h->forced);
        mt_json_kv_bool(&j, "source_truncated", (h->flags & MT_WLH_SRC_TRUNCATED) != 0);
        mt_json_key(&j, "calls");
        mt_json_begin_object(&j);
        for (unsigned op = 1; op <= MT_WL_MALLOPT; op++)
            mt_json_kv_u64(&j, mt_wl_op_name(op), s.per_op[op]);
        mt_json_end_object(&j);
        mt_json_key(&j, "events");
        mt_json_begin_object(&j);
        for (unsigned op = MT_WL_THREAD_START; op <= MT_WL_OP_MAX; op++)
            mt_json_kv_u64(&j, mt_wl_op_name(op), s.per_op[op]);
        mt_json_end_object(&j);
        mt_json_end_object(&j);
        mt_json_finish(&j);
    } else {
        printf("file          %s (workload, %" PRIu64 " bytes, format version %u)\n", path, mt_wl_file_size(w),
               h->version);
        if (src) {
            printf("source        ");
            mt_put_safe(stdout, src, len);
            printf(" (pid %" PRIu64 ")\n", h->source_pid);
        }
        printf("threads       %u\n", h->threads);
        printf("ops           %" PRIu64 " in %" PRIu64 " frames\n", s.ops, h->frames);
        printf("slots         %" PRIu64 " (peak live blocks)\n", h->slots);
        printf("peak live     %" PRIu64 " bytes at %.6f s\n", h->peak_live_bytes, (double)h->peak_live_time_ns / 1e9);
        printf("sync points   %" PRIu64 "\n", h->waits);
        printf("duration      %.6f s\n", (double)h->duration_ns / 1e9);
        printf("repairs       %" PRIu64 " inversions, %" PRIu64 " unknown frees, %" PRIu64 " double frees, %" PRIu64
               " forced\n",
               h->inversions, h->unknown_frees, h->double_frees, h->forced);
        printf("calls        ");
        for (unsigned op = 1; op <= MT_WL_MALLOPT; op++)
            if (s.per_op[op])
                printf(" %s %" PRIu64, mt_wl_op_name(op), s.per_op[op]);
        printf("\n");
    }
    mt_wl_close(w);
    return 0;
}

static int dump_workload(const char *path)
{
    mt_error_t err;
    mt_wl_t *w;
    if (mt_wl_open(&w, path, &err) < 0)
        return mt_fail(&err);
    wl_stats_t s;
    const int rc = scan_workload(w, &s, 1, &err);
    mt_wl_close(w);
    return rc < 0 ? mt_fail(&err) : 0;
}

/* ---- mtrace info ------------------------------------------------------------------------------- */

static void print_header_strings(const mt_trace_t *t, mt_json_t *j)
{
    size_t len;
    const char *s = mt_trace_string(t, MT_STR_CMDLINE, 0, &len);
    char cmd[4096];
    size_t n = 0;
    for (size_t i = 0; s && i < len && n + 1 < sizeof cmd; i++)
        cmd[n++] = s[i] ? s[i] : ' ';
    cmd[n] = 0;
    static const struct {
        unsigned tag;
        const char *name;
    } tags[] = {
        { MT_STR_EXE, "exe" },   { MT_STR_GLIBC, "glibc" }, { MT_STR_ALLOCATOR, "allocator" },
        { MT_STR_HOST, "host" }, { MT_STR_CLOCK, "clock" },
    };
    if (j) {
        mt_json_kv_str(j, "command", cmd, n);
        for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) {
            const char *v = mt_trace_string(t, tags[i].tag, 0, &len);
            if (v)
                mt_json_kv_str(j, tags[i].name, v, len);
        }
        mt_json_key(j, "settings");
        mt_json_begin_array(j);
        for (unsigned k = 0; (s = mt_trace_string(t, MT_STR_ENV, k, &len)); k++)
            mt_json_str(j, s, len);
        mt_json_end_array(j);
        return;
    }
    printf("command       ");
    mt_put_safe(stdout, cmd, n);
    putchar('\n');
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) {
        const char *v = mt_trace_string(t, tags[i].tag, 0, &len);
        if (v) {
            printf("%-13s ", tags[i].name);
            mt_put_safe(stdout, v, len);
            putchar('\n');
        }
    }
    for (unsigned k = 0; (s = mt_trace_string(t, MT_STR_ENV, k, &len)); k++) {
        printf("setting       ");
        mt_put_safe(stdout, s, len);
        putchar('\n');
    }
}

/* What `mtrace info` says of a trace beside its scan: the state and the file. */
typedef struct info_facts {
    const char *path;
    uint64_t size;
    double rate, span;
    int truncated, complete, ended_at_exec, whole;
    const char *bound; /* the object whose malloc went past the recorder, if any */
    size_t bound_len;
} info_facts_t;

static void info_json(mt_trace_t *t, const mt_trace_stats_t *s, const info_facts_t *x)
{
    const mt_file_header_t *h = mt_trace_header(t);
    mt_json_t j;
    mt_json_init(&j, stdout);
    mt_json_begin_object(&j);
    mt_json_kv_cstr(&j, "kind", "trace");
    mt_json_kv_cstr(&j, "file", x->path);
    mt_json_kv_u64(&j, "version", h->version);
    mt_json_kv_bool(&j, "packed", mt_trace_is_packed(t));
    mt_json_kv_u64(&j, "pid", h->pid);
    mt_json_kv_u64(&j, "ppid", h->ppid);
    mt_json_kv_u64(&j, "start_realtime_ns", h->start_realtime_ns);
    print_header_strings(t, &j);
    mt_json_kv_u64(&j, "threads", mt_trace_thread_count(t));
    mt_json_kv_u64(&j, "chunks", mt_trace_chunk_count(t));
    mt_json_kv_u64(&j, "records", s->records);
    mt_json_kv_u64(&j, "call_records", s->calls);
    mt_json_kv_u64(&j, "event_records", s->events);
    mt_json_kv_u64(&j, "file_bytes", x->size);
    mt_json_kv_double(&j, "bytes_per_call", s->calls ? (double)x->size / (double)s->calls : 0);
    mt_json_kv_double(&j, "ticks_per_sec", x->rate);
    mt_json_kv_double(&j, "span_s", x->span);
    mt_json_kv_bool(&j, "complete", x->complete && x->whole);
    mt_json_kv_bool(&j, "file_truncated", !x->whole);
    mt_json_kv_bool(&j, "ended_at_exec", x->ended_at_exec);
    mt_json_kv_bool(&j, "truncated", x->truncated);
    mt_json_kv_bool(&j, "bypassed", (h->flags & MT_HDR_BYPASSED) != 0);
    if (x->bound)
        mt_json_kv_str(&j, "bypassed_by", x->bound, x->bound_len);
    if (x->truncated)
        mt_json_kv_cstr(&j, "truncated_reason", strerror(h->truncated_errno));
    mt_json_kv_u64(&j, "lost_calls", h->lost_calls);
    mt_json_kv_u64(&j, "failed_calls", s->failed);
    mt_json_kv_u64(&j, "bytes_requested", s->bytes_requested);
    mt_json_key(&j, "calls");
    mt_json_begin_object(&j);
    for (unsigned op = 1; op <= MT_OP_LAST_CALL; op++)
        mt_json_kv_u64(&j, mt_op_name(op), s->per_op[op]);
    mt_json_end_object(&j);
    mt_json_key(&j, "events");
    mt_json_begin_object(&j);
    for (unsigned op = MT_FIRST_EVENT; op <= MT_OP_MAX; op++)
        if (mt_op_name(op))
            mt_json_kv_u64(&j, mt_op_name(op), s->per_op[op]);
    mt_json_end_object(&j);
    mt_json_key(&j, "thread_list");
    mt_json_begin_array(&j);
    for (size_t i = 0; i < mt_trace_thread_count(t); i++) {
        const mt_thread_info_t *ti = mt_trace_thread(t, i);
        mt_json_begin_object(&j);
        mt_json_kv_u64(&j, "thread", ti->thread);
        mt_json_kv_u64(&j, "tid", ti->tid);
        mt_json_kv_u64(&j, "chunks", ti->nchunks);
        mt_json_end_object(&j);
    }
    mt_json_end_array(&j);
    mt_json_end_object(&j);
    mt_json_finish(&j);
}

static void info_text(mt_trace_t *t, const mt_trace_stats_t *s, const info_facts_t *x)
{
    const mt_file_header_t *h = mt_trace_header(t);
    printf("file          %s (%s, %" PRIu64 " bytes, format version %u)\n", x->path,
           mt_trace_is_packed(t) ? "packed" : "raw", x->size, h->version);
    printf("process       pid %u, parent %u\n", h->pid, h->ppid);
    print_header_strings(t, NULL);
    printf("threads       %zu\n", mt_trace_thread_count(t));
    printf("records       %" PRIu64 " (%" PRIu64 " calls, %" PRIu64 " events) in %zu chunks\n", s->records, s->calls,
           s->events, mt_trace_chunk_count(t));
    if (s->calls)
        printf("size          %.2f bytes per call\n", (double)x->size / (double)s->calls);
    printf("time span     %.6f s\n", x->span);
    printf("state         %s%s%s\n",
           !x->whole          ? "truncated file (cut short after it was written: the counts are of the records present)"
           : x->complete      ? "complete"
           : x->ended_at_exec ? "ended at an exec (the program image was replaced; nothing follows the exec)"
                              : "not finished (the process was killed or crashed)",
           x->truncated ? ", truncated: " : "", x->truncated ? strerror(h->truncated_errno) : "");
    if (h->lost_calls)
        printf("lost calls    %" PRIu64 "\n", h->lost_calls);
    if (h->flags & MT_HDR_BYPASSED) {
        printf("bypassed      the program's malloc was ");
        mt_put_safe(stdout, x->bound ? x->bound : "another object", x->bound ? x->bound_len : strlen("another object"));
        printf("'s, found before libmtrace.so (LD_PRELOAD order): its calls are not in the trace\n");
    }
    printf("calls        ");
    for (unsigned op = 1; op <= MT_OP_LAST_CALL; op++)
        if (s->per_op[op])
            printf(" %s %" PRIu64, mt_op_name(op), s->per_op[op]);
    printf("\nevents       ");
    for (unsigned op = MT_FIRST_EVENT; op <= MT_OP_MAX; op++)
        if (s->per_op[op])
            printf(" %s %" PRIu64, mt_op_name(op), s->per_op[op]);
    printf("\n");
}

static int cmd_info(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json", no_argument, 0, 'J' },
        { "jobs", required_argument, 0, 'j' },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    int json = 0, c;
    unsigned jobs = mt_online_cpus();
    unsigned long n;
    optind = 0; /* afresh: see mt_getopt */
    while ((c = mt_getopt("mtrace info", argc, argv, "hj:", opts)) != -1) {
        switch (c) {
        case 'J':
            json = 1;
            break;
        case 'j':
            if (mt_uint_option("mtrace info", "--jobs", optarg, 1, MT_JOBS_MAX, &n) < 0)
                return MT_EXIT_USAGE;
            jobs = (unsigned)n;
            break;
        case 'h':
            return mt_help_print("info");
        default:
            return mt_help_usage_error("info");
        }
    }
    const char *path = mt_one_operand("mtrace info", "FILE", argc, argv);
    if (!path)
        return mt_help_usage_error("info");
    if (mt_file_is_workload(path) == 1)
        return info_workload(path, json);
    mt_error_t err;
    mt_trace_t *t;
    if (mt_trace_open(&t, path, &err) < 0)
        return mt_fail(&err);
    mt_trace_stats_t s;
    if (mt_trace_scan(t, &s, jobs, &err) < 0) {
        mt_trace_close(t);
        return mt_fail(&err);
    }
    const mt_file_header_t *h = mt_trace_header(t);
    const double rate = mt_trace_ticks_per_sec(t);
    const double span = rate > 0 ? (double)(s.last_time - s.first_time) / rate : 0;
    const int truncated = (h->flags & MT_HDR_TRUNCATED) != 0;
    const int complete = (h->flags & MT_HDR_COMPLETE) != 0;
    /* An exec that succeeds replaces the image before tracing can finish (the header is written
     * just before the exec, without MT_HDR_COMPLETE, since the exec may fail): such a trace is not
     * complete, yet nothing was lost. Its latest record is the EXEC event. */
    const int ended_at_exec = !complete && s.last_op == MT_EV_EXEC;
    const uint64_t size = mt_trace_file_size(t);
    /* A file cut short after it was written: its records are a prefix; say so and exit 3. */
    mt_error_t cut;
    const int whole = mt_trace_check_whole(t, &cut) == 0;
    /* Calls that went past the recorder (another allocator first in LD_PRELOAD): why a trace is empty. */
    size_t bound_len = 0;
    const char *bound = mt_trace_string(t, MT_STR_BOUND_MALLOC, 0, &bound_len);
    const info_facts_t facts = { .path = path,
                                 .size = size,
                                 .rate = rate,
                                 .span = span,
                                 .truncated = truncated,
                                 .complete = complete,
                                 .ended_at_exec = ended_at_exec,
                                 .whole = whole,
                                 .bound = bound,
                                 .bound_len = bound_len };
    if (json)
        info_json(t, &s, &facts);
    else
        info_text(t, &s, &facts);
    mt_trace_close(t);
    if (!whole) {
        fprintf(stderr, "mtrace: %s\n", cut.msg);
        return 3;
    }
    return 0;
}

/* ---- mtrace dump ------------------------------------------------------------------------------- */

/* One record a line: the thread's number (the recorder's, as workload dumps print it too), seconds
 * from the trace's start, the op and its fields. */
static void dump_record(const mt_record_t *r, uint32_t thread, double rate, uint64_t t0, uint64_t page_kb)
{
    const double ts = r->time > t0 ? mt_ticks_seconds(r->time - t0, rate) : 0;
    printf("%u %.9f %s", thread, ts, mt_op_name(r->op));
    switch (r->op) {
    case MT_OP_FREE:
        printf(" 0x%" PRIx64, r->ptr);
        break;
    case MT_OP_USABLE_SIZE:
        printf(" 0x%" PRIx64 " = %" PRIu64, r->ptr, r->size);
        break;
    case MT_OP_MALLOPT:
        printf(" param=%" PRId64 " value=%" PRId64 " = %" PRId64, r->arg[0], r->arg[1], r->arg[2]);
        break;
    case MT_OP_MALLOC:
    case MT_OP_VALLOC:
    case MT_OP_PVALLOC:
    case MT_OP_CALLOC:
    case MT_OP_REALLOC:
    case MT_OP_REALLOCARRAY:
    case MT_OP_MEMALIGN:
    case MT_OP_ALIGNED_ALLOC:
    case MT_OP_POSIX_MEMALIGN:
        if (r->op == MT_OP_REALLOC || r->op == MT_OP_REALLOCARRAY)
            printf(" 0x%" PRIx64, r->ptr);
        if (r->align)
            printf(" align=%" PRIu64, r->align);
        if (r->count || r->op == MT_OP_CALLOC || r->op == MT_OP_REALLOCARRAY)
            printf(" %" PRIu64 "x%" PRIu64, r->count, r->size);
        else
            printf(" %" PRIu64, r->size);
        if (r->flags & MT_FLAG_NULL) {
            if (r->op == MT_OP_POSIX_MEMALIGN)
                printf(" = error %" PRId64, r->arg[0]);
            else
                printf(" = NULL");
        } else {
            printf(" = 0x%" PRIx64 " usable=%" PRIu64, r->result, r->usable);
        }
        if (r->flags & MT_FLAG_MMAPPED)
            printf(" mmapped");
        if (r->flags & MT_FLAG_HEAP_GREW)
            printf(" heap_grew");
        break;
    case MT_EV_RSS: /* statm's pages in KiB, named as in a workload's dump */
        if (r->nargs >= 4) {
            printf(" rss_kb=%" PRIu64 " vm_kb=%" PRIu64 " file_kb=%" PRIu64 " mono_ns=%" PRIu64,
                   (uint64_t)r->arg[1] * page_kb, (uint64_t)r->arg[0] * page_kb, (uint64_t)r->arg[2] * page_kb,
                   (uint64_t)r->arg[3]);
            break;
        }
        for (uint32_t i = 0; i < r->nargs; i++)
            printf(" %" PRId64, r->arg[i]);
        break;
    case MT_EV_MARK:
    case MT_EV_EXEC:
        printf(" \"");
        mt_put_safe(stdout, (const char *)r->data, r->len);
        printf("\"");
        break;
    case MT_EV_STACK: {
        mt_stack_def_t s;
        if (mt_decode_stack(r, &s) < 0) {
            printf(" (damaged payload)");
            break;
        }
        printf(" id=%u", s.id);
        for (uint32_t i = 0; i < s.nframes; i++)
            printf(" 0x%" PRIx64, s.frames[i]);
        break;
    }
    case MT_EV_MODULE: {
        mt_module_def_t m;
        if (mt_decode_module(r, &m) < 0) {
            printf(" (damaged payload)");
            break;
        }
        printf(" gen=%" PRIu64 " base=0x%" PRIx64 " \"", m.generation, m.base);
        mt_put_safe(stdout, m.name, m.name_len);
        printf("\" build-id=");
        for (uint32_t i = 0; i < m.build_id_len; i++)
            printf("%02x", m.build_id[i]);
        break;
    }
    default:
        for (uint32_t i = 0; i < r->nargs; i++)
            printf(" %" PRId64, r->arg[i]);
        if (r->op >= MT_FIRST_EVENT && !r->nargs && r->len)
            printf(" (%u bytes)", r->len);
    }
    if (r->flags & MT_FLAG_STACK)
        printf(" stack=%u", r->stack);
    putchar('\n');
}

static int cmd_dump(int argc, char **argv)
{
    static const struct option opts[] = { { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
    int c;
    optind = 0; /* afresh: see mt_getopt */
    while ((c = mt_getopt("mtrace dump", argc, argv, "h", opts)) != -1)
        return c == 'h' ? mt_help_print("dump") : mt_help_usage_error("dump");
    const char *path = mt_one_operand("mtrace dump", "FILE", argc, argv);
    if (!path)
        return mt_help_usage_error("dump");
    if (mt_file_is_workload(path) == 1)
        return dump_workload(path);
    mt_error_t err;
    mt_trace_t *t;
    if (mt_trace_open(&t, path, &err) < 0)
        return mt_fail(&err);
    const mt_file_header_t *h = mt_trace_header(t);
    const double rate = mt_trace_ticks_per_sec(t);
    const uint64_t page_kb = (h->page_size ? h->page_size : 4096) / 1024;
    /* A trace cut short dumps the records present, then says it is not the whole (exit 3, as info). */
    mt_error_t cut;
    const int whole = mt_trace_check_whole(t, &cut) == 0;
    int rc = 0;
    for (size_t i = 0; i < mt_trace_thread_count(t) && rc >= 0; i++) {
        mt_thread_cursor_t tc;
        if (mt_thread_cursor_init(&tc, t, i) < 0) {
            rc = -ENOMEM;
            snprintf(err.msg, sizeof err.msg, "%s: out of memory", path);
            break;
        }
        mt_record_t r;
        while ((rc = mt_thread_cursor_next(&tc, &r, &err)) > 0)
            dump_record(&r, mt_trace_thread(t, i)->thread, rate, h->start_time, page_kb);
        mt_thread_cursor_fini(&tc);
    }
    mt_trace_close(t);
    if (fflush(stdout) != 0 && errno != EPIPE) {
        fprintf(stderr, "mtrace: writing the dump: %s\n", strerror(errno));
        return 1;
    }
    if (rc < 0)
        return mt_fail(&err);
    if (!whole) {
        fprintf(stderr, "mtrace: %s\n", cut.msg);
        return 3;
    }
    return 0;
}

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
    int rc = mt_replay_run(&o, results, &n);
    /* A table for several allocators, and for the runs of one: its median and spread. Runs in which
     * calls failed are in it too; the exit status (3) still says they failed. */
    if ((rc == 0 || rc == MT_EXIT_FAILED_CALLS) && n > 1) {
        for (int i = 0; i < n; i++)
            paths[i] = results[i];
        printf("\n");
        const int table_rc = mt_compare_print(stdout, paths, n, MT_TABLE_TEXT);
        if (table_rc)
            rc = table_rc;
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
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    mt_table_fmt_t fmt = MT_TABLE_TEXT;
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
    return mt_compare_print(stdout, paths, n, fmt);
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

typedef struct trace_list {
    char **v;
    size_t n, cap;
} trace_list_t;

static void trace_list_free(trace_list_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    *l = (trace_list_t){ 0 };
}

/* Adds path unless the list holds that file already (a directory given beside one of its files). */
static int trace_list_add(trace_list_t *l, const char *path)
{
    struct stat a, b;
    for (size_t i = 0; i < l->n; i++)
        if (stat(path, &a) == 0 && stat(l->v[i], &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            return 0;
    if (l->n == l->cap) {
        const size_t cap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(path)))
        return -1;
    l->n++;
    return 0;
}

/* Whether the file at path starts with a trace's magic (raw or packed). */
static int is_trace_file(const char *path)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 0;
    struct stat st;
    uint8_t m[MT_TRACE_MAGIC_LEN];
    const int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && pread(fd, m, sizeof m, 0) == (ssize_t)sizeof m &&
                   !memcmp(m, MT_TRACE_MAGIC, sizeof m);
    close(fd);
    return ok;
}

static int name_order(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* The operands from *optind on that are traces or directories (whose trace files, by name, join the
 * list) go to `more`; the first one that is neither stops the list and, with the rest, is left to
 * the caller (replay results). -1 with a message on stderr. */
static int collect_traces(int argc, char **argv, int *optind_, trace_list_t *more)
{
    for (; *optind_ < argc; ++*optind_) {
        const char *op = argv[*optind_];
        struct stat st;
        if (stat(op, &st) == 0 && S_ISDIR(st.st_mode)) {
            struct dirent **ents;
            const int n = scandir(op, &ents, NULL, name_order);
            if (n < 0) {
                fprintf(stderr, "mtrace report: %s: cannot read the directory: %s\n", op, strerror(errno));
                return -1;
            }
            int rc = 0, found = 0;
            for (int i = 0; i < n; i++) {
                char full[PATH_MAX];
                if (rc == 0 && snprintf(full, sizeof full, "%s/%s", op, ents[i]->d_name) < (int)sizeof full &&
                    is_trace_file(full)) {
                    rc = trace_list_add(more, full);
                    found++;
                }
                free(ents[i]);
            }
            free(ents);
            if (rc < 0) {
                fprintf(stderr, "mtrace report: out of memory\n");
                return -1;
            }
            if (!found) {
                fprintf(stderr, "mtrace report: %s: no trace in the directory\n", op);
                return -1;
            }
        } else if (is_trace_file(op)) {
            if (trace_list_add(more, op) < 0) {
                fprintf(stderr, "mtrace report: out of memory\n");
                return -1;
            }
        } else {
            break;
        }
    }
    return 0;
}

/* The report of each trace in turn (one in memory at a time), then what adds up across them. A
 * trace that cannot be read stops it: exit 1, and no total that would pass for all of them. */
static int report_many(const trace_list_t *traces, const mt_report_opts_t *o, mt_table_fmt_t fmt, const char *html,
                       unsigned top)
{
    if (html || fmt == MT_TABLE_CSV) {
        fprintf(stderr, "mtrace report: several traces give text or --json, not %s\n", html ? "--html" : "--csv");
        return MT_EXIT_USAGE;
    }
    mt_report_total_t total = { 0 };
    if (fmt == MT_TABLE_JSON)
        printf("{\"kind\":\"reports\",\"reports\":[\n");
    for (size_t i = 0; i < traces->n; i++) {
        const char *path = traces->v[i];
        mt_report_t r;
        mt_error_t err;
        if (mt_report_build(&r, path, o, &err) < 0) {
            mt_report_free(&r);
            fflush(stdout);
            return mt_fail(&err);
        }
        if (fmt == MT_TABLE_JSON && i)
            printf(",");
        else if (fmt != MT_TABLE_JSON && i)
            printf("\n");
        mt_report_print(&r, stdout, fmt, top);
        mt_report_total_add(&total, &r);
        mt_report_free(&r);
    }
    if (fmt == MT_TABLE_JSON)
        printf("],\"total\":");
    mt_report_total_print(&total, stdout, fmt);
    if (fmt == MT_TABLE_JSON)
        printf("}\n");
    return 0;
}

static int cmd_report(int argc, char **argv)
{
    mt_table_fmt_t fmt = MT_TABLE_TEXT;
    mt_report_opts_t o = { 0 };
    unsigned top = 0;
    const char *path = NULL, *html = NULL;
    const char *skip[SKIP_MAX];
    int nresults = 0;
    o.skip = skip;
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
    unsigned long n;
    int c;
    o.jobs = mt_online_cpus();
    optind = 0; /* afresh: see mt_getopt */
    while ((c = mt_getopt("mtrace report", argc, argv, "hj:", opts)) != -1) {
        const int shared = report_diff_option("mtrace report", c, &fmt, &html, &top, &o, skip);
        if (shared < 0)
            return MT_EXIT_USAGE;
        if (shared)
            continue;
        switch (c) {
        case 'c':
            fmt = MT_TABLE_CSV;
            break;
        case 'F':
            o.folded = optarg;
            break;
        case 'g':
            o.flamegraph = optarg;
            break;
        case 'w':
            if (mt_choice_option("mtrace report", "--flame-weight", optarg, weights) < 0)
                return MT_EXIT_USAGE;
            o.flame_weight = optarg;
            break;
        case 'C':
            o.callsites_csv = optarg;
            break;
        case 'd':
            if (mt_uint_option("mtrace report", "--tree-depth", optarg, 1, 64, &n) < 0)
                return MT_EXIT_USAGE;
            o.tree_depth = (unsigned)n;
            break;
        case 'S':
            o.suppress = optarg;
            break;
        case 'j':
            if (mt_uint_option("mtrace report", "--jobs", optarg, 1, MT_JOBS_MAX, &n) < 0)
                return MT_EXIT_USAGE;
            o.jobs = (unsigned)n;
            break;
        case 'T':
            if (mt_choice_option("mtrace report", "--temporary", optarg, temporary_rules) < 0)
                return MT_EXIT_USAGE;
            o.temporary_rule = !strcmp(optarg, "heaptrack") ? MT_TEMP_HEAPTRACK : MT_TEMP_THREAD;
            break;
        case 'h':
            return mt_help_print("report");
        default:
            return mt_help_usage_error("report");
        }
    }
    if (optind == argc) {
        fprintf(stderr, "mtrace report: no TRACE given\n");
        return mt_help_usage_error("report");
    }
    /* Several traces (files with a trace's magic, or directories of them: a process tree's files)
     * make one report of several processes; the operands after them are replay results. A first
     * operand that is neither is read as the trace, for its error. */
    trace_list_t traces = { 0 };
    const int first = optind;
    if (collect_traces(argc, argv, &optind, &traces) < 0) {
        trace_list_free(&traces);
        return 1;
    }
    if (traces.n >= 2) {
        const int rc = report_many(&traces, &o, fmt, html, top);
        trace_list_free(&traces);
        return rc;
    }
    trace_list_free(&traces);
    optind = first;
    path = argv[optind++];
    /* Replay results go on the HTML page only. */
    nresults = argc - optind;
    if (nresults && (!html || nresults > 64)) {
        fprintf(stderr, "mtrace report: %s\n",
                html ? "at most 64 replay results" : "replay results go with --html only");
        return mt_help_usage_error("report");
    }
    const char *const *results = (const char *const *)argv + optind;
    /* The page gets a flame graph of its own when the user did not ask for one. */
    char flame_tmp[PATH_MAX];
    mt_tmp_template(flame_tmp, sizeof flame_tmp, "flame", ".svg");
    int flame_fd = -1;
    if (html && !o.flamegraph && (flame_fd = mkstemps(flame_tmp, 4)) >= 0) {
        close(flame_fd);
        mt_cleanup_add(flame_tmp, 0); /* a stop signal removes it too */
        o.flamegraph = flame_tmp;
    }
    mt_report_t r;
    mt_error_t err;
    int rc = 0;
    if (mt_report_build(&r, path, &o, &err) < 0)
        rc = mt_fail(&err);
    else if (html)
        rc = mt_report_html(&r, html, results, nresults, r.has_stacks ? o.flamegraph : NULL) == 0 ? 0 : 1;
    else
        mt_report_print(&r, stdout, fmt, top);
    if (html && rc == 0)
        fprintf(stderr, "mtrace: wrote %s\n", html);
    mt_report_free(&r);
    if (flame_fd >= 0) {
        unlink(flame_tmp);
        mt_cleanup_del(flame_tmp);
    }
    return rc;
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
    if (mt_gp_check_output(out) < 0) /* before a large trace is read */
        return 2;
    const int trace_kind = kind && (!strcmp(kind, "live") || !strcmp(kind, "sizes"));
    if (kind && !trace_kind && strcmp(kind, "rss") && strcmp(kind, "compare")) {
        fprintf(stderr, "mtrace: unknown --kind %s: live or sizes for a trace, rss or compare for replay results\n",
                kind);
        return 2;
    }
    /* A trace, or replay results (JSON). */
    mt_error_t err;
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
        mt_report_t r;
        if (mt_report_build(&r, inputs[0], NULL, &err) < 0) {
            mt_report_free(&r);
            return mt_fail(&err);
        }
        const int rc = kind && !strcmp(kind, "sizes") ? mt_plot_sizes(&r, out) : mt_plot_trace(&r, out);
        mt_report_free(&r);
        if (rc == 0)
            fprintf(stderr, "mtrace: wrote %s\n", out);
        return rc == 0 ? 0 : 1;
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
        rc = mt_plot_replays(inputs, n, out);
    else if (!strcmp(kind, "compare"))
        rc = mt_plot_compare(inputs, n, out);
    else {
        fprintf(stderr, "mtrace: --kind %s draws a trace; %s %s replay results (--kind rss or compare)\n", kind,
                inputs[0], n > 1 ? "and the others are" : "is");
        return 2;
    }
    if (rc == 0)
        fprintf(stderr, "mtrace: wrote %s\n", out);
    return rc == 0 ? 0 : 1;
}

/* The names are those of the help pages (help_text.c), which hold each command's summary. */
static const command_t commands[] = {
    { "record", cmd_record }, { "info", cmd_info },       { "dump", cmd_dump },         { "pack", cmd_pack },
    { "report", cmd_report }, { "diff", cmd_diff },       { "export", mt_export_main }, { "convert", cmd_convert },
    { "replay", cmd_replay }, { "compare", cmd_compare }, { "sweep", mt_sweep_main },   { "plot", cmd_plot },
};

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
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[optind], commands[i].name))
            return commands[i].run(argc - optind, argv + optind);
    fprintf(stderr, "mtrace: unknown command '%s'\n", argv[optind]);
    return mt_help_usage_error("mtrace");
}
