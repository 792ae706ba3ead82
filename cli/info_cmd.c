/* mtrace info: what a trace or a workload holds, summed up: its header, its state and its counts. */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mtrace/trace_scan.h"
#include "mtrace/trace_reader.h"
#include "mtrace/workload.h"
#include "cli_util.h"
#include "commands.h"
#include "help_text.h"
#include "mtrace/file_io.h" /* mt_put_safe: strings from files are shown as \xNN, never sent to the terminal */

/* ---- workloads --------------------------------------------------------------------------------- */

static int info_workload(const char *path, int json)
{
    mt_error_t err;
    mt_wl_t *w;
    if (mt_wl_open(&w, path, &err) < 0)
        return mt_fail(&err);
    mt_wl_stats_t s;
    if (mt_scan_workload(w, &s, 0, &err) < 0) {
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
        mt_json_kv_u64(&j, "sync_points", h->waits);
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
        for (unsigned op = 1; op <= MT_WL_LAST_CALL; op++)
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
        for (unsigned op = 1; op <= MT_WL_LAST_CALL; op++)
            if (s.per_op[op])
                printf(" %s %" PRIu64, mt_wl_op_name(op), s.per_op[op]);
        printf("\n");
    }
    mt_wl_close(w);
    return 0;
}

/* ---- traces ------------------------------------------------------------------------------------ */

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
    int writing;       /* not whole because a process is still recording into it */
    const char *bound; /* the object whose malloc went past the recorder, if any */
    size_t bound_len;
    int bound_exe;    /* that object is the program's executable: an allocator linked into it */
    const char *next; /* ended at an exec: the trace the program went on in, if found */
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
    mt_json_kv_bool(&j, "file_truncated", !x->whole && !x->writing);
    mt_json_kv_bool(&j, "being_written", x->writing);
    mt_json_kv_bool(&j, "ended_at_exec", x->ended_at_exec);
    if (x->next)
        mt_json_kv_cstr(&j, "continued_in", x->next);
    mt_json_kv_bool(&j, "truncated", x->truncated);
    mt_json_kv_bool(&j, "bypassed", (h->flags & MT_HDR_BYPASSED) != 0);
    if (x->bound) {
        mt_json_kv_str(&j, "bypassed_by", x->bound, x->bound_len);
        mt_json_kv_bool(&j, "bypassed_by_executable", x->bound_exe);
    }
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
    printf("state         %s%s%s%s\n",
           x->writing    ? "being written (a process is still recording into it: the counts are of the records so far)"
           : !x->whole   ? "truncated file (cut short after it was written: the counts are of the records present)"
           : x->complete ? "complete"
           : x->ended_at_exec
               ? (x->next ? "ended at an exec: the program went on in "
                          : "ended at an exec (the program image was replaced; no trace of what followed was found "
                            "beside this file)")
               : "not finished (the process was killed or crashed, or left by a bare exit_group system call, as Go "
                 "programs do)",
           x->whole && !x->complete && x->ended_at_exec && x->next ? x->next : "", x->truncated ? ", truncated: " : "",
           x->truncated ? strerror(h->truncated_errno) : "");
    if (h->lost_calls)
        printf("lost calls    %" PRIu64 "\n", h->lost_calls);
    if (h->flags & MT_HDR_BYPASSED) {
        if (x->bound_exe) {
            printf("bypassed      the program's malloc is its own, linked into ");
            mt_put_safe(stdout, x->bound, x->bound_len);
            printf(": its calls are not in the trace\n");
        } else {
            printf("bypassed      the program's malloc was ");
            mt_put_safe(stdout, x->bound ? x->bound : "another object",
                        x->bound ? x->bound_len : strlen("another object"));
            printf("'s, found before libmtrace.so (LD_PRELOAD order): its calls are not in the trace\n");
        }
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

int cmd_info(int argc, char **argv)
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
    const int ended_at_exec = mt_trace_ended_at_exec(h, s.last_op);
    const uint64_t size = mt_trace_file_size(t);
    /* A file cut short after it was written, or one a process is still recording into: its records
     * are a prefix; say so and exit 3. */
    mt_error_t cut;
    const int whole_rc = mt_trace_check_whole(t, &cut), whole = whole_rc == 0;
    /* Calls that went past the recorder (another allocator first in LD_PRELOAD): why a trace is empty. */
    size_t bound_len = 0, exe_len = 0;
    const char *bound = mt_trace_string(t, MT_STR_BOUND_MALLOC, 0, &bound_len);
    const char *exe = mt_trace_string(t, MT_STR_EXE, 0, &exe_len);
    /* the recorder names the executable by its MT_STR_EXE when the malloc is the executable's */
    const int bound_exe = bound && exe && bound_len == exe_len && !memcmp(bound, exe, exe_len);
    char next[4096];
    const int has_next = ended_at_exec && mt_trace_continuation(path, h, next, sizeof next);
    const info_facts_t facts = { .path = path,
                                 .size = size,
                                 .rate = rate,
                                 .span = span,
                                 .truncated = truncated,
                                 .complete = complete,
                                 .ended_at_exec = ended_at_exec,
                                 .whole = whole,
                                 .writing = whole_rc == -EBUSY,
                                 .bound = bound,
                                 .bound_len = bound_len,
                                 .bound_exe = bound_exe,
                                 .next = has_next ? next : NULL };
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
