/* mtrace: the front end. One command per pipeline step, each a function in the table at the end. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mtrace/trace_reader.h"
#include "mtrace/workload.h"
#include "cli_util.h"
#include "convert_cli.h"
#include "mtrace/compare.h"
#include "mtrace/replay.h"
#include "sweep.h"
#include "mtrace/report.h"
#include "mtrace/report_diff.h"
#include "mtrace/plot.h"
#include "mtrace/json_reader.h"
#include "file_io.h" /* mt_put_safe: strings from files are shown as \xNN, never sent to the terminal */

extern char **environ;

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

static void usage_record(FILE *f)
{
    fprintf(f, "usage: mtrace record [-o FILE] [--force] [--stacks N] [--paused] [--rss-ms N] -- CMD [ARGS...]\n"
               "  Runs CMD with the tracer and passes its exit status through. FILE may contain %%p (pid);\n"
               "  the default is mtrace.%%p.mtr, relative to the current directory for every process of CMD.\n"
               "  A forked child or an exec'd image gets a file of its own.\n");
}

static int cmd_record(int argc, char **argv)
{
    static const struct option opts[] = {
        { "output", required_argument, 0, 'o' }, { "stacks", required_argument, 0, 's' },
        { "paused", no_argument, 0, 'p' },       { "rss-ms", required_argument, 0, 'r' },
        { "force", no_argument, 0, 'f' },        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    const char *out = "mtrace.%p.mtr", *stacks = NULL, *rss = NULL;
    int paused = 0, force = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+o:s:pr:fh", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 's': stacks = optarg; break;
        case 'p': paused = 1; break;
        case 'r': rss = optarg; break;
        case 'f': force = 1; break;
        case 'h': usage_record(stdout); return 0;
        default: usage_record(stderr); return 2;
        }
    }
    if (optind >= argc) {
        usage_record(stderr);
        return 2;
    }
    if ((stacks && mt_uint_option("mtrace record", "--stacks", stacks, 0, 64, NULL) < 0) ||
        (rss && mt_uint_option("mtrace record", "--rss-ms", rss, 0, 1000000000ul, NULL) < 0))
        return 2;
    char shim[PATH_MAX];
    if (find_shim(shim, sizeof shim) < 0) {
        fprintf(stderr, "mtrace: cannot find libmtrace.so (looked next to this program and at %s); set MTRACE_SHIM\n",
                MT_SHIM_INSTALL_PATH);
        return 2;
    }
    /* Absolute: a process of the command that changes directory must still write next to the
     * others (a shell script that cds, then runs a program, would otherwise leave its trace there). */
    char abs_out[PATH_MAX];
    if (out[0] != '/') {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) {
            fprintf(stderr, "mtrace: cannot get the current directory for %s: %s\n", out, strerror(errno));
            return 2;
        }
        if (snprintf(abs_out, sizeof abs_out, "%s/%s", cwd, out) >= (int)sizeof abs_out) {
            fprintf(stderr, "mtrace: output path %s/%s is too long\n", cwd, out);
            return 2;
        }
        out = abs_out;
    }
    if (!strstr(out, "%p") && access(out, F_OK) == 0) {
        if (!force) {
            fprintf(stderr, "mtrace: %s exists; remove it or pass --force\n", out);
            return 2;
        }
        unlink(out);
    }
    char index[] = "/tmp/mtrace-index.XXXXXX";
    const int ifd = mkstemp(index);
    if (ifd < 0) {
        fprintf(stderr, "mtrace: cannot create %s: %s\n", index, strerror(errno));
        return 2;
    }
    close(ifd);

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

    /* Like time(1): the terminal's signals are for the traced program, we wait for it. */
    struct sigaction ign = { .sa_handler = SIG_IGN }, old_int, old_quit;
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    const pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "mtrace: fork: %s\n", strerror(errno));
        unlink(index);
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
    FILE *f = fopen(index, "r");
    char line[PATH_MAX + 2];
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        fprintf(stderr, "mtrace: wrote %s\n", line);
    }
    if (f)
        fclose(f);
    unlink(index);
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
            printf("%u %.9f %s", i, (double)r.time_ns / 1e9, mt_wl_op_name(r.op));
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
                printf(" thread=%u count=%" PRIu64, r.thread, r.n);
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
               " forced\n", h->inversions, h->unknown_frees, h->double_frees, h->forced);
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

typedef struct trace_stats {
    uint64_t records, calls, events;
    uint64_t per_op[MT_OP_MAX + 1];
    uint64_t first_time, last_time;
    unsigned last_op; /* the op of the latest record (of the last one read at that time) */
    uint64_t bytes_requested;
    uint64_t failed;
} trace_stats_t;

static int scan_trace(mt_trace_t *t, trace_stats_t *s, mt_error_t *err)
{
    memset(s, 0, sizeof *s);
    s->first_time = UINT64_MAX;
    mt_cursor_t c;
    if (mt_cursor_init(&c, t) < 0) {
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", mt_trace_path(t));
        return -ENOMEM;
    }
    int rc = 0;
    /* Through the threads' chunk lists: a chunk present twice in the file is counted once. */
    const uint32_t *order = mt_trace_thread_chunks(t);
    size_t nkept = 0;
    for (size_t i = 0; i < mt_trace_thread_count(t); i++)
        nkept += mt_trace_thread(t, i)->nchunks;
    for (size_t i = 0; i < nkept && rc >= 0; i++) {
        rc = mt_cursor_load(&c, order[i], err);
        mt_record_t r;
        while (rc >= 0 && (rc = mt_cursor_next(&c, &r, err)) > 0) {
            s->records++;
            s->per_op[r.op]++;
            if (r.op <= MT_OP_LAST_CALL) {
                s->calls++;
                if (r.flags & MT_FLAG_NULL && r.op != MT_OP_REALLOC)
                    s->failed++;
                else if (r.flags & MT_FLAG_NULL && r.size)
                    s->failed++;
                /* by the calls that returned a block, as mtrace report counts them; never wrapped */
                const int block = r.op != MT_OP_FREE && r.op != MT_OP_USABLE_SIZE && r.op != MT_OP_MALLOPT &&
                                  !(r.flags & MT_FLAG_NULL);
                const uint64_t req = mt_requested(r.op, r.count, r.size);
                if (block && __builtin_add_overflow(s->bytes_requested, req, &s->bytes_requested))
                    s->bytes_requested = UINT64_MAX;
            } else {
                s->events++;
                mt_trace_note_rss(t, &r);
            }
            if (r.time < s->first_time)
                s->first_time = r.time;
            if (r.time >= s->last_time) {
                s->last_time = r.time;
                s->last_op = r.op;
            }
        }
    }
    mt_cursor_fini(&c);
    if (s->first_time == UINT64_MAX)
        s->first_time = s->last_time = 0;
    return rc < 0 ? rc : 0;
}

static void print_header_strings(const mt_trace_t *t, mt_json_t *j)
{
    size_t len;
    const char *s = mt_trace_string(t, MT_STR_CMDLINE, 0, &len);
    char cmd[4096];
    size_t n = 0;
    for (size_t i = 0; s && i < len && n + 1 < sizeof cmd; i++)
        cmd[n++] = s[i] ? s[i] : ' ';
    cmd[n] = 0;
    static const struct { unsigned tag; const char *name; } tags[] = {
        { MT_STR_EXE, "exe" }, { MT_STR_GLIBC, "glibc" }, { MT_STR_ALLOCATOR, "allocator" }, { MT_STR_HOST, "host" },
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

static int cmd_info(int argc, char **argv)
{
    int json = 0;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--help")) {
            printf("usage: mtrace info [--json] FILE\n");
            return 0;
        }
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "usage: mtrace info [--json] FILE\n");
            return 2;
        } else
            path = argv[i];
    }
    if (!path) {
        fprintf(stderr, "usage: mtrace info [--json] FILE\n");
        return 2;
    }
    if (mt_file_is_workload(path) == 1)
        return info_workload(path, json);
    mt_error_t err;
    mt_trace_t *t;
    if (mt_trace_open(&t, path, &err) < 0)
        return mt_fail(&err);
    trace_stats_t s;
    if (scan_trace(t, &s, &err) < 0) {
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
    if (json) {
        mt_json_t j;
        mt_json_init(&j, stdout);
        mt_json_begin_object(&j);
        mt_json_kv_cstr(&j, "kind", "trace");
        mt_json_kv_cstr(&j, "file", path);
        mt_json_kv_u64(&j, "version", h->version);
        mt_json_kv_bool(&j, "packed", mt_trace_is_packed(t));
        mt_json_kv_u64(&j, "pid", h->pid);
        mt_json_kv_u64(&j, "ppid", h->ppid);
        mt_json_kv_u64(&j, "start_realtime_ns", h->start_realtime_ns);
        print_header_strings(t, &j);
        mt_json_kv_u64(&j, "threads", mt_trace_thread_count(t));
        mt_json_kv_u64(&j, "chunks", mt_trace_chunk_count(t));
        mt_json_kv_u64(&j, "records", s.records);
        mt_json_kv_u64(&j, "call_records", s.calls);
        mt_json_kv_u64(&j, "event_records", s.events);
        mt_json_kv_u64(&j, "file_bytes", size);
        mt_json_kv_double(&j, "bytes_per_call", s.calls ? (double)size / (double)s.calls : 0);
        mt_json_kv_double(&j, "ticks_per_sec", rate);
        mt_json_kv_double(&j, "span_s", span);
        mt_json_kv_bool(&j, "complete", complete);
        mt_json_kv_bool(&j, "ended_at_exec", ended_at_exec);
        mt_json_kv_bool(&j, "truncated", truncated);
        if (truncated)
            mt_json_kv_cstr(&j, "truncated_reason", strerror(h->truncated_errno));
        mt_json_kv_u64(&j, "lost_calls", h->lost_calls);
        mt_json_kv_u64(&j, "failed_calls", s.failed);
        mt_json_kv_u64(&j, "bytes_requested", s.bytes_requested);
        mt_json_key(&j, "calls");
        mt_json_begin_object(&j);
        for (unsigned op = 1; op <= MT_OP_LAST_CALL; op++)
            mt_json_kv_u64(&j, mt_op_name(op), s.per_op[op]);
        mt_json_end_object(&j);
        mt_json_key(&j, "events");
        mt_json_begin_object(&j);
        for (unsigned op = MT_FIRST_EVENT; op <= MT_OP_MAX; op++)
            if (mt_op_name(op))
                mt_json_kv_u64(&j, mt_op_name(op), s.per_op[op]);
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
    } else {
        printf("file          %s (%s, %" PRIu64 " bytes, format version %u)\n", path,
               mt_trace_is_packed(t) ? "packed" : "raw", size, h->version);
        printf("process       pid %u, parent %u\n", h->pid, h->ppid);
        print_header_strings(t, NULL);
        printf("threads       %zu\n", mt_trace_thread_count(t));
        printf("records       %" PRIu64 " (%" PRIu64 " calls, %" PRIu64 " events) in %zu chunks\n", s.records, s.calls,
               s.events, mt_trace_chunk_count(t));
        if (s.calls)
            printf("size          %.2f bytes per call\n", (double)size / (double)s.calls);
        printf("time span     %.6f s\n", span);
        printf("state         %s%s%s\n",
               complete        ? "complete"
               : ended_at_exec ? "ended at an exec (the program image was replaced; nothing follows the exec)"
                               : "not finished (the process was killed or crashed)",
               truncated ? ", truncated: " : "", truncated ? strerror(h->truncated_errno) : "");
        if (h->lost_calls)
            printf("lost calls    %" PRIu64 "\n", h->lost_calls);
        printf("calls        ");
        for (unsigned op = 1; op <= MT_OP_LAST_CALL; op++)
            if (s.per_op[op])
                printf(" %s %" PRIu64, mt_op_name(op), s.per_op[op]);
        printf("\nevents       ");
        for (unsigned op = MT_FIRST_EVENT; op <= MT_OP_MAX; op++)
            if (s.per_op[op])
                printf(" %s %" PRIu64, mt_op_name(op), s.per_op[op]);
        printf("\n");
    }
    mt_trace_close(t);
    return 0;
}

/* ---- mtrace dump ------------------------------------------------------------------------------- */

static void dump_record(const mt_record_t *r, uint32_t thread, double rate, uint64_t t0)
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
    const char *path = argc == 2 ? argv[1] : NULL;
    if (!path || path[0] == '-') {
        fprintf(stderr, "usage: mtrace dump FILE\n"
                        "  one record per line: thread, seconds since start, op, arguments = result\n");
        return 2;
    }
    if (mt_file_is_workload(path) == 1)
        return dump_workload(path);
    mt_error_t err;
    mt_trace_t *t;
    if (mt_trace_open(&t, path, &err) < 0)
        return mt_fail(&err);
    const mt_file_header_t *h = mt_trace_header(t);
    const double rate = mt_trace_ticks_per_sec(t);
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
            dump_record(&r, mt_trace_thread(t, i)->thread, rate, h->start_time);
        mt_thread_cursor_fini(&tc);
    }
    mt_trace_close(t);
    if (fflush(stdout) != 0 && errno != EPIPE) {
        fprintf(stderr, "mtrace: writing the dump: %s\n", strerror(errno));
        return 1;
    }
    return rc < 0 ? mt_fail(&err) : 0;
}

/* ---- mtrace pack ------------------------------------------------------------------------------- */

static int cmd_pack(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    int level = 9, force = 0;
    unsigned flags = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--plain"))
            flags |= MT_PACK_PLAIN;
        else if (!strcmp(argv[i], "--level") && i + 1 < argc)
            level = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--force"))
            force = 1;
        else if (argv[i][0] != '-' && !in)
            in = argv[i];
        else {
            in = NULL;
            break;
        }
    }
    if (!in) {
        fprintf(stderr, "usage: mtrace pack TRACE [-o OUT] [--level N] [--plain] [--force]\n"
                        "  compresses a trace (default OUT: TRACE with .mtz for .mtr); every mtrace command\n"
                        "  reads packed traces as it reads raw ones. Chunks are modeled, then compressed\n"
                        "  with zstd at level N (default 9); --plain: zstd alone, which older mtrace reads\n");
        return 2;
    }
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
    if (mt_trace_pack_flags(in, out, level, flags, &err) < 0)
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
    const char *summary;
} command_t;

static int cmd_convert(int argc, char **argv)
{
    return mt_convert_main("mtrace convert", argc, argv);
}

/* ---- mtrace replay and compare ---------------------------------------------------------------- */

static void usage_replay(FILE *f)
{
    fprintf(f, "usage: mtrace replay WORKLOAD [--allocator NAME|PATH.so]... [--mallopt NAME=VALUE]...\n"
               "                     [--tunables GLIBC_TUNABLES] [--json FILE] [--rss-series FILE]\n"
               "                     [--timing asap|recorded] [--touch MODE] [--repeat N] [--quiet]\n"
               "  replays WORKLOAD once per allocator (default glibc): glibc, jemalloc, tcmalloc, mimalloc or\n"
               "  a library path; several allocators end with a comparison table. With several, FILE gets the\n"
               "  allocator's name before its extension. mallopt names: mmap_threshold, trim_threshold,\n"
               "  top_pad, mmap_max, arena_max, arena_test, mxfast, perturb (or M_* or a number).\n"
               "  --touch MODE is passed to mtrace-sim as given (pages, ends, none: see mtrace-sim --help).\n"
               "  --repeat N (1 to %d): every allocator N times, in rounds (each allocator once, then again),\n"
               "  FILE getting the run's number (FILE.1.json, FILE.NAME.1.json). The table then gives per\n"
               "  allocator the median of its runs and their spread of CPU time and wall time (ms) and peak\n"
               "  RSS (MiB), with a verdict against the first allocator (as mtrace compare).\n" MT_VERDICT_HELP,
            MT_REPLAY_MAX_REPEAT);
}

static int cmd_replay(int argc, char **argv)
{
    static const struct option opts[] = {
        { "allocator", required_argument, 0, 'a' }, { "mallopt", required_argument, 0, 'm' },
        { "tunables", required_argument, 0, 'T' },  { "json", required_argument, 0, 'j' },
        { "rss-series", required_argument, 0, 's' }, { "timing", required_argument, 0, 't' },
        { "touch", required_argument, 0, 'u' },     { "repeat", required_argument, 0, 'r' },
        { "quiet", no_argument, 0, 'q' },           { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    mt_replay_opts_t o = { .repeat = 1 };
    unsigned long repeat = 1;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
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
        case 'T': o.tunables = optarg; break;
        case 'j': o.json = optarg; break;
        case 's': o.series = optarg; break;
        case 't': o.timing = optarg; break;
        case 'u': o.touch = optarg; break;
        case 'r':
            if (mt_uint_option("mtrace replay", "--repeat", optarg, 1, MT_REPLAY_MAX_REPEAT, &repeat) < 0)
                return 2;
            o.repeat = (int)repeat;
            break;
        case 'q': o.quiet = 1; break;
        case 'h': usage_replay(stdout); return 0;
        default: usage_replay(stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        usage_replay(stderr);
        return 2;
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
    /* A table for several allocators, and for the runs of one: its median and spread. */
    if (rc == 0 && n > 1) {
        for (int i = 0; i < n; i++)
            paths[i] = results[i];
        printf("\n");
        rc = mt_compare_print(stdout, paths, n, MT_TABLE_TEXT);
    }
    if (!o.json)
        for (int i = 0; i < n; i++)
            unlink(results[i]);
    free(results);
    free(paths);
    return rc;
}

static void usage_compare(FILE *f)
{
    fprintf(f, "usage: mtrace compare [--csv|--json] RESULT.json...\n"
               "  replay results (mtrace replay --json, mtrace-sim --json) in one table, one row per allocator\n"
               "  and settings: results of the same allocator, settings, workload, timing and touch are runs of\n"
               "  one row (mtrace replay --repeat writes them). A row's figures are the medians of its runs: wall\n"
               "  and CPU time in ms, peak RSS in MiB, with the %% change against the first row's; the spreads\n"
               "  follow when a row has several runs.\n" MT_VERDICT_HELP
               "  --csv and --json also give: runs; cpu_ms, wall_ms, max_rss_mib with _min, _q1, _q3, _max (the\n"
               "  spread, same units); time_verdict (baseline, faster, slower, within noise), memory_verdict\n"
               "  (baseline, less memory, more memory, within noise), noise_measured (both rows ran twice or\n"
               "  more); --json also files (a row's results).\n");
}

static int cmd_compare(int argc, char **argv)
{
    mt_table_fmt_t fmt = MT_TABLE_TEXT;
    const char *paths[256];
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--csv"))
            fmt = MT_TABLE_CSV;
        else if (!strcmp(argv[i], "--json"))
            fmt = MT_TABLE_JSON;
        else if (!strcmp(argv[i], "--help")) {
            usage_compare(stdout);
            return 0;
        } else if (argv[i][0] == '-' || n == 256) {
            usage_compare(stderr);
            return 2;
        } else
            paths[n++] = argv[i];
    }
    if (!n) {
        usage_compare(stderr);
        return 2;
    }
    return mt_compare_print(stdout, paths, n, fmt);
}

/* ---- mtrace report ------------------------------------------------------------------------------ */

static void usage_report(FILE *f)
{
    fprintf(f, "usage: mtrace report [--json|--csv] [--top N] [--folded FILE] [--flamegraph FILE.svg]\n"
               "                     [--flame-weight bytes|calls|leaked|peak] [--callsites-csv FILE]\n"
               "                     [--skip-frames PATTERN,...] [--no-auto-skip] [--tree-depth N]\n"
               "                     [--suppress FILE] [--temporary thread|heaptrack]\n"
               "                     [--html OUT.html] TRACE [RESULT.json...]\n"
               "  calls per function (like strace -c), peak live bytes and when, leaks, temporary allocations,\n"
               "  size and lifetime histograms, threads, and with stacks the top callsites with file:line\n"
               "  and the caller trees: allocating functions with their callers (bottom-up) and the callers\n"
               "  down to them (top-down), with calls, bytes, bytes at the peak and leaks at each level.\n"
               "  --skip-frames    allocation wrappers to see through (fnmatch patterns, e.g. 'xmalloc,z*alloc*');\n"
               "                   a function that only allocates for several callers is skipped too, unless\n"
               "                   --no-auto-skip; the output lists every frame skipped and why\n"
               "  --tree-depth N   levels of the caller trees shown (default 5)\n"
               "  --suppress FILE  leaks whose stack has a function matching a pattern of FILE (fnmatch, one a\n"
               "                   line, '#' comments, 'leak:' prefix allowed) are counted apart, not listed\n"
               "  --temporary R    thread (default): freed before its thread's next allocation; heaptrack:\n"
               "                   freed right after it was made, no allocation or free of any thread between\n");
}

/* Splits a --skip-frames list at its commas into `v` (up to `cap` patterns); the count. */
static size_t split_patterns(char *list, const char **v, size_t n, size_t cap)
{
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && n < cap; tok = strtok_r(NULL, ",", &save))
        if (*tok)
            v[n++] = tok;
    return n;
}

static int cmd_report(int argc, char **argv)
{
    mt_table_fmt_t fmt = MT_TABLE_TEXT;
    mt_report_opts_t o = { 0 };
    unsigned top = 0;
    const char *path = NULL, *html = NULL;
    const char *results[64];
    const char *skip[64];
    int nresults = 0;
    o.skip = skip;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json"))
            fmt = MT_TABLE_JSON;
        else if (!strcmp(a, "--csv"))
            fmt = MT_TABLE_CSV;
        else if (!strcmp(a, "--top") && v)
            top = (unsigned)atoi(argv[++i]);
        else if (!strcmp(a, "--folded") && v)
            o.folded = argv[++i];
        else if (!strcmp(a, "--flamegraph") && v)
            o.flamegraph = argv[++i];
        else if (!strcmp(a, "--flame-weight") && v)
            o.flame_weight = argv[++i];
        else if (!strcmp(a, "--callsites-csv") && v)
            o.callsites_csv = argv[++i];
        else if (!strcmp(a, "--skip-frames") && v)
            o.nskip = split_patterns(argv[++i], skip, o.nskip, sizeof skip / sizeof skip[0]);
        else if (!strcmp(a, "--suppress") && v)
            o.suppress = argv[++i];
        else if (!strcmp(a, "--temporary") && v && (!strcmp(v, "thread") || !strcmp(v, "heaptrack")))
            o.temporary_rule = !strcmp(argv[++i], "heaptrack") ? MT_TEMP_HEAPTRACK : MT_TEMP_THREAD;
        else if (!strcmp(a, "--no-auto-skip"))
            o.no_auto_skip = 1;
        else if (!strcmp(a, "--tree-depth") && v) {
            char *end;
            const unsigned long d = strtoul(argv[++i], &end, 10);
            if (end == argv[i] || *end || d < 1 || d > 64) {
                fprintf(stderr, "mtrace report: --tree-depth wants 1 to 64, not '%s'\n", argv[i]);
                return 2;
            }
            o.tree_depth = (unsigned)d;
        }
        else if (!strcmp(a, "--html") && v)
            html = argv[++i];
        else if (!strcmp(a, "--help")) {
            usage_report(stdout);
            return 0;
        } else if (a[0] != '-' && !path)
            path = a;
        else if (a[0] != '-' && html && nresults < 64)
            results[nresults++] = a;
        else {
            usage_report(stderr);
            return 2;
        }
    }
    if (!path || (o.flame_weight && strcmp(o.flame_weight, "bytes") && strcmp(o.flame_weight, "calls") &&
                  strcmp(o.flame_weight, "leaked") && strcmp(o.flame_weight, "peak"))) {
        usage_report(stderr);
        return 2;
    }
    /* The page gets a flame graph of its own when the user did not ask for one. */
    char flame_tmp[] = "/tmp/mtrace-flame.XXXXXX.svg";
    int flame_fd = -1;
    if (html && !o.flamegraph && (flame_fd = mkstemps(flame_tmp, 4)) >= 0) {
        close(flame_fd);
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
    if (flame_fd >= 0)
        unlink(flame_tmp);
    return rc;
}

/* ---- mtrace diff -------------------------------------------------------------------------------- */

static void usage_diff(FILE *f)
{
    fprintf(f, "usage: mtrace diff [--json|--html OUT.html] [--top N] [--skip-frames PATTERN,...] [--no-auto-skip]\n"
               "                   BEFORE AFTER\n"
               "  the change in calls, bytes, bytes at the peak and leaks per allocating function between two\n"
               "  traces recorded with --stacks (a run before and after a change), biggest movers first;\n"
               "  wrappers are skipped as by mtrace report, the same ones in both traces\n");
}

static int cmd_diff(int argc, char **argv)
{
    mt_table_fmt_t fmt = MT_TABLE_TEXT;
    mt_report_opts_t o = { 0 };
    const char *skip[64], *path[2] = { NULL, NULL }, *html = NULL;
    unsigned top = 0;
    o.skip = skip;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json"))
            fmt = MT_TABLE_JSON;
        else if (!strcmp(a, "--html") && v)
            html = argv[++i];
        else if (!strcmp(a, "--top") && v)
            top = (unsigned)atoi(argv[++i]);
        else if (!strcmp(a, "--skip-frames") && v)
            o.nskip = split_patterns(argv[++i], skip, o.nskip, sizeof skip / sizeof skip[0]);
        else if (!strcmp(a, "--no-auto-skip"))
            o.no_auto_skip = 1;
        else if (!strcmp(a, "--help")) {
            usage_diff(stdout);
            return 0;
        } else if (a[0] != '-' && !path[1])
            path[path[0] ? 1 : 0] = a;
        else {
            usage_diff(stderr);
            return 2;
        }
    }
    if (!path[1]) {
        usage_diff(stderr);
        return 2;
    }
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

static void usage_plot(FILE *f)
{
    fprintf(f, "usage: mtrace plot -o OUT.png|OUT.svg [--kind live|sizes|rss|compare] INPUT...\n"
               "  TRACE                live bytes and the program's RSS over time (--kind sizes: size histogram)\n"
               "  RESULT.json...       replay results: RSS against ideal RSS over time beside the traced\n"
               "                       program's RSS (--kind rss, default when recorded with --rss-series),\n"
               "                       or wall time and peak RSS bars (--kind compare)\n");
}

static int cmd_plot(int argc, char **argv)
{
    const char *out = NULL, *kind = NULL;
    const char *inputs[256];
    int n = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-o") && v)
            out = argv[++i];
        else if (!strcmp(a, "--kind") && v)
            kind = argv[++i];
        else if (!strcmp(a, "--help")) {
            usage_plot(stdout);
            return 0;
        } else if (a[0] != '-' && n < 256) {
            inputs[n++] = a;
        } else if (a[0] != '-') {
            fprintf(stderr, "mtrace: plot draws at most 256 inputs\n");
            return 2;
        } else {
            usage_plot(stderr);
            return 2;
        }
    }
    if (!out || !n) {
        usage_plot(stderr);
        return 2;
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

static const command_t commands[] = {
    { "record", cmd_record, "run a program under the tracer" },
    { "info", cmd_info, "summarize a trace (--json for scripts)" },
    { "dump", cmd_dump, "print a trace one record per line" },
    { "pack", cmd_pack, "compress a trace with zstd" },
    { "report", cmd_report, "calls, peak, leaks, temporaries, histograms, callsites" },
    { "diff", cmd_diff, "the change per allocating function between two traces, biggest movers first" },
    { "convert", cmd_convert, "turn a trace into a workload for replay (= trace2wl)" },
    { "replay", cmd_replay, "replay a workload against one or more allocators" },
    { "compare", cmd_compare, "compare replay results (medians, % change and verdict against the first)" },
    { "sweep", mt_sweep_main, "replay over a grid of mallopt settings and allocators" },
    { "plot", cmd_plot, "draw a trace's or replays' figures with gnuplot (PNG or SVG)" },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: mtrace COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'mtrace COMMAND --help' describes a command.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "mtrace: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
