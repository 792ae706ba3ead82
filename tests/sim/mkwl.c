/* Writes the small workloads the shell tests replay: sim_mkwl KIND OUT
 *   mixed   two threads: mallocs, callocs, reallocs, frees, blocks passed between the threads
 *   layers  one thread: 200 blocks of 256 KiB between small ones, freed, then 200 of 512 KiB kept live
 *           (glibc's peak RSS depends on mmap_threshold: see test_sim_rss.c)
 *   spike   one thread: 10 blocks of 1 MiB, freed at once (a peak shorter than the RSS sampling)
 *   slow    one thread: 100000 mallocs and frees of 4321 bytes; on sleepy_malloc.so a replay of
 *           it takes 10 s (every 50th such malloc sleeps 5 ms), long enough to be interrupted
 *   oom     one thread: mallocs of 64 bytes around three of 2^62 bytes, which the trace had succeed
 *           and which no allocator can give: replayed calls that fail */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "sim_util.h"

static void mixed(wlb_t *b)
{
    const uint32_t a = wlb_thread(b, 0), c = wlb_thread(b, 0);
    for (uint64_t round = 0; round < 200; round++) {
        const uint64_t s = 1 + (round % 2) * 4; /* slots 1-4 and 5-8 alternate */
        if (round >= 2)
            wlb_wait(b, a, c, 0); /* no-op wait: already met */
        wlb_malloc(b, a, s, 24 + round);
        wlb_calloc(b, a, s + 1, 4, 100);
        wlb_realloc(b, a, s, s + 2, 4000 + round);
        wlb_usable(b, a, s + 2);
        const uint64_t done = wlb_ops(b, a);
        wlb_wait(b, c, a, done);
        wlb_free(b, c, s + 1);
        wlb_malloc(b, c, s + 3, 300000);
        wlb_free(b, c, s + 3);
        wlb_free(b, c, s + 2);
        const uint64_t freed = wlb_ops(b, c);
        wlb_wait(b, a, c, freed); /* before slots s.. are taken again */
    }
    wlb_exit(b, c);
    wlb_exit(b, a);
}

static void layers(wlb_t *b)
{
    const uint32_t t = wlb_thread(b, 0);
    for (uint64_t i = 0; i < 200; i++) {
        wlb_malloc(b, t, 1 + i, 256 * 1024);
        wlb_malloc(b, t, 201 + i, 64);
    }
    for (uint64_t i = 0; i < 200; i++)
        wlb_free(b, t, 1 + i);
    for (uint64_t i = 0; i < 200; i++)
        wlb_malloc(b, t, 401 + i, 512 * 1024);
}

static void spike(wlb_t *b)
{
    const uint32_t t = wlb_thread(b, 0);
    for (uint64_t i = 1; i <= 10; i++)
        wlb_malloc(b, t, i, 1024 * 1024);
    for (uint64_t i = 1; i <= 10; i++)
        wlb_free(b, t, i);
}

static void slow(wlb_t *b)
{
    const uint32_t t = wlb_thread(b, 0);
    for (uint64_t i = 0; i < 100000; i++) {
        wlb_malloc(b, t, 1, 4321);
        wlb_free(b, t, 1);
    }
}

static void oom(wlb_t *b)
{
    const uint32_t t = wlb_thread(b, 0);
    for (uint64_t i = 1; i <= 3; i++) {
        wlb_malloc(b, t, 2 * i, 64);
        wlb_malloc(b, t, 2 * i + 1, UINT64_C(1) << 62);
    }
    for (uint64_t i = 2; i <= 7; i++)
        wlb_free(b, t, i);
}

/* The builder asserts with Check, so it runs inside a one-test suite. */
static const char *g_kind, *g_out;

START_TEST(write_it)
{
    wlb_t b;
    wlb_open(&b, g_out);
    if (g_kind[0] == 'm')
        mixed(&b);
    else if (g_kind[0] == 'l')
        layers(&b);
    else if (g_kind[1] == 'p')
        spike(&b);
    else if (g_kind[0] == 'o')
        oom(&b);
    else
        slow(&b);
    wlb_close(&b);
}
END_TEST

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "mixed") && strcmp(argv[1], "layers") && strcmp(argv[1], "spike") &&
                      strcmp(argv[1], "slow") && strcmp(argv[1], "oom"))) {
        fprintf(stderr, "usage: sim_mkwl mixed|layers|spike|slow|oom OUT\n");
        return 2;
    }
    g_kind = argv[1];
    g_out = argv[2];
    Suite *s = suite_create("mkwl");
    TCase *tc = tcase_create("write");
    tcase_add_test(tc, write_it);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_SILENT);
    const int failed = srunner_ntests_failed(sr);
    if (failed)
        srunner_print(sr, CK_NORMAL);
    srunner_free(sr);
    return failed ? 1 : 0;
}
