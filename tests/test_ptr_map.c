/* The address map (mtrace/ptr_map.h) with tables of huge-page size and more: every key found with
 * its value through growth and deletion, tables aligned to a huge page, and a large table's memory
 * handed back to the system when the map outgrows it or ends, also after glibc raised its mmap
 * threshold (a freed 16 MiB block does that): report's second pass over a trace used to keep the
 * first pass's pages (bench/RESULTS.md, "mtrace report's memory"). */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mtrace/ptr_map.h"
#include "test_util.h"

enum { KEYS = 1u << 20 };

static uint64_t key_of(uint64_t i)
{
    return 0x7f0000000000ull + 16 * (i + 1);
}

/* Whether the page at p is mapped: mincore fails with ENOMEM on an unmapped range. */
static int mapped(const void *p)
{
    unsigned char vec;
    void *page = (void *)((uintptr_t)p & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1));
    if (mincore(page, 1, &vec) == 0)
        return 1;
    ck_assert_int_eq(errno, ENOMEM);
    return 0;
}

START_TEST(large_tables_find_every_key_and_go_back_when_outgrown)
{
    void *big = malloc(16u << 20); /* freed: glibc's mmap threshold rises to 16 MiB */
    ck_assert_ptr_nonnull(big);
    memset(big, 1, 4096);
    free(big);

    /* The loops check with plain ifs: a passing ck_assert costs a write to Check's pipe, and their 3
     * million were most of this test's time (7 s of 7, 23 s of 23 under ASan). */
    mt_ptr_map_t m;
    ck_assert_int_eq(mt_ptr_map_init(&m), 0);
    const void *outgrown = NULL;
    for (uint64_t i = 0; i < KEYS; i++) {
        const uint64_t cap = m.cap;
        const void *table = m.v;
        if (mt_ptr_map_put(&m, key_of(i), i) != 0)
            ck_abort_msg("put of key %lu failed", (unsigned long)i);
        if (m.cap != cap && cap * sizeof *m.v >= (4u << 20) && !outgrown)
            outgrown = table; /* the first table of 4 MiB or more, replaced */
    }
    ck_assert_uint_eq(m.n, KEYS);
    ck_assert_uint_ge(m.cap * sizeof *m.v, 16u << 20);
    ck_assert_msg(((uintptr_t)m.v & ((2u << 20) - 1)) == 0, "a large table not aligned to a huge page: %p",
                  (void *)m.v);
    ck_assert_ptr_nonnull(outgrown);
    ck_assert_msg(!mapped(outgrown), "an outgrown table of 4 MiB or more is still mapped at %p", outgrown);
    for (uint64_t i = 0; i < KEYS; i += 2) {
        mt_ptr_entry_t *e = mt_ptr_map_find(&m, key_of(i));
        if (!e || e->value != i)
            ck_abort_msg("key %lu: %s", (unsigned long)i, e ? "another value" : "not found");
        mt_ptr_map_del(&m, e);
    }
    for (uint64_t i = 0; i < KEYS; i++) {
        const mt_ptr_entry_t *e = mt_ptr_map_find(&m, key_of(i));
        if (i % 2 && !(e && e->value == i))
            ck_abort_msg("key %lu lost after deletions", (unsigned long)i);
        if (!(i % 2) && e)
            ck_abort_msg("key %lu found after its deletion", (unsigned long)i);
    }
    const void *last = m.v;
    mt_ptr_map_fini(&m);
    ck_assert_msg(!mapped(last), "a large table is still mapped after mt_ptr_map_fini");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ptr_map");
    TCase *tc = tcase_create("large");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, large_tables_find_every_key_and_go_back_when_outgrown);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
