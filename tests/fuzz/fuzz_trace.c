/* Fuzz target: the trace reader (raw and packed traces). The input is a trace file, or one of the
 * plain forms of fz_trace_expand (a compact raw trace, a packed trace with uncompressed frames).
 * A raw trace that reads is also packed (mt_trace_pack, as `mtrace pack` does): the packed trace
 * must read back with the same records. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "mtrace/trace_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fz_buf_t buf;
    static char packed[4200];
    if (!packed[0])
        snprintf(packed, sizeof packed, "%s/out.mtz", fz_tmpdir());
    fz_trace_expand(data, size, 0, &buf);
    const char *in = fz_memfile(0, buf.p, buf.n);
    const long long records = fz_walk_trace(in);
    mt_file_header_t h;
    if (records < 0 || buf.n < sizeof h)
        return 0;
    memcpy(&h, buf.p, sizeof h);
    if (h.flags & MT_HDR_PACKED)
        return 0;
    mt_error_t err;
    unlink(packed);
    if (mt_trace_pack(in, packed, 1, &err) == 0) {
        const long long again = fz_walk_trace(packed);
        if (again != records)
            fz_fail("the trace has %lld records, packed %lld", records, again);
    } else if (access(packed, F_OK) == 0) {
        fz_fail("a failed pack left its output behind (%s)", err.msg);
    }
    unlink(packed);
    return 0;
}
