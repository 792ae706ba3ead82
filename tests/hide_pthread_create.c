/* Preloaded after libmtrace.so: the shim's dlsym calls reach this dlsym first. It answers NULL for
 * "pthread_create" (HIDE_PTHREAD_CREATE=once: the first time only, as when glibc before 2.34 had it
 * in libpthread and the program loaded that later; =always: every time) and passes every other
 * lookup to the real dlsym. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

void *dlsym(void *handle, const char *name)
{
    static void *(*real)(void *, const char *);
    static int hidden;
    if (!real) {
        /* glibc 2.34 moved dlsym into libc under this version; older ones have it in libdl. */
        void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (!p)
            p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
        if (!p)
            abort();
        memcpy(&real, &p, sizeof real);
    }
    const char *mode = getenv("HIDE_PTHREAD_CREATE");
    if (mode && strcmp(name, "pthread_create") == 0 && (strcmp(mode, "always") == 0 || !hidden++))
        return NULL;
    return real(handle, name);
}
