/* Fuzz target: the workload reader (mt_wl_open, then a cursor over every thread to its end). The input
 * is a workload, whose frames may be stored uncompressed (fz_wl_expand compresses them). */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fz_buf_t buf;
    fz_wl_expand(data, size, 0, &buf);
    fz_wl_stats_t st;
    fz_walk_wl(fz_memfile(0, buf.p, buf.n), &st);
    return 0;
}
