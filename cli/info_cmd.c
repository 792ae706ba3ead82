/* mtrace info and mtrace dump: what a trace or a workload holds, summed up or record by record. */
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

#include "mtrace/trace_scan.h"
#include "mtrace/trace_reader.h"
#include "mtrace/workload.h"
#include "cli_util.h"
#include "commands.h"
#include "help_text.h"
#include "mtrace/file_io.h" /* mt_put_safe: strings from files are shown as \xNN, never sent to the terminal */

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
            case MT_WL_MALLOC_TRIM:
                printf(" pad=%" PRIu64, r.size);
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
            if (mt_op_allocates(r.op)) { /* the workload's call ops are the trace's */
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
    int writing;       /* not whole because a process is still recording into it */
    const char *bound; /* the object whose malloc went past the recorder, if any */
    size_t bound_len;
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
    printf("state         %s%s%s%s\n",
           x->writing    ? "being written (a process is still recording into it: the counts are of the records so far)"
           : !x->whole   ? "truncated file (cut short after it was written: the counts are of the records present)"
           : x->complete ? "complete"
           : x->ended_at_exec
               ? (x->next ? "ended at an exec: the program went on in "
                          : "ended at an exec (the program image was replaced; no trace of what followed was found "
                            "beside this file)")
               : "not finished (the process was killed or crashed)",
           x->whole && !x->complete && x->ended_at_exec && x->next ? x->next : "", x->truncated ? ", truncated: " : "",
           x->truncated ? strerror(h->truncated_errno) : "");
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
    size_t bound_len = 0;
    const char *bound = mt_trace_string(t, MT_STR_BOUND_MALLOC, 0, &bound_len);
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
    case MT_OP_MALLOC_TRIM:
        printf(" pad=%" PRIu64 " = %" PRId64, (uint64_t)r->arg[0], r->arg[1]);
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

int cmd_dump(int argc, char **argv)
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
    /* a write that failed is said by main (mt_stdout_finish) */
    if (rc < 0)
        return mt_fail(&err);
    if (!whole) {
        fprintf(stderr, "mtrace: %s\n", cut.msg);
        return 3;
    }
    return 0;
}
