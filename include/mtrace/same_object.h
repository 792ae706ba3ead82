/* "The allocator's own function, or none": the recorder and the simulator forward a call to the
 * allocator only when the function comes from the object that defines malloc; a function of that
 * name from another object (glibc's memalign under jemalloc, say) would work on blocks it does not
 * own, so the caller emulates it with the allocator's own functions instead. */
#ifndef MTRACE_SAME_OBJECT_H
#define MTRACE_SAME_OBJECT_H

#include <dlfcn.h>

/* `name` looked up through `handle` (RTLD_NEXT, RTLD_DEFAULT), if the object loaded at `base`
 * (malloc's, from dladdr) defines it; else NULL. */
static inline void *mt_sym_in_object(void *handle, const char *name, const void *base)
{
    void *const f = dlsym(handle, name);
    Dl_info info;
    if (!f || !dladdr(f, &info) || info.dli_fbase != base)
        return NULL;
    return f;
}

#endif
