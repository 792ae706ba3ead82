/* mtrace-sim: replays a workload in this process against whatever allocator answers malloc (the
 * parent, `mtrace replay`, chooses it with LD_PRELOAD). Prints the classic summary and writes JSON
 * and the RSS time series. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mtrace/file_io.h"
#include "mtrace/statm.h"
#include "mtrace/json_writer.h"
#include "cli_options.h"
#include "mtrace/replay.h"
#include "sim.h"
#include "sim_help.h"

/* ---- sampling ---------------------------------------------------------------------------------- */

static int statm_fd = -1;

/* Size, resident and file-backed resident pages (statm's first three fields). */
static int read_statm(uint64_t *vm_pages, uint64_t *rss_pages, uint64_t *file_pages)
{
    uint64_t v[3];
    if (mt_statm_read(statm_fd, v) < 0)
        return -1;
    *vm_pages = v[0];
    *rss_pages = v[1];
    *file_pages = v[2];
    return 0;
}

/* The ops the replay threads have completed, all together. */
static uint64_t ops_done(const sim_t *s)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < s->nthreads; i++)
        sum += atomic_load_explicit(&s->th[i].progress, memory_order_relaxed);
    return sum;
}

static void sample(sim_t *s)
{
    uint64_t vm, rss, file;
    if (read_statm(&vm, &rss, &file) < 0)
        return;
    const uint64_t all_ops = mt_wl_header(s->wl)->ops;
    const uint64_t kb = s->page / 1024;
    const int64_t live = sim_live_bytes(s);
    if (rss * kb > s->peak_rss_kb)
        s->peak_rss_kb = rss * kb;
    /* Read after the RSS, with the pages being written: a mapping's pages are counted once written,
     * and a count that missed some would leave pages of the program's in the RSS less them. */
    const int64_t own_now = atomic_load_explicit(&s->maps_resident, memory_order_relaxed) +
                            atomic_load_explicit(&s->maps_writing, memory_order_relaxed);
    const uint64_t own = own_now > 0 ? (uint64_t)own_now : 0;
    if (rss > own && (rss - own) * kb > s->peak_rss_less_maps_kb)
        s->peak_rss_less_maps_kb = (rss - own) * kb;
    if (rss > file && (rss - file) * kb > s->peak_anon_kb)
        s->peak_anon_kb = (rss - file) * kb;
    if (vm * kb > s->peak_vm_kb)
        s->peak_vm_kb = vm * kb;
    if (s->series_n < s->series_cap) {
        sim_series_row_t *r = &s->series[s->series_n++];
        r->t = (double)(mt_mono_ns() - s->replay_start_ns) / 1e9;
        r->rss_kb = rss * kb;
        r->vm_kb = vm * kb;
        r->ideal_kb = live > 0 ? (uint64_t)live / 1024 : 0;
        r->source_rss_kb = atomic_load_explicit(&s->source_rss_kb, memory_order_relaxed);
        r->done = all_ops ? (double)ops_done(s) / (double)all_ops : 1;
    }
}

static char stall_msg[512];

static void *sampler_main(void *arg)
{
    sim_t *s = arg;
    uint64_t last_sum = UINT64_MAX, still_since = mt_mono_ns();
    const struct timespec period = { s->sample_ms / 1000, (long)(s->sample_ms % 1000) * 1000000 };
    while (atomic_load(&s->running)) {
        nanosleep(&period, NULL);
        sample(s);
        const uint64_t sum = ops_done(s);
        const uint64_t now = mt_mono_ns(), paced_until = atomic_load(&s->paced_until);
        if (sum != last_sum) {
            last_sum = sum;
            still_since = now;
        } else if (paced_until > still_since) {
            still_since = paced_until; /* a thread waits for an op's recorded time: not a stall */
        } else if (s->stall_s > 0 && now > still_since && (double)(now - still_since) / 1e9 > s->stall_s &&
                   atomic_load(&s->running)) {
            int n = snprintf(stall_msg, sizeof stall_msg, "replay stalled for %.0f s:", s->stall_s);
            for (uint32_t i = 0; i < s->nthreads && n > 0 && (size_t)n < sizeof stall_msg; i++) {
                const uint64_t done = atomic_load(&s->th[i].progress), all = mt_wl_thread(s->wl, i)->ops;
                if (done < all && atomic_load(&s->th[i].created))
                    n += snprintf(stall_msg + n, sizeof stall_msg - (size_t)n, " thread %u at op %llu of %llu;", i,
                                  (unsigned long long)done, (unsigned long long)all);
            }
            sim_stop_all(s);
            break;
        }
    }
    return NULL;
}

/* ---- results ----------------------------------------------------------------------------------- */

static uint64_t bucket_value(unsigned b)
{
    if (b < SIM_HIST_SUB)
        return b;
    const unsigned msb = b / SIM_HIST_SUB, sub = b % SIM_HIST_SUB;
    return ((uint64_t)(SIM_HIST_SUB + sub)) << (msb - 3);
}

static uint64_t percentile(const sim_opstat_t *st, double q)
{
    if (!st->calls)
        return 0;
    const uint64_t want = (uint64_t)((double)st->calls * q);
    uint64_t seen = 0;
    for (unsigned b = 0; b < SIM_HIST_BUCKETS; b++) {
        seen += st->hist[b];
        if (seen > want)
            return bucket_value(b);
    }
    return st->max;
}

/* The calls of an op taken as descheduled (sim.h, SIM_DESCHED_CYCLES), left out of its average. */
static uint64_t descheduled_calls(const sim_opstat_t *st)
{
    return percentile(st, 0.50) <= SIM_DESCHED_MEDIAN_MAX ? st->slow_calls : 0;
}

/* An op's average cycles per call: `all` of its calls, or all but the descheduled ones. */
static double avg_cycles(const sim_opstat_t *st, int all)
{
    const uint64_t out = all ? 0 : descheduled_calls(st);
    const uint64_t cycles = st->cycles - (out ? st->slow_cycles : 0);
    return st->calls > out ? (double)cycles / (double)(st->calls - out) : 0;
}

/* 1234567 -> "1,234,567": the classic summary's figures, as its parsers expect them. */
static const char *commas(char *buf, size_t cap, long long v)
{
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%lld", v < 0 ? -v : v);
    const size_t len = strlen(tmp);
    size_t o = 0;
    if (v < 0 && o + 1 < cap)
        buf[o++] = '-';
    for (size_t i = 0; i < len && o + 2 < cap; i++) {
        if (i && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = 0;
    return buf;
}

/* Maps the workload's touch table and gives each thread its part of it (the table is sorted by
 * thread). */
static int load_touch_table(sim_t *s, mt_error_t *err)
{
    const uint64_t n = mt_wl_header(s->wl)->touch_entries;
    if (!n)
        return 0;
    mt_wl_touch_entry_t *tab = sim_map(s, n * sizeof *tab);
    if (!tab) {
        snprintf(err->msg, sizeof err->msg, "cannot map the touch table (%" PRIu64 " entries): %s", n, strerror(errno));
        return -ENOMEM;
    }
    const int rc = mt_wl_read_touch(s->wl, tab, err);
    if (rc < 0)
        return rc;
    for (uint64_t k = 0; k < n;) {
        sim_thread_t *t = &s->th[tab[k].thread];
        t->touch_next = &tab[k];
        while (k < n && &s->th[tab[k].thread] == t)
            k++;
        t->touch_end = &tab[k];
    }
    return 0;
}

/* Which share of the replay's RSS is the program's own mappings and which the allocator's. */
typedef struct rss_share {
    uint64_t maps_peak_kb; /* the program's own mappings, resident, at most (counted at every op) */
    uint64_t heap_kb;      /* the RSS less them, at most (sampled), less the RSS at the replay's start:
                            * the allocator's heap and the replay's own bookkeeping */
} rss_share_t;

static rss_share_t rss_share(const sim_t *s, uint64_t start_rss_kb)
{
    const uint64_t kb = s->page / 1024;
    rss_share_t r = { .maps_peak_kb = (uint64_t)atomic_load(&s->maps_resident_peak) * kb };
    r.heap_kb = s->peak_rss_less_maps_kb > start_rss_kb ? s->peak_rss_less_maps_kb - start_rss_kb : 0;
    return r;
}

/* The replay threads' time while they replay (not waiting on each other, not pacing) in three parts:
 * inside the allocator's calls; writing the blocks it handed out, as the program did (their page
 * faults depend on the memory the allocator gives: fresh pages fault, reused ones do not); and the
 * replay's own (decoding the workload, the slot table, the program's own mappings, timing), per op of
 * the workload. All clock time, as the calls are timed: on a loaded machine they grow together. */
typedef struct op_costs {
    uint64_t calls;       /* allocator calls timed */
    double alloc_ns;      /* their time */
    double write_ns;      /* writing their blocks */
    double own_ns_per_op; /* the rest of the replaying time, per op */
} op_costs_t;

/* `tsc_per_ns`: the clock's rate, from the replay's cycles over its wall time.
 *
 * The replay's own time is the threads' time less the calls' and the writes', taken two ways, each
 * too high in its own way: their clock time (busy_cycles, waits and pacing left out) also counts
 * the time they were descheduled, and on a loaded machine that is most of it (the same workload
 * gave 41.7 to 102.6 ns per op from one allocator to the next); their CPU time also counts their
 * spinning in waits. The lower of the two is reported, unless calls block (voluntary context
 * switches beyond the replay's own sleeps, more than one per BLOCKED_PER_OPS ops: a lock, an
 * allocator that sleeps), whose time is not CPU time: then the clock's; the clock's too when the CPU
 * way comes out at 0 or less (calls that take far more than the replay's own work, whose clock rate
 * estimate errs by more than that work). Calls that were descheduled (slow_cycles) are left out of the CPU-time
 * way: their time is mostly not CPU time. */
#define BLOCKED_PER_OPS 1000u /* more than one blocked switch in so many ops: calls block */

static op_costs_t op_costs(const sim_opstat_t *total, const sim_counts_t *c, uint64_t ops, double tsc_per_ns)
{
    op_costs_t r = { 0 };
    uint64_t cycles = 0, slow = 0;
    for (unsigned op = 1; op < SIM_OPS; op++) {
        r.calls += total[op].calls;
        cycles += total[op].cycles;
        slow += total[op].slow_cycles;
    }
    if (tsc_per_ns <= 0 || !ops)
        return r;
    r.alloc_ns = (double)cycles / tsc_per_ns;
    r.write_ns = (double)c->write_cycles / tsc_per_ns;
    const double by_clock = ((double)c->busy_cycles - (double)cycles - (double)c->write_cycles) / tsc_per_ns,
                 by_cpu = (double)c->cpu_ns - (double)(cycles - slow + c->write_cycles) / tsc_per_ns,
                 own = by_cpu <= 0 || by_clock < by_cpu || c->blocked_switches * BLOCKED_PER_OPS > ops ? by_clock
                                                                                                       : by_cpu;
    r.own_ns_per_op = own > 0 ? own / (double)ops : 0;
    return r;
}

static const char *touch_name(sim_touch_t touch)
{
    switch (touch) {
    case TOUCH_PAGES:
        return "pages";
    case TOUCH_ENDS:
        return "ends";
    case TOUCH_NONE:
        return "none";
    case TOUCH_EVIDENCE:
        return "evidence";
    default:
        return "auto";
    }
}

/* The command line's settings that are not the replay's own state (sim_t). */
#define SIM_MAX_MALLOPTS 32
typedef struct sim_opts {
    const char *path, *json_path, *series_path, *label, *allocator_lib;
    int quiet, timing_asked, nopts;
    int opt_param[SIM_MAX_MALLOPTS], opt_value[SIM_MAX_MALLOPTS];
    const char *opt_text[SIM_MAX_MALLOPTS];
    uint32_t opt_not_applied; /* bit i: setting i did not reach the allocator (setup) */
} sim_opts_t;
_Static_assert(SIM_MAX_MALLOPTS <= 32, "sim_opts_t.opt_not_applied holds a bit per setting");

/* Reads the command line into s (the replay's settings) and o: 0, -1 after --help (exit 0), or the
 * usage error's exit status (the message said). */
static int parse_args(int argc, char **argv, sim_t *s, sim_opts_t *o)
{
    static const struct option longopts[] = {
        { "json", required_argument, 0, 'j' },
        { "rss-series", required_argument, 0, 's' },
        { "label", required_argument, 0, 'l' },
        { "allocator-lib", required_argument, 0, 'a' },
        { "sample-ms", required_argument, 0, 'S' },
        { "stall-timeout", required_argument, 0, 'T' },
        { "quiet", no_argument, 0, 'q' },
        { "timing", required_argument, 0, 't' },
        { "touch", required_argument, 0, 'u' },
        { "mallopt", required_argument, 0, 'm' },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    static const char *const timings[] = MT_TIMING_CHOICES, *const touches[] = MT_TOUCH_CHOICES;
    static const sim_touch_t touch_modes[] = { TOUCH_AUTO, TOUCH_PAGES, TOUCH_ENDS, TOUCH_NONE };
    /* Recorded pacing by default: jemalloc's decay, tcmalloc's and mimalloc's delayed release give
     * memory back after a time, and a replay that squeezes a 6.8 s compile into 0.7 s (asap) kept
     * what the program had given back (issue 14). The threads' CPU time leaves the pacing out. */
    s->touch = TOUCH_AUTO;
    s->timing = TIMING_RECORDED;
    s->sample_ms = 10;
    s->stall_s = 30;
    int opt, pick;
    unsigned long ms;
    while ((opt = mt_getopt("mtrace-sim", argc, argv, "h", longopts)) != -1) {
        switch (opt) {
        case 'j':
            o->json_path = optarg;
            break;
        case 's':
            o->series_path = optarg;
            break;
        case 'l':
            o->label = optarg;
            break;
        case 'a':
            o->allocator_lib = optarg;
            break;
        case 'S':
            if (mt_uint_option("mtrace-sim", "--sample-ms", optarg, 1, 60000, &ms) < 0)
                return MT_EXIT_USAGE;
            s->sample_ms = (unsigned)ms;
            break;
        case 'T':
            if (mt_double_option("mtrace-sim", "--stall-timeout", optarg, 0, 86400, &s->stall_s) < 0)
                return MT_EXIT_USAGE;
            break;
        case 'q':
            o->quiet = 1;
            break;
        case 't':
            if ((pick = mt_choice_option("mtrace-sim", "--timing", optarg, timings)) < 0)
                return MT_EXIT_USAGE;
            s->timing = pick ? TIMING_RECORDED : TIMING_ASAP;
            o->timing_asked = 1;
            break;
        case 'u':
            if ((pick = mt_choice_option("mtrace-sim", "--touch", optarg, touches)) < 0)
                return MT_EXIT_USAGE;
            s->touch = touch_modes[pick];
            break;
        case 'm': {
            const int rc = o->nopts == SIM_MAX_MALLOPTS
                               ? -1
                               : mt_mallopt_parse(optarg, &o->opt_param[o->nopts], &o->opt_value[o->nopts]);
            if (rc == MT_MALLOPT_RANGE) {
                fprintf(stderr, "mtrace-sim: the setting '%s': value out of range (mallopt takes an int: %d to %d)\n",
                        optarg, INT_MIN, INT_MAX);
                return MT_EXIT_USAGE;
            }
            if (rc == MT_MALLOPT_UNKNOWN) {
                char names[256];
                fprintf(
                    stderr,
                    "mtrace-sim: the setting '%s': unknown setting: known are %s (or M_NAME, or mallopt's number)\n",
                    optarg, mt_mallopt_names(names, sizeof names));
                return MT_EXIT_USAGE;
            }
            if (rc < 0) {
                fprintf(stderr,
                        "mtrace-sim: cannot read the setting '%s' (expected NAME=VALUE, e.g. mmap_threshold=65536)\n",
                        optarg);
                return MT_EXIT_USAGE;
            }
            o->opt_text[o->nopts++] = optarg;
            break;
        }
        case 'h':
            fputs(mt_sim_help, stdout);
            return -1;
        default:
            return mt_usage_error("mtrace-sim", mt_sim_help);
        }
    }
    if (!(o->path = mt_one_operand("mtrace-sim", "WORKLOAD", argc, argv)))
        return mt_usage_error("mtrace-sim", mt_sim_help);
    return 0;
}

/* What a replay's summary and JSON result report, gathered once its threads have ended. */
typedef struct sim_results {
    const char *allocator; /* the label, else the allocator's file */
    const sim_opstat_t *total;
    uint64_t cycles, wall_ns, cpu_us, thread_cpu_ns;
    uint64_t max_rss_kb, start_rss_kb, ideal_kb, ideal_pages_kb, bookkeeping_kb;
    uint64_t allocator_file_kb; /* file pages of the libraries the allocator brings (sim_libs.c) */
    int allocator_traced;       /* the traced program ran on this allocator: they are not extra */
    uint64_t own_static_kb;     /* mtrace-sim's stack and its objects' anonymous pages (sim_libs.c) */
    uint64_t waits, wait_cycles, sleeps, far_slots, touched_in_part, maps, map_failed;
    uint32_t emulated; /* 1u << op for ops the allocator does not define that the workload called */
    rss_share_t share;
    op_costs_t costs;
} sim_results_t;

/* The program's peak RSS as this allocator would make it: its memory that an allocator decides is
 * anonymous (the heap, its own mappings), which the replay holds, and its file-backed pages (code,
 * libraries, files it maps), which the replay cannot hold (cc1: 33 MB of its 100 MB), with its
 * shared memory (statm counts a shared anonymous mapping with the file pages: postgres's buffers),
 * which the recorder does not record as the program's own. So: the
 * replay's anonymous peak less the replay's own bookkeeping, plus the traced program's peak RSS less
 * its peak anonymous RSS (both sampled, and with the recorder's own pages in them), plus the file
 * pages of the libraries the allocator brings with it (jemalloc: libstdc++, 2 MB), which the
 * program traced on glibc did not have. 0 when the trace has no RSS samples. */
static uint64_t predicted_peak_kb(const sim_t *s, const sim_results_t *r)
{
    const mt_wl_header_t *h = mt_wl_header(s->wl);
    if (!h->source_peak_rss_kb || !h->source_peak_anon_kb || h->source_peak_anon_kb > h->source_peak_rss_kb ||
        !s->peak_anon_kb)
        return 0;
    uint64_t anon = s->peak_anon_kb > r->bookkeeping_kb ? s->peak_anon_kb - r->bookkeeping_kb : 0;
    if (h->source_start_anon_kb) /* the program's static pages for the replay's own */
        anon = anon > r->own_static_kb ? anon - r->own_static_kb + h->source_start_anon_kb : h->source_start_anon_kb;
    return anon + (h->source_peak_rss_kb - h->source_peak_anon_kb) + r->allocator_file_kb;
}

/* The summary on stdout. */
static void print_summary(const sim_t *s, const sim_opts_t *o, const sim_results_t *r)
{
    const mt_wl_header_t *h = mt_wl_header(s->wl);
    /* The first eleven lines keep the order and shape of the original simulator's summary, which
     * benchmark scripts read by line number with patterns anchored at the line's start: figures
     * unpadded, whole, with thousands separators; "threads" plural even for one (the patterns end
     * there); lines 5 and 6 (from 0) hold what the original printed there no figure of. */
    char a[32], b[32], c[32];
    printf("%s cycles\n", commas(a, sizeof a, (long long)r->cycles));
    printf("%s usec wall time\n", commas(a, sizeof a, (long long)(r->wall_ns / 1000)));
    printf("%s usec across %u threads\n", commas(a, sizeof a, (long long)(r->thread_cpu_ns / 1000)), s->nthreads);
    printf("%s Kb Max RSS (%s -> %s)\n", commas(a, sizeof a, (long long)(r->max_rss_kb - r->start_rss_kb)),
           commas(b, sizeof b, (long long)r->start_rss_kb), commas(c, sizeof c, (long long)r->max_rss_kb));
    printf("%s Kb Max Ideal RSS\n", commas(a, sizeof a, (long long)r->ideal_kb));
    /* The workload's sync points (mtrace info's) are where a thread may have to wait for another;
     * it waited at those the other thread had not reached yet. */
    printf("allocator %s; waited at %" PRIu64 " of %" PRIu64 " sync points (%" PRIu64 " slept), bookkeeping %" PRIu64
           " Kb (%.1f %% of max RSS)\n",
           r->allocator, r->waits, h->waits, r->sleeps, r->bookkeeping_kb,
           r->max_rss_kb ? 100.0 * (double)r->bookkeeping_kb / (double)r->max_rss_kb : 0);
    uint64_t descheduled = 0;
    for (unsigned op = 1; op < SIM_OPS; op++)
        descheduled += descheduled_calls(&r->total[op]);
    printf("averages below leave out %s calls timed at %s cycles or more (descheduled), of ops whose median is "
           "at most %s\n",
           commas(a, sizeof a, (long long)descheduled), commas(b, sizeof b, (long long)SIM_DESCHED_CYCLES),
           commas(c, sizeof c, (long long)SIM_DESCHED_MEDIAN_MAX));
    static const unsigned classic[] = { MT_WL_MALLOC, MT_WL_CALLOC, MT_WL_REALLOC, MT_WL_FREE };
    for (size_t k = 0; k < sizeof classic / sizeof classic[0]; k++) {
        const sim_opstat_t *st = &r->total[classic[k]];
        printf("Avg %s time: %s in %s calls\n", mt_wl_op_name(classic[k]),
               commas(a, sizeof a, (long long)(avg_cycles(st, 0) + 0.5)), commas(b, sizeof b, (long long)st->calls));
    }
    printf("time: %s usec in the allocator's calls, %s usec writing their blocks; the replay's own %.1f ns per op "
           "(its threads' time outside them, waits and pacing: decoding, slots, the program's own mappings)\n",
           commas(a, sizeof a, (long long)(r->costs.alloc_ns / 1000)),
           commas(b, sizeof b, (long long)(r->costs.write_ns / 1000)), r->costs.own_ns_per_op);
    if (r->emulated) {
        printf("emulated (the allocator does not define them):");
        for (unsigned op = 1; op < SIM_OPS; op++)
            if (r->emulated >> op & 1)
                printf(" %s", mt_wl_op_name(op));
        printf("\n");
    }
    if (s->touch == TOUCH_EVIDENCE)
        printf("touch: as the trace's page evidence says (%s blocks written in part, %.1f %% of the large "
               "blocks' pages)\n",
               commas(a, sizeof a, (long long)r->touched_in_part),
               h->large_pages ? 100.0 * (double)h->large_touched / (double)h->large_pages : 100.0);
    else if (s->touch == TOUCH_PAGES && !(h->flags & MT_WLH_PAGES))
        printf("touch: every page of every block (the workload has no page evidence: its trace was recorded "
               "before format 3, or not on glibc's allocator)\n");
    else
        printf("touch: %s (as asked)\n", touch_name(s->touch));
    if (s->timing == TIMING_RECORDED)
        printf("timing: recorded (%s): no op before its time in the trace, as an allocator that gives memory "
               "back on a timer would see it; the threads' time leaves the waiting out\n",
               o->timing_asked ? "as asked" : "the default");
    else
        printf("timing: asap (as asked): as fast as the waits allow; an allocator that gives memory back on a "
               "timer may hold more than it did in the program\n");
    if (r->maps) {
        printf("program's own mappings: %s replayed (at most %s Kb mapped at once%s), in the RSS above\n",
               commas(a, sizeof a, (long long)r->maps), commas(b, sizeof b, (long long)(h->program_peak_bytes / 1024)),
               r->map_failed ? "; some could not be mapped" : "");
        if (h->program_brk_peak_bytes || h->program_advises)
            printf("  of them by the program's brk/sbrk at most %s Kb; %s madvise ops dropped pages\n",
                   commas(a, sizeof a, (long long)(h->program_brk_peak_bytes / 1024)),
                   commas(b, sizeof b, (long long)h->program_advises));
        printf("  resident at most %s Kb; the RSS less them (the allocator's heap, the replay's own) at most %s Kb "
               "above the replay's start (sampled)\n",
               commas(a, sizeof a, (long long)r->share.maps_peak_kb), commas(b, sizeof b, (long long)r->share.heap_kb));
    }
    if (r->far_slots)
        printf("%" PRIu64 " blocks kept whole in the slot table (address unaligned or beyond its windows)\n",
               r->far_slots);
    if (h->source_peak_rss_kb)
        printf("traced program's peak RSS %s Kb (sampled); replay %s Kb (%+.1f %%)\n",
               commas(a, sizeof a, (long long)h->source_peak_rss_kb), commas(b, sizeof b, (long long)r->max_rss_kb),
               100.0 * ((double)r->max_rss_kb - (double)h->source_peak_rss_kb) / (double)h->source_peak_rss_kb);
    const uint64_t predicted = predicted_peak_kb(s, r);
    if (predicted)
        printf("predicted peak RSS of the program on this allocator: %s Kb (the replay's anonymous peak less its "
               "bookkeeping, plus the traced program's file-backed and shared pages, %s Kb, and the allocator's "
               "libraries', "
               "%s Kb%s",
               commas(a, sizeof a, (long long)predicted),
               commas(b, sizeof b, (long long)(h->source_peak_rss_kb - h->source_peak_anon_kb)),
               commas(c, sizeof c, (long long)r->allocator_file_kb),
               r->allocator_traced ? ", among the program's: it ran on this allocator" : "");
    if (predicted && h->source_start_anon_kb)
        printf("; the program's anonymous pages at its start, %s Kb, for the replay's own, %s Kb",
               commas(a, sizeof a, (long long)h->source_start_anon_kb),
               commas(b, sizeof b, (long long)r->own_static_kb));
    if (predicted)
        printf(")\n");
    /* Like with like: a program's RSS holds its code and libraries, the replay's its own; the
     * anonymous part (RSS less file-backed pages, as sampled) is what the two share. */
    if (h->source_peak_anon_kb && s->peak_anon_kb)
        printf("anonymous memory (RSS less file pages): traced program's peak %s Kb (sampled); replay %s Kb "
               "(%+.1f %%)\n",
               commas(a, sizeof a, (long long)h->source_peak_anon_kb), commas(b, sizeof b, (long long)s->peak_anon_kb),
               100.0 * ((double)s->peak_anon_kb - (double)h->source_peak_anon_kb) / (double)h->source_peak_anon_kb);
}

/* The JSON result into f. */
/* The result's first keys: what ran (allocator, workload, settings, pacing, touch policy). */
static void json_run(mt_json_t *j, const sim_t *s, const sim_opts_t *o, const sim_results_t *r)
{
    mt_json_kv_cstr(j, "kind", "replay");
    mt_json_kv_cstr(j, "allocator", r->allocator);
    mt_json_kv_cstr(j, "workload", o->path);
    mt_json_key(j, "settings");
    mt_json_begin_array(j);
    for (int i = 0; i < o->nopts; i++)
        mt_json_str(j, o->opt_text[i], strlen(o->opt_text[i]));
    mt_json_end_array(j);
    /* Those the allocator never applied (it has no mallopt, or refused it): a replay without them,
     * whose figures say nothing of the setting. */
    mt_json_key(j, "settings_not_applied");
    mt_json_begin_array(j);
    for (int i = 0; i < o->nopts; i++)
        if (o->opt_not_applied >> i & 1)
            mt_json_str(j, o->opt_text[i], strlen(o->opt_text[i]));
    mt_json_end_array(j);
    const char *tun = getenv("GLIBC_TUNABLES");
    if (tun)
        mt_json_kv_cstr(j, "glibc_tunables", tun);
    if (o->series_path) {
        /* absolute, so the result can be read from anywhere (it is written after this JSON) */
        char abs[PATH_MAX];
        if (o->series_path[0] != '/' && getcwd(abs, sizeof abs) &&
            strlen(abs) + strlen(o->series_path) + 2 < sizeof abs) {
            strcat(abs, "/");
            strcat(abs, o->series_path);
            mt_json_kv_cstr(j, "rss_series", abs);
        } else {
            mt_json_kv_cstr(j, "rss_series", o->series_path);
        }
    }
    mt_json_kv_cstr(j, "timing", s->timing == TIMING_ASAP ? "asap" : "recorded");
    mt_json_kv_cstr(j, "timing_chosen", o->timing_asked ? "asked" : "default");
    mt_json_kv_cstr(j, "touch", touch_name(s->touch));
}

/* The program's own mappings, as replayed. */
static void json_program_memory(mt_json_t *j, const sim_t *s, const sim_results_t *r)
{
    const mt_wl_header_t *h = mt_wl_header(s->wl);
    mt_json_kv_u64(j, "touched_in_part", r->touched_in_part);
    mt_json_kv_u64(j, "program_maps", r->maps);
    mt_json_kv_u64(j, "program_maps_failed", r->map_failed);
    mt_json_kv_u64(j, "program_peak_mapped_kb", h->program_peak_bytes / 1024);
    mt_json_kv_u64(j, "program_brk_peak_kb", h->program_brk_peak_bytes / 1024);
    mt_json_kv_u64(j, "program_advises", h->program_advises);
    mt_json_kv_u64(j, "program_peak_resident_kb", r->share.maps_peak_kb);
    mt_json_kv_u64(j, "rss_less_program_peak_kb", r->share.heap_kb);
}

/* Threads, times, the replay's RSS and what the replay's own work cost. */
static void json_time_and_rss(mt_json_t *j, const sim_t *s, const sim_results_t *r)
{
    mt_json_kv_u64(j, "threads", s->nthreads);
    mt_json_kv_u64(j, "wall_us", r->wall_ns / 1000);
    mt_json_kv_u64(j, "cpu_us", r->cpu_us);
    mt_json_kv_u64(j, "thread_us", r->thread_cpu_ns / 1000); /* CPU time of the replay threads */
    mt_json_kv_u64(j, "cycles", r->cycles);
    mt_json_kv_u64(j, "max_rss_kb", r->max_rss_kb);
    mt_json_kv_u64(j, "start_rss_kb", r->start_rss_kb);
    mt_json_kv_u64(j, "max_vm_kb", s->peak_vm_kb);
    mt_json_kv_u64(j, "ideal_rss_kb", r->ideal_kb);
    mt_json_kv_u64(j, "ideal_pages_kb", r->ideal_pages_kb);
    /* The replay's RSS growth, its start left out (the replay's code and libraries, not the
     * program's), over the ideal: the summary's "Kb Max RSS" over its "Kb Max Ideal RSS" in pages.
     * Not the predicted peak over the ideal: that holds the program's code and libraries, which no
     * allocator changes (ls under gdb: 34 MiB predicted, 24 of them file pages, for an ideal of 3.5). */
    const uint64_t growth_kb = r->max_rss_kb > r->start_rss_kb ? r->max_rss_kb - r->start_rss_kb : 0;
    mt_json_kv_u64(j, "rss_growth_kb", growth_kb);
    mt_json_kv_double(j, "rss_growth_over_ideal",
                      r->ideal_pages_kb ? (double)growth_kb / (double)r->ideal_pages_kb : 0);
    mt_json_kv_u64(j, "allocator_us", (uint64_t)(r->costs.alloc_ns / 1000));
    mt_json_kv_double(j, "allocator_ns_per_call", r->costs.calls ? r->costs.alloc_ns / (double)r->costs.calls : 0);
    mt_json_kv_u64(j, "block_writes_us", (uint64_t)(r->costs.write_ns / 1000));
    mt_json_kv_double(j, "replay_overhead_ns_per_op", r->costs.own_ns_per_op);
    mt_json_kv_u64(j, "blocked_switches", s->totals->blocked_switches);
    mt_json_kv_cstr(j, "replay_overhead_rule",
                    "the replay threads' time less allocator_us (every timed call) and "
                    "block_writes_us (writing the blocks the calls returned), per op of "
                    "the workload: the replay's own work; their time is the lower of "
                    "their clock time from start to end less their waits and pacing "
                    "(too high when descheduled) and their CPU time less their pacing "
                    "(too high when spinning in waits)");
}

/* The prediction of the program's peak RSS on this allocator, and what it is made of. */
static void json_prediction(mt_json_t *j, const sim_t *s, const sim_results_t *r)
{
    const mt_wl_header_t *h = mt_wl_header(s->wl);
    mt_json_kv_u64(j, "source_peak_rss_kb", h->source_peak_rss_kb);
    mt_json_kv_u64(j, "source_peak_anon_kb", h->source_peak_anon_kb);
    mt_json_kv_u64(j, "max_anon_rss_kb", s->peak_anon_kb);
    mt_json_kv_u64(j, "predicted_peak_rss_kb", predicted_peak_kb(s, r));
    mt_json_kv_cstr(j, "predicted_peak_rule",
                    "max_anon_rss_kb less bookkeeping_kb, plus source_peak_rss_kb less "
                    "source_peak_anon_kb (the traced program's file-backed and shared pages), plus "
                    "allocator_file_kb (the file pages of the libraries the allocator brings; 0 when "
                    "allocator_traced: the traced program ran on this allocator); "
                    "where the trace has it, source_start_anon_kb (the program's anonymous pages at "
                    "its start: relocated data, static variables, stack) in place of "
                    "own_static_kb (the replay's own); 0 when the trace has no RSS samples");
    mt_json_kv_u64(j, "allocator_file_kb", r->allocator_file_kb);
    mt_json_kv_bool(j, "allocator_traced", r->allocator_traced);
    mt_json_kv_u64(j, "source_start_anon_kb", h->source_start_anon_kb);
    mt_json_kv_u64(j, "own_static_kb", r->own_static_kb);
    mt_json_kv_u64(j, "bookkeeping_kb", r->bookkeeping_kb);
    mt_json_kv_u64(j, "far_slots", r->far_slots);
}

/* Per op: calls, emulations, syncs, and the distribution of call times. */
static void json_calls(mt_json_t *j, const sim_t *s, const sim_results_t *r)
{
    mt_json_key(j, "emulated");
    mt_json_begin_array(j);
    for (unsigned op = 1; op < SIM_OPS; op++)
        if (r->emulated >> op & 1)
            mt_json_str(j, mt_wl_op_name(op), strlen(mt_wl_op_name(op)));
    mt_json_end_array(j);
    mt_json_kv_u64(j, "sync_points", mt_wl_header(s->wl)->waits);
    mt_json_kv_u64(j, "sync_waits", r->waits); /* at those of them the other thread had not reached */
    mt_json_kv_u64(j, "sync_sleeps", r->sleeps);
    mt_json_kv_double(j, "avg_sync_wait_cycles", r->waits ? (double)r->wait_cycles / (double)r->waits : 0);
    mt_json_key(j, "calls");
    mt_json_begin_object(j);
    for (unsigned op = 1; op < SIM_OPS; op++)
        mt_json_kv_u64(j, mt_wl_op_name(op), r->total[op].calls);
    mt_json_end_object(j);
    mt_json_kv_cstr(j, "avg_rule",
                    "avg_cycles leaves out descheduled_calls: calls timed at descheduled_cycles or "
                    "more, of ops whose p50_cycles is at most descheduled_median_max; avg_cycles_all "
                    "counts every call");
    mt_json_kv_u64(j, "descheduled_cycles", SIM_DESCHED_CYCLES);
    mt_json_kv_u64(j, "descheduled_median_max", SIM_DESCHED_MEDIAN_MAX);
    static const char *const keys[] = { "avg_cycles", "p50_cycles",        "p99_cycles",    "max_cycles",
                                        "failed",     "descheduled_calls", "avg_cycles_all" };
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        mt_json_key(j, keys[k]);
        mt_json_begin_object(j);
        for (unsigned op = 1; op < SIM_OPS; op++) {
            const sim_opstat_t *st = &r->total[op];
            if (k == 0 || k == 6)
                mt_json_kv_double(j, mt_wl_op_name(op), avg_cycles(st, k == 6));
            else if (k == 1)
                mt_json_kv_u64(j, mt_wl_op_name(op), percentile(st, 0.50));
            else if (k == 2)
                mt_json_kv_u64(j, mt_wl_op_name(op), percentile(st, 0.99));
            else if (k == 3)
                mt_json_kv_u64(j, mt_wl_op_name(op), st->max);
            else if (k == 4)
                mt_json_kv_u64(j, mt_wl_op_name(op), st->failed);
            else
                mt_json_kv_u64(j, mt_wl_op_name(op), descheduled_calls(st));
        }
        mt_json_end_object(j);
    }
}

static void put_result_json(FILE *f, const sim_t *s, const sim_opts_t *o, const sim_results_t *r)
{
    mt_json_t j;
    mt_json_init(&j, f);
    mt_json_begin_object(&j);
    json_run(&j, s, o, r);
    json_program_memory(&j, s, r);
    json_time_and_rss(&j, s, r);
    json_prediction(&j, s, r);
    json_calls(&j, s, r);
    mt_json_end_object(&j);
    mt_json_finish(&j);
}

/* Opens the workload and maps the replay's tables: the threads, their creation plan, the slots, the
 * series, the program's mappings and the touch table; then the settings. 0, or the exit status. */
static int setup(sim_t *s, sim_opts_t *o)
{
    const char *const path = o->path;
    /* Before anything else: a library that is not an allocator would replay glibc under its name. */
    char why[PATH_MAX + 300];
    if (sim_alloc_init(&s->alloc, o->allocator_lib, why, sizeof why) < 0) {
        fprintf(stderr, "mtrace-sim: %s\n", why);
        return 2;
    }
    mt_error_t err;
    if (mt_wl_open(&s->wl, path, &err) < 0) {
        fprintf(stderr, "mtrace-sim: %s\n", err.msg);
        return 1;
    }
    const mt_wl_header_t *h = mt_wl_header(s->wl);
    s->nthreads = h->threads;
    s->nslots = h->slots;
    s->page = (uint32_t)sysconf(_SC_PAGESIZE);
    if (s->nthreads == 0) {
        fprintf(stderr,
                "mtrace-sim: %s: the workload has no threads: its trace has no record of a thread (a program "
                "that made no malloc-family call, such as a Go program): nothing to replay\n",
                path);
        return 1;
    }
    if (s->nslots >= (1ull << 40)) { /* the reader bounds it by the ops; this bounds the multiplication */
        fprintf(stderr, "mtrace-sim: %s: %" PRIu64 " slots is more than a replay can map\n", path, s->nslots);
        return 1;
    }
    s->th = sim_map(s, s->nthreads * sizeof *s->th);
    s->spawns = sim_map(s, s->nthreads * sizeof *s->spawns);
    s->work = sim_map(s, s->nthreads * sizeof *s->work);
    s->totals = sim_map(s, sizeof *s->totals);
    s->slots = sim_map(s, (s->nslots + 1) * sizeof *s->slots);
    s->slot_far = sim_map(s, (s->nslots + 1) * sizeof *s->slot_far);
    pthread_mutex_init(&s->window_lock, NULL);
    pthread_mutex_init(&s->work_lock, NULL);
    pthread_mutex_init(&s->error_lock, NULL);
    s->series_cap = 1u << 20;
    s->series = sim_map(s, s->series_cap * sizeof *s->series);
    if (!s->th || !s->spawns || !s->work || !s->totals || !s->slots || !s->slot_far || !s->series) {
        fprintf(stderr, "mtrace-sim: cannot map the replay's tables (%" PRIu64 " slots): %s\n", s->nslots,
                strerror(errno));
        return 1;
    }
    if (s->touch == TOUCH_AUTO)
        s->touch = (h->flags & MT_WLH_PAGES) ? TOUCH_EVIDENCE : TOUCH_PAGES;
    if (h->program_maps > h->ops || sim_maps_init(s, h->program_maps) < 0) {
        fprintf(stderr, "mtrace-sim: %s: cannot set up a table of %" PRIu64 " mappings\n", path, h->program_maps);
        return 1;
    }
    if (s->touch == TOUCH_EVIDENCE && load_touch_table(s, &err) < 0) {
        fprintf(stderr, "mtrace-sim: %s\n", err.msg);
        return 1;
    }
    for (uint32_t i = 0; i < s->nthreads; i++) {
        s->th[i].index = i;
        s->th[i].sim = s;
        atomic_store(&s->th[i].wake_at, UINT64_MAX);
    }
    if (sim_plan_spawns(s, &err) < 0) {
        fprintf(stderr, "mtrace-sim: %s\n", err.msg);
        return 1;
    }
    sim_sync_init(s);
    if (o->nopts && !s->alloc.has_mallopt) { /* jemalloc, tcmalloc, mimalloc: mallopt would be glibc's */
        o->opt_not_applied = (uint32_t)((1ull << o->nopts) - 1);
        fprintf(stderr,
                "mtrace-sim: warning: %s does not define mallopt: the --mallopt settings would only reach "
                "glibc's allocator, which this replay does not use; replayed without them\n",
                s->alloc.lib);
    }
    for (int i = 0; i < o->nopts && s->alloc.has_mallopt; i++) {
        if (mallopt(o->opt_param[i], o->opt_value[i]) != 1) {
            o->opt_not_applied |= 1u << i;
            fprintf(stderr, "mtrace-sim: warning: the allocator refused mallopt %s\n", o->opt_text[i]);
        }
    }
    s->first_op_ns = UINT64_MAX;
    for (uint32_t i = 0; i < s->nthreads; i++) /* threads without ops say nothing of time */
        if (mt_wl_thread(s->wl, i)->ops && mt_wl_thread(s->wl, i)->start_ns < s->first_op_ns)
            s->first_op_ns = mt_wl_thread(s->wl, i)->start_ns;
    if (s->first_op_ns == UINT64_MAX)
        s->first_op_ns = 0;
    return 0;
}

/* What a run measured around itself. */
typedef struct sim_run {
    uint64_t start_rss_kb;
    uint64_t cycles, wall_ns, cpu_us;
} sim_run_t;

/* Runs the replay: the sampler, the threads (thread 0 on this one), and waits for all of them.
 * 0, or the exit status. */
static int run(sim_t *s, const sim_opts_t *o, sim_run_t *run)
{
    statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    uint64_t vm0, rss0, file0;
    if (statm_fd < 0 || read_statm(&vm0, &rss0, &file0) < 0) {
        fprintf(stderr, "mtrace-sim: cannot read /proc/self/statm\n");
        return 1;
    }
    run->start_rss_kb = rss0 * (s->page / 1024);
    /* Resets the kernel's peak RSS (VmHWM) to now: the samples every sample-ms can miss a short
     * peak, the kernel's high-water mark cannot. */
    const int clear = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (clear >= 0) {
        ssize_t w = write(clear, "5", 1);
        (void)w;
        close(clear);
    }
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    atomic_store(&s->running, 1);
    s->replay_start_ns = mt_mono_ns();
    const uint64_t c_start = sim_cycles();
    pthread_t sampler;
    sample(s);
    if (pthread_create(&sampler, NULL, sampler_main, s) != 0) {
        fprintf(stderr, "mtrace-sim: cannot start the RSS sampler\n");
        return 1;
    }
    for (uint32_t k = 1; k < s->nthreads; k++)
        if (!s->th[k].spawned)
            sim_spawn(s, k);
    atomic_store(&s->th[0].created, 1);
    sim_thread_run(s, &s->th[0]);
    for (uint32_t k = 1; k < s->nthreads; k++) {
        sim_thread_t *t = &s->th[k];
        while (!atomic_load(&t->created))
            syscall(SYS_futex, (uint32_t *)&t->created, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    }
    for (uint32_t n; (n = atomic_load(&s->threads_running)) != 0;)
        syscall(SYS_futex, (uint32_t *)&s->threads_running, FUTEX_WAIT_PRIVATE, n, NULL, NULL, 0);
    run->cycles = sim_cycles() - c_start;
    run->wall_ns = mt_mono_ns() - s->replay_start_ns;
    /* The sampler is stopped before the last sample: both write the peaks and the series. */
    atomic_store(&s->running, 0);
    pthread_join(sampler, NULL);
    sample(s);
    getrusage(RUSAGE_SELF, &ru1);
    run->cpu_us = (uint64_t)((ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) * 1000000 +
                             (ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) +
                             (ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) * 1000000 +
                             (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec));

    if (stall_msg[0]) {
        fprintf(stderr, "mtrace-sim: %s: %s\n", o->path, stall_msg);
        return 1;
    }
    if (s->has_error) {
        fprintf(stderr, "mtrace-sim: %s\n", s->errmsg); /* the path is in it */
        return 1;
    }
    if (atomic_load(&s->failed)) {
        fprintf(stderr, "mtrace-sim: %s: the replay was stopped\n", o->path);
        return 1;
    }
    return 0;
}

/* Whether the traced program ran on the replay's allocator: the trace names the library that
 * answered its malloc (MT_STR_ALLOCATOR), compared by file name, as one system's paths to one
 * library differ (/lib and /usr/lib). Its pages, and those of the libraries it needs, are then among
 * the program's file pages already: redis-server, linked with jemalloc, was predicted 1.9 MB more
 * for them. */
static int traced_on_this_allocator(const sim_t *s)
{
    size_t len = 0;
    const char *traced = mt_wl_string(s->wl, MT_STR_ALLOCATOR, 0, &len);
    if (!traced || !len)
        return 0;
    const char *name = memrchr(traced, '/', len);
    name = name ? name + 1 : traced;
    const size_t name_len = len - (size_t)(name - traced);
    const char *ours = strrchr(s->alloc.lib, '/');
    ours = ours ? ours + 1 : s->alloc.lib;
    return name_len && strlen(ours) == name_len && !memcmp(name, ours, name_len);
}

/* The results, from the totals each thread merged in as it ended and from what the run measured. */
static sim_results_t results(sim_t *s, const sim_opts_t *o, const sim_run_t *run)
{
    const mt_wl_header_t *h = mt_wl_header(s->wl);
    const sim_opstat_t *const total = s->totals->stat;
    const sim_lib_pages_t pages = sim_lib_pages((const void *)s->alloc.malloc);
    const int traced = traced_on_this_allocator(s);
    uint64_t max_rss_kb = s->peak_rss_kb;
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    while (status && fgets(line, sizeof line, status)) {
        unsigned long long hwm;
        if (sscanf(line, "VmHWM: %llu kB", &hwm) == 1 && hwm > max_rss_kb)
            max_rss_kb = hwm;
    }
    if (status)
        fclose(status);
    const uint64_t bookkeeping_kb = sim_resident_bytes(s) / 1024;
    /* The samples can miss a short peak; the kernel's high-water mark cannot, and the replay's own
     * file-backed pages (its code and libraries) hardly change once it runs. */
    {
        uint64_t vm_end, rss_end, file_end;
        const uint64_t kb = s->page / 1024;
        if (read_statm(&vm_end, &rss_end, &file_end) == 0 && max_rss_kb > file_end * kb &&
            max_rss_kb - file_end * kb > s->peak_anon_kb)
            s->peak_anon_kb = max_rss_kb - file_end * kb;
    }
    /* The functions the workload called that the allocator does not define (see sim_alloc.c). */
    uint32_t emulated = 0;
    for (unsigned op = 1; op < SIM_OPS; op++)
        if ((s->alloc.emulated >> op & 1) && total[op].calls)
            emulated |= 1u << op;
    return (sim_results_t){
        .allocator = o->label ? o->label : s->alloc.lib,
        .total = total,
        .cycles = run->cycles,
        .wall_ns = run->wall_ns,
        .cpu_us = run->cpu_us,
        .thread_cpu_ns = s->totals->cpu_ns,
        .max_rss_kb = max_rss_kb,
        .start_rss_kb = run->start_rss_kb,
        .ideal_kb = (h->peak_live_bytes + 1023) / 1024,
        .ideal_pages_kb = (h->peak_live_bytes + s->page - 1) / s->page * (s->page / 1024),
        .bookkeeping_kb = bookkeeping_kb,
        .allocator_file_kb = traced ? 0 : pages.allocator_file_kb,
        .allocator_traced = traced,
        .own_static_kb = pages.own_static_kb,
        .waits = s->totals->waits,
        .wait_cycles = s->totals->wait_cycles,
        .sleeps = s->totals->futex_sleeps,
        .far_slots = s->totals->far_slots,
        .touched_in_part = s->totals->touched_in_part,
        .maps = s->totals->maps,
        .map_failed = s->totals->map_failed,
        .emulated = emulated,
        .share = rss_share(s, run->start_rss_kb),
        .costs = op_costs(total, s->totals, h->ops, run->wall_ns ? (double)run->cycles / (double)run->wall_ns : 0),
    };
}

/* Calls the allocator refused where the traced program got a block: the replay went on without
 * those blocks, so its figures are not the traced program's. Said in the summary (stderr when
 * quiet) and by the exit status, not in the JSON alone. Returns their count. */
static uint64_t say_failed_calls(const sim_opstat_t *total, int quiet)
{
    uint64_t failed_calls = 0;
    for (unsigned op = 1; op < SIM_OPS; op++)
        failed_calls += total[op].failed;
    if (failed_calls) {
        FILE *const f = quiet ? stderr : stdout;
        fprintf(f,
                "%s%" PRIu64 " replayed call%s failed (the allocator returned NULL where the traced call got a block):",
                quiet ? "mtrace-sim: " : "", failed_calls, failed_calls == 1 ? "" : "s");
        for (unsigned op = 1; op < SIM_OPS; op++)
            if (total[op].failed)
                fprintf(f, " %s %" PRIu64, mt_wl_op_name(op), total[op].failed);
        fprintf(f, "\n");
    }
    return failed_calls;
}

/* The JSON result and the RSS series, both written whole under temporary names and renamed into
 * place only when both are complete: a failure leaves neither (file_io.h). The series goes first:
 * the JSON names it. 0, or -1 with the error said. */
static int write_outputs(const sim_t *s, const sim_opts_t *o, const sim_results_t *res)
{
    const char *const json_path = o->json_path, *const series_path = o->series_path;
    mt_error_t err;
    mt_out_t json_out = { 0 }, series_out = { 0 };
    if ((json_path && mt_out_open(&json_out, json_path, &err) < 0) ||
        (series_path && mt_out_open(&series_out, series_path, &err) < 0)) {
        mt_out_abort(&json_out);
        fprintf(stderr, "mtrace-sim: %s\n", err.msg);
        return -1;
    }
    if (json_path)
        put_result_json(json_out.f, s, o, res);
    if (series_path) {
        FILE *const f = series_out.f;
        fprintf(f, "# t_s\trss_kb\tvmsize_kb\tideal_kb\tsource_rss_kb\tops_done\n");
        for (uint64_t i = 0; i < s->series_n; i++) {
            const sim_series_row_t *r = &s->series[i];
            fprintf(f, "%.4f\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%.6f\n", r->t, r->rss_kb, r->vm_kb,
                    r->ideal_kb, r->source_rss_kb, r->done);
        }
    }
    if ((series_path && mt_out_commit(&series_out, &err) < 0) || (json_path && mt_out_commit(&json_out, &err) < 0)) {
        mt_out_abort(&series_out);
        mt_out_abort(&json_out);
        fprintf(stderr, "mtrace-sim: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* Each output tried before the replay (mt_out_try): a folder that is missing or not writable is
 * said at once, not after a replay of minutes whose result would be lost. 0, or -1 with the error
 * said. */
static int try_outputs(const sim_opts_t *o)
{
    mt_error_t err;
    if ((o->json_path && mt_out_try(o->json_path, &err) < 0) ||
        (o->series_path && mt_out_try(o->series_path, &err) < 0)) {
        fprintf(stderr, "mtrace-sim: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int sim_main(int argc, char **argv)
{
    sim_t s = { 0 };
    sim_opts_t o = { 0 };
    int rc = parse_args(argc, argv, &s, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (try_outputs(&o) < 0)
        return 1;
    sim_run_t r = { 0 };
    if ((rc = setup(&s, &o)) != 0 || (rc = run(&s, &o, &r)) != 0)
        return rc;
    const sim_results_t res = results(&s, &o, &r);
    if (!o.quiet)
        print_summary(&s, &o, &res);
    const uint64_t failed_calls = say_failed_calls(res.total, o.quiet);
    if (write_outputs(&s, &o, &res) < 0)
        return 1;
    return failed_calls ? MT_EXIT_FAILED_CALLS : 0;
}

int main(int argc, char **argv)
{
    return mt_stdout_finish("mtrace-sim", sim_main(argc, argv));
}
