/* trace2wl scenarios: small traces written record by record with mt_writer (times in ns, threads
 * numbered from 1, THREAD_START / THREAD_CREATE / THREAD_EXIT as libmtrace writes them), converted
 * with mt_convert(), read back with the workload reader and compared op for op with the expected
 * streams written below as tables. Every workload is also replayed by the checker of t2w_util.c.
 *
 * In the tables a WAIT reads "wait thread=T count=N": thread T is a 0-based index into the
 * workload's streams (trace thread 1 is index 0), N counts every op of T's stream, its
 * thread_start and its WAITs included. "#?" stands for any slot.
 *
 * The last test cases are regressions of converter bugs found by these tests (see the comment at
 * each): slots taken from a thread that had taken them from another, reads of a block another
 * thread frees, and records after a thread's exit event. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mtrace/convert.h"
#include "mtrace/workload.h"
#include "t2w_util.h"
#include "test_util.h"

static char *g_dir;
TEST_DIR_FIXTURE(g_dir, "t2w-convert", "T2W_KEEP")

/* One scenario: its trace and workload paths in the test's directory. */
typedef struct scen {
    char *trace, *wl;
    tb_t b;
    mt_convert_stats_t st;
    wl_mem_t m;
} scen_t;

static void scen_begin(scen_t *s, const char *name)
{
    memset(s, 0, sizeof *s);
    char n[256];
    snprintf(n, sizeof n, "%s.mtr", name);
    s->trace = path_in(g_dir, n);
    snprintf(n, sizeof n, "%s.mtw", name);
    s->wl = path_in(g_dir, n);
    tb_open(&s->b, s->trace);
}

/* Seals the trace, converts it and loads the workload. */
static void scen_convert(scen_t *s)
{
    tb_close(&s->b);
    convert_ok(s->trace, s->wl, &s->st);
    wl_load(&s->m, s->wl);
    /* What the stats say is what the header says. */
    const mt_wl_header_t *h = &s->m.h;
    ck_assert_uint_eq(h->slots, s->st.slots);
    ck_assert_uint_eq(h->waits, s->st.waits);
    ck_assert_uint_eq(h->ops, s->st.ops);
    ck_assert_uint_eq(h->threads, s->st.threads);
    ck_assert_uint_eq(h->unknown_frees, s->st.unknown_frees);
    ck_assert_uint_eq(h->double_frees, s->st.double_frees);
    ck_assert_uint_eq(h->inversions, s->st.inversions);
    ck_assert_uint_eq(h->forced, s->st.forced);
    ck_assert_uint_eq(h->peak_live_bytes, s->st.peak_live_bytes);
    ck_assert_uint_eq(wl_count_op(&s->m, MT_WL_WAIT), h->waits);
    ck_assert(h->flags & MT_WLH_COMPLETE);
}

static void scen_end(scen_t *s)
{
    wl_free(&s->m);
    free(s->trace);
    free(s->wl);
}

/* The trace offset of thread `thread_index`'s n-th record with op `op` (for the reported offsets). */
static uint64_t record_offset(const char *trace, size_t thread_index, unsigned op, unsigned nth)
{
    mt_trace_t *t;
    mt_error_t err;
    ck_assert_int_eq(mt_trace_open(&t, trace, &err), 0);
    rec_list_t l = { 0 };
    ck_assert_int_eq(read_thread(t, thread_index, &l, &err), 0);
    uint64_t off = UINT64_MAX;
    for (size_t i = 0; i < l.n && off == UINT64_MAX; i++)
        if (l.v[i].op == op && nth-- == 0)
            off = l.v[i].offset;
    rec_list_free(&l);
    mt_trace_close(t);
    ck_assert_msg(off != UINT64_MAX, "no such record");
    return off;
}

/* ---- (a) one thread: every call, slots recycled last-freed-first ------------------------------- */

START_TEST(single_thread_calls)
{
    scen_t s;
    scen_begin(&s, "single");
    tb_t *b = &s.b;
    tb_start(b, 1, 100, 0);
    tb_malloc(b, 1, 200, 100, 0x1000);
    tb_calloc(b, 1, 300, 4, 25, 0x2000);
    tb_free(b, 1, 400, 0x1000);
    tb_malloc(b, 1, 500, 50, 0x3000);              /* takes the slot just freed */
    tb_realloc(b, 1, 600, 0x2000, 200, 0x2000);    /* in place */
    tb_realloc(b, 1, 700, 0x2000, 5000, 0x4000);   /* moved: the block keeps its slot */
    tb_realloc(b, 1, 800, 0, 64, 0x5000);          /* realloc(NULL, n): an allocation */
    tb_realloc(b, 1, 900, 0x5000, 0, 0);           /* realloc(p, 0) -> NULL: frees p */
    tb_realloc(b, 1, 1000, 0x3000, 1ull << 40, 0); /* failed: p stays live */
    tb_reallocarray(b, 1, 1100, 0, 3, 10, 0x6000);
    tb_reallocarray(b, 1, 1200, 0x6000, 4, 10, 0x6100);
    tb_aligned(b, MT_OP_MEMALIGN, 1, 1300, 64, 100, 0x7000);
    tb_aligned(b, MT_OP_ALIGNED_ALLOC, 1, 1400, 32, 64, 0x7100);
    tb_aligned(b, MT_OP_POSIX_MEMALIGN, 1, 1500, 16, 48, 0x7200);
    tb_aligned(b, MT_OP_POSIX_MEMALIGN, 1, 1600, 16, 1ull << 41, 0); /* failed: ENOMEM */
    tb_valloc(b, MT_OP_VALLOC, 1, 1700, 4096, 0x8000);
    tb_valloc(b, MT_OP_PVALLOC, 1, 1800, 100, 0x9000);
    tb_usable(b, 1, 1900, 0x7000, 112);
    tb_mallopt(b, 1, 2000, -3, 65536, 1); /* M_MMAP_THRESHOLD */
    tb_free(b, 1, 2100, 0);               /* free(NULL) */
    tb_malloc(b, 1, 2200, 1ull << 50, 0); /* failed malloc: slot 0 */
    tb_free(b, 1, 2300, 0x7000);
    tb_free(b, 1, 2310, 0x7100);
    tb_malloc(b, 1, 2400, 10, 0xa000); /* last freed first: #5, then #4 */
    tb_malloc(b, 1, 2500, 20, 0xb000);
    tb_malloc(b, 1, 2600, 30, 0xc000); /* none free: a new slot, the 9th */
    tb_free(b, 1, 2700, 0x9000);
    scen_convert(&s);

    static const char *const t0[] = {
        "thread_start",
        "malloc              #1           100",
        "calloc              #2           4x25",
        "free                #1 (100)",
        "malloc              #1           50",
        "realloc             #2 (100) -> #2     200",
        "realloc             #2 (200) -> #2     5000",
        "realloc             #0 -> #3     64",
        "realloc             #3 (64) -> #0     0",
        "realloc             #1 (50) -> #0     1099511627776",
        "reallocarray        #0 -> #3     3x10",
        "reallocarray        #3 (30) -> #3     4x10",
        "memalign            #4 align=64  100",
        "aligned_alloc       #5 align=32  64",
        "posix_memalign      #6 align=16  48",
        "posix_memalign      #0 align=16  2199023255552",
        "valloc              #7           4096",
        "pvalloc             #8           100",
        "malloc_usable_size  #4",
        "mallopt             param=-3 value=65536",
        "free                #0",
        "malloc              #0           1125899906842624",
        "free                #4 (100)",
        "free                #5 (64)",
        "malloc              #5           10",
        "malloc              #4           20",
        "malloc              #9           30",
        "free                #8 (100)",
        NULL,
    };
    expect_stream(&s.m, 0, t0);

    const mt_wl_header_t *h = &s.m.h;
    ck_assert_uint_eq(h->threads, 1);
    ck_assert_uint_eq(h->slots, 9); /* the peak of live blocks */
    ck_assert_uint_eq(h->ops, 28);
    ck_assert_uint_eq(h->waits, 0);
    ck_assert_uint_eq(h->inversions, 0);
    ck_assert_uint_eq(h->unknown_frees, 0);
    ck_assert_uint_eq(h->double_frees, 0);
    ck_assert_uint_eq(h->forced, 0);
    /* Requested bytes: 9498 live once pvalloc returned, at 1800 ns. */
    ck_assert_uint_eq(h->peak_live_bytes, 9498);
    ck_assert_uint_eq(h->peak_live_time_ns, 1800);
    ck_assert_uint_eq(h->duration_ns, 2700);
    ck_assert_uint_eq(s.st.calls, 28 - 1);
    ck_assert_uint_eq(s.st.records, 28);
    /* Times: ns since the trace's start, each op at its record's time. */
    ck_assert_uint_eq(s.m.s[0].ops[0].time_ns, 100);
    ck_assert_uint_eq(s.m.s[0].ops[1].time_ns, 200);
    ck_assert_uint_eq(s.m.s[0].ops[27].time_ns, 2700);
    ck_assert_uint_eq(s.m.s[0].entry.thread_no, 1);
    ck_assert_uint_eq(s.m.s[0].entry.tid, 1001);
    ck_assert_uint_eq(s.m.s[0].entry.creator, 0);
    ck_assert_uint_eq(s.m.s[0].entry.start_ns, 100);
    ck_assert_uint_eq(s.m.s[0].entry.end_ns, 2700);

    replay_result_t r;
    replay_ok(&s.m, SCHED_TIME, 0, 1, &r);
    ck_assert_uint_eq(r.live_end, 8);
    ck_assert_uint_eq(r.max_live, 9);
    scen_end(&s);
}
END_TEST

/* Slots are the peak of live blocks, not the count of blocks ever made. */
/* The replay writes a share of the whole pages of a block's requested bytes, where the recorder
 * counts those of its usable bytes: glibc's memalign handed ffmpeg 5.1 to 7.1 MB for 5 MB asked. A
 * block of 1 MiB asked (255 whole pages, 16 bytes into a page) with 512 usable, 200 written: 200 of
 * 255; one with 300 written: every page, no entry. */
START_TEST(share_of_the_requested_pages)
{
    char *tr = path_in(g_dir, "usable.mtr"), *wl = path_in(g_dir, "usable.wl");
    tb_t b;
    tb_open(&b, tr);
    const uint64_t MiB = 1 << 20, a = 0x7f0000000010, c = 0x7f0000400010;
    tb_start(&b, 1, 10, 0);
    tb_malloc(&b, 1, 20, MiB, a); /* op 2 */
    tb_pages(&b, 1, 20, a, 512, 0, MT_PAGES_AT_ALLOC);
    tb_pages(&b, 1, 30, a, 512, 200, MT_PAGES_AT_END);
    tb_free(&b, 1, 30, a);
    tb_malloc(&b, 1, 40, MiB, c); /* op 4 */
    tb_pages(&b, 1, 40, c, 512, 0, MT_PAGES_AT_ALLOC);
    tb_pages(&b, 1, 50, c, 512, 300, MT_PAGES_AT_END);
    tb_free(&b, 1, 50, c);
    tb_close(&b);
    mt_convert_stats_t st;
    convert_ok(tr, wl, &st);
    ck_assert_uint_eq(st.large_exact, 2);
    mt_wl_t *w;
    mt_error_t err;
    ck_assert_msg(mt_wl_open(&w, wl, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(mt_wl_header(w)->touch_entries, 1);
    mt_wl_touch_entry_t tab[1];
    ck_assert_msg(mt_wl_read_touch(w, tab, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(tab[0].op, 2);
    ck_assert_uint_eq(tab[0].frac, (200u << 16) / 255);
    mt_wl_close(w);
    free(tr);
    free(wl);
}
END_TEST

/* Page evidence into the touch table: a block of fresh memory is taken as the trace says (a quarter
 * written; all of it: no entry); a block of warm memory, or one still live at the end, as the fresh
 * blocks seen before it. */
START_TEST(page_evidence_becomes_touch_table)
{
    char *tr = path_in(g_dir, "pages.mtr"), *wl = path_in(g_dir, "pages.wl");
    tb_t b;
    tb_open(&b, tr);
    /* BLOCK: requested bytes whose whole pages, 16 bytes into a page, are the 256 the events count */
    const uint64_t MiB = 1 << 20, BLOCK = MiB + 4096, a = 0x7f0000000010, c = 0x7f0000200010, d = 0x7f0000400010;
    tb_start(&b, 1, 10, 0);
    tb_malloc(&b, 1, 20, BLOCK, a);                      /* op 2 */
    tb_pages(&b, 1, 20, a, 256, 0, MT_PAGES_AT_ALLOC);   /* fresh */
    tb_pages(&b, 1, 30, a, 256, 64, MT_PAGES_AT_END);    /* a quarter written */
    tb_free(&b, 1, 30, a);                               /* op 3 */
    tb_malloc(&b, 1, 40, BLOCK, a);                      /* op 4 */
    tb_pages(&b, 1, 40, a, 256, 256, MT_PAGES_AT_ALLOC); /* warm: bounds 0 .. 256 */
    tb_pages(&b, 1, 50, a, 256, 256, MT_PAGES_AT_END);
    tb_free(&b, 1, 50, a);          /* op 5 */
    tb_malloc(&b, 1, 60, BLOCK, c); /* op 6 */
    tb_pages(&b, 1, 60, c, 256, 0, MT_PAGES_AT_ALLOC);
    tb_pages(&b, 1, 70, c, 256, 256, MT_PAGES_AT_END); /* fresh, all written: no entry */
    tb_free(&b, 1, 70, c);                             /* op 7 */
    tb_malloc(&b, 1, 80, BLOCK, d);                    /* op 8, live at the end */
    tb_pages(&b, 1, 80, d, 256, 200, MT_PAGES_AT_ALLOC);
    tb_close(&b);
    mt_convert_stats_t st;
    convert_ok(tr, wl, &st);
    ck_assert_uint_eq(st.large_blocks, 4);
    ck_assert_uint_eq(st.large_exact, 2);
    ck_assert_uint_eq(st.large_estimated, 2);
    ck_assert_uint_eq(st.large_pages, 4 * 256);
    ck_assert_uint_eq(st.large_touched, 64 + 64 + 256 + 160);
    ck_assert_uint_eq(st.touch_entries, 3);
    mt_wl_t *w;
    mt_error_t err;
    ck_assert_msg(mt_wl_open(&w, wl, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(mt_wl_header(w)->touch_entries, 3);
    ck_assert_uint_eq(mt_wl_header(w)->large_blocks, 4);
    mt_wl_touch_entry_t tab[3];
    ck_assert_msg(mt_wl_read_touch(w, tab, &err) == 0, "%s", err.msg);
    const mt_wl_touch_entry_t want[3] = {
        { .op = 2, .thread = 0, .frac = 16384 }, /* 64 of 256 */
        { .op = 4, .thread = 0, .frac = 16384 }, /* as the fresh blocks so far: a quarter */
        { .op = 8, .thread = 0, .frac = 40960 }, /* (64 + 256) / 512 of 256 = 160 */
    };
    for (int k = 0; k < 3; k++) {
        ck_assert_uint_eq(tab[k].op, want[k].op);
        ck_assert_uint_eq(tab[k].thread, want[k].thread);
        ck_assert_uint_eq(tab[k].frac, want[k].frac);
    }
    mt_wl_close(w);
    free(tr);
    free(wl);
}
END_TEST

/* A warm block whose pages were printed at its making and end is written as its prints say: the
 * share changed of the pages that can tell (not zero both times). One whose prints cannot tell
 * (fewer than four pages tell: one unchanged is not 0 % written), or that has none, takes the share
 * of the printed blocks, not that of the fresh ones. */
START_TEST(printed_blocks_decide_their_pages)
{
    char *tr = path_in(g_dir, "printed.mtr"), *wl = path_in(g_dir, "printed.wl");
    tb_t b;
    tb_open(&b, tr);
    /* BLOCK: requested bytes whose whole pages, 16 bytes into a page, are the 256 the events count */
    const uint64_t MiB = 1 << 20, BLOCK = MiB + 4096, a = 0x7f0000000010, d = 0x7f0000400010;
    tb_start(&b, 1, 10, 0);
    uint64_t t = 20;
    /* ops 2, 4, 6, 8 at a (warm); 10 at d (fresh); 12 at a (warm, no prints) */
    const uint64_t prints[4][3] = { { 32, 4, 0 }, { 32, 2, 24 }, { 32, 0, 32 }, { 32, 0, 31 } };
    for (int k = 0; k < 4; k++, t += 20) {
        tb_malloc(&b, 1, t, BLOCK, a);
        tb_pages(&b, 1, t, a, 256, 256, MT_PAGES_AT_ALLOC);
        tb_pages_printed(&b, 1, t + 10, a, 256, MT_PAGES_AT_END, prints[k][0], prints[k][1], prints[k][2]);
        tb_free(&b, 1, t + 10, a);
    }
    tb_malloc(&b, 1, t, BLOCK, d);
    tb_pages(&b, 1, t, d, 256, 0, MT_PAGES_AT_ALLOC);
    tb_pages(&b, 1, t + 10, d, 256, 64, MT_PAGES_AT_END); /* a quarter */
    tb_free(&b, 1, t + 10, d);
    t += 20;
    tb_malloc(&b, 1, t, BLOCK, a);
    tb_pages(&b, 1, t, a, 256, 256, MT_PAGES_AT_ALLOC);
    tb_pages(&b, 1, t + 10, a, 256, 256, MT_PAGES_AT_END);
    tb_free(&b, 1, t + 10, a);
    tb_close(&b);
    mt_convert_stats_t st;
    convert_ok(tr, wl, &st);
    ck_assert_uint_eq(st.large_blocks, 6);
    ck_assert_uint_eq(st.large_exact, 1);
    ck_assert_uint_eq(st.large_printed, 2);
    ck_assert_uint_eq(st.large_estimated, 5);
    ck_assert_uint_eq(st.large_touched, 32 + 64 + 48 + 48 + 64 + 48);
    mt_wl_t *w;
    mt_error_t err;
    ck_assert_msg(mt_wl_open(&w, wl, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(mt_wl_header(w)->touch_entries, 6);
    mt_wl_touch_entry_t tab[6];
    ck_assert_msg(mt_wl_read_touch(w, tab, &err) == 0, "%s", err.msg);
    const mt_wl_touch_entry_t want[6] = {
        { .op = 2, .frac = 8192 },   /* 4 of 32 changed: 32 of 256 */
        { .op = 4, .frac = 16384 },  /* 2 of the 8 that can tell: 64 */
        { .op = 6, .frac = 12288 },  /* none can tell: the printed ones' 96 of 512, 48 */
        { .op = 8, .frac = 12288 },  /* one can tell, too few (not 0 %): the same 48 */
        { .op = 10, .frac = 16384 }, /* fresh: 64 */
        { .op = 12, .frac = 12288 }, /* no prints: the printed ones' share, not the fresh one's */
    };
    for (int k = 0; k < 6; k++) {
        ck_assert_uint_eq(tab[k].op, want[k].op);
        ck_assert_uint_eq(tab[k].frac, want[k].frac);
    }
    mt_wl_close(w);
    free(tr);
    free(wl);
}
END_TEST

/* A large block of fresh memory counted again as the program ran (MT_PAGES_AT_SAMPLE) is written by
 * the replay in those steps: none of it at its making, then each count that rose after the op it
 * follows in the counting thread, the last at its end. A count in another thread (thread 2) puts a
 * wait there for the block's maker, and the block's free then waits for thread 2. */
START_TEST(counted_blocks_written_later)
{
    char *tr = path_in(g_dir, "later.mtr"), *wl = path_in(g_dir, "later.wl");
    tb_t b;
    tb_open(&b, tr);
    const uint64_t MiB = 1 << 20, a = 0x7f0000000010, s1 = 0x1000010, s2 = 0x1000110;
    tb_start(&b, 1, 10, 0);                                /* thread 1 op 1 */
    tb_create(&b, 1, 15, 2);                               /* (no op) */
    tb_start(&b, 2, 16, 1);                                /* thread 2 op 1 (and its wait) */
    tb_malloc(&b, 1, 20, 4 * MiB, a);                      /* op 2: 1023 whole pages */
    tb_pages(&b, 1, 20, a, 1023, 0, MT_PAGES_AT_ALLOC);    /* fresh */
    tb_malloc(&b, 1, 30, 100, s1);                         /* op 3 */
    tb_pages(&b, 1, 30, a, 1023, 256, MT_PAGES_AT_SAMPLE); /* 256 after op 3 */
    tb_malloc(&b, 1, 40, 100, s2);                         /* op 4 */
    tb_pages(&b, 1, 40, a, 1023, 256, MT_PAGES_AT_SAMPLE); /* no rise: nothing */
    tb_free(&b, 2, 50, s1);                                /* thread 2: waits for op 3 */
    tb_pages(&b, 2, 50, a, 1023, 768, MT_PAGES_AT_SAMPLE); /* 768 after thread 2's op */
    tb_pages(&b, 1, 60, a, 1023, 1023, MT_PAGES_AT_END);   /* all, before the free */
    tb_free(&b, 1, 60, a);                                 /* waits for thread 2 */
    tb_close(&b);
    mt_convert_stats_t st;
    convert_ok(tr, wl, &st);
    ck_assert_uint_eq(st.large_exact, 1);
    ck_assert_uint_eq(st.large_later, 1);
    ck_assert_uint_eq(st.later_entries, 3);
    ck_assert_uint_eq(st.large_touched, 1023);
    mt_wl_t *w;
    mt_error_t err;
    ck_assert_msg(mt_wl_open(&w, wl, &err) == 0, "%s", err.msg);
    const uint64_t n = mt_wl_header(w)->touch_entries;
    ck_assert_uint_eq(n, 4);
    mt_wl_touch_entry_t tab[4];
    ck_assert_msg(mt_wl_read_touch(w, tab, &err) == 0, "%s", err.msg);
    const uint64_t t1_ops = mt_wl_thread(w, 0)->ops, t2_ops = mt_wl_thread(w, 1)->ops;
    mt_wl_close(w);
    /* thread 0: the allocation (op 2) writes nothing; op 3 a quarter; the op before the free all */
    ck_assert_uint_eq(tab[0].thread, 0);
    ck_assert_uint_eq(tab[0].op, 2);
    ck_assert_uint_eq(tab[0].slot, 0);
    ck_assert_uint_eq(tab[0].frac, 0);
    ck_assert_uint_eq(tab[1].thread, 0);
    ck_assert_uint_eq(tab[1].op, 3);
    ck_assert_uint_ne(tab[1].slot, 0);
    ck_assert_uint_eq(tab[1].size, 4 * MiB);
    ck_assert_uint_eq(tab[1].frac, (256u << 16) / 1023);
    ck_assert_uint_eq(tab[2].thread, 0);
    ck_assert_uint_eq(tab[2].slot, tab[1].slot);
    ck_assert_uint_eq(tab[2].frac, MT_WL_TOUCH_ONE);
    ck_assert_uint_lt(tab[2].op, t1_ops); /* before the free, after the wait for thread 2 */
    ck_assert_uint_eq(tab[3].thread, 1);
    ck_assert_uint_eq(tab[3].slot, tab[1].slot);
    ck_assert_uint_eq(tab[3].frac, (768u << 16) / 1023);
    ck_assert_uint_le(tab[3].op, t2_ops);
    ck_assert_uint_ge(st.waits, 2); /* thread 2 for the block's maker, the free for thread 2 */
    free(tr);
    free(wl);
}
END_TEST

/* A workload of version 5 (16-byte touch entries: op, thread, share) still reads: the same entries,
 * of slot 0. Made from this version's workload with its table rewritten the older way. */
START_TEST(version5_touch_table_reads)
{
    char *tr = path_in(g_dir, "v5.mtr"), *wl = path_in(g_dir, "v5.wl");
    tb_t b;
    tb_open(&b, tr);
    /* BLOCK: requested bytes whose whole pages, 16 bytes into a page, are the 256 the events count */
    const uint64_t MiB = 1 << 20, BLOCK = MiB + 4096, a = 0x7f0000000010, c = 0x7f0000200010;
    tb_start(&b, 1, 10, 0);
    tb_malloc(&b, 1, 20, BLOCK, a);
    tb_pages(&b, 1, 20, a, 256, 0, MT_PAGES_AT_ALLOC);
    tb_pages(&b, 1, 30, a, 256, 64, MT_PAGES_AT_END);
    tb_free(&b, 1, 30, a);
    tb_malloc(&b, 1, 40, BLOCK, c);
    tb_pages(&b, 1, 40, c, 256, 0, MT_PAGES_AT_ALLOC);
    tb_pages(&b, 1, 50, c, 256, 128, MT_PAGES_AT_END);
    tb_free(&b, 1, 50, c);
    tb_close(&b);
    convert_ok(tr, wl, NULL);
    mt_wl_t *w;
    mt_error_t err;
    ck_assert_msg(mt_wl_open(&w, wl, &err) == 0, "%s", err.msg);
    mt_wl_header_t h = *mt_wl_header(w);
    mt_wl_touch_entry_t want[2];
    ck_assert_uint_eq(h.touch_entries, 2);
    ck_assert_msg(mt_wl_read_touch(w, want, &err) == 0, "%s", err.msg);
    mt_wl_close(w);
    FILE *f = fopen(wl, "r+b");
    ck_assert_ptr_nonnull(f);
    h.version = 5;
    ck_assert_int_eq(fwrite(&h, sizeof h, 1, f), 1);
    ck_assert_int_eq(fseek(f, (long)h.touch_offset, SEEK_SET), 0);
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(fwrite(&want[k].op, 8, 1, f), 1);
        ck_assert_int_eq(fwrite(&want[k].thread, 4, 1, f), 1);
        ck_assert_int_eq(fwrite(&want[k].frac, 4, 1, f), 1);
    }
    ck_assert_int_eq(ftruncate(fileno(f), (off_t)(h.touch_offset + 2 * MT_WL_TOUCH_ENTRY_V5)), 0);
    fclose(f);
    ck_assert_msg(mt_wl_open(&w, wl, &err) == 0, "%s", err.msg);
    mt_wl_touch_entry_t got[2];
    memset(got, 0xff, sizeof got);
    ck_assert_msg(mt_wl_read_touch(w, got, &err) == 0, "%s", err.msg);
    mt_wl_close(w);
    for (int k = 0; k < 2; k++) {
        ck_assert_uint_eq(got[k].op, want[k].op);
        ck_assert_uint_eq(got[k].thread, want[k].thread);
        ck_assert_uint_eq(got[k].frac, want[k].frac);
        ck_assert_uint_eq(got[k].slot, 0);
        ck_assert_uint_eq(got[k].size, 0);
    }
    ck_assert_uint_eq(got[0].frac, 16384);
    ck_assert_uint_eq(got[1].frac, 32768);
    free(tr);
    free(wl);
}
END_TEST

/* The program's own mappings: a map becomes an mmap op on a slot of its own; an unmap of a middle
 * part, of the rest, and one spanning two mappings become munmap ops of the parts, the last part of
 * a mapping marked so; its page evidence (a quarter of the first mapping resident as it went, all of
 * the second) goes into the touch table like a block's. Unmaps of nothing mapped are dropped. */
/* Evidence the recorder did not count (its budget spent) is never taken as exact: a fresh block
 * whose end was not counted, and a block whose making was not, are estimated like the counted
 * fresh block before them (a quarter), within what is known. */
START_TEST(uncounted_evidence_is_estimated)
{
    char *tr = path_in(g_dir, "unc.mtr"), *wl = path_in(g_dir, "unc.wl");
    tb_t b;
    tb_open(&b, tr);
    const uint64_t MiB = 1 << 20, a = 0x7f0000000010;
    tb_start(&b, 1, 10, 0);
    tb_malloc(&b, 1, 20, MiB, a); /* op 2: exact, 64 of 256 */
    tb_pages(&b, 1, 20, a, 256, 0, MT_PAGES_AT_ALLOC);
    tb_pages(&b, 1, 30, a, 256, 64, MT_PAGES_AT_END);
    tb_free(&b, 1, 30, a);
    tb_malloc(&b, 1, 40, MiB, a); /* op 4: end not counted */
    tb_pages(&b, 1, 40, a, 256, 0, MT_PAGES_AT_ALLOC);
    tb_pages(&b, 1, 50, a, 256, 0, MT_PAGES_AT_END | MT_PAGES_UNCOUNTED);
    tb_free(&b, 1, 50, a);
    tb_malloc(&b, 1, 60, MiB, a); /* op 6: making not counted */
    tb_pages(&b, 1, 60, a, 256, 0, MT_PAGES_AT_ALLOC | MT_PAGES_UNCOUNTED);
    tb_pages(&b, 1, 70, a, 256, 200, MT_PAGES_AT_END);
    tb_free(&b, 1, 70, a);
    tb_close(&b);
    mt_convert_stats_t st;
    convert_ok(tr, wl, &st);
    ck_assert_uint_eq(st.large_exact, 1);
    ck_assert_uint_eq(st.large_estimated, 2);
    ck_assert_uint_eq(st.large_touched, 3 * 64);
    ck_assert_uint_eq(st.touch_entries, 3);
    free(tr);
    free(wl);
}
END_TEST

/* The pages a program's brk and sbrk add to the break are mappings like its mmaps (and counted
 * apart); an madvise that drops pages gives an madvise op per part of a mapping it names, with the
 * resident pages shared out by length, after a wait when another thread made the mapping, and the
 * munmap then waits for the madvise. An madvise of memory not the program's, and a VM kind the
 * converter does not know, give nothing. */
START_TEST(own_brk_and_madvise_become_ops)
{
    char *tr = path_in(g_dir, "brk.mtr"), *wl = path_in(g_dir, "brk.wl");
    tb_t b;
    tb_open(&b, tr);
    const uint64_t MiB = 1 << 20, a = 0x7f0000000000, brk0 = 0x600000;
    tb_start(&b, 1, 10, 0);
    tb_create(&b, 1, 15, 2);
    tb_start(&b, 2, 16, 1);
    tb_vm5(&b, 1, 20, MT_VM_MAP, brk0, 2 * MiB, 0, MT_VM_VIA_BRK);      /* thread 0, op 2 */
    tb_vm5(&b, 1, 30, MT_VM_MAP, a, MiB, 0, MT_VM_VIA_MMAP);            /* op 3 */
    tb_vm5(&b, 2, 40, MT_VM_ADVISE, a - 4096, MiB, 100, MADV_DONTNEED); /* thread 1: waits, op 4 */
    tb_vm5(&b, 1, 45, MT_VM_ADVISE, 0x1000, 4096, 1, MADV_DONTNEED);    /* not the program's */
    tb_vm5(&b, 1, 46, 7, a, MiB, 0, 0);                                 /* a kind not known */
    tb_vm5(&b, 1, 50, MT_VM_UNMAP, brk0 + MiB, MiB, 3, MT_VM_VIA_BRK);  /* the break shrinks */
    tb_vm(&b, 1, 60, MT_VM_UNMAP, a, MiB, 1);                           /* waits for the madvise */
    tb_close(&b);
    mt_convert_stats_t st;
    convert_ok(tr, wl, &st);
    ck_assert_uint_eq(st.program_maps, 2);
    ck_assert_uint_eq(st.program_peak_bytes, 3 * MiB);
    ck_assert_uint_eq(st.program_brk_peak_bytes, 2 * MiB);
    ck_assert_uint_eq(st.program_advises, 1);
    wl_mem_t m;
    wl_load(&m, wl);
    static const char *const want0[] = {
        "thread_start",
        "mmap #1 2097152",
        "mmap #2 1048576",
        "munmap #1 +1048576 1048576",
        "wait thread=1 count=4",
        "munmap #2 +0 1048576 last",
        NULL,
    };
    expect_stream(&m, 0, want0);
    /* 100 pages resident in the 1 MiB advised, 1 MiB less a page of it the mapping's: 99 */
    static const char *const want1[] = {
        "thread_start", "wait thread=0 count=1", "wait thread=0 count=3", "madvise #2 +0 1044480 advice=4 write=99",
        NULL,
    };
    expect_stream(&m, 1, want1);
    wl_free(&m);
    mt_wl_t *w;
    mt_error_t err;
    ck_assert_msg(mt_wl_open(&w, wl, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(mt_wl_header(w)->program_brk_peak_bytes, 2 * MiB);
    ck_assert_uint_eq(mt_wl_header(w)->program_advises, 1);
    mt_wl_close(w);
    free(tr);
    free(wl);
}
END_TEST

START_TEST(own_mappings_become_mmap_ops)
{
    char *tr = path_in(g_dir, "vm.mtr"), *wl = path_in(g_dir, "vm.wl");
    tb_t b;
    tb_open(&b, tr);
    const uint64_t MiB = 1 << 20, a = 0x7f0000000000, c = a + MiB;
    tb_start(&b, 1, 10, 0);
    tb_vm(&b, 1, 20, MT_VM_MAP, a, MiB, 0);           /* op 2 */
    tb_vm(&b, 1, 30, MT_VM_MAP, c, MiB, 0);           /* op 3 */
    tb_vm(&b, 1, 40, MT_VM_UNMAP, a + 4096, 8192, 2); /* op 4: a hole in the first */
    tb_vm(&b, 1, 50, MT_VM_UNMAP, 0x1000, 4096, 1);   /* not the program's: nothing */
    tb_vm(&b, 1, 60, MT_VM_UNMAP, a, 2 * MiB, 318);   /* ops 5, 6, 7: the rest of both */
    tb_close(&b);
    mt_convert_stats_t st;
    convert_ok(tr, wl, &st);
    ck_assert_uint_eq(st.program_maps, 2);
    ck_assert_uint_eq(st.program_peak_bytes, 2 * MiB);
    wl_mem_t m;
    wl_load(&m, wl);
    static const char *const want[] = {
        "thread_start",
        "mmap #1 1048576",
        "mmap #2 1048576",
        "munmap #1 +4096 8192",
        "munmap #1 +0 4096",
        "munmap #1 +12288 1036288 last",
        "munmap #2 +0 1048576 last",
        NULL,
    };
    expect_stream(&m, 0, want);
    wl_free(&m);
    mt_wl_t *w;
    mt_error_t err;
    ck_assert_msg(mt_wl_open(&w, wl, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(mt_wl_header(w)->program_maps, 2);
    /* 318 resident pages shared out by length: 1 + 157 to the first, 159 to the second (of 256
     * each); with the hole's 2, the first had 160 of 256 written */
    ck_assert_uint_eq(mt_wl_header(w)->touch_entries, 2);
    mt_wl_touch_entry_t tab[2];
    ck_assert_msg(mt_wl_read_touch(w, tab, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(tab[0].op, 2);
    ck_assert_uint_eq(tab[1].op, 3);
    mt_wl_close(w);
    free(tr);
    free(wl);
}
END_TEST

START_TEST(single_thread_slots_peak)
{
    scen_t s;
    scen_begin(&s, "peak");
    tb_t *b = &s.b;
    tb_start(b, 1, 1, 0);
    uint64_t t = 10;
    /* 1000 rounds of: 3 mallocs, free them in a scrambled order; then 5 live at once. */
    for (int round = 0; round < 1000; round++) {
        const uint64_t base = 0x100000 + (uint64_t)round * 0x100;
        tb_malloc(b, 1, t++, 16, base);
        tb_malloc(b, 1, t++, 32, base + 0x20);
        tb_malloc(b, 1, t++, 48, base + 0x40);
        tb_free(b, 1, t++, base + 0x20);
        tb_free(b, 1, t++, base);
        tb_free(b, 1, t++, base + 0x40);
    }
    for (uint64_t k = 0; k < 5; k++)
        tb_malloc(b, 1, t++, 8, 0x900000 + k * 16);
    scen_convert(&s);
    ck_assert_uint_eq(s.m.h.slots, 5);
    ck_assert_uint_eq(s.m.s[0].n, 1 + 6000 + 5);
    /* The last free of each round (#3 slot of base+0x40, made third) comes back first. */
    static const char *const head[] = {
        "thread_start", "malloc #1 16", "malloc #2 32", "malloc #3 48", "free #2 (32)", "free #1 (16)",
        "free #3 (48)", "malloc #3 16", "malloc #1 32", "malloc #2 48", NULL,
    };
    for (size_t k = 0; head[k]; k++) {
        char buf[128];
        ck_assert_str_eq(op_str(&s.m.s[0].ops[k], buf, sizeof buf), head[k]);
    }
    replay_result_t r;
    replay_ok(&s.m, SCHED_TIME, 0, 1, &r);
    ck_assert_uint_eq(r.live_end, 5);
    ck_assert_uint_eq(r.max_live, 5);
    scen_end(&s);
}
END_TEST

/* ---- (b) cross-thread free ---------------------------------------------------------------------- */

START_TEST(cross_thread_free)
{
    scen_t s;
    scen_begin(&s, "xfree");
    tb_t *b = &s.b;
    tb_start(b, 1, 0, 0);
    tb_create(b, 1, 10, 2);
    tb_start(b, 2, 15, 1);
    tb_malloc(b, 1, 20, 100, 0xa000); /* A: thread 0's op 1, done after 2 ops */
    tb_malloc(b, 1, 30, 200, 0xb000); /* B: done after 3 ops */
    tb_malloc(b, 1, 35, 300, 0xc000); /* C: done after 4 ops */
    tb_free(b, 2, 40, 0xb000);        /* waits for 3 */
    tb_free(b, 2, 50, 0xa000);        /* made before B: already covered */
    tb_mallopt(b, 1, 60, 1, 2, 1);    /* thread 0 goes on: its op 4 */
    tb_free(b, 2, 90, 0xc000);        /* needs 4, not 5: C was made by op 3 */
    tb_free(b, 2, 95, 0xa000 + 0);    /* already freed: a double free, dropped */
    scen_convert(&s);

    static const char *const t0[] = {
        "thread_start", "malloc   #1 100", "malloc   #2 200", "malloc   #3 300", "mallopt  param=1 value=2", NULL,
    };
    static const char *const t1[] = {
        "thread_start",
        "wait     thread=0 count=1", /* after its creation */
        "wait     thread=0 count=3",
        "free     #2 (200)",
        "free     #1 (100)",
        "wait     thread=0 count=4",
        "free     #3 (300)",
        NULL,
    };
    expect_stream(&s.m, 0, t0);
    expect_stream(&s.m, 1, t1);
    ck_assert_uint_eq(s.m.h.waits, 3);
    ck_assert_uint_eq(s.m.h.double_frees, 1);
    ck_assert_uint_eq(s.m.h.inversions, 0);
    ck_assert_uint_eq(s.m.s[1].entry.creator, 1);
    /* A WAIT carries the time of the op it guards. */
    ck_assert_uint_eq(s.m.s[1].ops[2].time_ns, 40);
    ck_assert_uint_eq(s.m.s[1].ops[5].time_ns, 90);
    replay_ok(&s.m, SCHED_RANDOM, 1, 1, NULL);
    scen_end(&s);
}
END_TEST

/* More threads than the converter indexes densely (WAITED_DENSE, 256): what a thread has waited for
 * is then kept per thread it waited on, and must still spare every wait already covered. The main
 * thread frees two blocks of each of 300 threads: one wait per thread, for its second block. */
#define MANY 300u
START_TEST(many_threads_waits)
{
    scen_t s;
    scen_begin(&s, "many");
    tb_t *b = &s.b;
    tb_start(b, 1, 0, 0);
    uint64_t t = 10;
    for (uint32_t k = 0; k < MANY; k++) {
        tb_create(b, 1, t++, k + 2);
        tb_start(b, k + 2, t++, 1);
        tb_malloc(b, k + 2, t++, 100, 0x100000 + 0x1000 * (uint64_t)k);
        tb_malloc(b, k + 2, t++, 200, 0x100800 + 0x1000 * (uint64_t)k);
    }
    for (uint32_t k = 0; k < MANY; k++) {
        tb_free(b, 1, t++, 0x100800 + 0x1000 * (uint64_t)k); /* waits for thread k + 1's op 3 */
        tb_free(b, 1, t++, 0x100000 + 0x1000 * (uint64_t)k); /* made before: covered */
    }
    scen_convert(&s);
    uint64_t main_waits = 0;
    for (size_t k = 0; k < s.m.s[0].n; k++)
        main_waits += s.m.s[0].ops[k].op == MT_WL_WAIT;
    ck_assert_uint_eq(main_waits, MANY);
    ck_assert_uint_eq(s.m.h.waits, 2 * MANY); /* and each thread's wait for its creation */
    ck_assert_uint_eq(s.m.h.threads, MANY + 1);
    replay_ok(&s.m, SCHED_RANDOM, 1, 1, NULL);
    scen_end(&s);
}
END_TEST

/* ---- (c) a block handed between threads by realloc ---------------------------------------------- */

START_TEST(cross_thread_realloc)
{
    scen_t s;
    scen_begin(&s, "xrealloc");
    tb_t *b = &s.b;
    tb_start(b, 1, 0, 0);
    tb_create(b, 1, 10, 2);
    tb_start(b, 2, 15, 1);
    tb_malloc(b, 1, 20, 100, 0xa000);          /* thread 0 done after 2 */
    tb_realloc(b, 2, 30, 0xa000, 200, 0xa000); /* in place, in thread 1: done after its 4th op */
    tb_realloc(b, 1, 50, 0xa000, 300, 0xd000); /* moved, back in thread 0 */
    tb_reallocarray(b, 2, 60, 0xd000, 2, 200, 0xe000);
    tb_realloc(b, 2, 65, 0xe000, 500, 0xe000); /* its own block now: no wait */
    tb_free(b, 1, 70, 0xe000);
    scen_convert(&s);

    static const char *const t0[] = {
        "thread_start",
        "malloc        #1 100",
        "wait          thread=1 count=4",
        "realloc       #1 (200) -> #1 300",
        "wait          thread=1 count=7",
        "free          #1 (500)",
        NULL,
    };
    static const char *const t1[] = {
        "thread_start",
        "wait          thread=0 count=1",
        "wait          thread=0 count=2",
        "realloc       #1 (100) -> #1 200",
        "wait          thread=0 count=4",
        "reallocarray  #1 (300) -> #1 2x200",
        "realloc       #1 (400) -> #1 500",
        NULL,
    };
    expect_stream(&s.m, 0, t0);
    expect_stream(&s.m, 1, t1);
    ck_assert_uint_eq(s.m.h.slots, 1);
    ck_assert_uint_eq(s.m.h.peak_live_bytes, 500);
    for (uint64_t seed = 1; seed <= 20; seed++)
        replay_ok(&s.m, SCHED_RANDOM, seed, 1, NULL);
    scen_end(&s);
}
END_TEST

/* ---- (d) an address reused by another thread: no dependency ------------------------------------- */

/* Thread 2 gets from malloc an address thread 1 freed: the allocator's reuse is no dependency. Each
 * thread has a freed slot of its own to put its blocks in, so nothing waits. */
START_TEST(address_reuse_no_wait)
{
    scen_t s;
    scen_begin(&s, "reuse");
    tb_t *b = &s.b;
    tb_start(b, 1, 0, 0);
    tb_malloc(b, 1, 2, 8, 0xe000);
    tb_create(b, 1, 10, 2);
    tb_start(b, 2, 15, 1);
    tb_malloc(b, 2, 16, 8, 0xf000); /* nothing freed anywhere yet: a new slot */
    tb_free(b, 1, 17, 0xe000);      /* each thread now has a freed slot of its own */
    tb_free(b, 2, 18, 0xf000);
    tb_malloc(b, 1, 20, 100, 0xa000);
    tb_free(b, 1, 30, 0xa000);
    tb_malloc(b, 2, 40, 50, 0xa000); /* the allocator gave the address again */
    tb_free(b, 2, 50, 0xa000);
    tb_malloc(b, 1, 60, 70, 0xa000); /* and back */
    tb_free(b, 1, 70, 0xa000);
    scen_convert(&s);
    static const char *const t0[] = {
        "thread_start",     "malloc  #1 8",  "free    #1 (8)",  "malloc  #1 100",
        "free    #1 (100)", "malloc  #1 70", "free    #1 (70)", NULL,
    };
    static const char *const t1[] = {
        "thread_start", "wait    thread=0 count=2", /* its creation: the only wait */
        "malloc  #2 8", "free    #2 (8)",           "malloc  #2 50", "free    #2 (50)", NULL,
    };
    expect_stream(&s.m, 0, t0);
    expect_stream(&s.m, 1, t1);
    ck_assert_uint_eq(s.m.h.waits, 1);
    ck_assert_uint_eq(s.m.h.slots, 2);
    ck_assert_uint_eq(s.m.h.inversions, 0);
    ck_assert_uint_eq(s.m.h.unknown_frees + s.m.h.double_frees + s.m.h.forced, 0);
    for (uint64_t seed = 1; seed <= 20; seed++)
        replay_ok(&s.m, SCHED_RANDOM, seed, 1, NULL);
    scen_end(&s);
}
END_TEST

/* A thread with no freed slot of its own takes another thread's freed slot and waits for that free
 * (the replayer's slot table is shared): the address plays no part. */
START_TEST(freed_slot_taken_with_wait)
{
    scen_t s;
    scen_begin(&s, "steal");
    tb_t *b = &s.b;
    tb_start(b, 1, 0, 0);
    tb_create(b, 1, 10, 2);
    tb_start(b, 2, 15, 1);
    tb_malloc(b, 1, 20, 100, 0xa000);
    tb_malloc(b, 1, 21, 100, 0xb000);
    tb_free(b, 1, 30, 0xa000);       /* thread 0 has done 4 ops */
    tb_free(b, 1, 31, 0xb000);       /* 5 */
    tb_malloc(b, 2, 40, 50, 0xc000); /* takes #1 and #2, waiting for the later free */
    tb_malloc(b, 2, 41, 60, 0xd000); /* #1: covered */
    tb_malloc(b, 2, 42, 70, 0xe000); /* none left anywhere: a new slot */
    tb_free(b, 2, 50, 0xc000);
    tb_malloc(b, 1, 60, 10, 0xf000); /* thread 0 has none of its own: takes thread 1's */
    scen_convert(&s);
    static const char *const t0[] = {
        "thread_start",     "malloc  #1 100",           "malloc  #2 100", "free    #1 (100)",
        "free    #2 (100)", "wait    thread=1 count=7", "malloc  #2 10",  NULL,
    };
    static const char *const t1[] = {
        "thread_start",
        "wait    thread=0 count=1",
        "wait    thread=0 count=5",
        "malloc  #2 50",
        "malloc  #1 60",
        "malloc  #3 70",
        "free    #2 (50)",
        NULL,
    };
    expect_stream(&s.m, 0, t0);
    expect_stream(&s.m, 1, t1);
    ck_assert_uint_eq(s.m.h.slots, 3);
    for (uint64_t seed = 1; seed <= 20; seed++)
        replay_ok(&s.m, SCHED_RANDOM, seed, 1, NULL);
    scen_end(&s);
}
END_TEST

/* The producer / consumer form: thread 1 frees what thread 0 made; thread 0's next malloc must not
 * reuse that slot before thread 1's free has run. */
START_TEST(producer_consumer)
{
    scen_t s;
    scen_begin(&s, "prodcons");
    tb_t *b = &s.b;
    tb_start(b, 1, 0, 0);
    tb_create(b, 1, 10, 2);
    tb_start(b, 2, 15, 1);
    uint64_t t = 20;
    for (int k = 0; k < 50; k++) {
        tb_malloc(b, 1, t++, 64, 0xa000 + 0x100 * (uint64_t)(k % 3));
        tb_free(b, 2, t++, 0xa000 + 0x100 * (uint64_t)(k % 3));
    }
    scen_convert(&s);
    ck_assert_uint_eq(wl_count_op(&s.m, MT_WL_MALLOC), 50);
    ck_assert_uint_eq(wl_count_op(&s.m, MT_WL_FREE), 50);
    for (uint64_t seed = 1; seed <= 50; seed++)
        replay_ok(&s.m, SCHED_RANDOM, seed, 1, NULL);
    scen_end(&s);
}
END_TEST

/* Known bug: slots taken from another thread sit in the taker's deque with the (owner, op count) of
 * their first freer, and a third thread that takes them from there waits for that count on the
 * *taker's* counter (slot_take: depend(c, i, v, c->slots[s].seq)). Thread 0 frees #1 and #2 as its
 * ops 4 and 5; thread 1 takes both after 12 ops of its own (its WAIT(0, 5) is op 12) and uses #2;
 * thread 2 then takes #1 from thread 1's deque with WAIT(1, 4), met long before thread 1's
 * WAIT(0, 5), so thread 2's malloc #1 can run before thread 0's free #1. Expected: a wait that
 * covers the first free (WAIT(0, 4), or WAIT(1, 13)). A batch that mixes slots of several freers
 * has the same problem: its one WAIT uses the seq of the last slot taken on the victim's counter. */
START_TEST(retaken_slot_race)
{
    scen_t s;
    scen_begin(&s, "retaken");
    tb_t *b = &s.b;
    tb_start(b, 1, 0, 0);
    tb_create(b, 1, 1, 2);
    tb_create(b, 1, 2, 3);
    tb_start(b, 2, 3, 1);
    tb_start(b, 3, 4, 1);
    for (uint64_t k = 0; k < 10; k++)
        tb_mallopt(b, 2, 5 + k, 1, (int64_t)k, 1); /* thread 1 gets ahead in op count */
    tb_malloc(b, 1, 20, 100, 0xa000);
    tb_malloc(b, 1, 21, 100, 0xb000);
    tb_free(b, 1, 30, 0xa000);
    tb_free(b, 1, 31, 0xb000);
    tb_malloc(b, 2, 40, 50, 0xc000);
    tb_malloc(b, 3, 50, 60, 0xd000);
    scen_convert(&s);
    replay_ok(&s.m, SCHED_TIME, 0, 1, NULL);
    scen_end(&s);
}
END_TEST

/* Known bug: malloc_usable_size in another thread is a use the maker's free does not wait for. */
START_TEST(usable_size_other_thread_race)
{
    scen_t s;
    scen_begin(&s, "usable-race");
    tb_t *b = &s.b;
    tb_start(b, 1, 0, 0);
    tb_create(b, 1, 10, 2);
    tb_start(b, 2, 15, 1);
    tb_malloc(b, 1, 20, 100, 0xa000);
    tb_usable(b, 2, 30, 0xa000, 112);
    tb_free(b, 1, 40, 0xa000);
    scen_convert(&s);
    static const char *const t1[] = {
        "thread_start",
        "wait                thread=0 count=1",
        "wait                thread=0 count=2",
        "malloc_usable_size  #1",
        NULL,
    };
    expect_stream(&s.m, 1, t1);
    replay_ok(&s.m, SCHED_TIME, 0, 1, NULL);
    scen_end(&s);
}
END_TEST

/* ---- (e) timestamp inversions ------------------------------------------------------------------- */

/* A chain of `depth` inversions (1, 2, 3) across depth + 1 threads. Thread 1 makes p1..pdepth and
 * frees p1 at 100 ns. Thread k (2..depth+1) gets p(k-1) back from malloc at 110 - 10 k ns, before
 * the free that released it, then (k <= depth) frees pk 2 ns later, which releases thread k+1's
 * malloc, stamped earlier still. Returns the threads. */
static uint32_t write_inversion_chain(tb_t *b, int depth)
{
    const uint32_t n = (uint32_t)depth + 1;
    tb_start(b, 1, 0, 0);
    for (uint32_t k = 2; k <= n; k++) {
        tb_create(b, 1, k, k);
        tb_start(b, k, 10 + k, 1);
    }
    for (int k = 1; k <= depth; k++)
        tb_malloc(b, 1, 20 + (uint64_t)k, 100 * (uint64_t)k, 0x10000 * (uint64_t)k);
    for (uint32_t k = 2; k <= n; k++) {
        const uint64_t m = 110 - 10 * (uint64_t)k;
        tb_malloc(b, k, m, 7 * k, 0x10000 * (k - 1));
        if (k <= (uint32_t)depth)
            tb_free(b, k, m + 2, 0x10000 * k);
    }
    tb_free(b, 1, 100, 0x10000);
    return n;
}

START_TEST(inversion_chains)
{
    const int depth = _i;
    scen_t s;
    char name[32];
    snprintf(name, sizeof name, "inv%d", depth);
    scen_begin(&s, name);
    const uint32_t n = write_inversion_chain(&s.b, depth);
    const uint64_t calls = s.b.calls;
    scen_convert(&s);
    const mt_wl_header_t *h = &s.m.h;
    /* Nothing lost: every call is an op. */
    ck_assert_uint_eq(h->threads, n);
    ck_assert_uint_eq(wl_count_op(&s.m, MT_WL_MALLOC), (uint64_t)depth * 2);
    ck_assert_uint_eq(wl_count_op(&s.m, MT_WL_FREE), (uint64_t)depth);
    ck_assert_uint_eq(wl_count_op(&s.m, MT_WL_MALLOC) + wl_count_op(&s.m, MT_WL_FREE), calls);
    ck_assert_uint_eq(h->inversions, (uint64_t)depth);
    ck_assert_uint_eq(h->unknown_frees + h->double_frees + h->forced, 0);
    /* Each thread keeps its own order. */
    static const char *const t0_1[] = { "thread_start", "malloc #1 100", "free #1 (100)", NULL };
    static const char *const t0_2[] = { "thread_start", "malloc #1 100", "malloc #2 200", "free #1 (100)", NULL };
    static const char *const t0_3[] = { "thread_start",  "malloc #1 100", "malloc #2 200",
                                        "malloc #3 300", "free #1 (100)", NULL };
    expect_stream(&s.m, 0, depth == 1 ? t0_1 : depth == 2 ? t0_2 : t0_3);
    for (uint32_t k = 1; k < n; k++) {
        const wl_stream_t *st = &s.m.s[k];
        size_t calls_seen = 0;
        for (size_t j = 0; j < st->n; j++) {
            const mt_wl_rec_t *r = &st->ops[j];
            if (r->op == MT_WL_WAIT)
                continue;
            if (calls_seen == 0)
                ck_assert_int_eq(r->op, MT_WL_THREAD_START);
            else if (calls_seen == 1)
                ck_assert_msg(r->op == MT_WL_MALLOC && r->size == 7 * (k + 1), "thread %u op %zu", k, j);
            else
                ck_assert_msg(r->op == MT_WL_FREE, "thread %u op %zu", k, j);
            calls_seen++;
        }
        ck_assert_uint_eq(calls_seen, k < (uint32_t)depth ? 3 : 2);
    }
    /* The live set: the blocks of the inverted mallocs stay live at the end, and the streams replay
     * without a slot used while live in any order the WAITs allow, the recorded times' included. */
    replay_result_t r;
    replay_ok(&s.m, SCHED_TIME, 0, 1, &r);
    ck_assert_uint_eq(r.live_end, (uint64_t)depth);
    ck_assert_uint_le(r.max_live, h->slots);
    for (uint64_t seed = 1; seed <= 20; seed++)
        replay_ok(&s.m, SCHED_RANDOM, seed, 1, NULL);
    scen_end(&s);
}
END_TEST

/* ---- (f) unknown and double frees --------------------------------------------------------------- */

START_TEST(unknown_and_double_frees)
{
    scen_t s;
    scen_begin(&s, "unknown");
    tb_t *b = &s.b;
    tb_start(b, 1, 0, 0);
    tb_malloc(b, 1, 10, 100, 0xa000);
    tb_free(b, 1, 20, 0xdead0); /* never allocated: dropped */
    tb_free(b, 1, 30, 0xa000);
    tb_free(b, 1, 40, 0xbeef0);                /* unknown again */
    tb_free(b, 1, 50, 0xa000);                 /* double free */
    tb_realloc(b, 1, 60, 0xfeed0, 64, 0xc000); /* realloc of an unknown block: an allocation */
    tb_usable(b, 1, 70, 0xcafe0, 32);          /* unknown block: nothing to replay */
    tb_malloc(b, 1, 80, 10, 0xa000);
    tb_free(b, 1, 90, 0xa000);
    tb_free(b, 1, 95, 0xa000); /* double free again */
    scen_convert(&s);
    static const char *const t0[] = {
        "thread_start",
        "malloc   #1 100",
        "free     #1 (100)",
        "realloc  #0 -> #1 64",
        "malloc   #2 10",
        "free     #2 (10)",
        NULL,
    };
    expect_stream(&s.m, 0, t0);
    ck_assert_uint_eq(s.st.unknown_frees, 3);
    ck_assert_uint_eq(s.st.double_frees, 2);
    ck_assert_uint_eq(s.st.first_unknown_free_offset, record_offset(s.trace, 0, MT_OP_FREE, 0));
    ck_assert_uint_eq(s.st.first_double_free_offset, record_offset(s.trace, 0, MT_OP_FREE, 3));
    ck_assert_uint_eq(s.m.h.unknown_frees, 3);
    ck_assert_uint_eq(s.m.h.double_frees, 2);
    replay_ok(&s.m, SCHED_TIME, 0, 1, NULL);
    scen_end(&s);
}
END_TEST

/* An unknown free in one thread while another thread is held back on an inversion: it waits for the
 * held thread (the block may be the one it makes), then is dropped when nothing can make it. */
START_TEST(unknown_free_while_held)
{
    scen_t s;
    scen_begin(&s, "unknown-held");
    tb_t *b = &s.b;
    tb_start(b, 1, 0, 0);
    tb_create(b, 1, 1, 2);
    tb_create(b, 1, 2, 3);
    tb_start(b, 2, 3, 1);
    tb_start(b, 3, 4, 1);
    tb_malloc(b, 1, 10, 100, 0xa000);
    tb_malloc(b, 2, 20, 50, 0xa000);  /* inverted: thread 1 frees 0xa000 at 40 */
    tb_free(b, 3, 30, 0xa000 + 0x10); /* unknown */
    tb_free(b, 3, 35, 0xb000);        /* unknown */
    tb_free(b, 1, 40, 0xa000);
    scen_convert(&s);
    ck_assert_uint_eq(s.st.unknown_frees, 2);
    ck_assert_uint_eq(s.st.double_frees, 0);
    ck_assert_uint_eq(s.st.inversions, 1);
    ck_assert_uint_eq(s.st.forced, 0);
    ck_assert_uint_eq(wl_count_op(&s.m, MT_WL_MALLOC), 2);
    ck_assert_uint_eq(wl_count_op(&s.m, MT_WL_FREE), 1);
    scen_end(&s);
}
END_TEST

/* ---- (g) a thread exits, a new one gets its tid -------------------------------------------------- */

START_TEST(thread_exit_and_tid_reuse)
{
    scen_t s;
    scen_begin(&s, "tidreuse");
    tb_t *b = &s.b;
    tb_tid(b, 2, 4242);
    tb_tid(b, 3, 4242); /* the kernel gave the exited thread's tid to the next one */
    tb_start(b, 1, 0, 0);
    tb_create(b, 1, 10, 2);
    tb_start(b, 2, 15, 1);
    tb_malloc(b, 2, 20, 16, 0xa000); /* left live */
    tb_exit(b, 2, 30);
    tb_create(b, 1, 40, 3);
    tb_start(b, 3, 45, 1);
    tb_malloc(b, 3, 50, 32, 0xb000);
    tb_free(b, 3, 55, 0xb000);
    tb_exit(b, 3, 60);
    tb_malloc(b, 1, 70, 10, 0xc000); /* after both exits: joins them first */
    tb_free(b, 1, 80, 0xc000);
    tb_free(b, 1, 90, 0xa000); /* thread 2's block: the exit already covers it */
    scen_convert(&s);

    static const char *const t0[] = {
        "thread_start",
        "wait         thread=1 count=4", /* thread 1 exited before thread 2's creation */
        "wait         thread=2 count=5",
        "malloc       #2 10",
        "free         #2 (10)",
        "free         #1 (16)",
        NULL,
    };
    static const char *const t1[] = {
        "thread_start", "wait         thread=0 count=1", "malloc       #1 16", "thread_exit", NULL,
    };
    static const char *const t2[] = {
        "thread_start",       "wait         thread=0 count=2", /* created after thread 0's join of thread 1 */
        "malloc       #2 32", "free         #2 (32)",          "thread_exit", NULL,
    };
    expect_stream(&s.m, 0, t0);
    expect_stream(&s.m, 1, t1);
    expect_stream(&s.m, 2, t2);
    ck_assert_uint_eq(s.m.nthreads, 3);
    ck_assert_uint_eq(s.m.s[1].entry.thread_no, 2);
    ck_assert_uint_eq(s.m.s[2].entry.thread_no, 3);
    ck_assert_uint_eq(s.m.s[1].entry.tid, 4242);
    ck_assert_uint_eq(s.m.s[2].entry.tid, 4242);
    ck_assert_uint_eq(s.m.s[1].entry.creator, 1);
    ck_assert_uint_eq(s.m.s[2].entry.creator, 1);
    ck_assert_uint_eq(wl_count_op(&s.m, MT_WL_THREAD_EXIT), 2);
    for (uint64_t seed = 1; seed <= 20; seed++)
        replay_ok(&s.m, SCHED_RANDOM, seed, 1, NULL);
    scen_end(&s);
}
END_TEST

/* Known bug: calls a thread makes after its THREAD_EXIT (destructors of thread-local data that run
 * after libmtrace's own, as in a Python worker thread that calls free(NULL) twice after it) become
 * ops after the stream's thread_exit, which workload_format.h says is a stream's last op, and the
 * creator's join WAIT counts only the ops up to the exit. Expected: thread_exit last, the join
 * covering every op of the thread. */
START_TEST(ops_after_thread_exit)
{
    scen_t s;
    scen_begin(&s, "after-exit");
    tb_t *b = &s.b;
    tb_start(b, 1, 0, 0);
    tb_create(b, 1, 10, 2);
    tb_start(b, 2, 15, 1);
    tb_malloc(b, 2, 20, 16, 0xa000);
    tb_exit(b, 2, 30);
    tb_free(b, 2, 40, 0);
    tb_free(b, 2, 41, 0xa000);
    tb_mallopt(b, 1, 50, 1, 1, 1);
    scen_convert(&s);
    static const char *const t1[] = {
        "thread_start",
        "wait         thread=0 count=1",
        "malloc       #1 16",
        "free         #0",
        "free         #1 (16)",
        "thread_exit",
        NULL,
    };
    static const char *const t0[] = {
        "thread_start",
        "wait         thread=1 count=6",
        "mallopt      param=1 value=1",
        NULL,
    };
    expect_stream(&s.m, 1, t1);
    expect_stream(&s.m, 0, t0);
    replay_ok(&s.m, SCHED_TIME, 0, 1, NULL);
    scen_end(&s);
}
END_TEST

/* ---- (h) a new thread starts after its creation -------------------------------------------------- */

START_TEST(thread_start_order)
{
    scen_t s;
    scen_begin(&s, "start");
    tb_t *b = &s.b;
    tb_start(b, 1, 0, 0);
    tb_malloc(b, 1, 10, 8, 0xa000);
    tb_malloc(b, 1, 20, 8, 0xb000);
    tb_create(b, 1, 30, 2); /* thread 0 has done 3 ops */
    tb_start(b, 2, 35, 1);
    tb_create(b, 1, 40, 3);
    tb_start(b, 3, 38, 1); /* stamped before its creation: held until it is seen */
    tb_malloc(b, 1, 50, 8, 0xc000);
    tb_start(b, 4, 65, 2); /* a thread made by a thread */
    tb_malloc(b, 2, 36, 8, 0xd000);
    tb_create(b, 2, 61, 4);
    tb_malloc(b, 4, 70, 8, 0xe000);
    tb_malloc(b, 3, 80, 8, 0xf000);
    scen_convert(&s);
    static const char *const t1[] = { "thread_start", "wait thread=0 count=3", "malloc #3 8", NULL };
    static const char *const t2[] = { "thread_start", "wait thread=0 count=3", "malloc #6 8", NULL };
    static const char *const t3[] = { "thread_start", "wait thread=1 count=3", "malloc #5 8", NULL };
    expect_stream(&s.m, 1, t1);
    expect_stream(&s.m, 2, t2);
    expect_stream(&s.m, 3, t3);
    ck_assert_uint_eq(s.m.s[1].entry.creator, 1);
    ck_assert_uint_eq(s.m.s[2].entry.creator, 1);
    ck_assert_uint_eq(s.m.s[3].entry.creator, 2);
    ck_assert_uint_eq(s.m.h.inversions, 1);
    ck_assert_uint_eq(s.m.h.forced, 0);
    for (uint64_t seed = 1; seed <= 20; seed++)
        replay_ok(&s.m, SCHED_RANDOM, seed, 1, NULL);
    scen_end(&s);
}
END_TEST

/* A thread whose creator is not in the trace (traced from its middle): no wait. */
START_TEST(thread_start_unknown_creator)
{
    scen_t s;
    scen_begin(&s, "nocreator");
    tb_t *b = &s.b;
    tb_start(b, 1, 0, 0);
    tb_start(b, 2, 5, 7); /* thread 7 never appears */
    tb_malloc(b, 2, 10, 8, 0xa000);
    tb_free(b, 1, 20, 0xa000);
    scen_convert(&s);
    static const char *const t0[] = { "thread_start", "wait thread=1 count=2", "free #1 (8)", NULL };
    static const char *const t1[] = { "thread_start", "malloc #1 8", NULL };
    expect_stream(&s.m, 0, t0);
    expect_stream(&s.m, 1, t1);
    ck_assert_uint_eq(s.m.s[1].entry.creator, 0);
    ck_assert_uint_eq(s.m.h.forced, 0);
    replay_ok(&s.m, SCHED_RANDOM, 3, 1, NULL);
    scen_end(&s);
}
END_TEST

/* Marks pass through; events with nothing to replay do not appear. */
START_TEST(marks_and_other_events)
{
    scen_t s;
    scen_begin(&s, "marks");
    tb_t *b = &s.b;
    tb_start(b, 1, 0, 0);
    tb_mark(b, 1, 5, "phase one");
    uint8_t payload[4] = { 1 };
    ck_assert_int_eq(mt_writer_event(b->w, 1, 1001, MT_EV_CONTROL, 6, payload, 1), 0);
    tb_malloc(b, 1, 10, 8, 0xa000);
    tb_mark(b, 1, 15, "");
    scen_convert(&s);
    static const char *const t0[] = { "thread_start", "mark \"phase one\"", "malloc #1 8", "mark \"\"", NULL };
    expect_stream(&s.m, 0, t0);
    scen_end(&s);
}
END_TEST

/* An existing output is kept without force, replaced with it; nothing else is left in the folder. */
START_TEST(existing_output)
{
    scen_t s;
    scen_begin(&s, "exists");
    tb_start(&s.b, 1, 0, 0);
    tb_close(&s.b);
    FILE *f = fopen(s.wl, "w");
    ck_assert_ptr_nonnull(f);
    fputs("keep me\n", f);
    fclose(f);
    mt_convert_opts_t opts = { 0 };
    mt_convert_stats_t st;
    mt_error_t err;
    ck_assert_int_eq(mt_convert(s.trace, s.wl, &opts, &st, &err), -EEXIST);
    ck_assert_msg(strstr(err.msg, s.wl) != NULL, "%s", err.msg);
    size_t len;
    char *text = read_text(s.wl, &len);
    ck_assert_str_eq(text, "keep me\n");
    free(text);
    opts.force = 1;
    /* never the trace itself, even with force: it would be replaced by its own workload */
    ck_assert_int_eq(mt_convert(s.trace, s.trace, &opts, &st, &err), -EINVAL);
    ck_assert_msg(strstr(err.msg, "is the trace to convert") != NULL, "%s", err.msg);
    ck_assert_int_eq(mt_file_is_workload(s.trace), 0);
    ck_assert_int_eq(mt_convert(s.trace, s.wl, &opts, &st, &err), 0);
    ck_assert_int_eq(mt_file_is_workload(s.wl), 1);
    scen_end(&s);
}
END_TEST

static TCase *tcase(const char *name, const TTest *t)
{
    TCase *tc = tcase_create(name);
    tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
    tcase_add_test(tc, t);
    return tc;
}

static Suite *convert_suite(void)
{
    Suite *s = suite_create("trace2wl-convert");
    suite_add_tcase(s, tcase("single_thread_calls", single_thread_calls));
    suite_add_tcase(s, tcase("single_thread_slots_peak", single_thread_slots_peak));
    suite_add_tcase(s, tcase("page_evidence_becomes_touch_table", page_evidence_becomes_touch_table));
    suite_add_tcase(s, tcase("share_of_the_requested_pages", share_of_the_requested_pages));
    suite_add_tcase(s, tcase("printed_blocks_decide_their_pages", printed_blocks_decide_their_pages));
    suite_add_tcase(s, tcase("counted_blocks_written_later", counted_blocks_written_later));
    suite_add_tcase(s, tcase("version5_touch_table_reads", version5_touch_table_reads));
    suite_add_tcase(s, tcase("own_mappings_become_mmap_ops", own_mappings_become_mmap_ops));
    suite_add_tcase(s, tcase("own_brk_and_madvise_become_ops", own_brk_and_madvise_become_ops));
    suite_add_tcase(s, tcase("uncounted_evidence_is_estimated", uncounted_evidence_is_estimated));
    suite_add_tcase(s, tcase("cross_thread_free", cross_thread_free));
    suite_add_tcase(s, tcase("many_threads_waits", many_threads_waits));
    suite_add_tcase(s, tcase("cross_thread_realloc", cross_thread_realloc));
    suite_add_tcase(s, tcase("address_reuse_no_wait", address_reuse_no_wait));
    suite_add_tcase(s, tcase("freed_slot_taken_with_wait", freed_slot_taken_with_wait));
    suite_add_tcase(s, tcase("producer_consumer", producer_consumer));
    TCase *tc = tcase_create("inversion_chains");
    tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
    tcase_add_loop_test(tc, inversion_chains, 1, 4);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, tcase("unknown_and_double_frees", unknown_and_double_frees));
    suite_add_tcase(s, tcase("unknown_free_while_held", unknown_free_while_held));
    suite_add_tcase(s, tcase("thread_exit_and_tid_reuse", thread_exit_and_tid_reuse));
    suite_add_tcase(s, tcase("thread_start_order", thread_start_order));
    suite_add_tcase(s, tcase("thread_start_unknown_creator", thread_start_unknown_creator));
    suite_add_tcase(s, tcase("marks_and_other_events", marks_and_other_events));
    suite_add_tcase(s, tcase("existing_output", existing_output));

    /* Known converter bugs (see above): run apart, expected to fail until fixed. */
    const struct {
        const char *name;
        const TTest *t;
    } bugs[] = {
        { "usable_size_other_thread_race", usable_size_other_thread_race },
        { "retaken_slot_race", retaken_slot_race },
        { "ops_after_thread_exit", ops_after_thread_exit },
    };
    for (size_t i = 0; i < sizeof bugs / sizeof bugs[0]; i++) {
        tc = tcase(bugs[i].name, bugs[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    return run_suite(convert_suite());
}
