/* Median, spread and verdict of repeated runs, on synthetic figures: the spread is min..max below 4
 * runs and the quartiles from 4 on; two figures are "within noise" exactly when their spreads
 * overlap, whatever their medians, and otherwise lower or higher by the medians; a verdict on one
 * run says its noise is unknown. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/spread.h"
#include "test_util.h"

#define SPREAD(s, ...)                                                                                                 \
    do {                                                                                                               \
        double v_[] = { __VA_ARGS__ };                                                                                 \
        mt_spread_of(&(s), v_, sizeof v_ / sizeof v_[0]);                                                              \
    } while (0)

static void assert_close(double got, double want, const char *what)
{
    ck_assert_msg(got > want - 1e-9 && got < want + 1e-9, "%s: %.12g, expected %.12g", what, got, want);
}

/* s's median and extremes, and the range mt_spread_range gives for it */
static void assert_spread(const mt_spread_t *s, double min, double median, double max, double lo, double hi)
{
    assert_close(s->min, min, "min");
    assert_close(s->median, median, "median");
    assert_close(s->max, max, "max");
    double got_lo, got_hi;
    mt_spread_range(s, &got_lo, &got_hi);
    assert_close(got_lo, lo, "spread from");
    assert_close(got_hi, hi, "spread to");
}

START_TEST(one_run)
{
    mt_spread_t s;
    SPREAD(s, 7.5);
    ck_assert_uint_eq(s.n, 1);
    assert_spread(&s, 7.5, 7.5, 7.5, 7.5, 7.5);
}
END_TEST

/* below 4 runs the spread is min..max */
START_TEST(three_runs_unsorted_min_max)
{
    mt_spread_t s;
    SPREAD(s, 5, 1, 3);
    ck_assert_uint_eq(s.n, 3);
    assert_spread(&s, 1, 3, 5, 1, 5);
}
END_TEST

/* from 4 runs it is q1..q3; the median of an even count is the mean of the middle two */
START_TEST(four_runs_quartiles)
{
    mt_spread_t s;
    SPREAD(s, 4, 2, 3, 1);
    assert_spread(&s, 1, 2.5, 4, 1.75, 3.25);
    assert_close(s.q1, 1.75, "q1");
    assert_close(s.q3, 3.25, "q3");
}
END_TEST

START_TEST(quartiles_leave_one_disturbed_run_out)
{
    mt_spread_t s;
    SPREAD(s, 10, 10, 11, 11, 12, 12, 13, 100);
    assert_close(s.max, 100, "max");
    assert_close(s.median, 11.5, "median");
    double lo, hi;
    mt_spread_range(&s, &lo, &hi);
    ck_assert_msg(lo >= 10 && hi <= 13, "spread %g..%g takes the outlier in", lo, hi);
}
END_TEST

START_TEST(overlapping_spreads_are_within_noise)
{
    mt_spread_t base, x;
    /* medians 11 and 12.5, ranges 10..12 and 11.5..13: they meet */
    SPREAD(base, 10, 11, 12);
    SPREAD(x, 11.5, 12.5, 13);
    ck_assert_int_eq(mt_verdict(&x, &base), MT_VERDICT_NOISE);
    ck_assert_int_eq(mt_verdict(&base, &x), MT_VERDICT_NOISE);
    /* touching ends count as overlap */
    SPREAD(x, 12, 12.5, 13);
    ck_assert_int_eq(mt_verdict(&x, &base), MT_VERDICT_NOISE);
    /* one range inside the other, medians far apart */
    SPREAD(base, 1, 2, 100);
    SPREAD(x, 40, 50, 60);
    ck_assert_int_eq(mt_verdict(&x, &base), MT_VERDICT_NOISE);
    ck_assert_str_eq(mt_time_verdict_name(mt_verdict(&x, &base)), "within noise");
    ck_assert_str_eq(mt_memory_verdict_name(mt_verdict(&x, &base)), "within noise");
}
END_TEST

START_TEST(separate_spreads_are_lower_or_higher)
{
    mt_spread_t base, x;
    SPREAD(base, 10, 11, 12);
    SPREAD(x, 12.01, 12.5, 13);
    ck_assert_int_eq(mt_verdict(&x, &base), MT_VERDICT_HIGHER);
    ck_assert_int_eq(mt_verdict(&base, &x), MT_VERDICT_LOWER);
    ck_assert_str_eq(mt_time_verdict_name(MT_VERDICT_LOWER), "faster");
    ck_assert_str_eq(mt_time_verdict_name(MT_VERDICT_HIGHER), "slower");
    ck_assert_str_eq(mt_memory_verdict_name(MT_VERDICT_LOWER), "less memory");
    ck_assert_str_eq(mt_memory_verdict_name(MT_VERDICT_HIGHER), "more memory");
    /* From 4 runs the quartiles decide: one disturbed run of the baseline (30) spans x's whole range
     * in min..max, but not in q1..q3. */
    SPREAD(base, 10, 10.1, 10.2, 10.3, 30);
    SPREAD(x, 12, 12.1, 12.2, 12.3, 12.4);
    ck_assert_int_eq(mt_verdict(&x, &base), MT_VERDICT_HIGHER);
}
END_TEST

/* The case: best-of-N wall time said 19 % faster, the CPU time was 1 % slower. On the CPU
 * times' spreads the verdict is noise, not faster. */
START_TEST(small_change_within_spread_is_noise)
{
    mt_spread_t base, x;
    SPREAD(base, 100, 97, 103, 99, 101);
    SPREAD(x, 101, 98, 104, 100, 102);
    ck_assert_int_eq(mt_verdict(&x, &base), MT_VERDICT_NOISE);
    assert_close(mt_change_pct(x.median, base.median), 1.0, "change %");
}
END_TEST

/* A sweep called a setting jemalloc never applied "-0.0 %: less memory" from one run each: a change
 * below MT_VERDICT_FLOOR_PCT is within noise, whatever the spreads. */
START_TEST(change_below_the_floor_is_noise)
{
    mt_spread_t base, x;
    char t[128];
    SPREAD(base, 37.027);
    SPREAD(x, 37.020);
    ck_assert_int_eq(mt_verdict(&x, &base), MT_VERDICT_NOISE);
    SPREAD(x, 37.062);
    ck_assert_int_eq(mt_verdict(&x, &base), MT_VERDICT_NOISE);
    ck_assert_str_eq(mt_verdict_text(t, sizeof t, &x, &base, &x, &base),
                     "CPU time within noise, RSS within noise (1 run: noise unknown)");
    /* measured spreads that do not meet, medians 0.1 % apart: still within noise */
    SPREAD(base, 1000, 1000.1, 1000.2);
    SPREAD(x, 1001, 1001.1, 1001.2);
    ck_assert_int_eq(mt_verdict(&x, &base), MT_VERDICT_NOISE);
    /* beyond the floor, one run each: said, with its word on noise */
    SPREAD(base, 100);
    SPREAD(x, 100 + 2 * MT_VERDICT_FLOOR_PCT);
    ck_assert_int_eq(mt_verdict(&x, &base), MT_VERDICT_HIGHER);
}
END_TEST

START_TEST(verdict_text)
{
    mt_spread_t cpu0, cpu1, rss0, rss1;
    char t[128];
    SPREAD(cpu0, 10, 11, 12);
    SPREAD(cpu1, 5, 6, 7);
    SPREAD(rss0, 100, 100, 100);
    SPREAD(rss1, 100, 101, 102);
    ck_assert_str_eq(mt_verdict_text(t, sizeof t, &cpu1, &cpu0, &rss1, &rss0), "faster, RSS within noise");
    ck_assert_str_eq(mt_verdict_text(t, sizeof t, &cpu0, &cpu1, &rss0, &rss1), "slower, RSS within noise");
    SPREAD(rss1, 200, 201, 202);
    ck_assert_str_eq(mt_verdict_text(t, sizeof t, &cpu0, &cpu0, &rss1, &rss0), "CPU time within noise, more memory");
    ck_assert_str_eq(mt_verdict_text(t, sizeof t, &cpu0, &cpu0, &rss0, &rss1), "CPU time within noise, less memory");
    /* one run: said */
    mt_spread_t one_cpu, one_rss;
    SPREAD(one_cpu, 5);
    SPREAD(one_rss, 300);
    ck_assert_int_eq(mt_noise_measured(&one_cpu, &cpu0), 0);
    ck_assert_int_eq(mt_noise_measured(&cpu1, &cpu0), 1);
    ck_assert_str_eq(mt_verdict_text(t, sizeof t, &one_cpu, &cpu0, &one_rss, &rss0),
                     "faster, more memory (1 run: noise unknown)");
}
END_TEST

START_TEST(change_pct)
{
    assert_close(mt_change_pct(110, 100), 10, "+10 %");
    assert_close(mt_change_pct(75, 100), -25, "-25 %");
    assert_close(mt_change_pct(5, 0), 0, "against 0");
}
END_TEST

static Suite *spread_suite(void)
{
    Suite *s = suite_create("spread");
    TCase *tc = tcase_create("spread");
    tcase_add_test(tc, one_run);
    tcase_add_test(tc, three_runs_unsorted_min_max);
    tcase_add_test(tc, four_runs_quartiles);
    tcase_add_test(tc, quartiles_leave_one_disturbed_run_out);
    suite_add_tcase(s, tc);
    tc = tcase_create("verdict");
    tcase_add_test(tc, overlapping_spreads_are_within_noise);
    tcase_add_test(tc, separate_spreads_are_lower_or_higher);
    tcase_add_test(tc, small_change_within_spread_is_noise);
    tcase_add_test(tc, change_below_the_floor_is_noise);
    tcase_add_test(tc, verdict_text);
    tcase_add_test(tc, change_pct);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(spread_suite());
}
