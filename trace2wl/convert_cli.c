/* The converter's command line: options, progress, the summary. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "convert_cli.h"
#include "mtrace/convert.h"

static void usage(FILE *f, const char *prog)
{
    fprintf(f, "usage: %s TRACE -o WORKLOAD [--force] [--quiet]\n"
               "  converts a trace into a per-thread workload for the simulator; prints what it kept,\n"
               "  repaired and dropped\n", prog);
}

int mt_convert_main(const char *prog, int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    mt_convert_opts_t opts = { .progress = isatty(STDERR_FILENO) };
    int quiet = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--force"))
            opts.force = 1;
        else if (!strcmp(argv[i], "--quiet"))
            quiet = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout, prog);
            return 0;
        } else if (argv[i][0] != '-' && !in)
            in = argv[i];
        else {
            usage(stderr, prog);
            return 2;
        }
    }
    if (!in || !out) {
        usage(stderr, prog);
        return 2;
    }
    if (quiet)
        opts.progress = 0;
    mt_convert_stats_t st;
    mt_error_t err;
    if (mt_convert(in, out, &opts, &st, &err) < 0) {
        fprintf(stderr, "%s: %s\n", prog, err.msg);
        return 1;
    }
    if (!quiet) {
        printf("%s: %s -> %s\n", prog, in, out);
        printf("  records read        %" PRIu64 " (%" PRIu64 " calls)\n", st.records, st.calls);
        printf("  ops written         %" PRIu64 "\n", st.ops);
        printf("  threads             %u\n", st.threads);
        printf("  slots (peak live)   %" PRIu64 "\n", st.slots);
        printf("  peak live bytes     %" PRIu64 "\n", st.peak_live_bytes);
        printf("  sync points         %" PRIu64 "\n", st.waits);
        printf("  inversions repaired %" PRIu64 "\n", st.inversions);
        printf("  unknown frees       %" PRIu64 " (blocks allocated before tracing: dropped)", st.unknown_frees);
        if (st.unknown_frees)
            printf(", first at offset %" PRIu64, st.first_unknown_free_offset);
        printf("\n  double frees        %" PRIu64, st.double_frees);
        if (st.double_frees)
            printf(", first at offset %" PRIu64, st.first_double_free_offset);
        printf("\n");
        if (st.forced)
            printf("  forced              %" PRIu64 " (records whose dependency never came)\n", st.forced);
        if (st.large_blocks)
            printf("  large blocks        %" PRIu64 " (%" PRIu64 " of fresh memory, %" PRIu64
                   " estimated): %.1f %% of their pages written, %" PRIu64 " written in part\n",
                   st.large_blocks, st.large_exact, st.large_estimated,
                   st.large_pages ? 100.0 * (double)st.large_touched / (double)st.large_pages : 0.0, st.touch_entries);
        if (st.program_maps)
            printf("  program mappings    %" PRIu64 " (at most %.1f MiB at once): %.1f %% of their pages written\n",
                   st.program_maps, (double)st.program_peak_bytes / 1048576.0,
                   st.program_pages ? 100.0 * (double)st.program_touched / (double)st.program_pages : 0.0);
        if (st.program_brk_peak_bytes)
            printf("  program's own brk   at most %.1f MiB at once (of the mappings above)\n",
                   (double)st.program_brk_peak_bytes / 1048576.0);
        if (st.program_advises)
            printf("  program's madvise   %" PRIu64 " ops dropping pages of its own mappings\n", st.program_advises);
    }
    return 0;
}
