/* mtrace sweep: replays a workload over a grid of settings and allocators, prints a table, writes
 * CSV and a plot, and names the setting with the lowest peak RSS and the fastest one. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_io.h"
#include "mtrace/json_reader.h"
#include "mtrace/plot.h"
#include "mtrace/replay.h"
#include "mtrace/workload.h"
#include "sweep.h"

#define MAX_PARAMS 4
#define MAX_VALUES 32
#define MAX_POINTS 512

typedef struct point {
    char allocator[128];
    char setting[MAX_PARAMS][96]; /* NAME=VALUE */
    double x;                     /* value of the first parameter */
    double wall_ms, cpu_ms, rss_mib, ideal_mib, frag;
} point_t;

static void usage(FILE *f)
{
    fprintf(f, "usage: mtrace sweep WORKLOAD --mallopt NAME=V1,V2,... [--mallopt NAME=...] [--allocator NAME]...\n"
               "                    [-o DIR] [--timing asap|recorded] [--repeat N]\n"
               "  replays WORKLOAD for every combination of the settings (and allocators), prints a table,\n"
               "  writes DIR/sweep.csv and DIR/sweep.png, and names the lowest-RSS and the fastest setting.\n"
               "  Values take k and m suffixes. DIR defaults to sweep-out.\n");
}

int mt_sweep_main(int argc, char **argv)
{
    const char *workload = NULL, *dir = "sweep-out", *timing = NULL;
    const char *allocators[MT_REPLAY_MAX];
    int nalloc = 0, nparams = 0, repeat = 1;
    char pname[MAX_PARAMS][64];
    char pval[MAX_PARAMS][MAX_VALUES][32];
    int nval[MAX_PARAMS];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--mallopt") && v && nparams < MAX_PARAMS) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v || (size_t)(eq - v) >= sizeof pname[0]) {
                fprintf(stderr, "mtrace: --mallopt %s: expected NAME=V1,V2,...\n", v);
                return 2;
            }
            snprintf(pname[nparams], sizeof pname[0], "%.*s", (int)(eq - v), v);
            nval[nparams] = 0;
            char list[1024];
            snprintf(list, sizeof list, "%s", eq + 1);
            for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && nval[nparams] < MAX_VALUES;
                 tok = strtok_r(NULL, ",", &save))
                snprintf(pval[nparams][nval[nparams]++], sizeof pval[0][0], "%s", tok);
            if (!nval[nparams]) {
                fprintf(stderr, "mtrace: --mallopt %s: no values\n", v);
                return 2;
            }
            nparams++;
            i++;
        } else if (!strcmp(a, "--allocator") && v && nalloc < MT_REPLAY_MAX) {
            allocators[nalloc++] = argv[++i];
        } else if (!strcmp(a, "-o") && v) {
            dir = argv[++i];
        } else if (!strcmp(a, "--timing") && v) {
            timing = argv[++i];
        } else if (!strcmp(a, "--repeat") && v) {
            repeat = atoi(argv[++i]);
        } else if (!strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (a[0] != '-' && !workload) {
            workload = a;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!workload || !nparams || repeat < 1) {
        usage(stderr);
        return 2;
    }
    if (!nalloc)
        allocators[nalloc++] = "glibc";
    mt_error_t err;
    mt_wl_t *w;
    if (mt_wl_open(&w, workload, &err) < 0) {
        fprintf(stderr, "mtrace: %s\n", err.msg);
        return 1;
    }
    mt_wl_close(w);
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        fprintf(stderr, "mtrace: cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    int total = nalloc;
    for (int p = 0; p < nparams; p++)
        total *= nval[p];
    if (total > MAX_POINTS) {
        fprintf(stderr, "mtrace: %d combinations; at most %d\n", total, MAX_POINTS);
        return 2;
    }
    static point_t pts[MAX_POINTS];
    for (int k = 0; k < total; k++) {
        point_t *pt = &pts[k];
        int rest = k;
        snprintf(pt->allocator, sizeof pt->allocator, "%s", allocators[rest % nalloc]);
        rest /= nalloc;
        mt_replay_opts_t o = { .workload = workload, .nallocators = 1, .timing = timing, .quiet = 1 };
        o.allocators[0] = pt->allocator;
        for (int p = nparams - 1; p >= 0; p--) {
            const int vi = rest % nval[p];
            rest /= nval[p];
            snprintf(pt->setting[p], sizeof pt->setting[p], "%s=%s", pname[p], pval[p][vi]);
        }
        for (int p = 0; p < nparams; p++)
            o.mallopts[o.nmallopts++] = pt->setting[p];
        const char *v0 = strchr(pt->setting[0], '=') + 1;
        char *end;
        pt->x = strtod(v0, &end);
        if (*end == 'k' || *end == 'K')
            pt->x *= 1024;
        else if (*end == 'm' || *end == 'M')
            pt->x *= 1024 * 1024;
        char json[PATH_MAX];
        snprintf(json, sizeof json, "%s/run-%03d.json", dir, k);
        o.json = json;
        fprintf(stderr, "\rmtrace sweep: %d of %d: %s", k + 1, total, pt->allocator);
        for (int p = 0; p < nparams; p++)
            fprintf(stderr, " %s", pt->setting[p]);
        fprintf(stderr, "\033[K");
        double best_wall = 0;
        for (int r = 0; r < repeat; r++) {
            static char results[MT_REPLAY_MAX][4096];
            int n = 0;
            const int rc = mt_replay_run(&o, results, &n);
            if (rc != 0) {
                fprintf(stderr, "\n");
                return rc;
            }
            mt_jval_t *j;
            if (mt_json_load(json, &j, &err) < 0) {
                fprintf(stderr, "\nmtrace: %s\n", err.msg);
                return 1;
            }
            const double wall = mt_json_num(j, "wall_us", 0) / 1e3;
            /* With repeats, the fastest run's time and its own RSS: the least disturbed one. */
            if (r == 0 || wall < best_wall) {
                best_wall = wall;
                pt->wall_ms = wall;
                pt->cpu_ms = mt_json_num(j, "cpu_us", 0) / 1e3;
                pt->rss_mib = mt_json_num(j, "max_rss_kb", 0) / 1024;
                pt->ideal_mib = mt_json_num(j, "ideal_pages_kb", 0) / 1024;
                pt->frag = mt_json_num(j, "fragmentation", 0);
            }
            mt_json_free(j);
        }
    }
    fprintf(stderr, "\n");

    /* table and CSV */
    char csv[PATH_MAX], dat[PATH_MAX], png[PATH_MAX];
    snprintf(csv, sizeof csv, "%s/sweep.csv", dir);
    snprintf(dat, sizeof dat, "%s/sweep.dat", dir);
    snprintf(png, sizeof png, "%s/sweep.png", dir);
    /* Both written whole under temporary names, renamed into place when both are complete. */
    mt_out_t csv_out = { 0 }, dat_out = { 0 };
    if (mt_out_open(&csv_out, csv, &err) < 0 || mt_out_open(&dat_out, dat, &err) < 0) {
        mt_out_abort(&csv_out);
        fprintf(stderr, "mtrace: %s\n", err.msg);
        return 1;
    }
    FILE *const fc = csv_out.f, *const fd = dat_out.f;
    fprintf(fc, "allocator");
    for (int p = 0; p < nparams; p++)
        fprintf(fc, ",%s", pname[p]);
    fprintf(fc, ",wall_ms,cpu_ms,max_rss_mib,ideal_mib,fragmentation\n");
    printf("%-12s", "allocator");
    for (int p = 0; p < nparams; p++)
        printf(" %-28s", "setting");
    printf(" %10s %10s %12s %10s\n", "wall ms", "cpu ms", "peak RSS MiB", "RSS/ideal");
    int best_rss = 0, best_time = 0;
    for (int k = 0; k < total; k++) {
        const point_t *pt = &pts[k];
        fprintf(fc, "%s", pt->allocator);
        printf("%-12s", pt->allocator);
        for (int p = 0; p < nparams; p++) {
            fprintf(fc, ",%s", strchr(pt->setting[p], '=') + 1);
            printf(" %-28s", pt->setting[p]);
        }
        fprintf(fc, ",%.3f,%.3f,%.3f,%.3f,%.4f\n", pt->wall_ms, pt->cpu_ms, pt->rss_mib, pt->ideal_mib, pt->frag);
        printf(" %10.1f %10.1f %12.1f %10.2f\n", pt->wall_ms, pt->cpu_ms, pt->rss_mib, pt->frag);
        if (pt->rss_mib < pts[best_rss].rss_mib)
            best_rss = k;
        if (pt->wall_ms < pts[best_time].wall_ms)
            best_time = k;
    }
    /* Plot data: one block per group (the same allocator and the same values of the other
     * parameters), along the first parameter. */
    const int per_group = nval[0];
    const int ngroups = total / per_group;
    static char names[MAX_POINTS][256];
    const char *name_ptrs[MAX_POINTS];
    for (int g = 0; g < ngroups; g++) {
        /* points of a group: the first parameter varies fastest after the allocator */
        size_t n = 0;
        for (int i = 0; i < per_group; i++) {
            const int k = (g / nalloc) * nalloc * per_group + i * nalloc + (g % nalloc);
            const point_t *pt = &pts[k];
            if (i == 0) {
                n = (size_t)snprintf(names[g], sizeof names[g], "%s", pt->allocator);
                for (int p = 1; p < nparams && n < sizeof names[g]; p++)
                    n += (size_t)snprintf(names[g] + n, sizeof names[g] - n, " %s", pt->setting[p]);
                for (char *c = names[g]; *c; c++)
                    if (*c == '\'' || *c == '_')
                        *c = ' ';
            }
            fprintf(fd, "%.0f %.3f %.3f\n", pt->x, pt->wall_ms, pt->rss_mib);
        }
        fprintf(fd, "\n\n");
        name_ptrs[g] = names[g];
    }
    if (mt_out_commit(&csv_out, &err) < 0 || mt_out_commit(&dat_out, &err) < 0) {
        mt_out_abort(&csv_out);
        mt_out_abort(&dat_out);
        fprintf(stderr, "mtrace: %s\n", err.msg);
        return 1;
    }
    const point_t *br = &pts[best_rss], *bt = &pts[best_time];
    printf("\nlowest peak RSS: %s", br->allocator);
    for (int p = 0; p < nparams; p++)
        printf(" %s", br->setting[p]);
    printf(": %.1f MiB (%.2f x ideal), %.1f ms\n", br->rss_mib, br->frag, br->wall_ms);
    printf("fastest:         %s", bt->allocator);
    for (int p = 0; p < nparams; p++)
        printf(" %s", bt->setting[p]);
    printf(": %.1f ms, %.1f MiB peak RSS\n", bt->wall_ms, bt->rss_mib);
    printf("wrote %s\n", csv);
    if (mt_plot_sweep(dat, ngroups, name_ptrs, pname[0], 1, png) == 0)
        printf("wrote %s\n", png);
    return 0;
}
