/* Loaded and unloaded again and again by fp_dl, built twice (FP_LIB_TAG 1 and 2): allocates in its
 * constructor (kept until the destructor frees it) and in its destructor, and on request. */
#include <stdlib.h>

#ifndef FP_LIB_TAG
#error "FP_LIB_TAG comes from tests/faults/meson.build"
#endif

void *fp_lib_alloc(unsigned n);

static char *kept;

__attribute__((constructor)) static void lib_init(void)
{
    kept = malloc(4000 + FP_LIB_TAG * 100); /* 4100 or 4200 */
    if (kept)
        kept[0] = 1;
}

__attribute__((destructor)) static void lib_fini(void)
{
    free(kept);
    char *p = malloc(4000 + FP_LIB_TAG * 100 + 50); /* 4150 or 4250 */
    if (p)
        p[0] = 1;
    free(p);
}

/* A block of 9000 + 100 * tag + n bytes, allocated here (so that its stack goes through this
 * library), freed by the caller. */
__attribute__((visibility("default"))) void *fp_lib_alloc(unsigned n)
{
    char *p = malloc(9000 + FP_LIB_TAG * 100 + n);
    if (p)
        p[0] = 1;
    return p;
}
