/* The report's live-block set (analysis/live_set.h) against a plain array: blocks added and removed
 * at random through many growths of its table, every figure found again, free slots used again
 * (the slot count stays at the peak live count), the live bytes right, and an address never added
 * not found. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "live_set.h"
#include "test_util.h"

enum { N = 300000 };

static uint64_t addr_of(uint64_t i)
{
    return 0x7f0000000000ull + 16 * (i + 1);
}

START_TEST(random_adds_and_removes_against_an_array)
{
    /* The loops check with plain ifs: a passing ck_assert costs a write to Check's pipe, and their
     * millions were most of this test's time. */
    static uint8_t live[N];
    mt_live_set_t s;
    ck_assert_int_eq(mt_live_init(&s), 0);
    uint64_t bytes = 0, n = 0, peak = 0;
    srand(7);
    for (uint64_t step = 0; step < 4 * (uint64_t)N; step++) {
        const uint64_t i = (uint64_t)rand() % N;
        /* the first half of the run mostly adds, the second mostly removes */
        const int add = !live[i] && (step < 2 * (uint64_t)N ? rand() % 4 != 0 : rand() % 4 == 0);
        mt_live_block_t b = { 0 };
        if (add) {
            const mt_live_block_t x = { addr_of(i), i * 3, step, (uint32_t)(i % 1000) };
            if (mt_live_add(&s, &x) != 0)
                ck_abort_msg("step %lu: adding block %lu failed", (unsigned long)step, (unsigned long)i);
            live[i] = 1;
            bytes += i * 3;
            n++;
            peak = n > peak ? n : peak;
        } else if (live[i]) {
            const int rc = mt_live_remove(&s, addr_of(i), &b);
            if (rc != 1 || b.addr != addr_of(i) || b.size != i * 3 || b.stack != i % 1000)
                ck_abort_msg("step %lu: removing live block %lu gave %d, address %#lx, size %lu, stack %u",
                             (unsigned long)step, (unsigned long)i, rc, (unsigned long)b.addr, (unsigned long)b.size,
                             (unsigned)b.stack);
            live[i] = 0;
            bytes -= i * 3;
            n--;
        } else if (mt_live_remove(&s, addr_of(i), &b) != 0) {
            ck_abort_msg("step %lu: block %lu, not live, was removed", (unsigned long)step, (unsigned long)i);
        }
        if (s.n != n)
            ck_abort_msg("step %lu: %lu blocks in the set, %lu live", (unsigned long)step, (unsigned long)s.n,
                         (unsigned long)n);
    }
    ck_assert_uint_eq(s.bytes, bytes);
    ck_assert_uint_eq(s.nslots, peak);
    ck_assert_uint_gt(s.cap, 1024);
    uint64_t seen = 0;
    for (uint64_t k = 0; k < s.nslots; k++) {
        mt_live_block_t b;
        if (!mt_live_slot(&s, k, &b))
            continue;
        const uint64_t i = (b.addr - addr_of(0)) / 16;
        if (!(i < N && live[i]))
            ck_abort_msg("slot %lu holds a block not live", (unsigned long)k);
        seen++;
    }
    ck_assert_uint_eq(seen, n);
    for (uint64_t i = 0; i < N; i++) {
        mt_live_block_t b;
        if (mt_live_remove(&s, addr_of(i), &b) != live[i])
            ck_abort_msg("block %lu: removed %s", (unsigned long)i, live[i] ? "not at all" : "though not live");
    }
    ck_assert_uint_eq(s.n, 0);
    ck_assert_uint_eq(s.bytes, 0);
    mt_live_fini(&s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("live_set");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, random_adds_and_removes_against_an_array);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
