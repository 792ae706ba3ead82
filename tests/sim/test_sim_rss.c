/* mtrace-sim's memory figures on workloads whose memory use is known exactly: the ideal RSS from the
 * workload's peak of live bytes, the call counts, the measured RSS against the touched bytes, what
 * --touch changes, and a mallopt setting that changes glibc's memory layout in a way RSS shows.
 *
 * Measured RSS is only asserted where the replay holds its peak long enough to be sampled: at the end
 * of the workload (the simulator samples once more after the last op) or across a recorded pause
 * (--timing recorded). Only directions and coarse bounds are asserted, never times. */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim_util.h"
#include "test_util.h"

#define MiB (1024ull * 1024)

static char *g_dir;
TEST_DIR_FIXTURE(g_dir, "sim-rss", "SIM_KEEP")

/* mtrace-sim WL --json OUT [extra args...]; ck_asserts exit 0 and returns the parsed result. */
static mt_jval_t *sim_json(const char *wl, const char *tag, const char *const *extra)
{
    char *json = path_in(g_dir, tag), *err = path_in(g_dir, "stderr");
    const char *argv[32] = { SIM_EXE, wl, "--json", json, "--quiet", "--stall-timeout", "20" };
    size_t n = 7;
    for (size_t i = 0; extra && extra[i] && n < 31; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    const int rc = run(argv, NULL, err, NULL, 120);
    char *e = read_text(err, NULL);
    ck_assert_msg(rc == 0, "mtrace-sim %s exited with %d: %s", tag, rc, e ? e : "");
    free(e);
    mt_jval_t *j = load_json(json);
    free(json);
    free(err);
    return j;
}

/* ---- ideal RSS and call counts ------------------------------------------------------------------ */

#define BLOCK (MiB + 100) /* not a multiple of 1 KiB nor of a page: the rounding shows */

/* 100 blocks, free the first 50, 10 more, free all. `hold_ns`: recorded pause at the peak. */
static void write_known(const char *path, uint64_t hold_ns)
{
    wlb_t b;
    wlb_open(&b, path);
    const uint32_t t = wlb_thread(&b, 0);
    for (uint64_t s = 1; s <= 100; s++)
        wlb_malloc(&b, t, s, BLOCK);
    wlb_gap(&b, hold_ns);
    for (uint64_t s = 1; s <= 50; s++)
        wlb_free(&b, t, s);
    for (uint64_t s = 1; s <= 10; s++)
        wlb_malloc(&b, t, s, BLOCK);
    for (uint64_t s = 1; s <= 10; s++)
        wlb_free(&b, t, s);
    for (uint64_t s = 51; s <= 100; s++)
        wlb_free(&b, t, s);
    ck_assert_uint_eq(b.peak, 100 * BLOCK);
    wlb_close(&b);
}

START_TEST(ideal_and_calls)
{
    char *wl = path_in(g_dir, "known.mtw");
    write_known(wl, 0);
    mt_jval_t *j = sim_json(wl, "known.json", NULL);
    const uint64_t peak = 100 * BLOCK, page = (uint64_t)sysconf(_SC_PAGESIZE);
    ck_assert_uint_eq((uint64_t)jnum(j, "ideal_rss_kb"), (peak + 1023) / 1024); /* 102410 */
    ck_assert_uint_eq((uint64_t)jnum(j, "ideal_pages_kb"), (peak + page - 1) / page * (page / 1024));
    ck_assert_uint_eq((uint64_t)jnum(j, "threads"), 1);
    ck_assert_uint_eq((uint64_t)jnum2(j, "calls", "malloc"), 110);
    ck_assert_uint_eq((uint64_t)jnum2(j, "calls", "free"), 110);
    static const char *const none[] = { "calloc",   "realloc",        "reallocarray",
                                        "memalign", "posix_memalign", "aligned_alloc",
                                        "valloc",   "pvalloc",        "malloc_usable_size",
                                        "mallopt" };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        ck_assert_msg(jnum2(j, "calls", none[i]) == 0, "calls.%s = %g", none[i], jnum2(j, "calls", none[i]));
    ck_assert_uint_eq((uint64_t)jnum2(j, "failed", "malloc"), 0);
    ck_assert_uint_eq((uint64_t)jnum(j, "sync_waits"), 0);
    ck_assert_str_eq(mt_json_str_at(j, "kind", ""), "replay");
    ck_assert_str_eq(mt_json_str_at(j, "touch", ""), "pages");
    /* recorded pacing unless asked otherwise: an allocator that purges on a timer sees the program's pace */
    ck_assert_str_eq(mt_json_str_at(j, "timing", ""), "recorded");
    ck_assert_str_eq(mt_json_str_at(j, "timing_chosen", ""), "default");
    ck_assert_str_eq(mt_json_str_at(j, "workload", ""), wl);
    /* every key the result promises */
    static const char *const keys[] = { "allocator",
                                        "threads",
                                        "wall_us",
                                        "cpu_us",
                                        "cycles",
                                        "max_rss_kb",
                                        "start_rss_kb",
                                        "ideal_rss_kb",
                                        "ideal_pages_kb",
                                        "calls",
                                        "avg_cycles",
                                        "p50_cycles",
                                        "p99_cycles",
                                        "max_cycles",
                                        "failed",
                                        "sync_waits",
                                        "sync_points",
                                        "bookkeeping_kb",
                                        "source_peak_rss_kb",
                                        "rss_growth_kb",
                                        "rss_growth_over_ideal",
                                        "allocator_us",
                                        "block_writes_us",
                                        "replay_overhead_ns_per_op",
                                        "program_peak_resident_kb",
                                        "rss_less_program_peak_kb",
                                        "predicted_peak_rss_kb" };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_msg(mt_json_get(j, keys[i]) != NULL, "the result has no '%s'", keys[i]);
    ck_assert_uint_gt((uint64_t)jnum2(j, "max_cycles", "malloc"), 0);
    ck_assert(jnum2(j, "p50_cycles", "malloc") <= jnum2(j, "p99_cycles", "malloc"));
    ck_assert(jnum2(j, "p99_cycles", "malloc") <= jnum2(j, "max_cycles", "malloc"));
    mt_json_free(j);
    free(wl);
}
END_TEST

/* With a recorded pause of 400 ms at the peak, the sampler (every 10 ms) sees the 100 touched blocks. */
START_TEST(max_rss_covers_touched_peak)
{
    char *wl = path_in(g_dir, "hold.mtw");
    write_known(wl, 400000000);
    static const char *const args[] = { "--timing", "recorded", NULL };
    mt_jval_t *j = sim_json(wl, "hold.json", args);
    const uint64_t max = (uint64_t)jnum(j, "max_rss_kb"), start = (uint64_t)jnum(j, "start_rss_kb");
    const uint64_t touched_kb = 100 * BLOCK / 1024;
    ck_assert_msg(max >= touched_kb, "max RSS %llu KiB < %llu KiB touched", (unsigned long long)max,
                  (unsigned long long)touched_kb);
    ck_assert_msg(start < max, "start RSS %llu KiB, max %llu KiB", (unsigned long long)start, (unsigned long long)max);
    ck_assert_str_eq(mt_json_str_at(j, "timing", ""), "recorded");
    if (sanitizer_skip("max_rss_covers_touched_peak, upper bound")) { /* redzones, shadow, quarantine */
        mt_json_free(j);
        free(wl);
        return;
    }
    /* The growth is the blocks, give or take a few MiB of allocator headers and simulator tables. */
    ck_assert_msg(max - start >= touched_kb - 1024 && max - start <= touched_kb + 16 * 1024,
                  "max RSS grew by %llu KiB for %llu KiB touched", (unsigned long long)(max - start),
                  (unsigned long long)touched_kb);
    /* the growth (max - start) over the ideal pages */
    ck_assert_uint_eq((uint64_t)jnum(j, "rss_growth_kb"), max - start);
    const double over = jnum(j, "rss_growth_over_ideal");
    ck_assert_msg(over > 0.9 && over < 1.2, "rss_growth_over_ideal %g", over);
    mt_json_free(j);
    free(wl);
}
END_TEST

/* ---- --touch ------------------------------------------------------------------------------------ */

/* 1024 blocks of 256 KiB, left live at the end (the last sample sees them). glibc serves each with an
 * mmap of its own, so only the pages written become resident: the chunk header's page (the block's
 * first) always, the block's last page with --touch ends, all 64 with --touch pages. */
#define NBIG 1024
#define BIG (256 * 1024)

static char *write_big_live(void)
{
    char *wl = path_in(g_dir, "big.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t = wlb_thread(&b, 0);
    for (uint64_t s = 1; s <= NBIG; s++)
        wlb_malloc(&b, t, s, BIG);
    wlb_close(&b);
    return wl;
}

START_TEST(touch_modes)
{
    char *wl = write_big_live();
    static const char *const pages[] = { "--touch", "pages", NULL }, *const ends[] = { "--touch", "ends", NULL },
                             *const none[] = { "--touch", "none", NULL };
    mt_jval_t *jp = sim_json(wl, "pages.json", pages), *je = sim_json(wl, "ends.json", ends),
              *jn = sim_json(wl, "none.json", none);
    const double live_kb = NBIG * (BIG / 1024), page_kb = (double)sysconf(_SC_PAGESIZE) / 1024;
    const double gp = jnum(jp, "max_rss_kb") - jnum(jp, "start_rss_kb");
    const double ge = jnum(je, "max_rss_kb") - jnum(je, "start_rss_kb");
    const double gn = jnum(jn, "max_rss_kb") - jnum(jn, "start_rss_kb");
    ck_assert_msg(gp >= live_kb - 1024, "--touch pages: RSS grew by %g KiB for %g KiB live", gp, live_kb);
    /* A sanitizer's allocator also writes each block's shadow memory, 1/8 of its size. */
    const double low = live_kb / (SIM_SANITIZER_ALLOCATOR ? 4 : 8);
    ck_assert_msg(gn < low, "--touch none: RSS grew by %g KiB for %g KiB live, untouched", gn, live_kb);
    ck_assert_msg(ge < low, "--touch ends: RSS grew by %g KiB for %g KiB live, 2 pages a block", ge, live_kb);
    /* ends writes one more page per block than none: NBIG pages, ask for half */
    ck_assert_msg(ge > gn + NBIG * page_kb / 2, "--touch ends: RSS grew by %g KiB, --touch none by %g KiB", ge, gn);
    ck_assert_str_eq(mt_json_str_at(jn, "touch", ""), "none");
    ck_assert_str_eq(mt_json_str_at(je, "touch", ""), "ends");
    /* the ideal does not depend on touching */
    ck_assert_uint_eq((uint64_t)jnum(jn, "ideal_rss_kb"), (uint64_t)live_kb);
    ck_assert_uint_eq((uint64_t)jnum(jp, "ideal_rss_kb"), (uint64_t)live_kb);
    mt_json_free(jp);
    mt_json_free(je);
    mt_json_free(jn);
    free(wl);
}
END_TEST

/* The same blocks with page evidence saying the program wrote a quarter of each whole page of every
 * other block: by default (auto) the replay writes those, and every page of the blocks without an
 * entry; --touch pages still writes every page. */
START_TEST(touch_table_writes_the_share)
{
    char *wl = path_in(g_dir, "share.mtw");
    static mt_wl_touch_entry_t tab[NBIG / 2];
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t = wlb_thread(&b, 0);
    for (uint64_t s = 1; s <= NBIG; s++) {
        if (s % 2)
            tab[s / 2] = (mt_wl_touch_entry_t){ .op = wlb_ops(&b, t) + 1, .thread = t, .frac = MT_WL_TOUCH_ONE / 4 };
        wlb_malloc(&b, t, s, BIG);
    }
    wlb_set_touch(&b, tab, NBIG / 2);
    wlb_close(&b);
    static const char *const pages[] = { "--touch", "pages", NULL };
    mt_jval_t *ja = sim_json(wl, "auto.json", NULL), *jp = sim_json(wl, "pages.json", pages);
    ck_assert_str_eq(mt_json_str_at(ja, "touch", ""), "evidence");
    ck_assert_str_eq(mt_json_str_at(jp, "touch", ""), "pages");
    ck_assert_uint_eq((uint64_t)jnum(ja, "touched_in_part"), NBIG / 2);
    ck_assert_uint_eq((uint64_t)jnum(jp, "touched_in_part"), 0);
    const double live_kb = NBIG * (BIG / 1024);
    const double ga = jnum(ja, "max_rss_kb") - jnum(ja, "start_rss_kb");
    const double gp = jnum(jp, "max_rss_kb") - jnum(jp, "start_rss_kb");
    ck_assert_msg(gp >= live_kb - 1024, "--touch pages: RSS grew by %g KiB for %g KiB live", gp, live_kb);
    /* half the blocks whole, half a quarter written: 5/8 of the live bytes, a page a block more */
    if (!SIM_SANITIZER_ALLOCATOR)
        ck_assert_msg(ga > live_kb * 0.55 && ga < live_kb * 0.72, "auto: RSS grew by %g KiB for %g KiB live (5/8: %g)",
                      ga, live_kb, live_kb * 5 / 8);
    mt_json_free(ja);
    mt_json_free(jp);
    free(wl);
}
END_TEST

/* A block the program wrote over its life: 64 MiB made with none of it written (an entry of slot 0,
 * share 0), a quarter written after a later op and all of it after another (entries of its slot),
 * each followed by 300 ms in which the sampler sees the RSS. The replay's RSS rises in those steps:
 * not at all at first, then by a quarter, then by the whole; without the later entries it stays. */
START_TEST(touch_table_writes_later)
{
    for (int later = 0; later < 2; later++) {
        char *wl = path_in(g_dir, later ? "later.mtw" : "never.mtw");
        static mt_wl_touch_entry_t tab[3];
        wlb_t b;
        wlb_open(&b, wl);
        const uint32_t t = wlb_thread(&b, 0);
        tab[0] = (mt_wl_touch_entry_t){ .op = wlb_ops(&b, t) + 1, .thread = t, .frac = 0 };
        wlb_malloc(&b, t, 1, 64 * MiB);
        wlb_gap(&b, 300000000);
        wlb_malloc(&b, t, 2, 100); /* the ops after which the program had written more */
        tab[1] = (mt_wl_touch_entry_t){
            .op = wlb_ops(&b, t), .thread = t, .frac = MT_WL_TOUCH_ONE / 4, .size = 64 * MiB, .slot = 1
        };
        wlb_gap(&b, 300000000);
        wlb_free(&b, t, 2);
        tab[2] = (mt_wl_touch_entry_t){
            .op = wlb_ops(&b, t), .thread = t, .frac = MT_WL_TOUCH_ONE, .size = 64 * MiB, .slot = 1
        };
        wlb_gap(&b, 300000000);
        wlb_free(&b, t, 1);
        wlb_set_touch(&b, tab, later ? 3 : 1);
        wlb_close(&b);
        char *series = path_in(g_dir, later ? "later.tsv" : "never.tsv");
        const char *args[] = { "--timing", "recorded", "--rss-series", series, NULL };
        mt_jval_t *j = sim_json(wl, later ? "later.json" : "never.json", args);
        const double grew = jnum(j, "max_rss_kb") - jnum(j, "start_rss_kb");
        if (later)
            ck_assert_msg(grew >= 60 * 1024, "RSS grew by %g KiB for 64 MiB written later", grew);
        /* Under TSan, on a kernel that gives a page read a page of its own (no zero page:
         * tests/e2e/read_pages.sh), the replay grew by 35 MB with none of the block written: the
         * sanitizer's own work on it, not examined further; its shadow pages count as above. */
        else if (!SIM_SANITIZER_ALLOCATOR)
            ck_assert_msg(grew < 16 * 1024, "RSS grew by %g KiB for 64 MiB never written", grew);
        /* the steps: a quarter while the replay waits after its third op of five counted (the series' last
         * column: the share of ops done). A sanitizer's shadow pages would count too: not there. */
        if (later && !SIM_SANITIZER_ALLOCATOR) {
            FILE *f = fopen(series, "r");
            ck_assert_ptr_nonnull(f);
            char line[256];
            /* the least of the samples then: those after the quarter's wait are mid-write of the
             * whole, and on a loaded machine, where that write takes longer, they were more than
             * half of them (a median of 39.7 MB over the start); none can be under the quarter */
            double quarter = -1;
            while (fgets(line, sizeof line, f)) {
                double ts, rss, vm, ideal, source, done;
                if (line[0] != '#' &&
                    sscanf(line, "%lf %lf %lf %lf %lf %lf", &ts, &rss, &vm, &ideal, &source, &done) == 6 &&
                    done > 0.5 && done < 0.7 && (quarter < 0 || rss - jnum(j, "start_rss_kb") < quarter))
                    quarter = rss - jnum(j, "start_rss_kb");
            }
            fclose(f);
            ck_assert_msg(quarter > 12 * 1024 && quarter < 28 * 1024,
                          "RSS %g KiB over the start with a quarter written", quarter);
        }
        mt_json_free(j);
        free(series);
        free(wl);
    }
}
END_TEST

/* The program's own mappings: 64 MiB mapped and written whole (no touch entry) count in the replay's
 * RSS, and leave it when unmapped in two parts; the JSON counts them. */
START_TEST(own_mappings_in_the_rss)
{
    char *wl = path_in(g_dir, "maps.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t = wlb_thread(&b, 0);
    wlb_mmap(&b, t, 1, 64 * MiB);
    wlb_gap(&b, 400000000); /* 400 ms at the peak: the sampler sees it */
    wlb_munmap(&b, t, 1, 0, 32 * MiB, 0);
    wlb_munmap(&b, t, 1, 32 * MiB, 32 * MiB, 1);
    wlb_close(&b);
    static const char *const recorded[] = { "--timing", "recorded", NULL };
    mt_jval_t *j = sim_json(wl, "maps.json", recorded);
    ck_assert_uint_eq((uint64_t)jnum(j, "program_maps"), 1);
    ck_assert_uint_eq((uint64_t)jnum(j, "program_maps_failed"), 0);
    const double grew = jnum(j, "max_rss_kb") - jnum(j, "start_rss_kb");
    ck_assert_msg(grew >= 60 * 1024, "RSS grew by %g KiB for a 64 MiB mapping written whole", grew);
    /* the ideal is the allocator's: no malloc here */
    ck_assert_uint_eq((uint64_t)jnum(j, "ideal_rss_kb"), 0);
    mt_json_free(j);
    free(wl);
}
END_TEST

/* madvise(MADV_DONTNEED) on the program's own mapping gives its pages back in the replay as in the
 * program, after writing those the program had resident there: 64 MiB mapped with only 8 MiB written
 * (a touch entry), then an madvise of all of it that says 48 MiB were resident first. The mapping's
 * resident pages peak at 48 MiB and end at none; the RSS less them stays small (no malloc). */
START_TEST(own_mappings_madvise_drops_pages)
{
    char *wl = path_in(g_dir, "advise.mtw");
    static mt_wl_touch_entry_t tab[1];
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t = wlb_thread(&b, 0);
    tab[0] = (mt_wl_touch_entry_t){ .op = wlb_ops(&b, t) + 1, .thread = t, .frac = MT_WL_TOUCH_ONE / 8 };
    wlb_mmap(&b, t, 1, 64 * MiB);
    wlb_gap(&b, 100000000);
    wlb_madvise(&b, t, 1, 0, 64 * MiB, MADV_DONTNEED, 48 * MiB / 4096);
    wlb_gap(&b, 300000000); /* 300 ms with the pages given back */
    wlb_munmap(&b, t, 1, 0, 64 * MiB, 1);
    wlb_set_touch(&b, tab, 1);
    wlb_close(&b);
    static const char *const recorded[] = { "--timing", "recorded", NULL };
    mt_jval_t *j = sim_json(wl, "advise.json", recorded);
    ck_assert_uint_eq((uint64_t)jnum(j, "program_advises"), 1);
    const double own = jnum(j, "program_peak_resident_kb");
    ck_assert_msg(own >= 47 * 1024 && own <= 49 * 1024, "own mappings at most %g KiB resident, expected 48 MiB", own);
    const double grew = jnum(j, "max_rss_kb") - jnum(j, "start_rss_kb");
    /* under a sanitizer the shadow of the pages written is resident too (TSan's: twice as much again) */
    ck_assert_msg(grew >= 44 * 1024 && (SIM_SANITIZER_ALLOCATOR || grew <= 56 * 1024),
                  "RSS grew by %g KiB, expected about 48 MiB", grew);
    if (!SIM_SANITIZER_ALLOCATOR)
        ck_assert_msg(jnum(j, "rss_less_program_peak_kb") < 8 * 1024, "RSS less the program's mappings: %g KiB",
                      jnum(j, "rss_less_program_peak_kb"));
    mt_json_free(j);
    free(wl);
}
END_TEST

/* An unmap or an madvise past the end of the mapping, or of a slot that holds none, stops the
 * replay with the offset of the op: it would otherwise unmap or drop the replay's own memory. */
START_TEST(own_mappings_bad_unmap_refused)
{
    char *wl = path_in(g_dir, "badmap.mtw"), *err = path_in(g_dir, "stderr");
    for (int k = 0; k < 4; k++) {
        wlb_t b;
        wlb_open(&b, wl);
        const uint32_t t = wlb_thread(&b, 0);
        wlb_mmap(&b, t, 1, MiB);
        wlb_malloc(&b, t, 2, 100);
        if (k == 0)
            wlb_munmap(&b, t, 1, MiB / 2, MiB, 1); /* past the end */
        else if (k == 1)
            wlb_munmap(&b, t, 2, 0, 4096, 1); /* a malloc block */
        else if (k == 2)                      /* the same for madvise: its pages would be the replay's own */
            wlb_madvise(&b, t, 1, MiB / 2, MiB, MADV_DONTNEED, 0);
        else
            wlb_madvise(&b, t, 2, 0, 4096, MADV_DONTNEED, 1);
        wlb_close(&b);
        const char *argv[] = { SIM_EXE, wl, "--quiet", "--stall-timeout", "20", NULL };
        const int rc = run(argv, NULL, err, NULL, 60);
        char *e = read_text(err, NULL);
        ck_assert_msg(rc == 1, "case %d: exit %d: %s", k, rc, e ? e : "");
        ck_assert_msg(e && strstr(e, k < 2 ? "munmap op" : "madvise op") && strstr(e, "offset"), "case %d: %s", k,
                      e ? e : "");
        free(e);
        unlink(wl);
    }
    free(err);
    free(wl);
}
END_TEST

/* ---- mallopt ------------------------------------------------------------------------------------ */

/* 200 blocks of 256 KiB, each followed by a 64-byte block; all the 256 KiB blocks freed; then 200
 * blocks of 512 KiB, left live. By default glibc mmaps the 256 KiB blocks (above its 128 KiB
 * threshold) and gives them back on free, so the peak is about the 100 MiB of 512 KiB blocks. With
 * mmap_threshold=1 MiB (or mmap_max=0) they come from the heap between the small blocks: freed, they
 * leave 256 KiB holes the small blocks pin and the 512 KiB blocks do not fit, so the 50 MiB stay
 * resident under the new blocks. */
static char *write_holes(void)
{
    char *wl = path_in(g_dir, "holes.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t = wlb_thread(&b, 0);
    for (uint64_t i = 0; i < 200; i++) {
        wlb_malloc(&b, t, 1 + i, 256 * 1024);
        wlb_malloc(&b, t, 201 + i, 64);
    }
    for (uint64_t i = 0; i < 200; i++)
        wlb_free(&b, t, 1 + i);
    for (uint64_t i = 0; i < 200; i++)
        wlb_malloc(&b, t, 401 + i, 512 * 1024);
    wlb_close(&b);
    return wl;
}

static int has_setting(const mt_jval_t *j, const char *s)
{
    const mt_jval_t *a = mt_json_get(j, "settings");
    for (size_t i = 0; a && a->type == MT_JARR && i < a->n; i++)
        if (a->items[i].type == MT_JSTR && !strcmp(a->items[i].str, s))
            return 1;
    return 0;
}

START_TEST(mallopt_changes_layout)
{
    if (sanitizer_skip("mallopt_changes_layout"))
        return;
    char *wl = write_holes();
    static const char *const thr[] = { "--mallopt", "mmap_threshold=1048576", NULL };
    static const char *const max0[] = { "--mallopt", "M_MMAP_MAX=0", NULL };
    mt_jval_t *jd = sim_json(wl, "default.json", NULL), *jt = sim_json(wl, "threshold.json", thr),
              *jm = sim_json(wl, "mmapmax.json", max0);
    const double d = jnum(jd, "max_rss_kb"), t = jnum(jt, "max_rss_kb"), m = jnum(jm, "max_rss_kb");
    /* the difference is the 50 MiB of holes; ask for 30 */
    ck_assert_msg(t > d + 30 * 1024, "mmap_threshold=1 MiB: max RSS %g KiB, default %g KiB", t, d);
    ck_assert_msg(m > d + 30 * 1024, "mmap_max=0: max RSS %g KiB, default %g KiB", m, d);
    ck_assert(has_setting(jt, "mmap_threshold=1048576"));
    ck_assert(has_setting(jm, "M_MMAP_MAX=0"));
    ck_assert(!has_setting(jd, "mmap_threshold=1048576"));
    /* the ideal is the same workload's */
    ck_assert_uint_eq((uint64_t)jnum(jd, "ideal_rss_kb"), (uint64_t)jnum(jt, "ideal_rss_kb"));
    mt_json_free(jd);
    mt_json_free(jt);
    mt_json_free(jm);
    free(wl);
}
END_TEST

/* top_pad: glibc grows the heap by the pad at every sbrk and keeps the pad when it trims, so 64 MiB
 * of address space stay mapped (untouched) after the blocks are freed. */
START_TEST(mallopt_top_pad_vm)
{
    if (sanitizer_skip("mallopt_top_pad_vm"))
        return;
    char *wl = path_in(g_dir, "small.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t = wlb_thread(&b, 0);
    for (uint64_t s = 1; s <= 100; s++) /* 1 MB: more than the heap has at start, so it grows */
        wlb_malloc(&b, t, s, 10000);
    for (uint64_t s = 1; s <= 100; s++)
        wlb_free(&b, t, s);
    wlb_close(&b);
    static const char *const pad[] = { "--mallopt", "top_pad=64m", NULL };
    mt_jval_t *jd = sim_json(wl, "default.json", NULL), *jp = sim_json(wl, "pad.json", pad);
    const double d = jnum(jd, "max_vm_kb"), p = jnum(jp, "max_vm_kb");
    ck_assert_msg(p > d + 48 * 1024, "top_pad=64m: max VM %g KiB, default %g KiB", p, d);
    /* untouched: RSS does not follow */
    ck_assert_msg(jnum(jp, "max_rss_kb") < jnum(jd, "max_rss_kb") + 16 * 1024,
                  "top_pad=64m: max RSS %g KiB, default %g KiB", jnum(jp, "max_rss_kb"), jnum(jd, "max_rss_kb"));
    mt_json_free(jd);
    mt_json_free(jp);
    free(wl);
}
END_TEST

/* ---- the ideal RSS over time ------------------------------------------------------------------- */

/* The series' ideal column is the live requested bytes, which the replay keeps per slot. Sizes on
 * both sides of what a slot entry holds itself (65534) and what goes to its side table, blocks that
 * move between the two by realloc, reallocs that failed in the trace but not here (the slot keeps
 * its size), and frees by another thread. Each phase is held for a recorded pause, so the sampler
 * sees its exact figure. */
#define PHASE_NS 300000000ull /* 300 ms */

START_TEST(ideal_series_exact)
{
    char *wl = path_in(g_dir, "sizes.mtw"), *series = path_in(g_dir, "sizes.tsv"), *json = path_in(g_dir, "sizes.json");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t0 = wlb_thread(&b, 0), t1 = wlb_thread(&b, 0);
    static const uint64_t sizes[] = { 1, 65534, 65535, 65536, 3 * MiB + 5 };
    const uint64_t nblocks = sizeof sizes / sizeof sizes[0];
    uint64_t expect[3];
    for (uint64_t k = 0; k < nblocks; k++)
        wlb_malloc(&b, t0, k + 1, sizes[k]);
    expect[0] = b.live;
    wlb_gap(&b, PHASE_NS);
    wlb_realloc(&b, t0, 1, 1, 100000); /* fits in the entry -> does not */
    wlb_realloc(&b, t0, 4, 4, 100);    /* and back */
    /* failed in the trace (new slot 0, size > 0): the block stays, with its size */
    mt_wl_rec_t failed = { .op = MT_WL_REALLOC, .slot = 2, .slot2 = 0, .size = 70000, .old_size = sizes[1] };
    wlb_put(&b, t0, &failed);
    failed.slot = 5;
    failed.size = 10;
    failed.old_size = sizes[4];
    wlb_put(&b, t0, &failed);
    expect[1] = b.live;
    wlb_gap(&b, PHASE_NS);
    wlb_wait(&b, t1, t0, wlb_ops(&b, t0));
    wlb_free(&b, t1, 1);
    wlb_free(&b, t1, 2);
    expect[2] = b.live;
    wlb_gap(&b, PHASE_NS);
    for (uint64_t k = 3; k <= nblocks; k++)
        wlb_free(&b, t1, k);
    ck_assert_uint_eq(b.live, 0);
    wlb_close(&b);
    ck_assert(expect[0] / 1024 != expect[1] / 1024 && expect[1] / 1024 != expect[2] / 1024 && expect[2] / 1024);

    const char *const argv[] = { SIM_EXE,    wl,         "--json",      json, "--quiet", "--rss-series", series,
                                 "--timing", "recorded", "--sample-ms", "5",  "--touch", "none",         NULL };
    ck_assert_int_eq(run(argv, NULL, NULL, NULL, 60), 0);
    char *text = read_text(series, NULL);
    ck_assert_ptr_nonnull(text);
    int seen[3] = { 0 };
    unsigned long long ideal = UINT64_MAX;
    for (const char *l = strchr(text, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
        double ts;
        unsigned long long rss, vm, src;
        ck_assert_int_eq(sscanf(l + 1, "%lf %llu %llu %llu %llu", &ts, &rss, &vm, &ideal, &src), 5);
        for (int k = 0; k < 3; k++)
            seen[k] |= ideal == expect[k] / 1024;
    }
    for (int k = 0; k < 3; k++)
        ck_assert_msg(seen[k], "phase %d: no sample of %llu KiB live", k, (unsigned long long)(expect[k] / 1024));
    ck_assert_uint_eq(ideal, 0); /* the last sample, after the last op */
    free(text);
    free(wl);
    free(series);
    free(json);
}
END_TEST

/* A setting the simulator cannot read is refused before the replay, in one line. */
START_TEST(mallopt_bad_setting)
{
    char *wl = path_in(g_dir, "small.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t = wlb_thread(&b, 0);
    wlb_malloc(&b, t, 1, 10);
    wlb_close(&b);
    char *err = path_in(g_dir, "stderr");
    static const char *const bad[] = { "no_such_param=1", "mmap_threshold", "mmap_threshold=lots", "=5",
                                       "mmap_threshold=4g" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *argv[] = { SIM_EXE, wl, "--mallopt", bad[i], NULL };
        const int rc = run(argv, NULL, err, NULL, 30);
        ck_assert_msg(rc == 2, "--mallopt %s: exit %d, expected 2", bad[i], rc);
        const char *const needles[] = { bad[i][0] == '=' ? "=5" : bad[i], NULL };
        assert_one_line(err, bad[i], needles);
    }
    /* Numbers past mallopt's int, a product with the suffix included: refused as such, never wrapped
     * (2^44 m wrapped to 1 m and was taken). */
    static const char *const big[] = { "mmap_threshold=17592186044417m",
                                       "mmap_threshold=9223372036854775807k",
                                       "mmap_threshold=99999999999999999999",
                                       "mmap_threshold=2147483648",
                                       "mmap_threshold=-2097153k",
                                       "4294967297=1" };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        const char *argv[] = { SIM_EXE, wl, "--mallopt", big[i], NULL };
        const int rc = run(argv, NULL, err, NULL, 30);
        ck_assert_msg(rc == 2, "--mallopt %s: exit %d, expected 2", big[i], rc);
        const char *const needles[] = { big[i], "value out of range", NULL };
        assert_one_line(err, big[i], needles);
    }
    /* the largest that fit are taken */
    static const char *const fit[] = { "mmap_threshold=2097151k", "perturb=-2097152k", "mmap_threshold=2047m" };
    for (size_t i = 0; i < sizeof fit / sizeof fit[0]; i++) {
        const char *argv[] = { SIM_EXE, wl, "--mallopt", fit[i], "--quiet", NULL };
        ck_assert_msg(run(argv, NULL, err, NULL, 30) == 0, "--mallopt %s refused", fit[i]);
    }
    free(err);
    free(wl);
}
END_TEST

static Suite *rss_suite(void)
{
    Suite *s = suite_create("sim_rss");
    const struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        { "ideal_and_calls", ideal_and_calls },
        { "ideal_series_exact", ideal_series_exact },
        { "max_rss_covers_touched_peak", max_rss_covers_touched_peak },
        { "touch_modes", touch_modes },
        { "touch_table_writes_the_share", touch_table_writes_the_share },
        { "touch_table_writes_later", touch_table_writes_later },
        { "own_mappings_in_the_rss", own_mappings_in_the_rss },
        { "own_mappings_madvise_drops_pages", own_mappings_madvise_drops_pages },
        { "own_mappings_bad_unmap_refused", own_mappings_bad_unmap_refused },
        { "mallopt_changes_layout", mallopt_changes_layout },
        { "mallopt_top_pad_vm", mallopt_top_pad_vm },
        { "mallopt_bad_setting", mallopt_bad_setting },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    return run_suite(rss_suite());
}
