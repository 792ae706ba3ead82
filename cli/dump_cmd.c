/* mtrace dump: what a trace or a workload holds, record by record, one a line. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mtrace/trace_reader.h"
#include "mtrace/workload.h"
#include "cli_util.h"
#include "commands.h"
#include "help_text.h"
#include "mtrace/file_io.h" /* mt_put_safe: strings from files are shown as \xNN, never sent to the terminal */

/* ---- workloads --------------------------------------------------------------------------------- */

/* cli_util.h: the printing is mtrace dump's, the counts mtrace info's too. */
int mt_scan_workload(const mt_wl_t *w, mt_wl_stats_t *s, int dump, mt_error_t *err)
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

static int dump_workload(const char *path)
{
    mt_error_t err;
    mt_wl_t *w;
    if (mt_wl_open(&w, path, &err) < 0)
        return mt_fail(&err);
    mt_wl_stats_t s;
    const int rc = mt_scan_workload(w, &s, 1, &err);
    mt_wl_close(w);
    return rc < 0 ? mt_fail(&err) : 0;
}

/* ---- traces ------------------------------------------------------------------------------------ */

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
        mt_pages_prints_t pr;
        if (mt_pages_prints(r, &pr)) /* after `when`: pages printed, changed, zero */
            printf(" %" PRIu64 " %" PRIu64 " %" PRIu64, pr.sampled, pr.changed, pr.zero);
        const int edge = mt_pages_edge_written(r);
        if (edge >= 0) /* after `when`: whether an edge block's last bytes were written */
            printf(" %d", edge);
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
    /* A trace cut short, or still being written, dumps the records present, then says it is not the
     * whole (exit 3, as info). */
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
