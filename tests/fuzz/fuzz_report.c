/* Fuzz target: mtrace report on a trace (mt_report_build with folded stacks, a flame graph and the
 * callsite table written, then the report printed in every format). The input is a trace as for the
 * trace target (fz_trace_expand).
 *
 * FUZZ_SKIP_KNOWNBUGS=1 steps around the bugs kept in regressions/knownbug/report/ that the target
 * can avoid (the print of a report with stacks and no callsite), to fuzz past them; run with
 * ASAN_OPTIONS=detect_leaks=0 to get past the leak there. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz.h"
#include "mtrace/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fz_buf_t buf;
    static char folded[4200], svg[4200], csv[4200];
    if (!folded[0]) {
        snprintf(folded, sizeof folded, "%s/out.folded", fz_tmpdir());
        snprintf(svg, sizeof svg, "%s/out.svg", fz_tmpdir());
        snprintf(csv, sizeof csv, "%s/out.csv", fz_tmpdir());
    }
    fz_trace_expand(data, size, 0, &buf);
    const char *in = fz_memfile(0, buf.p, buf.n);
    static const char *const weights[] = { "bytes", "calls", "leaked", "peak" };
    const mt_report_opts_t o = {
        .folded = folded, .flamegraph = svg, .callsites_csv = csv, .flame_weight = weights[size % 4]
    };
    mt_report_t r;
    mt_error_t err;
    static int skip_known = -1;
    if (skip_known < 0)
        skip_known = getenv("FUZZ_SKIP_KNOWNBUGS") && *getenv("FUZZ_SKIP_KNOWNBUGS") == '1';
    if (mt_report_build(&r, in, &o, &err) == 0 && !(skip_known && r.has_stacks && !r.ncallsites)) {
        FILE *null = fopen("/dev/null", "w");
        if (!null)
            fz_fail("cannot open /dev/null");
        for (int fmt = MT_TABLE_TEXT; fmt <= MT_TABLE_JSON; fmt++)
            mt_report_print(&r, null, (mt_table_fmt_t)fmt, 1 + (unsigned)(size % 20));
        fclose(null);
    }
    mt_report_free(&r); /* after a failure too: the report holds what it had built */
    unlink(folded);
    unlink(svg);
    unlink(csv);
    return 0;
}
