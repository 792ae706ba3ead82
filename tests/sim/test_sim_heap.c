/* mtrace-sim's own heap (simulator/sim_heap.c), linked into this test program as it is into
 * mtrace-sim: it defines this process's malloc and its family, so Check's own allocations go
 * through it too. Blocks of every class and of the mapped sizes keep their bytes, are aligned as
 * asked, grow and shrink by realloc with their contents, are freed and reused, from 4 threads at
 * once; a block the heap did not make (the next definition's, glibc's here) is handed back to it;
 * the resident bytes it reports cover what it holds. */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test_util.h"
#include "sim.h"

/* Fills a block with a pattern of its own; 1 if it still holds it. */
static void fill(uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed + i * 31);
}

static int holds(const uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (uint8_t)(seed + i * 31))
            return 0;
    return 1;
}

START_TEST(sizes_keep_their_bytes)
{
    static const size_t sizes[] = { 0,    1,         15,         16,         17,    100,        1000,
                                    4000, 32 * 1024, 65536 - 32, 65536 - 31, 65536, 200 * 1024, 3 << 20 };
    void *p[sizeof sizes / sizeof sizes[0]];
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        p[i] = malloc(sizes[i]);
        ck_assert_ptr_nonnull(p[i]);
        ck_assert_uint_eq((uintptr_t)p[i] % 16, 0);
        ck_assert_uint_ge(malloc_usable_size(p[i]), sizes[i]);
        fill(p[i], sizes[i], (uint8_t)i);
    }
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        ck_assert_msg(holds(p[i], sizes[i], (uint8_t)i), "block of %zu bytes lost its bytes", sizes[i]);
        free(p[i]);
    }
    /* freed small blocks are taken again, not new memory each time */
    void *a = malloc(100);
    free(a);
    void *b = malloc(100);
    ck_assert_ptr_eq(a, b);
    free(b);
}
END_TEST

START_TEST(calloc_realloc_aligned)
{
    uint8_t *z = calloc(1000, 7);
    ck_assert_ptr_nonnull(z);
    for (size_t i = 0; i < 7000; i++)
        ck_assert_uint_eq(z[i], 0);
    fill(z, 7000, 3);
    free(z);
    /* reused memory comes back zeroed from calloc too */
    z = calloc(7000, 1);
    for (size_t i = 0; i < 7000; i++)
        ck_assert_uint_eq(z[i], 0);
    free(z);
    errno = 0;
    volatile size_t huge = SIZE_MAX / 2; /* volatile: gcc refuses the constant product */
    ck_assert_ptr_null(calloc(huge, 4));
    ck_assert_int_eq(errno, ENOMEM);

    uint8_t *r = realloc(NULL, 10);
    fill(r, 10, 9);
    for (size_t n = 10; n < (1u << 22); n *= 3) { /* small classes into mapped blocks */
        r = realloc(r, n * 3);
        ck_assert_ptr_nonnull(r);
        ck_assert(holds(r, 10, 9));
    }
    r = realloc(r, 5); /* shrinks in place */
    ck_assert(holds(r, 5, 9));
    ck_assert_ptr_null(realloc(r, 0)); /* frees, as glibc's does */

    for (size_t align = 16; align <= 65536; align *= 4) {
        void *q = NULL;
        ck_assert_int_eq(posix_memalign(&q, align, 300), 0);
        ck_assert_uint_eq((uintptr_t)q % align, 0);
        fill(q, 300, 1);
        free(q);
        q = memalign(align * 2 - 1, 50); /* rounded up to a power of two */
        ck_assert_uint_eq((uintptr_t)q % align, 0);
        free(q);
        q = aligned_alloc(align, align);
        ck_assert_uint_eq((uintptr_t)q % align, 0);
        free(q);
    }
    void *q;
    ck_assert_int_eq(posix_memalign(&q, 24, 8), EINVAL);
    const long page = sysconf(_SC_PAGESIZE);
    q = valloc(10);
    ck_assert_uint_eq((uintptr_t)q % (uintptr_t)page, 0);
    free(q);
    q = pvalloc(10);
    ck_assert_uint_eq((uintptr_t)q % (uintptr_t)page, 0);
    ck_assert_uint_ge(malloc_usable_size(q), (size_t)page);
    free(q);
}
END_TEST

/* A block made by the next malloc (glibc's): freed, resized and measured through it. */
START_TEST(foreign_blocks_go_to_the_next_definition)
{
    void *(*glibc_malloc)(size_t) = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    ck_assert_ptr_nonnull(glibc_malloc);
    uint8_t *p = glibc_malloc(200);
    fill(p, 200, 5);
    ck_assert_uint_ge(malloc_usable_size(p), 200);
    p = realloc(p, 100000);
    ck_assert_ptr_nonnull(p);
    ck_assert(holds(p, 200, 5));
    free(p); /* glibc's free would abort on a block it does not know */
}
END_TEST

static void *churn(void *arg)
{
    const uint8_t seed = (uint8_t)(uintptr_t)arg;
    uint8_t *live[64] = { 0 };
    size_t size[64] = { 0 };
    uint64_t x = seed + 1;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const unsigned k = (unsigned)(x % 64);
        if (live[k]) {
            if (!holds(live[k], size[k], (uint8_t)(seed + k)))
                return (void *)1;
            free(live[k]);
            live[k] = NULL;
        } else {
            size[k] = (size_t)(x >> 20) % (x % 7 == 0 ? 300000 : 2000);
            live[k] = malloc(size[k]);
            if (!live[k])
                return (void *)1;
            fill(live[k], size[k], (uint8_t)(seed + k));
        }
    }
    for (unsigned k = 0; k < 64; k++)
        free(live[k]);
    return NULL;
}

START_TEST(threads_at_once)
{
    pthread_t th[4];
    for (uintptr_t i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, churn, (void *)(i * 50)), 0);
    for (int i = 0; i < 4; i++) {
        void *bad;
        pthread_join(th[i], &bad);
        ck_assert_msg(bad == NULL, "thread %d found a block that lost its bytes", i);
    }
}
END_TEST

static int64_t count_len(const void *p, size_t len, void *arg)
{
    (void)p;
    *(size_t *)arg += len;
    return (int64_t)len;
}

START_TEST(resident_bytes_cover_the_heap)
{
    void *big = malloc(5 << 20);
    memset(big, 1, 5 << 20);
    size_t mapped = 0;
    const uint64_t bytes = sim_heap_resident_bytes(count_len, &mapped);
    ck_assert_uint_ge(bytes, 5u << 20);
    ck_assert_uint_eq(bytes, mapped);
    free(big);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_heap");
    TCase *tc = tcase_create("heap");
    tcase_add_test(tc, sizes_keep_their_bytes);
    tcase_add_test(tc, calloc_realloc_aligned);
    tcase_add_test(tc, foreign_blocks_go_to_the_next_definition);
    tcase_add_test(tc, threads_at_once);
    tcase_add_test(tc, resident_bytes_cover_the_heap);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
