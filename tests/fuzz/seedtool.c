/* Converts between real trace and workload files and the plain forms the fuzz targets take (fuzz.h):
 *   seedtool compact-trace IN OUT [MAX]  a trace into its plain form, cut to MAX bytes (a cut is valid)
 *   seedtool expand-trace IN OUT         a fuzz input into the trace file the trace targets read
 *   seedtool plain-wl IN OUT             a workload with its frames decompressed
 *   seedtool expand-wl IN OUT            a fuzz input into the workload file the workload targets read
 * make_seeds.sh uses it; expand-* turn a crashing input into a file the mtrace tools can look at. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

static int read_file(const char *path, fz_buf_t *b)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    uint8_t chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        fz_put(b, chunk, n);
    fclose(f);
    return 0;
}

static int write_file(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: seedtool compact-trace|expand-trace|plain-wl|expand-wl IN OUT [MAX]\n");
        return 2;
    }
    const char *mode = argv[1], *in = argv[2], *out = argv[3];
    fz_buf_t src = { 0 }, dst = { 0 };
    if (!strcmp(mode, "compact-trace")) {
        if (fz_trace_compact(in, &dst) < 0)
            return 1;
        if (argc > 4) {
            const size_t max = strtoul(argv[4], NULL, 0);
            if (dst.n > max)
                dst.n = max;
        }
    } else {
        if (read_file(in, &src) < 0)
            return 1;
        if (!strcmp(mode, "expand-trace"))
            fz_trace_expand(src.p, src.n, 0, &dst);
        else if (!strcmp(mode, "plain-wl"))
            fz_wl_expand(src.p, src.n, 1, &dst);
        else if (!strcmp(mode, "expand-wl"))
            fz_wl_expand(src.p, src.n, 0, &dst);
        else {
            fprintf(stderr, "seedtool: unknown mode %s\n", mode);
            return 2;
        }
    }
    const int rc = write_file(out, dst.p, dst.n) < 0;
    fz_buf_free(&src);
    fz_buf_free(&dst);
    return rc;
}
