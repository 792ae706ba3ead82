/* trace2wl model tests: the model check (t2w_model.h) on fixed configurations, each with its seeds.
 * Every configuration runs at every level, several allocating threads and reads (malloc_usable_size,
 * a failed realloc) of blocks that another thread frees included: those once found converter bugs.
 * One model of another shape, or a workload of a real program, is checked with t2w-model-check. */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "t2w_model.h"
#include "test_util.h"

static char *g_dir;

TEST_DIR_FIXTURE(g_dir, "t2w-model", "T2W_KEEP")

/* The configurations: each run with seeds base_seed + 0..nseeds-1. */
typedef struct config {
    const char *name;
    gparams_t p;
    int nseeds;
    int level;
    int found_bug; /* this configuration found a converter bug (fixed; kept as a regression) */
} config_t;

static const config_t configs[] = {
    /* 1 + 3 threads, one exits and another takes its tid, 50k calls, inversions. */
    { "model_random_counts",
      { .seed = 0x5eed0000u, .threads = 3, .calls = 50000, .jitter = 200, .exits = 1 },
      4,
      LEVEL_COUNTS,
      0 },
    { "model_no_jitter_counts",
      { .seed = 77, .threads = 3, .calls = 50000, .jitter = 0, .exits = 1 },
      1,
      LEVEL_COUNTS,
      0 },
    { "model_many_threads_counts", { .seed = 1234, .threads = 7, .calls = 30000, .jitter = 100 }, 1, LEVEL_COUNTS, 0 },
    /* Only thread 1 allocates: every check, replays and races included. */
    { "model_producer_consumer",
      { .seed = 0xc0de0000u, .threads = 3, .calls = 50000, .jitter = 200, .exits = 1, .one_producer = 1 },
      4,
      LEVEL_STRICT,
      0 },
    { "model_producer_consumer_no_jitter",
      { .seed = 5, .threads = 2, .calls = 20000, .one_producer = 1 },
      1,
      LEVEL_STRICT,
      0 },
    /* Known bugs. Several allocating threads: a slot taken from a thread that had taken it from a
     * third gets a WAIT on the wrong counter (retaken_slot_race in test_convert.c): the WAITs are
     * missed by the converter's own order, and the replay deadlocks. */
    { "model_random_replay",
      { .seed = 0x5eed0000u, .threads = 3, .calls = 50000, .jitter = 200, .exits = 1 },
      4,
      LEVEL_STRICT,
      1 },
    { "model_many_threads_replay", { .seed = 1234, .threads = 7, .calls = 30000, .jitter = 100 }, 1, LEVEL_STRICT, 1 },
    /* malloc_usable_size and failed reallocs on blocks another thread frees: the free does not wait
     * for them (usable_size_other_thread_race in test_convert.c). */
    { "model_producer_consumer_readers",
      { .seed = 99, .threads = 3, .calls = 50000, .jitter = 200, .one_producer = 1, .readers_shared = 1 },
      1,
      LEVEL_STRICT,
      1 },
};

/* Seeds run of configuration c: with a sweep stride above 1 (the sanitizer builds, where each run
 * costs several times more), two at most: the plain build runs them all. */
static int seeds_of(size_t c)
{
    return sweep_stride() > 1 && configs[c].nseeds > 2 ? 2 : configs[c].nseeds;
}

START_TEST(model_config)
{
    const size_t nconf = sizeof configs / sizeof configs[0];
    size_t c = 0;
    int at = _i;
    while (c < nconf && at >= seeds_of(c))
        at -= seeds_of(c++);
    ck_assert_uint_lt(c, nconf);
    gparams_t p = configs[c].p;
    p.seed += (uint64_t)at;
    check_model(g_dir, &p, configs[c].level);
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("trace2wl-model");
    int first = 0;
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        TCase *tc = tcase_create(configs[c].name);
        tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
        tcase_add_loop_test(tc, model_config, first, first + seeds_of(c));
        tcase_set_timeout(tc, 120);
        suite_add_tcase(s, tc);
        first += seeds_of(c);
    }
    return s;
}

int main(void)
{
    return run_suite(model_suite());
}
