/* mtrace export: the command line of analysis/export.c. */
#define _GNU_SOURCE
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "export_cmd.h"
#include "mtrace/export.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: mtrace export TRACE -o DIR [--trace-id N] [--skip-frames PATTERN,...] [--no-auto-skip] [--force]\n"
               "  writes the trace as ClickHouse tables in RowBinary, one file each in DIR (made if missing):\n"
               "  mtrace_records (every call, in time order), mtrace_stacks (symbolized), mtrace_threads,\n"
               "  mtrace_rss and mtrace_traces (the header), as TABLE.rowbinary. doc/export.md has the\n"
               "  CREATE TABLE statements and the queries that give mtrace report's figures.\n"
               "  --trace-id N  the key of this trace's rows (default: a hash of its pid, start and host)\n"
               "  --skip-frames, --no-auto-skip  how callsites are found, as in mtrace report\n"
               "  --force       replace the files of an earlier export in DIR\n"
               "  A damaged trace: every record before the damage is exported, the message says where it\n"
               "  stopped, and the exit status is 1.\n");
}

int mt_export_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "output", required_argument, NULL, 'o' },
        { "trace-id", required_argument, NULL, 'i' },
        { "force", no_argument, NULL, 'f' },
        { "skip-frames", required_argument, NULL, 's' },
        { "no-auto-skip", no_argument, NULL, 'n' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    mt_export_opts_t o = { 0 };
    const char *skip[64];
    o.skip = skip;
    int force = 0, c;
    unsigned long id;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': o.dir = optarg; break;
        case 'i':
            if (mt_uint_option("mtrace export", "--trace-id", optarg, 1, ULONG_MAX, &id) < 0)
                return 2;
            o.trace_id = id;
            break;
        case 'f': force = 1; break;
        case 's': /* comma-separated fnmatch patterns, as report takes them */
            for (char *save = NULL, *p = strtok_r(optarg, ",", &save); p && o.nskip < 64; p = strtok_r(NULL, ",", &save))
                skip[o.nskip++] = p;
            break;
        case 'n': o.no_auto_skip = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind + 1 != argc || !o.dir) {
        usage(stderr);
        return 2;
    }
    const char *trace = argv[optind];
    for (int k = 0; k < MT_EXPORT_NTABLES && !force; k++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s.rowbinary", o.dir, mt_export_table_names[k]);
        if (access(path, F_OK) == 0) {
            fprintf(stderr, "mtrace: %s exists; remove it or pass --force\n", path);
            return 2;
        }
    }
    mt_export_stats_t st;
    mt_error_t err;
    const int rc = mt_export_trace(trace, &o, &st, &err);
    if (rc < 0)
        return mt_fail(&err);
    if (rc > 0) {
        fprintf(stderr, "mtrace: %s; exported the %llu call records before it to %s\n", err.msg,
                (unsigned long long)st.records, o.dir);
        return 1;
    }
    fprintf(stderr, "mtrace: exported %s to %s: %llu call records, %llu stacks, %llu threads, %llu RSS samples (trace id %llu)\n",
            trace, o.dir, (unsigned long long)st.records, (unsigned long long)st.stacks,
            (unsigned long long)st.threads, (unsigned long long)st.rss, (unsigned long long)st.trace_id);
    return 0;
}
