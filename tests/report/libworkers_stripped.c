/* See libworkers_stripped.h. Built with -fvisibility=hidden and linked with --strip-all: only the
 * exported entry keeps a name (in .dynsym); the static function that calls malloc has none. */
#include <stdlib.h>

#include "libworkers_stripped.h"

__attribute__((noinline)) static void *unnamed_alloc(size_t n)
{
    void *p = malloc(n);
    __asm__ volatile("" ::: "memory"); /* the call is not a tail call: its return address stays here */
    return p;
}

__attribute__((visibility("default"))) void *workers_stripped_alloc(size_t n)
{
    return unnamed_alloc(n);
}
