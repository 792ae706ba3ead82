/* mtrace sweep: replays a workload over a grid of settings and allocators, each allocator's default
 * first as the baseline, prints a table of medians, spreads and changes against the baseline,
 * writes CSV and a plot, and names the setting with the lowest peak RSS and the fastest one. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_util.h"
#include "help_text.h"
#include "mtrace/file_io.h"
#include "mtrace/compare.h"
#include "mtrace/json_reader.h"
#include "mtrace/plot.h"
#include "mtrace/replay.h"
#include "mtrace/spread.h"
#include "mtrace/workload.h"
#include "sweep.h"

#define MAX_PARAMS 4
#define MAX_VALUES 32
#define MAX_POINTS 512

typedef struct point {
    char allocator[128];
    char setting[MAX_PARAMS][96]; /* NAME=VALUE; the baseline's VALUE names the default */
    int baseline;                 /* the allocator with no setting at all */
    int base;                     /* the index of this allocator's baseline point */
    int not_applied;              /* the allocator did not take a setting (mtrace-sim's settings_not_applied):
                                   * a replay of its default, no verdict on the setting */
    double x;                     /* value of the first parameter */
    mt_spread_t wall_ms, cpu_ms, rss_mib, growth_mib, ideal_mib, growth_over_ideal;
} point_t;

/* The figures read from each run, in this order (read_run). */
enum { FIG_WALL, FIG_CPU, FIG_RSS, FIG_GROWTH, FIG_IDEAL, FIG_GROWTH_OVER_IDEAL, NFIG };

typedef struct sweep {
    const char *workload, *dir, *timing, *touch;
    const char *allocators[MT_REPLAY_MAX];
    int nalloc, nparams, repeat;
    char pname[MAX_PARAMS][64];
    char pval[MAX_PARAMS][MAX_VALUES][32];
    int nval[MAX_PARAMS];
    int total; /* points: nalloc baselines, then the grid */
    point_t *pts;
} sweep_t;

/* --mallopt NAME=V1,V2,... into parameter s->nparams. 0, or 2 (usage) with a message. */
static int add_param(sweep_t *s, const char *v)
{
    const char *eq = strchr(v, '=');
    if (s->nparams == MAX_PARAMS) {
        fprintf(stderr, "mtrace sweep: at most %d --mallopt\n", MAX_PARAMS);
        return 2;
    }
    if (!eq || eq == v || (size_t)(eq - v) >= sizeof s->pname[0]) {
        fprintf(stderr, "mtrace sweep: --mallopt '%s': expected NAME=V1,V2,...\n", v);
        return 2;
    }
    const int p = s->nparams;
    snprintf(s->pname[p], sizeof s->pname[0], "%.*s", (int)(eq - v), v);
    s->nval[p] = 0;
    char list[1024];
    snprintf(list, sizeof list, "%s", eq + 1);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && s->nval[p] < MAX_VALUES;
         tok = strtok_r(NULL, ",", &save))
        snprintf(s->pval[p][s->nval[p]++], sizeof s->pval[0][0], "%s", tok);
    if (!s->nval[p]) {
        fprintf(stderr, "mtrace sweep: --mallopt '%s': no values\n", v);
        return 2;
    }
    for (int k = 0; k < s->nval[p]; k++) { /* each as the replays will take it, before any runs */
        char one[sizeof s->pname[0] + sizeof s->pval[0][0] + 1];
        snprintf(one, sizeof one, "%s=%s", s->pname[p], s->pval[p][k]);
        if (mt_mallopt_usage("mtrace sweep", v, one) < 0)
            return 2;
    }
    s->nparams++;
    return 0;
}

/* 0, -1 for --help (done), or 2 (usage). */
static int parse_args(sweep_t *s, int argc, char **argv)
{
    static const struct option opts[] = {
        { "mallopt", required_argument, 0, 'm' }, { "allocator", required_argument, 0, 'a' },
        { "output", required_argument, 0, 'o' },  { "timing", required_argument, 0, 't' },
        { "touch", required_argument, 0, 'u' },   { "repeat", required_argument, 0, 'r' },
        { "help", no_argument, 0, 'h' },          { 0, 0, 0, 0 },
    };
    static const char *const timings[] = MT_TIMING_CHOICES, *const touches[] = MT_TOUCH_CHOICES;
    unsigned long repeat;
    int c;
    optind = 0; /* 0, not 1: glibc starts afresh, ordering too, after mtrace's own options */
    while ((c = mt_getopt("mtrace sweep", argc, argv, "o:h", opts)) != -1) {
        switch (c) {
        case 'm':
            if (add_param(s, optarg) != 0)
                return MT_EXIT_USAGE;
            break;
        case 'a':
            if (s->nalloc == MT_REPLAY_MAX) {
                fprintf(stderr, "mtrace sweep: at most %d allocators\n", MT_REPLAY_MAX);
                return 2;
            }
            s->allocators[s->nalloc++] = optarg;
            break;
        case 'o':
            s->dir = optarg;
            break;
        case 't':
            if (mt_choice_option("mtrace sweep", "--timing", optarg, timings) < 0)
                return MT_EXIT_USAGE;
            s->timing = optarg;
            break;
        case 'u':
            if (mt_choice_option("mtrace sweep", "--touch", optarg, touches) < 0)
                return MT_EXIT_USAGE;
            s->touch = optarg;
            break;
        case 'r':
            if (mt_uint_option("mtrace sweep", "--repeat", optarg, 1, MT_REPLAY_MAX_REPEAT, &repeat) < 0)
                return MT_EXIT_USAGE;
            s->repeat = (int)repeat;
            break;
        case 'h':
            mt_help_print("sweep");
            return -1;
        default:
            return mt_help_usage_error("sweep");
        }
    }
    if (optind != argc - 1 || !s->nparams) {
        fprintf(stderr, "mtrace sweep: %s\n",
                !s->nparams      ? "no --mallopt NAME=V1,V2,... given"
                : optind == argc ? "no WORKLOAD given"
                                 : "one WORKLOAD only");
        return mt_help_usage_error("sweep");
    }
    s->workload = argv[optind];
    if (!s->nalloc)
        s->allocators[s->nalloc++] = "glibc";
    return 0;
}

/* What the allocator does with a parameter left unset. glibc starts its mmap threshold at 128 KiB
 * and raises it to the size of each mmapped block freed (the trim threshold to twice that), until
 * one of them, top_pad or mmap_max is set: then both stay where they are. */
static const char *default_name(const char *allocator, const char *param)
{
    char setting[sizeof((sweep_t *)0)->pname[0] + 3];
    int which, value;
    snprintf(setting, sizeof setting, "%s=0", param);
    if (!strcmp(allocator, "glibc") && mt_mallopt_parse(setting, &which, &value) == 0 &&
        (which == M_MMAP_THRESHOLD || which == M_TRIM_THRESHOLD))
        return "dynamic (default)";
    return "default";
}

/* Points 0..nalloc-1: every allocator's baseline; then the grid, allocator varying fastest. */
static void make_points(sweep_t *s)
{
    for (int k = 0; k < s->total; k++) {
        point_t *pt = &s->pts[k];
        const int base = k < s->nalloc;
        int rest = base ? k : k - s->nalloc;
        snprintf(pt->allocator, sizeof pt->allocator, "%s", s->allocators[rest % s->nalloc]);
        pt->baseline = base;
        pt->base = rest % s->nalloc;
        rest /= s->nalloc;
        for (int p = s->nparams - 1; p >= 0; p--) {
            const int vi = rest % s->nval[p];
            rest /= s->nval[p];
            snprintf(pt->setting[p], sizeof pt->setting[p], "%s=%s", s->pname[p],
                     base ? default_name(pt->allocator, s->pname[p]) : s->pval[p][vi]);
        }
        if (base)
            continue;
        const char *v0 = strchr(pt->setting[0], '=') + 1;
        char *end;
        pt->x = strtod(v0, &end);
        if (*end == 'k' || *end == 'K')
            pt->x *= 1024;
        else if (*end == 'm' || *end == 'M')
            pt->x *= 1024 * 1024;
    }
}

/* The figures of one run, into fig[FIG_*][run]: wall ms, CPU ms, peak RSS MiB (the program's, as
 * predicted), the replay's RSS growth MiB, ideal MiB, and the growth over the ideal. 0, or -1 with
 * the error in err. */
static int read_run(const char *json, double *fig[NFIG], int run, point_t *pt, mt_error_t *err)
{
    mt_jval_t *j;
    if (mt_json_load(json, &j, err) < 0)
        return -1;
    const mt_jval_t *ignored = mt_json_get(j, "settings_not_applied");
    if (ignored && ignored->type == MT_JARR && ignored->n)
        pt->not_applied = 1;
    fig[FIG_WALL][run] = mt_json_num(j, "wall_us", 0) / 1e3;
    fig[FIG_CPU][run] = mt_json_num(j, "cpu_us", 0) / 1e3;
    fig[FIG_RSS][run] = mt_replay_peak_kb(j) / 1024;
    fig[FIG_GROWTH][run] = mt_replay_growth_kb(j) / 1024;
    fig[FIG_IDEAL][run] = mt_json_num(j, "ideal_pages_kb", 0) / 1024;
    fig[FIG_GROWTH_OVER_IDEAL][run] = mt_replay_growth_over_ideal(j);
    mt_json_free(j);
    return 0;
}

/* The progress line: on a terminal one line rewritten in place, elsewhere (a log, a pipe) plain
 * lines, with no carriage return or escape code for a reader to trip over. On a terminal a
 * replay's own words (mtrace-sim's stderr) go to a file first (capture): once the replay is over,
 * the line is ended and they follow it, instead of standing glued to its end. */
typedef struct progress {
    int tty;
    int open;    /* the terminal's line is shown and not ended */
    int capture; /* the replays' stderr on a terminal, else -1 */
} progress_t;

static void progress_start(progress_t *pg)
{
    pg->tty = isatty(STDERR_FILENO);
    pg->open = 0;
    FILE *f = pg->tty ? tmpfile() : NULL;
    /* close-on-exec: a replay gets it as its stderr (dup2 clears the flag there), not as one more
     * descriptor beside it */
    pg->capture = f ? fcntl(fileno(f), F_DUPFD_CLOEXEC, STDERR_FILENO + 1) : -1;
    if (f)
        fclose(f);
}

static void progress_show(progress_t *pg, const char *text)
{
    fprintf(stderr, "%s%s%s", pg->tty ? "\r" : "", text, pg->tty ? "\033[K" : "\n");
    pg->open = pg->tty;
    if (pg->capture >= 0 && (ftruncate(pg->capture, 0) < 0 || lseek(pg->capture, 0, SEEK_SET) < 0)) {
        close(pg->capture); /* the replays then write to the terminal, as elsewhere */
        pg->capture = -1;
    }
}

/* Ends the line when something is to be said after it (a replay's words, or failed: its message):
 * the line stays, naming the run. */
static void progress_after_run(progress_t *pg, int failed)
{
    const off_t said = pg->capture >= 0 ? lseek(pg->capture, 0, SEEK_END) : 0;
    if (pg->open && (said > 0 || failed)) {
        fputc('\n', stderr);
        pg->open = 0;
    }
    if (said > 0 && lseek(pg->capture, 0, SEEK_SET) == 0) {
        char buf[4096];
        ssize_t n;
        fflush(stderr);
        while ((n = read(pg->capture, buf, sizeof buf)) > 0)
            if (write(STDERR_FILENO, buf, (size_t)n) < 0)
                break;
    }
}

static void progress_end(progress_t *pg)
{
    if (pg->open)
        fputc('\n', stderr);
    pg->open = 0;
    if (pg->capture >= 0)
        close(pg->capture);
}

/* Every point `repeat` times, in rounds: a disturbance of the machine (another process, a frequency
 * change) then falls on the runs of every point alike, not on all the runs of one. */
static int run_points(sweep_t *s)
{
    const size_t per_point = NFIG * (size_t)s->repeat;
    double *figs = calloc((size_t)s->total * per_point, sizeof *figs);
    if (!figs) {
        fprintf(stderr, "mtrace: out of memory\n");
        return 1;
    }
    int rc = 0;
    progress_t pg;
    progress_start(&pg);
    for (int r = 0; r < s->repeat && !rc; r++) {
        for (int k = 0; k < s->total && !rc; k++) {
            point_t *pt = &s->pts[k];
            mt_replay_opts_t o = {
                .workload = s->workload, .nallocators = 1, .timing = s->timing, .touch = s->touch, .quiet = 1
            };
            o.allocators[0] = pt->allocator;
            for (int p = 0; p < s->nparams && !pt->baseline; p++)
                o.mallopts[o.nmallopts++] = pt->setting[p];
            char json[PATH_MAX];
            if (s->repeat > 1)
                snprintf(json, sizeof json, "%s/run-%03d.%d.json", s->dir, k, r + 1);
            else
                snprintf(json, sizeof json, "%s/run-%03d.json", s->dir, k);
            o.json = json;
            o.stderr_fd = pg.capture;
            char line[1024];
            int len = snprintf(line, sizeof line, "mtrace sweep: run %d of %d: %s", r * s->total + k + 1,
                               s->repeat * s->total, pt->allocator);
            for (int p = 0; p < s->nparams && len > 0 && (size_t)len < sizeof line; p++)
                len += snprintf(line + len, sizeof line - (size_t)len, " %s", pt->setting[p]);
            progress_show(&pg, line);
            static char results[1][4096];
            int n = 0;
            double *fig[NFIG];
            for (int f = 0; f < NFIG; f++)
                fig[f] = figs + (size_t)k * per_point + (size_t)f * (size_t)s->repeat;
            mt_replay_outcome_t out;
            mt_error_t err;
            const int run_rc = mt_replay_run(&o, results, &n, &out, &err);
            progress_after_run(&pg, run_rc != 0);
            rc = mt_replay_exit_status(run_rc, &out, &err);
            if (rc == 0 && read_run(json, fig, r, pt, &err) < 0) {
                progress_after_run(&pg, 1);
                rc = mt_fail(&err);
            }
        }
    }
    progress_end(&pg);
    for (int k = 0; k < s->total && !rc; k++) {
        point_t *pt = &s->pts[k];
        mt_spread_t *dst[NFIG] = { &pt->wall_ms,    &pt->cpu_ms,    &pt->rss_mib,
                                   &pt->growth_mib, &pt->ideal_mib, &pt->growth_over_ideal };
        for (int f = 0; f < NFIG; f++)
            mt_spread_of(dst[f], figs + (size_t)k * per_point + (size_t)f * (size_t)s->repeat, (size_t)s->repeat);
    }
    free(figs);
    return rc;
}

static void spread_cell(char *out, size_t cap, const mt_spread_t *sp)
{
    if (sp->n < 2) { /* one run: no spread to show */
        snprintf(out, cap, "-");
        return;
    }
    double lo, hi;
    mt_spread_range(sp, &lo, &hi);
    snprintf(out, cap, "%.1f..%.1f", lo, hi);
}

static void change_cell(char *out, size_t cap, const point_t *pt, double v, double base)
{
    if (pt->baseline)
        snprintf(out, cap, "baseline");
    else
        snprintf(out, cap, "%+.1f%%", mt_change_pct(v, base));
}

static void print_row(const sweep_t *s, const point_t *pt)
{
    const point_t *b = &s->pts[pt->base];
    char cs[48], ws[48], rs[48], cc[48], wc[48], rc[48], verdict[128];
    spread_cell(cs, sizeof cs, &pt->cpu_ms);
    spread_cell(ws, sizeof ws, &pt->wall_ms);
    spread_cell(rs, sizeof rs, &pt->rss_mib);
    change_cell(cc, sizeof cc, pt, pt->cpu_ms.median, b->cpu_ms.median);
    change_cell(wc, sizeof wc, pt, pt->wall_ms.median, b->wall_ms.median);
    change_cell(rc, sizeof rc, pt, pt->rss_mib.median, b->rss_mib.median);
    printf("%-12s", pt->allocator);
    for (int p = 0; p < s->nparams; p++)
        printf(" %-34s", pt->setting[p]);
    printf(" %4zu %9.1f %15s %9s %9.1f %15s %9s %12.1f %15s %14s %10.1f %9.2f  %s\n", pt->cpu_ms.n, pt->cpu_ms.median,
           cs, cc, pt->wall_ms.median, ws, wc, pt->rss_mib.median, rs, rc, pt->growth_mib.median,
           pt->growth_over_ideal.median,
           pt->baseline ? "baseline"
           : pt->not_applied
               ? "not applied: the allocator did not take the setting (its default replayed)"
               : mt_verdict_text(verdict, sizeof verdict, &pt->cpu_ms, &b->cpu_ms, &pt->rss_mib, &b->rss_mib));
}

static void put_csv_row(FILE *fc, const sweep_t *s, const point_t *pt)
{
    const point_t *b = &s->pts[pt->base];
    fprintf(fc, "%s", pt->allocator);
    for (int p = 0; p < s->nparams; p++)
        fprintf(fc, ",%s", strchr(pt->setting[p], '=') + 1);
    fprintf(fc, ",%.3f,%.3f,%.3f,%.3f,%.3f,%.4f,%zu", pt->wall_ms.median, pt->cpu_ms.median, pt->rss_mib.median,
            pt->growth_mib.median, pt->ideal_mib.median, pt->growth_over_ideal.median, pt->cpu_ms.n);
    const mt_spread_t *sp[] = { &pt->cpu_ms, &pt->wall_ms, &pt->rss_mib };
    for (size_t i = 0; i < 3; i++)
        fprintf(fc, ",%.3f,%.3f,%.3f,%.3f", sp[i]->min, sp[i]->q1, sp[i]->q3, sp[i]->max);
    fprintf(fc, ",%.2f,%.2f,%.2f", mt_change_pct(pt->cpu_ms.median, b->cpu_ms.median),
            mt_change_pct(pt->wall_ms.median, b->wall_ms.median), mt_change_pct(pt->rss_mib.median, b->rss_mib.median));
    if (pt->baseline)
        fprintf(fc, ",baseline,baseline");
    else if (pt->not_applied)
        fprintf(fc, ",not applied,not applied");
    else
        fprintf(fc, ",%s,%s", mt_time_verdict_name(mt_verdict(&pt->cpu_ms, &b->cpu_ms)),
                mt_memory_verdict_name(mt_verdict(&pt->rss_mib, &b->rss_mib)));
    fprintf(fc, ",%d\n", mt_noise_measured(&pt->cpu_ms, &b->cpu_ms));
}

static void print_header(FILE *fc, const sweep_t *s)
{
    fprintf(fc, "allocator");
    for (int p = 0; p < s->nparams; p++)
        fprintf(fc, ",%s", s->pname[p]);
    fprintf(fc, ",wall_ms,cpu_ms,peak_rss_mib,rss_growth_mib,ideal_mib,rss_growth_over_ideal,runs");
    static const char *const spread_keys[] = { "cpu_ms", "wall_ms", "peak_rss_mib" };
    for (size_t i = 0; i < 3; i++)
        fprintf(fc, ",%s_min,%s_q1,%s_q3,%s_max", spread_keys[i], spread_keys[i], spread_keys[i], spread_keys[i]);
    fprintf(fc, ",cpu_change_pct,wall_change_pct,rss_change_pct_of_default_peak_rss,time_verdict,memory_verdict,"
                "noise_measured\n");
    printf("%-12s", "allocator");
    for (int p = 0; p < s->nparams; p++)
        printf(" %-34s", "setting");
    printf(" %4s %9s %15s %9s %9s %15s %9s %12s %15s %14s %10s %9s  %s\n", "runs", "cpu ms", "cpu spread", "cpu chg",
           "wall ms", "wall spread", "wall chg", "peak RSS MiB", "RSS spread", "RSS chg %dflt", "growth MiB",
           "grw/ideal", "verdict against the allocator's default");
}

/* The plot's data: one block per group (the same allocator and the same values of the other
 * parameters), along the first parameter. A row: the value, then for peak RSS and for CPU time the
 * median, the noise interval (mt_spread_range) and the median of the group's baseline (the default,
 * drawn as a line: baselines have no value of the parameter). */
static int put_plot_data(FILE *fd, const sweep_t *s, char (*names)[256], const char **name_ptrs)
{
    const int per_group = s->nval[0];
    assert(per_group >= 1); /* add_param refuses a parameter without values */
    const int ngroups = (s->total - s->nalloc) / per_group;
    for (int g = 0; g < ngroups; g++) {
        size_t n = 0;
        for (int i = 0; i < per_group; i++) {
            const int k = s->nalloc + (g / s->nalloc) * s->nalloc * per_group + i * s->nalloc + (g % s->nalloc);
            const point_t *pt = &s->pts[k];
            if (i == 0) {
                n = (size_t)snprintf(names[g], sizeof names[g], "%s", pt->allocator);
                for (int p = 1; p < s->nparams && n < sizeof names[g]; p++)
                    n += (size_t)snprintf(names[g] + n, sizeof names[g] - n, " %s", pt->setting[p]);
                for (char *c = names[g]; *c; c++)
                    if (*c == '\'' || *c == '_')
                        *c = ' ';
            }
            const point_t *b = &s->pts[pt->base];
            double rlo, rhi, clo, chi;
            mt_spread_range(&pt->rss_mib, &rlo, &rhi);
            mt_spread_range(&pt->cpu_ms, &clo, &chi);
            fprintf(fd, "%.0f %.3f %.3f %.3f %.3f %.3f %.3f %.3f %.3f\n", pt->x, pt->rss_mib.median, rlo, rhi,
                    b->rss_mib.median, pt->cpu_ms.median, clo, chi, b->cpu_ms.median);
        }
        fprintf(fd, "\n\n");
        name_ptrs[g] = names[g];
    }
    return ngroups;
}

/* "fastest" or "lowest peak RSS": the point with the lowest median of CPU time (cpu) or peak RSS,
 * its change against its allocator's baseline, and how many other points are within noise of it. */
static void say_best(const sweep_t *s, const char *label, int cpu)
{
    int best = 0;
    const mt_spread_t *of[MAX_POINTS];
    assert(s->total >= 1);               /* every allocator's baseline at least, and parse_args gives one allocator */
    for (int k = 0; k < s->total; k++) { /* a setting not applied is its default again: not a candidate */
        of[k] = cpu ? &s->pts[k].cpu_ms : &s->pts[k].rss_mib;
        if (!s->pts[k].not_applied && of[k]->median < of[best]->median)
            best = k;
    }
    const point_t *bp = &s->pts[best], *base = &s->pts[bp->base];
    printf("%-16s %s", label, bp->allocator);
    for (int p = 0; p < s->nparams; p++)
        printf(" %s", bp->setting[p]);
    if (cpu)
        printf(": %.1f ms CPU, %.1f MiB peak RSS", bp->cpu_ms.median, bp->rss_mib.median);
    else
        printf(": %.1f MiB peak RSS, %.1f ms CPU; the replay's RSS grew %.2f MiB, %.2f x the ideal %.2f MiB",
               bp->rss_mib.median, bp->cpu_ms.median, bp->growth_mib.median, bp->growth_over_ideal.median,
               bp->ideal_mib.median);
    if (s->repeat > 1)
        printf(" (medians of %d runs)", s->repeat);
    if (!bp->baseline) {
        const mt_spread_t *b = cpu ? &base->cpu_ms : &base->rss_mib;
        const mt_verdict_t v = mt_verdict(of[best], b);
        printf("; %+.1f%% %s against the default: %s", mt_change_pct(of[best]->median, b->median), cpu ? "CPU" : "RSS",
               cpu ? mt_time_verdict_name(v) : mt_memory_verdict_name(v));
    }
    if (s->repeat < 2) {
        printf(" (1 run each: noise unknown)\n");
        return;
    }
    int close = 0;
    for (int k = 0; k < s->total; k++)
        close += k != best && !s->pts[k].not_applied && mt_verdict(of[k], of[best]) == MT_VERDICT_NOISE;
    printf("; %d other point%s within noise of it\n", close, close == 1 ? "" : "s");
}

int mt_sweep_main(int argc, char **argv)
{
    sweep_t s = { .dir = "sweep-out", .repeat = 1 };
    const int prc = parse_args(&s, argc, argv);
    if (prc)
        return prc < 0 ? 0 : prc;
    mt_error_t err;
    mt_wl_t *w;
    if (mt_wl_open(&w, s.workload, &err) < 0)
        return mt_fail(&err);
    mt_wl_close(w);
    if (mkdir(s.dir, 0755) < 0 && errno != EEXIST) {
        fprintf(stderr, "mtrace: cannot create %s: %s\n", s.dir, strerror(errno));
        return 1;
    }
    s.total = s.nalloc;
    for (int p = 0; p < s.nparams; p++)
        s.total *= s.nval[p];
    s.total += s.nalloc; /* the baselines */
    if (s.total > MAX_POINTS) {
        fprintf(stderr, "mtrace: %d combinations with the defaults; at most %d\n", s.total, MAX_POINTS);
        return 2;
    }
    static point_t pts[MAX_POINTS];
    s.pts = pts;
    make_points(&s);
    int rc = run_points(&s);
    if (rc)
        return rc;

    char csv[PATH_MAX], dat[PATH_MAX], png[PATH_MAX];
    snprintf(csv, sizeof csv, "%s/sweep.csv", s.dir);
    snprintf(dat, sizeof dat, "%s/sweep.dat", s.dir);
    snprintf(png, sizeof png, "%s/sweep.png", s.dir);
    /* Both written whole under temporary names, renamed into place when both are complete. */
    mt_out_t csv_out = { 0 }, dat_out = { 0 };
    if (mt_out_open(&csv_out, csv, &err) < 0 || mt_out_open(&dat_out, dat, &err) < 0) {
        mt_out_abort(&csv_out);
        return mt_fail(&err);
    }
    print_header(csv_out.f, &s);
    for (int k = 0; k < s.total; k++) {
        put_csv_row(csv_out.f, &s, &s.pts[k]);
        print_row(&s, &s.pts[k]);
    }
    static char names[MAX_POINTS][256];
    const char *name_ptrs[MAX_POINTS];
    const int ngroups = put_plot_data(dat_out.f, &s, names, name_ptrs);
    if (mt_out_commit(&csv_out, &err) < 0 || mt_out_commit(&dat_out, &err) < 0) {
        mt_out_abort(&csv_out);
        mt_out_abort(&dat_out);
        return mt_fail(&err);
    }
    printf("\n");
    say_best(&s, "lowest peak RSS:", 0);
    say_best(&s, "fastest:", 1);
    printf("wrote %s\n", csv);
    /* The table and its data are written: a plot that cannot be drawn (no gnuplot) is said, and the
     * sweep still succeeded. */
    if (mt_plot_sweep(dat, ngroups, name_ptrs, s.pname[0], 1, png, &err) == 0)
        printf("wrote %s\n", png);
    else
        mt_fail(&err);
    return 0;
}
