/* dlopen/dlclose, repeated: N rounds; each loads library A (with RTLD_DEEPBIND when asked), asks it
 * for a block of 9100 + i bytes and frees it, every third round loads library B as well and does
 * the same (9200 + i), then unloads them. The libraries allocate in their constructors and
 * destructors (fp_dl_lib.c). stdout: a summary that does not depend on the run.
 * Both libraries are loaded through one call site, and B is usually mapped where A just was: their
 * calls' stacks then hold the same addresses.
 *   usage: fp_dl LIB_A LIB_B N plain|deepbind */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "fp_util.h"

typedef void *(*alloc_fn)(unsigned);

static int round_with(const char *lib, int flags, unsigned i)
{
    void *h = dlopen(lib, flags);
    if (!h) {
        fp_say("dlopen %s failed\n", lib);
        return -1;
    }
    alloc_fn f = (alloc_fn)dlsym(h, "fp_lib_alloc");
    if (!f)
        return -1;
    void *p = f(i);
    if (!p)
        return -1;
    free(p);
    return dlclose(h) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    const unsigned n = (unsigned)atoi(argv[3]);
    const int flags = RTLD_NOW | RTLD_LOCAL | (!strcmp(argv[4], "deepbind") ? RTLD_DEEPBIND : 0);
    unsigned loads = 0;
    for (unsigned i = 0; i < n; i++) {
        /* one call site for both libraries: with B loaded where A was, the stacks of their calls
         * differ only by the library they run in */
        for (int lib = 0; lib < (i % 3 == 0 ? 2 : 1); lib++) {
            if (round_with(argv[1 + lib], flags, i) < 0)
                return 1;
            loads++;
        }
    }
    fp_say("dl: %u rounds, %u loads\n", n, loads);
    return 0;
}
