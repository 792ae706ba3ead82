/* Several traces as one (mtrace report TRACE TRACE ..., a process tree's files): the figures that add
 * up across processes, summed trace by trace as each report is built and freed, so that memory holds
 * one trace's report at a time. */
#include <inttypes.h>
#include <stdio.h>

#include "mtrace/json_writer.h"
#include "mtrace/report.h"

/* a + b, stopping at UINT64_MAX */
static uint64_t add_sat(uint64_t a, uint64_t b)
{
    uint64_t s;
    return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

void mt_report_total_add(mt_report_total_t *t, const mt_report_t *r)
{
    t->traces++;
    t->threads += r->threads;
    for (unsigned op = 1; op <= MT_OP_LAST_CALL; op++) {
        t->calls[op] = add_sat(t->calls[op], r->calls[op]);
        t->bytes[op] = add_sat(t->bytes[op], r->bytes[op]);
        t->failures[op] = add_sat(t->failures[op], r->failures[op]);
    }
    t->allocations = add_sat(t->allocations, r->allocations);
    t->leaked_blocks = add_sat(t->leaked_blocks, r->leaked_blocks);
    t->leaked_bytes = add_sat(t->leaked_bytes, r->leaked_bytes);
    t->temporary = add_sat(t->temporary, r->temporary);
    t->peak_sum = add_sat(t->peak_sum, r->peak_live_bytes);
    if (r->peak_live_bytes > t->peak_max)
        t->peak_max = r->peak_live_bytes;
    t->incomplete += !r->complete;
    t->truncated += r->truncated != 0;
}

void mt_report_total_print(const mt_report_total_t *t, FILE *f, mt_table_fmt_t fmt)
{
    if (fmt == MT_TABLE_JSON) {
        mt_json_t j;
        mt_json_init(&j, f);
        mt_json_begin_object(&j);
        mt_json_kv_u64(&j, "traces", t->traces);
        mt_json_kv_u64(&j, "threads", t->threads);
        mt_report_json_calls(&j, t->calls, t->bytes, t->failures);
        mt_json_kv_u64(&j, "allocations", t->allocations);
        mt_json_kv_u64(&j, "leaked_blocks", t->leaked_blocks);
        mt_json_kv_u64(&j, "leaked_bytes", t->leaked_bytes);
        mt_json_kv_u64(&j, "temporary", t->temporary);
        mt_json_kv_u64(&j, "peak_live_bytes_sum", t->peak_sum);
        mt_json_kv_u64(&j, "peak_live_bytes_max", t->peak_max);
        mt_json_kv_u64(&j, "incomplete_traces", t->incomplete);
        mt_json_kv_u64(&j, "truncated_traces", t->truncated);
        mt_json_end_object(&j);
        mt_json_finish(&j);
        return;
    }
    fprintf(f, "\nall %" PRIu64 " traces: %" PRIu64 " threads%s\n", t->traces, t->threads,
            t->incomplete ? " (some traces did not finish: their process was killed or crashed, or ended at an exec)"
                          : "");
    mt_report_calls_table(f, t->calls, t->bytes, t->failures);
    fprintf(f,
            "peak live      %" PRIu64 " bytes at most in one process; %" PRIu64
            " bytes summed over the processes (their peaks, not at one time)\n",
            t->peak_max, t->peak_sum);
    fprintf(f, "leaked         %" PRIu64 " bytes in %" PRIu64 " blocks\n", t->leaked_bytes, t->leaked_blocks);
    fprintf(f, "temporary      %" PRIu64 " allocations of %" PRIu64 "\n", t->temporary, t->allocations);
}
