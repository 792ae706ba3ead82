/* Fuzz target: trace to workload conversion (mt_convert), then the workload read back. The input is a
 * trace as for the trace target (fz_trace_expand). Whatever the trace holds, a conversion that
 * succeeds must write a workload that reads back whole and that the simulator accepts: every stream
 * decodes to its end with the op counts of the index, slots stay within the header's slot count, and
 * WAITs name another existing thread and no more ops than it has. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "mtrace/convert.h"
#include "mtrace/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fz_buf_t buf;
    static char out[4200];
    if (!out[0])
        snprintf(out, sizeof out, "%s/out.wl", fz_tmpdir());
    fz_trace_expand(data, size, 0, &buf);
    const char *in = fz_memfile(0, buf.p, buf.n);
    mt_convert_opts_t opts = { .force = 1 };
    mt_convert_stats_t cs;
    mt_error_t err;
    if (mt_convert(in, out, &opts, &cs, &err) < 0) {
        if (access(out, F_OK) == 0)
            fz_fail("a failed conversion left its output behind (%s)", err.msg);
        return 0;
    }
    fz_wl_stats_t st;
    fz_walk_wl(out, &st);
    if (!st.opened || st.damaged)
        fz_fail("the converted workload does not read back (opened %d, damaged %d)", st.opened, st.damaged);
    if (st.ops_mismatch)
        fz_fail("a converted stream's op count differs from its index entry");
    if (st.ops != cs.ops)
        fz_fail("the workload holds %llu ops, the conversion wrote %llu", (unsigned long long)st.ops,
                (unsigned long long)cs.ops);
    if (st.max_slot > cs.slots)
        fz_fail("an op names slot %llu, the workload has %llu", (unsigned long long)st.max_slot,
                (unsigned long long)cs.slots);
    if (st.bad_wait)
        fz_fail("a converted WAIT names itself, a missing thread, or more ops than the thread has");
    unlink(out);
    return 0;
}
