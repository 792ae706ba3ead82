/* Fuzz target: packed traces. Every input takes the packed path: MT_HDR_PACKED is set in its header,
 * and frames whose records are not compressed are compressed first (fz_trace_expand), so that
 * mutations reach both the frame structure and the records inside frames. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fz_buf_t buf;
    fz_trace_expand(data, size, 1, &buf);
    fz_walk_trace(fz_memfile(0, buf.p, buf.n));
    return 0;
}
