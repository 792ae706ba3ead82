/* mtrace export: the command line of analysis/export.c. */
#define _GNU_SOURCE
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "export_cmd.h"
#include "help_text.h"
#include "mtrace/export.h"

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
    optind = 0; /* afresh: see mt_getopt */
    while ((c = mt_getopt("mtrace export", argc, argv, "o:h", opts)) != -1) {
        switch (c) {
        case 'o':
            o.dir = optarg;
            break;
        case 'i':
            if (mt_uint_option("mtrace export", "--trace-id", optarg, 1, ULONG_MAX, &id) < 0)
                return MT_EXIT_USAGE;
            o.trace_id = id;
            break;
        case 'f':
            force = 1;
            break;
        case 's': /* comma-separated fnmatch patterns, as report takes them */
            for (char *save = NULL, *p = strtok_r(optarg, ",", &save); p && o.nskip < 64;
                 p = strtok_r(NULL, ",", &save))
                skip[o.nskip++] = p;
            break;
        case 'n':
            o.no_auto_skip = 1;
            break;
        case 'h':
            return mt_help_print("export");
        default:
            return mt_help_usage_error("export");
        }
    }
    const char *trace = mt_one_operand("mtrace export", "TRACE", argc, argv);
    if (!trace || !o.dir) {
        if (trace)
            fprintf(stderr, "mtrace export: no -o DIR given\n");
        return mt_help_usage_error("export");
    }
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
    fprintf(
        stderr,
        "mtrace: exported %s to %s: %llu call records, %llu stacks, %llu threads, %llu RSS samples (trace id %llu)\n",
        trace, o.dir, (unsigned long long)st.records, (unsigned long long)st.stacks, (unsigned long long)st.threads,
        (unsigned long long)st.rss, (unsigned long long)st.trace_id);
    return 0;
}
