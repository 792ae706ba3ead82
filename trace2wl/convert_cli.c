/* The converter's command line: options, progress, the summary. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli_options.h"
#include "convert_cli.h"
#include "mtrace/file_io.h"
#include "mtrace/convert.h"

/* The help of mtrace convert and trace2wl: one text, printed by both and made into mtrace-convert.1. */
const char mt_convert_help[] =
    "usage: mtrace convert TRACE -o WORKLOAD [--force] [--quiet] [-j N]\n"
    "       trace2wl TRACE -o WORKLOAD [--force] [--quiet] [-j N]\n"
    "\n"
    "Converts a trace (raw or packed) into a per-thread workload for the simulator (mtrace replay,\n"
    "mtrace-sim): every block gets a slot, every thread a stream of ops with sync points where one\n"
    "thread's op waits for another's. Prints what it kept, repaired and dropped.\n"
    "\n"
    "Options:\n"
    "  -o, --output WORKLOAD  the workload to write\n"
    "  -f, --force            replace WORKLOAD if it exists\n"
    "  -q, --quiet            no summary and no progress\n"
    "  -j, --jobs N           threads reading the trace, 1 to 1024 (default: the CPUs online): N - 1\n"
    "                         decode its threads' records ahead while this one converts; the\n"
    "                         workload is the same, byte for byte, with any N\n"
    "  -h, --help             this text\n"
    "\n"
    "Output:\n"
    "  records read         the trace's records (and of them, calls)\n"
    "  ops written          the workload's ops\n"
    "  slots (peak live)    the most blocks live at once: the replay's slot table\n"
    "  peak live bytes      the most bytes requested and live at once\n"
    "  sync points          ops that wait for another thread's op\n"
    "  inversions repaired  records whose order across threads the converter restored\n"
    "  unknown frees        frees of blocks allocated before tracing: dropped, with the first one's\n"
    "                       byte offset in the trace\n"
    "  double frees         frees of blocks already freed: dropped, with the first one's offset\n"
    "  large blocks         blocks of 64 KiB or more: of fresh memory (pages written counted), decided\n"
    "                       by their pages' prints (reused memory), or estimated from those; the share\n"
    "                       of their pages the program wrote (the replay writes those)\n"
    "  edge blocks          blocks of 4 to 64 KiB whose last bytes would take a page of their own\n"
    "                       where glibc maps them (16384 bytes: five pages), and of those the ones\n"
    "                       the program left unwritten (the replay writes them up to those bytes)\n"
    "  program mappings     the program's own mmaps, the most MiB mapped at once and the share of\n"
    "                       their pages written\n"
    "Progress goes to stderr, and only when it is a terminal. A trace that ended at an exec gives the\n"
    "program up to the exec: a note on stderr (with --quiet too) names the trace it went on in.\n"
    "\n"
    "Exit status:\n"
    "  0  success\n"
    "  1  the trace could not be read (the message names the file and the byte offset) or the\n"
    "     workload not written; no partial workload is left under its name\n"
    "  2  usage error\n"
    "\n"
    "Example:\n"
    "  mtrace convert app.mtr -o app.wl\n";

int mt_convert_main(const char *prog, int argc, char **argv)
{
    static const struct option longopts[] = {
        { "output", required_argument, 0, 'o' }, { "force", no_argument, 0, 'f' }, { "quiet", no_argument, 0, 'q' },
        { "jobs", required_argument, 0, 'j' },   { "help", no_argument, 0, 'h' },  { 0, 0, 0, 0 },
    };
    const char *in = NULL, *out = NULL;
    mt_convert_opts_t opts = { .progress = isatty(STDERR_FILENO), .jobs = mt_online_cpus() };
    int quiet = 0, c;
    unsigned long jobs;
    optind = 0; /* 0, not 1: glibc starts afresh, ordering too, after mtrace's own options */
    while ((c = mt_getopt(prog, argc, argv, "o:fqj:h", longopts)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'f':
            opts.force = 1;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'j':
            if (mt_uint_option(prog, "--jobs", optarg, 1, MT_JOBS_MAX, &jobs) < 0)
                return MT_EXIT_USAGE;
            opts.jobs = (unsigned)jobs;
            break;
        case 'h':
            fputs(mt_convert_help, stdout);
            return 0;
        default:
            return mt_usage_error(prog, mt_convert_help);
        }
    }
    if (optind < argc)
        in = argv[optind++];
    if (!in || !out || optind < argc) {
        fprintf(stderr, "%s: %s\n", prog, !in ? "no TRACE given" : !out ? "no -o WORKLOAD given" : "one TRACE only");
        return mt_usage_error(prog, mt_convert_help);
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
                   " by their prints, %" PRIu64 " estimated): %.1f %% of their pages written, %" PRIu64
                   " written in part, %" PRIu64 " written as the RSS samples rose\n",
                   st.large_blocks, st.large_exact, st.large_printed, st.large_estimated - st.large_printed,
                   st.large_pages ? 100.0 * (double)st.large_touched / (double)st.large_pages : 0.0,
                   st.touch_entries - st.later_entries - st.large_later - st.edge_unwritten, st.large_later);
        if (st.edge_blocks)
            printf("  edge blocks         %" PRIu64 " (%" PRIu64 " with their last bytes unwritten)\n", st.edge_blocks,
                   st.edge_unwritten);
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
    /* The workload is the program up to its exec only: say so even with --quiet, where it goes on. */
    if (st.ended_at_exec) {
        fprintf(stderr, "%s: note: %s ended at an exec: the workload is the program up to it; ", prog, in);
        if (st.continued_in[0]) {
            fputs("the program went on in ", stderr);
            mt_put_safe(stderr, st.continued_in, strlen(st.continued_in));
            fputs(" (convert that for the rest)\n", stderr);
        } else {
            fputs("no trace of what followed was found beside it\n", stderr);
        }
    }
    return 0;
}
