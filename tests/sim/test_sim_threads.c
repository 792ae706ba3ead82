/* Threads in the replay: blocks passed between threads under WAITs never deadlock, threads created
 * by the replay at their creator's op, and WAITs that cannot be met are reported (exit 1, one line on
 * stderr) rather than hanging: a count past the end of the awaited thread's stream at once, a cycle
 * of waits by the stall watchdog.
 *
 * Every replay runs under a time limit (run() kills it) and a --stall-timeout, so a hang fails the
 * test. Whether a given WAIT sleeps depends on the schedule; the workloads below make threads depend
 * on each other in both directions many times over, so that some WAIT finds its count not yet
 * reached in any schedule but a vanishingly unlikely one (sync_waits > 0 asserts it).
 *
 * Some cases are regressions of mtrace-sim bugs these tests found (fixed); once they ran on their own, as
 * expected to fail (meson.build). */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/clock.h"
#include "sim_util.h"
#include "test_util.h"

static char *g_dir;
TEST_DIR_FIXTURE(g_dir, "sim-threads", "SIM_KEEP")

typedef struct outcome {
    int rc;
    char *err;    /* stderr text */
    mt_jval_t *j; /* the result, if exit 0 */
} outcome_t;

/* mtrace-sim WL --json --stall-timeout STALL [extra], killed after `limit` seconds. */
static outcome_t replay(const char *wl, const char *stall, double limit, const char *const *extra)
{
    char *json = path_in(g_dir, "result.json"), *err = path_in(g_dir, "stderr");
    remove(json);
    const char *argv[32] = { SIM_EXE, wl, "--json", json, "--quiet", "--stall-timeout", stall };
    size_t n = 7;
    for (size_t i = 0; extra && extra[i] && n < 31; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    outcome_t o = { 0 };
    o.rc = run(argv, NULL, err, NULL, limit);
    ck_assert_msg(o.rc != RUN_TIMEOUT, "mtrace-sim %s ran past %g s: a hang", wl, limit);
    o.err = read_text(err, NULL);
    if (o.rc == 0)
        o.j = load_json(json);
    free(json);
    free(err);
    return o;
}

static void outcome_free(outcome_t *o)
{
    free(o->err);
    mt_json_free(o->j);
}

static void expect_ok(const outcome_t *o, const char *what)
{
    ck_assert_msg(o->rc == 0, "%s: exit %d: %s", what, o->rc, o->err ? o->err : "");
    ck_assert_msg(o->err && !o->err[0], "%s: stderr: %s", what, o->err ? o->err : "(none)");
}

/* ---- blocks passed around a ring --------------------------------------------------------------- */

/* Thread i allocates in slot i+1 every round; thread i+1 (mod 4) frees it after WAIT(i, malloc done),
 * and thread i takes its slot again next round only after WAIT(i+1, free done). */
#define RING 4
#define ROUNDS 3000

START_TEST(ring_of_four)
{
    char *wl = path_in(g_dir, "ring.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    for (int i = 0; i < RING; i++)
        wlb_thread(&b, 0);
    uint64_t freed_at[RING] = { 0 }, made_at[RING];
    for (uint64_t r = 0; r < ROUNDS; r++) {
        for (uint32_t i = 0; i < RING; i++) {
            const uint32_t next = (i + 1) % RING;
            if (r > 0)
                wlb_wait(&b, i, next, freed_at[i]);
            wlb_malloc(&b, i, i + 1, 16 + (r * 37 + i * 1000) % 5000);
            made_at[i] = wlb_ops(&b, i);
        }
        for (uint32_t i = 0; i < RING; i++) {
            const uint32_t next = (i + 1) % RING;
            wlb_wait(&b, next, i, made_at[i]);
            wlb_free(&b, next, i + 1);
            freed_at[i] = wlb_ops(&b, next);
        }
    }
    for (uint32_t i = 0; i < RING; i++)
        wlb_exit(&b, i);
    wlb_close(&b);

    outcome_t o = replay(wl, "10", 120, NULL);
    expect_ok(&o, "ring");
    ck_assert_uint_eq((uint64_t)jnum(o.j, "threads"), RING);
    ck_assert_uint_eq((uint64_t)jnum2(o.j, "calls", "malloc"), RING * ROUNDS);
    ck_assert_uint_eq((uint64_t)jnum2(o.j, "calls", "free"), RING * ROUNDS);
    ck_assert_uint_eq((uint64_t)jnum2(o.j, "failed", "malloc"), 0);
    ck_assert_msg(jnum(o.j, "sync_waits") > 0, "no WAIT ever had to wait");
    ck_assert(jnum(o.j, "sync_waits") <= 2.0 * RING * ROUNDS);
    outcome_free(&o);
    free(wl);
}
END_TEST

/* The same ring replayed at the recorded pace: the threads sleep between ops, and wake-ups must
 * still reach every waiter. */
START_TEST(ring_recorded_timing)
{
    char *wl = path_in(g_dir, "ring.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    for (int i = 0; i < RING; i++)
        wlb_thread(&b, 0);
    uint64_t freed_at[RING] = { 0 }, made_at[RING];
    for (uint64_t r = 0; r < 50; r++) {
        for (uint32_t i = 0; i < RING; i++) {
            if (r > 0)
                wlb_wait(&b, i, (i + 1) % RING, freed_at[i]);
            wlb_malloc(&b, i, i + 1, 100);
            made_at[i] = wlb_ops(&b, i);
        }
        wlb_gap(&b, 2000000); /* 2 ms between the mallocs and the frees of a round */
        for (uint32_t i = 0; i < RING; i++) {
            wlb_wait(&b, (i + 1) % RING, i, made_at[i]);
            wlb_free(&b, (i + 1) % RING, i + 1);
            freed_at[i] = wlb_ops(&b, (i + 1) % RING);
        }
    }
    wlb_close(&b);
    static const char *const rec[] = { "--timing", "recorded", NULL };
    outcome_t o = replay(wl, "10", 120, rec);
    expect_ok(&o, "ring, recorded timing");
    ck_assert_uint_eq((uint64_t)jnum2(o.j, "calls", "free"), RING * 50);
    ck_assert_uint_eq((uint64_t)jnum(o.j, "threads"), RING);
    outcome_free(&o);
    free(wl);
}
END_TEST

/* A program idle for longer than the stall timeout between two calls (xz -T2: its main thread
 * waits 30 s for a worker that makes no call meanwhile), replayed at the recorded pace: the threads
 * sleeping toward an op's time are not stalled. The stall watch stopped this replay after 1 s. */
START_TEST(long_recorded_gap_not_a_stall)
{
    char *wl = path_in(g_dir, "gap.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    wlb_thread(&b, 0);
    wlb_thread(&b, 1);
    wlb_malloc(&b, 0, 1, 100);
    wlb_malloc(&b, 1, 2, 200);
    const uint64_t made = wlb_ops(&b, 1);
    wlb_gap(&b, 2500000000u); /* 2.5 s of nothing */
    wlb_wait(&b, 0, 1, made);
    wlb_free(&b, 0, 2);
    wlb_free(&b, 0, 1);
    wlb_close(&b);
    static const char *const rec[] = { "--timing", "recorded", NULL };
    const uint64_t t0 = mt_mono_ns();
    outcome_t o = replay(wl, "1", 60, rec);
    const double took = (double)(mt_mono_ns() - t0) / 1e9;
    expect_ok(&o, "a 2.5 s gap with a 1 s stall timeout");
    ck_assert_uint_eq((uint64_t)jnum2(o.j, "calls", "free"), 2);
    ck_assert_msg(took >= 2.4, "the replay took %.2f s: the recorded gap was not kept", took);
    outcome_free(&o);
    free(wl);
}
END_TEST

/* ---- producer and consumer --------------------------------------------------------------------- */

#define PC_BLOCKS 100000
#define PC_WINDOW 64 /* slots in flight */
#define PC_LAG 32    /* the consumer frees block k - PC_LAG when the producer has made block k */

START_TEST(producer_consumer)
{
    char *wl = path_in(g_dir, "pc.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t prod = wlb_thread(&b, 0), cons = wlb_thread(&b, 0);
    static uint64_t made[PC_BLOCKS], freed[PC_BLOCKS];
    const uint64_t blocks = SIM_SANITIZER_ALLOCATOR ? PC_BLOCKS / 4 : PC_BLOCKS; /* 4x slower there */
    for (uint64_t k = 0; k < blocks + PC_LAG; k++) {
        if (k < blocks) {
            if (k >= PC_WINDOW)
                wlb_wait(&b, prod, cons, freed[k - PC_WINDOW]);
            wlb_malloc(&b, prod, 1 + k % PC_WINDOW, 8 + (k * 7919) % 2000);
            made[k] = wlb_ops(&b, prod);
        }
        if (k >= PC_LAG) {
            const uint64_t f = k - PC_LAG;
            wlb_wait(&b, cons, prod, made[f]);
            wlb_free(&b, cons, 1 + f % PC_WINDOW);
            freed[f] = wlb_ops(&b, cons);
        }
    }
    wlb_exit(&b, cons);
    wlb_exit(&b, prod);
    wlb_close(&b);
    outcome_t o = replay(wl, "10", 240, NULL);
    expect_ok(&o, "producer/consumer");
    ck_assert_uint_eq((uint64_t)jnum(o.j, "threads"), 2);
    ck_assert_uint_eq((uint64_t)jnum2(o.j, "calls", "malloc"), blocks);
    ck_assert_uint_eq((uint64_t)jnum2(o.j, "calls", "free"), blocks);
    ck_assert_msg(jnum(o.j, "sync_waits") > 0, "no WAIT ever had to wait");
    outcome_free(&o);
    free(wl);
}
END_TEST

/* ---- threads the replay creates ---------------------------------------------------------------- */

/* Thread 0 creates thread 1 after its op 3 and then waits for all of thread 1's ops: the replay
 * must create thread 1 at that point (created later, at thread 0's end, it would deadlock). */
START_TEST(created_by_creator)
{
    char *wl = path_in(g_dir, "create.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t0 = wlb_thread(&b, 0); /* op 1: thread_start */
    wlb_malloc(&b, t0, 1, 100);            /* op 2 */
    wlb_malloc(&b, t0, 2, 200);            /* op 3: thread 1 is created here */
    const uint64_t at = wlb_ops(&b, t0);
    ck_assert_uint_eq(at, 3);
    const uint32_t t1 = wlb_thread(&b, t0 + 1);
    wlb_wait(&b, t1, t0, at);
    wlb_free(&b, t1, 1);
    wlb_malloc(&b, t1, 3, 300);
    wlb_exit(&b, t1);
    wlb_wait(&b, t0, t1, wlb_ops(&b, t1));
    wlb_free(&b, t0, 3);
    wlb_free(&b, t0, 2);
    wlb_close(&b);
    outcome_t o = replay(wl, "5", 60, NULL);
    expect_ok(&o, "created thread");
    ck_assert_uint_eq((uint64_t)jnum(o.j, "threads"), 2);
    ck_assert_uint_eq((uint64_t)jnum2(o.j, "calls", "malloc"), 3);
    ck_assert_uint_eq((uint64_t)jnum2(o.j, "calls", "free"), 3);
    outcome_free(&o);
    free(wl);
}
END_TEST

/* Thread 0 creates thread 2 at op 3 and thread 1 at op 6 (index order differs from creation order),
 * and waits for thread 2 in between; thread 1 creates thread 3 (a grandchild). */
START_TEST(creation_order_and_nesting)
{
    char *wl = path_in(g_dir, "nest.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t0 = wlb_thread(&b, 0);
    wlb_malloc(&b, t0, 1, 10);
    wlb_malloc(&b, t0, 2, 20); /* op 3 */
    const uint32_t t1 = wlb_thread(&b, t0 + 1), t2 = wlb_thread(&b, t0 + 1);
    wlb_wait(&b, t2, t0, 3);
    wlb_free(&b, t2, 1);
    wlb_exit(&b, t2);
    wlb_wait(&b, t0, t2, wlb_ops(&b, t2)); /* op 4 */
    wlb_malloc(&b, t0, 1, 30);             /* op 5 */
    wlb_malloc(&b, t0, 4, 40);             /* op 6 */
    ck_assert_uint_eq(wlb_ops(&b, t0), 6);
    wlb_wait(&b, t1, t0, 6);
    wlb_free(&b, t1, 4);
    wlb_malloc(&b, t1, 5, 50); /* t1's op 4 */
    const uint32_t t3 = wlb_thread(&b, t1 + 1);
    wlb_wait(&b, t3, t1, 4);
    wlb_free(&b, t3, 5);
    wlb_exit(&b, t3);
    wlb_wait(&b, t1, t3, wlb_ops(&b, t3));
    wlb_exit(&b, t1);
    wlb_wait(&b, t0, t1, wlb_ops(&b, t1));
    wlb_free(&b, t0, 1);
    wlb_free(&b, t0, 2);
    wlb_close(&b);
    outcome_t o = replay(wl, "5", 60, NULL);
    expect_ok(&o, "nested creation");
    ck_assert_uint_eq((uint64_t)jnum(o.j, "threads"), 4);
    ck_assert_uint_eq((uint64_t)jnum2(o.j, "calls", "malloc"), 5);
    ck_assert_uint_eq((uint64_t)jnum2(o.j, "calls", "free"), 5);
    outcome_free(&o);
    free(wl);
}
END_TEST

/* 2000 short threads (500 under a sanitizer), created and joined one after another by thread 0,
 * each making 100 calls: the replay's own memory follows the threads alive at once (a working set
 * each, given back at its end), not the workload's threads. Before, each thread kept its buffers,
 * zstd context and statistics mapped to the end: 69 MB of bookkeeping (63.8 % of the max RSS); now
 * about 0.6 MB. The bound is generous: 4 MiB, 2 KiB per thread of the workload (8 KiB with 500).
 * The totals hold every call. */
START_TEST(short_threads_memory_follows_live_threads)
{
    enum { CALLS = 100 };
    /* a sanitizer makes each thread dear (its shadow stack, allocator caches): a quarter there */
    const uint32_t threads = SIM_SANITIZER_ALLOCATOR ? 500 : 2000;
    char *wl = path_in(g_dir, "short.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t0 = wlb_thread(&b, 0);
    for (uint32_t k = 1; k <= threads; k++) {
        wlb_malloc(&b, t0, 1, 32); /* the creation point */
        wlb_free(&b, t0, 1);
        const uint32_t t = wlb_thread(&b, t0 + 1);
        wlb_wait(&b, t, t0, wlb_ops(&b, t0));
        for (uint32_t i = 0; i < CALLS / 2; i++) {
            wlb_malloc(&b, t, 2, 64 + (k * 7 + i) % 448);
            wlb_free(&b, t, 2);
        }
        wlb_exit(&b, t);
        wlb_wait(&b, t0, t, wlb_ops(&b, t)); /* the join */
    }
    wlb_close(&b);
    outcome_t o = replay(wl, "30", 240, NULL);
    expect_ok(&o, "short threads");
    ck_assert_uint_eq((uint64_t)jnum(o.j, "threads"), threads + 1);
    ck_assert_uint_eq((uint64_t)jnum2(o.j, "calls", "malloc"), threads * (CALLS / 2 + 1));
    ck_assert_uint_eq((uint64_t)jnum2(o.j, "calls", "free"), threads * (CALLS / 2 + 1));
    const uint64_t bookkeeping_kb = (uint64_t)jnum(o.j, "bookkeeping_kb");
    ck_assert_msg(bookkeeping_kb <= 4096, "bookkeeping %llu Kb for %u short threads (max RSS %llu Kb)",
                  (unsigned long long)bookkeeping_kb, threads, (unsigned long long)jnum(o.j, "max_rss_kb"));
    /* Nor does it keep their stacks: a thread's stack is reused by the next one, as in the program.
     * Joined only at the end, the threads' stacks added 17 MB; now the whole replay adds 0.7 MB. */
    const uint64_t added_kb = (uint64_t)jnum(o.j, "max_rss_kb") - (uint64_t)jnum(o.j, "start_rss_kb");
    /* A sanitizer keeps each thread's shadow stack and allocator caches: not the replay's to bound. */
    ck_assert_msg(SIM_SANITIZER_ALLOCATOR || added_kb <= 8192, "the replay of %u short threads added %llu Kb of RSS",
                  threads, (unsigned long long)added_kb);
    outcome_free(&o);
    free(wl);
}
END_TEST

/* A creator index out of range, or a thread naming itself, is ignored: the thread starts at once. */
START_TEST(bad_creator_ignored)
{
    char *wl = path_in(g_dir, "badcreator.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t0 = wlb_thread(&b, 0);
    wlb_malloc(&b, t0, 1, 10);
    const uint32_t t1 = wlb_thread(&b, 99);
    wlb_wait(&b, t1, t0, 2);
    wlb_free(&b, t1, 1);
    const uint32_t t2 = wlb_thread(&b, 3); /* itself */
    wlb_malloc(&b, t2, 2, 10);
    wlb_free(&b, t2, 2);
    wlb_close(&b);
    outcome_t o = replay(wl, "5", 60, NULL);
    expect_ok(&o, "bad creators");
    ck_assert_uint_eq((uint64_t)jnum(o.j, "threads"), 3);
    ck_assert_uint_eq((uint64_t)jnum2(o.j, "calls", "free"), 2);
    outcome_free(&o);
    free(wl);
}
END_TEST

/* ---- WAITs that cannot be met ------------------------------------------------------------------ */

/* Thread 1 waits for thread 0 to complete 10 ops; thread 0 has 3. */
START_TEST(wait_past_end)
{
    char *wl = path_in(g_dir, "past.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t0 = wlb_thread(&b, 0), t1 = wlb_thread(&b, 0);
    wlb_malloc(&b, t0, 1, 10);
    wlb_free(&b, t0, 1);
    wlb_wait(&b, t1, t0, 10);
    wlb_malloc(&b, t1, 2, 10);
    wlb_close(&b);
    outcome_t o = replay(wl, "60", 30, NULL); /* not the watchdog's: found at once */
    ck_assert_msg(o.rc == 1, "exit %d: %s", o.rc, o.err);
    char *errp = path_in(g_dir, "stderr");
    const char *const needles[] = { wl, "thread 1", "thread 0", "10", NULL };
    assert_one_line(errp, "wait past the end", needles);
    free(errp);
    outcome_free(&o);
    free(wl);
}
END_TEST

/* Thread 0 waits for thread 1's op 5 while thread 1 waits for thread 0's op 5: no thread can move. */
static char *write_cycle(void)
{
    char *wl = path_in(g_dir, "cycle.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    wlb_thread(&b, 0);
    wlb_thread(&b, 0);
    for (uint32_t t = 0; t < 2; t++) {
        wlb_malloc(&b, t, 1 + t, 10); /* op 2 */
        wlb_wait(&b, t, 1 - t, 5);    /* op 3 */
        wlb_free(&b, t, 1 + t);       /* op 4 */
        wlb_malloc(&b, t, 1 + t, 20); /* op 5 */
        wlb_free(&b, t, 1 + t);       /* op 6 */
    }
    wlb_close(&b);
    return wl;
}

/* The stall watchdog stops the cycle: exit 1, one line, well within the limit. */
START_TEST(stall_stops_replay)
{
    char *wl = write_cycle();
    outcome_t o = replay(wl, "2", 60, NULL);
    ck_assert_msg(o.rc == 1, "exit %d: %s", o.rc, o.err);
    char *errp = path_in(g_dir, "stderr");
    const char *const needles[] = { wl, NULL };
    assert_one_line(errp, "cyclic wait", needles);
    free(errp);
    outcome_free(&o);
    free(wl);
}
END_TEST

/* ... and its line says the replay stalled and where each thread stood (today the watchdog's message
 * is lost: the threads it stops report "the replay was stopped while this thread waited", and that
 * line is printed instead). */
START_TEST(stall_is_reported)
{
    char *wl = write_cycle();
    outcome_t o = replay(wl, "2", 60, NULL);
    ck_assert_msg(o.rc == 1, "exit %d: %s", o.rc, o.err);
    char *errp = path_in(g_dir, "stderr");
    const char *const needles[] = { wl, "stall", "thread 0", "thread 1", NULL };
    assert_one_line(errp, "cyclic wait", needles);
    free(errp);
    outcome_free(&o);
    free(wl);
}
END_TEST

/* Thread 0 waits for thread 1's op 2, which is a WAIT past the end of thread 0's stream: the message
 * must name that root cause, not thread 0 being stopped while it waited (today thread 0's error is
 * printed, being the first thread's: "the replay was stopped while this thread waited"). */
START_TEST(root_cause_reported)
{
    char *wl = path_in(g_dir, "root.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t0 = wlb_thread(&b, 0), t1 = wlb_thread(&b, 0);
    wlb_wait(&b, t0, t1, 2);
    wlb_malloc(&b, t0, 1, 10);
    wlb_free(&b, t0, 1);
    wlb_wait(&b, t1, t0, 50);
    wlb_close(&b);
    outcome_t o = replay(wl, "60", 30, NULL);
    ck_assert_msg(o.rc == 1, "exit %d: %s", o.rc, o.err);
    char *errp = path_in(g_dir, "stderr");
    const char *const needles[] = { wl, "thread 1", "50", NULL };
    assert_one_line(errp, "root cause", needles);
    free(errp);
    outcome_free(&o);
    free(wl);
}
END_TEST

/* A WAIT naming a thread the workload does not have (thread 7 of 1). */
static void missing_thread(const char *needle)
{
    char *wl = path_in(g_dir, "missing.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t0 = wlb_thread(&b, 0);
    wlb_malloc(&b, t0, 1, 10);
    wlb_wait(&b, t0, 7, 1);
    wlb_free(&b, t0, 1);
    wlb_close(&b);
    outcome_t o = replay(wl, "60", 30, NULL);
    ck_assert_msg(o.rc == 1, "exit %d: %s", o.rc, o.err);
    char *errp = path_in(g_dir, "stderr");
    const char *const needles[] = { wl, needle, NULL };
    assert_one_line(errp, "missing thread", needles);
    free(errp);
    outcome_free(&o);
    free(wl);
}

START_TEST(wait_on_missing_thread)
{
    missing_thread(NULL);
}
END_TEST

/* ... and the message says so. */
START_TEST(missing_thread_named)
{
    missing_thread("thread 7");
}
END_TEST

static Suite *threads_suite(void)
{
    Suite *s = suite_create("sim_threads");
    const struct {
        const char *name;
        const TTest *t;
        int knownbug;
    } cases[] = {
        { "ring_of_four", ring_of_four, 0 },
        { "ring_recorded_timing", ring_recorded_timing, 0 },
        { "long_recorded_gap_not_a_stall", long_recorded_gap_not_a_stall, 0 },
        { "producer_consumer", producer_consumer, 0 },
        { "created_by_creator", created_by_creator, 0 },
        { "creation_order_and_nesting", creation_order_and_nesting, 0 },
        { "short_threads_memory_follows_live_threads", short_threads_memory_follows_live_threads, 0 },
        { "bad_creator_ignored", bad_creator_ignored, 0 },
        { "wait_past_end", wait_past_end, 0 },
        { "stall_stops_replay", stall_stops_replay, 0 },
        { "wait_on_missing_thread", wait_on_missing_thread, 0 },
        { "missing_thread_named", missing_thread_named, 0 },
        { "stall_is_reported", stall_is_reported, 1 },
        { "root_cause_reported", root_cause_reported, 1 },
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
    return run_suite(threads_suite());
}
