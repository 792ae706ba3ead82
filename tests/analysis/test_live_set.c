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
    static uint8_t live[N];
    mt_live_set_t s;
    ck_assert_int_eq(mt_live_init(&s), 0);
    uint64_t bytes = 0, n = 0, peak = 0;
    srand(7);
    for (uint64_t step = 0; step < 4 * (uint64_t)N; step++) {
        const uint64_t i = (uint64_t)rand() % N;
        /* the first half of the run mostly adds, the second mostly removes */
        const int add = !live[i] && (step < 2 * (uint64_t)N ? rand() % 4 != 0 : rand() % 4 == 0);
        mt_live_block_t b;
        if (add) {
            const mt_live_block_t x = { addr_of(i), i * 3, step, (uint32_t)(i % 1000) };
            ck_assert_int_eq(mt_live_add(&s, &x), 0);
            live[i] = 1;
            bytes += i * 3;
            n++;
            peak = n > peak ? n : peak;
        } else if (live[i]) {
            ck_assert_int_eq(mt_live_remove(&s, addr_of(i), &b), 1);
            ck_assert_uint_eq(b.addr, addr_of(i));
            ck_assert_uint_eq(b.size, i * 3);
            ck_assert_uint_eq(b.stack, i % 1000);
            live[i] = 0;
            bytes -= i * 3;
            n--;
        } else {
            ck_assert_int_eq(mt_live_remove(&s, addr_of(i), &b), 0);
        }
        ck_assert_uint_eq(s.n, n);
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
        ck_assert_msg(i < N && live[i], "slot %lu holds a block not live", (unsigned long)k);
        seen++;
    }
    ck_assert_uint_eq(seen, n);
    for (uint64_t i = 0; i < N; i++) {
        mt_live_block_t b;
        ck_assert_int_eq(mt_live_remove(&s, addr_of(i), &b), live[i]);
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
