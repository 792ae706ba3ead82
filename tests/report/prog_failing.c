/* prog_failing: allocation calls that succeed and calls that fail, recorded alone: run under
 * `mtrace record --paused`, it calls mtrace_start() before them and mtrace_stop() after, then prints
 * "ok_bytes N" (the bytes requested by the calls that returned a block, count * size for calloc and
 * reallocarray) and "failed N" (the calls that returned NULL or an error). The failed sizes are
 * those whose product or sum wraps 2^64 or would show as exabytes: malloc(SIZE_MAX - 100),
 * calloc(SIZE_MAX / 2, 4), reallocarray(p, SIZE_MAX, 2), malloc(1 << 62), realloc(p, SIZE_MAX), and
 * the aligned allocators with SIZE_MAX. Exit 1 when not traced (mtrace_start fails). */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <mtrace.h>

/* Sizes through a volatile: the compiler must neither fold the calls nor warn about the sizes. The
 * blocks whose realloc fails are kept through volatiles too: the compiler cannot know it failed. */
static volatile size_t huge = SIZE_MAX;
static void *volatile a, *volatile b;

int main(void)
{
    if (mtrace_start() != 0) {
        fprintf(stderr, "prog_failing: not traced (run it under mtrace record --paused)\n");
        return 1;
    }
    uint64_t ok = 0, failed = 0;
#define GOT(p, bytes) ((p) ? (ok += (bytes), 1) : (failed++, 0))
    a = malloc(1000);
    GOT(a, 1000);
    GOT(malloc(huge - 100), 0);
    GOT(calloc(huge / 2, 4), 0);
    b = calloc(10, 24);
    GOT(b, 240);
    GOT(reallocarray(b, huge, 2), 0); /* fails: b stays */
    GOT(malloc((size_t)1 << 62), 0);
    GOT(realloc(a, huge), 0); /* fails: a stays */
    void *c = realloc(a, 2000);
    GOT(c, 2000);
    void *pm = NULL;
    if (posix_memalign(&pm, 64, huge) != 0)
        failed++;
    else
        ok += huge; /* not expected: then the test fails on the total */
    GOT(aligned_alloc(64, huge - 127), 0);
    GOT(memalign(64, huge), 0);
    GOT(valloc(huge), 0);
    GOT(pvalloc(huge - 100), 0);
    void *d = reallocarray(NULL, 8, 16);
    GOT(d, 128);
    void *e = memalign(64, 300);
    GOT(e, 300);
    free(b);
    free(c);
    free(pm);
    free(d);
    free(e);
    mtrace_stop();
    printf("ok_bytes %llu\nfailed %llu\n", (unsigned long long)ok, (unsigned long long)failed);
    return 0;
}
