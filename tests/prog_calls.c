/* One of each malloc-family call, in a fixed order; prints every pointer, usable size and return
 * value as "key value" so that test_shim can predict each record of the trace. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "prog_util.h"

/* Calls through volatile pointers and sizes: the compiler must neither drop a malloc/free pair nor
 * fold an impossible size into a warning. */
static volatile size_t huge = SIZE_MAX;

static void *block(const char *key, void *p)
{
    char ukey[64];
    put_ptr(key, p);
    if (p) {
        snprintf(ukey, sizeof ukey, "u_%s", key);
        put(ukey, malloc_usable_size(p));
    }
    return p;
}

int main(void)
{
    put("pid", (uint64_t)getpid());
    void *a = block("a", malloc(100));
    void *c = block("c", calloc(10, 24));
    void *r0 = block("r0", realloc(NULL, 64));
    void *r1 = block("r1", realloc(r0, 32));     /* shrinks in place */
    void *r2 = block("r2", realloc(r1, 100000)); /* grows: moves */
    void *r3 = realloc(r2, 0);                   /* frees, returns NULL */
    put_ptr("r3", r3);
    void *ra = block("ra", reallocarray(NULL, 8, 16));
    void *pm = NULL;
    put("e1", (uint64_t)posix_memalign(&pm, 64, 200));
    block("pm", pm);
    void *pm2 = NULL;
    put("e2", (uint64_t)posix_memalign(&pm2, 3, 10)); /* EINVAL: not a power of two */
    void *al = block("al", aligned_alloc(128, 256));
    void *me = block("me", memalign(32, 100));
    void *va = block("va", valloc(1000));
    void *pv = block("pv", pvalloc(1000));
    void *big = block("big", malloc(1 << 20));               /* above the mmap threshold */
    put("m1", (uint64_t)(int64_t)mallopt(M_ARENA_TEST, -1)); /* ignored, returns 1 */
    put("m2", (uint64_t)(int64_t)mallopt(-100, -7));         /* unknown parameter */
    put("m3", (uint64_t)(int64_t)mallopt(M_MXFAST, 1000));   /* out of range: returns 0 */
    put("t1", (uint64_t)(int64_t)malloc_trim(4096));
    free(NULL);
    void *fail = malloc(huge);
    put_ptr("fail", fail);
    free(a);
    free(c);
    free(ra);
    free(pm);
    free(al);
    free(me);
    free(va);
    free(pv);
    free(big);
    flush_out();
    return 0;
}
