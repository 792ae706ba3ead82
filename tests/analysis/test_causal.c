/* The causal stage of mtrace report and mtrace export (analysis/causal.h): records fed in merge order
 * are applied so that an address is given back before it is given again, with a reader of its own
 * (a set of live addresses that refuses what the real readers refuse); the order they are applied in,
 * what waited and what was forced. */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "causal.h"
#include "test_util.h"

#define MAX 64

typedef struct reader {
    uint64_t live[MAX];
    unsigned nlive;
    char order[MAX][16]; /* "T:op:addr" of each record applied, e.g. "1:m:a" */
    unsigned n;
    unsigned forced;  /* records applied with MT_CAUSAL_FORCE */
    unsigned applied; /* records applied, also past the MAX kept in order[] */
} reader_t;

static int is_live(const reader_t *d, uint64_t a)
{
    for (unsigned i = 0; i < d->nlive; i++)
        if (d->live[i] == a)
            return 1;
    return 0;
}

static void set_live(reader_t *d, uint64_t a, int on)
{
    for (unsigned i = 0; i < d->nlive; i++)
        if (d->live[i] == a) {
            if (!on)
                d->live[i] = d->live[--d->nlive];
            return;
        }
    if (on)
        d->live[d->nlive++] = a;
}

/* As call_waits (report) and export_apply decide. */
static int apply(void *ctx, uint32_t thread, const mt_record_t *r, unsigned flags)
{
    reader_t *d = ctx;
    if (r->op > MT_OP_LAST_CALL) { /* an event: its payload's first byte */
        d->applied++;
        if (d->n < MAX)
            snprintf(d->order[d->n++], sizeof d->order[0], "%u:e:%u", thread, r->len ? r->data[0] : 0u);
        return 0;
    }
    const uint64_t ends = mt_record_ends(r);
    const int makes = mt_op_allocates(r->op) && !(r->flags & MT_FLAG_NULL);
    if (!(flags & MT_CAUSAL_FORCE)) {
        if (makes && r->result != ends && is_live(d, r->result))
            return MT_CAUSAL_WAIT_LIVE;
        if ((flags & MT_CAUSAL_OTHERS_WAIT) && ends && !is_live(d, ends))
            return MT_CAUSAL_WAIT_UNKNOWN;
    } else {
        d->forced++;
    }
    if (ends)
        set_live(d, ends, 0);
    if (makes)
        set_live(d, r->result, 1);
    d->applied++;
    if (d->n < MAX)
        snprintf(d->order[d->n++], sizeof d->order[0], "%u:%c:%c", thread,
                 r->op == MT_OP_FREE      ? 'f'
                 : r->op == MT_OP_REALLOC ? 'r'
                                          : 'm',
                 (char)('a' + ((makes ? r->result : ends) >> 4) - 1));
    return 0;
}

/* Addresses 'a', 'b', ... are 0x10, 0x20, ... */
static uint64_t A(char c)
{
    return (uint64_t)(c - 'a' + 1) << 4;
}

static mt_record_t rec_malloc(uint64_t t, char a)
{
    return (mt_record_t){ .op = MT_OP_MALLOC, .time = t, .size = 8, .result = A(a) };
}

static mt_record_t rec_free(uint64_t t, char a)
{
    return (mt_record_t){ .op = MT_OP_FREE, .time = t, .ptr = A(a) };
}

static mt_record_t rec_realloc(uint64_t t, char from, char to)
{
    return (mt_record_t){ .op = MT_OP_REALLOC, .time = t, .ptr = A(from), .size = 64, .result = A(to) };
}

typedef struct fed {
    uint32_t thread;
    mt_record_t r;
} fed_t;

/* Feeds the records in order to a stage of `threads` threads and window 1000, then finishes. */
static void run(reader_t *d, mt_causal_t *c, uint32_t threads, const fed_t *f, unsigned n)
{
    memset(d, 0, sizeof *d);
    ck_assert_int_eq(mt_causal_init(c, threads, 1000, apply, d), 0);
    for (unsigned i = 0; i < n; i++)
        ck_assert_int_eq(mt_causal_feed(c, f[i].thread, &f[i].r), 0);
    ck_assert_int_eq(mt_causal_finish(c), 0);
    mt_causal_fini(c);
}

static void expect_order(const reader_t *d, const char *const *want, unsigned n)
{
    ck_assert_uint_eq(d->n, n);
    for (unsigned i = 0; i < n; i++)
        ck_assert_msg(strcmp(d->order[i], want[i]) == 0, "applied #%u: %s, expected %s", i, d->order[i], want[i]);
}

/* A realloc that moved its block from a to b is stamped after thread 1's malloc got a back. */
START_TEST(allocation_waits_for_the_realloc_that_gave_its_address)
{
    const fed_t f[] = {
        { 0, rec_malloc(1, 'a') },        { 1, rec_malloc(5, 'a') }, { 1, rec_free(6, 'a') },
        { 0, rec_realloc(10, 'a', 'b') }, { 0, rec_free(11, 'b') },
    };
    reader_t d;
    mt_causal_t c;
    run(&d, &c, 2, f, 5);
    const char *want[] = { "0:m:a", "0:r:b", "1:m:a", "1:f:a", "0:f:b" };
    expect_order(&d, want, 5);
    ck_assert_uint_eq(c.repaired, 1);
    ck_assert_uint_eq(c.forced, 0);
    ck_assert_uint_eq(d.forced, 0);
}
END_TEST

/* While thread 1 waits, thread 2 frees c, which thread 1's waiting records make: it waits for it. */
START_TEST(an_unknown_free_waits_while_another_thread_waits)
{
    const fed_t f[] = {
        { 0, rec_malloc(1, 'a') }, { 1, rec_malloc(2, 'a') }, { 1, rec_malloc(3, 'c') },
        { 2, rec_free(4, 'c') },   { 0, rec_free(5, 'a') },   { 1, rec_free(6, 'a') },
    };
    reader_t d;
    mt_causal_t c;
    run(&d, &c, 3, f, 6);
    const char *want[] = { "0:m:a", "0:f:a", "1:m:a", "1:m:c", "2:f:c", "1:f:a" };
    expect_order(&d, want, 6);
    ck_assert_uint_eq(c.repaired, 2);
    ck_assert_uint_eq(c.forced, 0);
}
END_TEST

/* A free the trace lacks: thread 1 waits until the merged records pass its time by the window, and is
 * then applied with force; thread 0 goes on meanwhile. */
START_TEST(a_wait_for_a_record_the_trace_lacks_ends_after_the_window)
{
    const fed_t f[] = {
        { 0, rec_malloc(1, 'a') },   { 1, rec_malloc(2, 'a') }, { 1, rec_free(3, 'a') },
        { 0, rec_malloc(500, 'b') }, { 0, rec_free(900, 'b') }, { 0, rec_malloc(1003, 'd') },
        { 0, rec_free(1004, 'd') },
    };
    reader_t d;
    mt_causal_t c;
    run(&d, &c, 2, f, 7);
    const char *want[] = { "0:m:a", "0:m:b", "0:f:b", "0:m:d", "1:m:a", "1:f:a", "0:f:d" };
    expect_order(&d, want, 7);
    ck_assert_uint_eq(c.forced, 1);
    ck_assert_uint_eq(d.forced, 1);
}
END_TEST

/* Both threads wait on each other (thread 0 for a free the trace lacks): the earliest goes on at once,
 * well within the window. */
START_TEST(threads_waiting_on_each_other_go_on_at_once)
{
    const fed_t f[] = {
        { 0, rec_malloc(1, 'a') }, { 1, rec_malloc(2, 'b') }, { 0, rec_malloc(3, 'b') },
        { 1, rec_malloc(4, 'a') }, { 0, rec_free(5, 'b') },   { 1, rec_free(6, 'a') },
    };
    reader_t d;
    mt_causal_t c;
    run(&d, &c, 2, f, 6);
    ck_assert_uint_eq(d.n, 6);
    ck_assert_uint_ge(c.forced, 1);
    ck_assert_str_eq(d.order[2], "0:m:b"); /* the earliest waiter, forced when thread 1 waits too */
}
END_TEST

/* One thread: nothing waits; an address made again is applied as it comes. */
START_TEST(one_thread_never_waits)
{
    const fed_t f[] = { { 0, rec_malloc(1, 'a') }, { 0, rec_malloc(2, 'a') }, { 0, rec_free(3, 'z') } };
    reader_t d;
    mt_causal_t c;
    run(&d, &c, 1, f, 3);
    const char *want[] = { "0:m:a", "0:m:a", "0:f:z" };
    expect_order(&d, want, 3);
    ck_assert_uint_eq(c.repaired + c.forced, 0);
}
END_TEST

/* A waiting thread's event keeps its payload: the merge's buffer it came from is gone by then. */
START_TEST(a_waiting_event_keeps_its_payload)
{
    reader_t d;
    memset(&d, 0, sizeof d);
    mt_causal_t c;
    ck_assert_int_eq(mt_causal_init(&c, 2, 1000, apply, &d), 0);
    mt_record_t r = rec_malloc(1, 'a');
    ck_assert_int_eq(mt_causal_feed(&c, 0, &r), 0);
    r = rec_malloc(2, 'a');
    ck_assert_int_eq(mt_causal_feed(&c, 1, &r), 0);
    uint8_t payload[4] = { 1, 2, 3, 4 };
    mt_record_t ev = { .op = MT_EV_CONTROL, .time = 3, .data = payload, .len = sizeof payload };
    ck_assert_int_eq(mt_causal_feed(&c, 1, &ev), 0);
    ck_assert_uint_eq(d.n, 1); /* thread 1 waits */
    memset(payload, 0, sizeof payload);
    ck_assert_int_eq(mt_causal_finish(&c), 0);
    ck_assert_uint_eq(d.n, 3);
    ck_assert_str_eq(d.order[2], "1:e:1");
    mt_causal_fini(&c);
}
END_TEST

/* Times that never pass the window (a damaged trace's): a waiting thread keeps at most 65 536
 * records, then its wait is forced. */
START_TEST(a_wait_is_forced_past_its_queue)
{
    reader_t d;
    memset(&d, 0, sizeof d);
    mt_causal_t c;
    ck_assert_int_eq(mt_causal_init(&c, 2, 1000, apply, &d), 0);
    mt_record_t r = rec_malloc(1, 'a');
    ck_assert_int_eq(mt_causal_feed(&c, 0, &r), 0);
    r = rec_malloc(2, 'a');
    ck_assert_int_eq(mt_causal_feed(&c, 1, &r), 0);
    r = rec_free(3, 'z');
    for (unsigned i = 0; i < 70000 && c.nwaiting; i++)
        if (mt_causal_feed(&c, 1, &r) != 0)
            ck_abort_msg("feed %u failed", i);
    ck_assert_uint_eq(c.nwaiting, 0);
    ck_assert_uint_eq(c.forced, 1);
    ck_assert_uint_eq(d.applied, 1 + 65536);
    ck_assert_int_eq(mt_causal_finish(&c), 0);
    mt_causal_fini(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("causal");
    TCase *tc = tcase_create("order");
    tcase_add_test(tc, allocation_waits_for_the_realloc_that_gave_its_address);
    tcase_add_test(tc, an_unknown_free_waits_while_another_thread_waits);
    tcase_add_test(tc, a_wait_for_a_record_the_trace_lacks_ends_after_the_window);
    tcase_add_test(tc, threads_waiting_on_each_other_go_on_at_once);
    tcase_add_test(tc, one_thread_never_waits);
    tcase_add_test(tc, a_waiting_event_keeps_its_payload);
    tcase_add_test(tc, a_wait_is_forced_past_its_queue);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
