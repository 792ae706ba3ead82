/* The allocator under test: which of the workload's functions it defines, and emulations of those it
 * does not.
 *
 * A preloaded allocator replaces the functions it defines and nothing else: a call to one it lacks
 * binds to glibc's. glibc's pvalloc, valloc and the memalign family allocate from glibc's own heap
 * (Debian's jemalloc has no pvalloc: the replay's free then crashed in jemalloc), and glibc's
 * malloc_usable_size reads a chunk header the allocator never wrote. So each such function is
 * emulated with those the allocator does define: the aligned allocations from whichever of
 * posix_memalign, memalign and aligned_alloc it has, reallocarray as an overflow check and realloc
 * (what glibc's does too, through the interposed realloc; emulated all the same, so that the result
 * says the allocator lacks it: jemalloc and tcmalloc do). malloc_usable_size, which has nothing to be
 * built from, is not called at all. A function counts as the allocator's when the object that
 * defines malloc defines it too (glibc defines them all). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mtrace/same_object.h"
#include "sim.h"

/* The allocator's own aligned allocations, for the emulations (set once, before the replay). */
static int (*own_posix_memalign)(void **, size_t, size_t);
static void *(*own_memalign)(size_t, size_t);
static void *(*own_aligned_alloc)(size_t, size_t);
static void *(*own_realloc)(void *, size_t);
static size_t page_bytes;

/* A block of `size` bytes aligned to `align` (a power of two, at least sizeof(void *)). */
static void *aligned_block(size_t align, size_t size)
{
    if (own_posix_memalign) {
        void *p;
        const int e = own_posix_memalign(&p, align, size);
        if (e) {
            errno = e;
            return NULL;
        }
        return p;
    }
    if (own_memalign)
        return own_memalign(align, size);
    if (own_aligned_alloc) {
        /* C11 asked for a size that is a multiple of the alignment; some allocators still do */
        if (size > SIZE_MAX - (align - 1)) {
            errno = ENOMEM;
            return NULL;
        }
        return own_aligned_alloc(align, (size + align - 1) & ~(align - 1));
    }
    errno = ENOSYS; /* sim_alloc_t.unsupported: the replay reports it */
    return NULL;
}

static void *emu_memalign(size_t align, size_t size)
{
    const size_t a = sim_memalign_alignment(align, sizeof(void *));
    return a ? aligned_block(a, size) : NULL;
}

static int emu_posix_memalign(void **out, size_t align, size_t size)
{
    if (!align || (align & (align - 1)) || align % sizeof(void *))
        return EINVAL;
    const int saved = errno; /* it reports through its result, not errno */
    void *const p = aligned_block(align, size);
    const int e = errno;
    errno = saved;
    if (!p)
        return e == ENOSYS ? ENOSYS : ENOMEM;
    *out = p;
    return 0;
}

static void *emu_valloc(size_t size)
{
    return aligned_block(page_bytes, size);
}

/* pvalloc: the size rounded up to whole pages, 0 to one page. */
static void *emu_pvalloc(size_t size)
{
    if (size > SIZE_MAX - (page_bytes - 1)) {
        errno = ENOMEM;
        return NULL;
    }
    const size_t rounded = size ? (size + page_bytes - 1) & ~(page_bytes - 1) : page_bytes;
    return aligned_block(page_bytes, rounded);
}

static void *emu_reallocarray(void *p, size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return own_realloc(p, bytes);
}

static size_t emu_usable_size(void *p)
{
    (void)p;
    return 0;
}

/* The function `name` if the object at `base` (malloc's) defines it, else NULL. Looked up past
 * this executable (RTLD_NEXT): mtrace-sim defines malloc and its family for its own blocks
 * (sim_heap.c), the allocator's come after it. */
static void *own(const void *base, const char *name)
{
    return mt_sym_in_object(RTLD_NEXT, name, base);
}

typedef struct find_lib {
    dev_t dev;
    ino_t ino;
    int found;
} find_lib_t;

static int match_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    find_lib_t *const f = arg;
    struct stat st;
    if (info->dlpi_name && info->dlpi_name[0] && stat(info->dlpi_name, &st) == 0 && st.st_dev == f->dev &&
        st.st_ino == f->ino)
        f->found = 1;
    return f->found;
}

int sim_alloc_init(sim_alloc_t *a, const char *lib, char *why, size_t why_cap)
{
    memset(a, 0, sizeof *a);
    void *const m = dlsym(RTLD_NEXT, "malloc");
    Dl_info mi;
    if (!m || !dladdr(m, &mi) || !mi.dli_fname) {
        snprintf(why, why_cap, "cannot tell which library defines malloc");
        return -1;
    }
    snprintf(a->lib, sizeof a->lib, "%s", mi.dli_fname);
    /* An allocator that calls its own malloc by name (calloc as malloc and memset, say) binds that
     * call to mtrace-sim's, which comes first (sim_heap.c): its calls go to it instead. Not glibc's,
     * whose calls by name are its stdio's and the like, the process's own. */
    Dl_info gi;
    uintptr_t lo, hi;
    if (sim_heap_forward_from && dladdr((void *)gnu_get_libc_version, &gi) && gi.dli_fbase != mi.dli_fbase &&
        sim_object_range(m, &lo, &hi) == 0)
        sim_heap_forward_from(lo, hi);
    const char *const who = lib ? lib : mi.dli_fname;
    if (lib) {
        /* By file identity: the loader names a preloaded library as it was given, a path to it may
         * differ (a symlink, a relative path). */
        struct stat want, got;
        if (stat(lib, &want) < 0) {
            snprintf(why, why_cap, "%s: %s", lib, strerror(errno));
            return -1;
        }
        find_lib_t f = { .dev = want.st_dev, .ino = want.st_ino };
        dl_iterate_phdr(match_object, &f);
        if (!f.found) {
            snprintf(why, why_cap, "%s cannot be loaded as an allocator: the dynamic loader did not load it", lib);
            return -1;
        }
        if (stat(mi.dli_fname, &got) < 0 || got.st_dev != want.st_dev || got.st_ino != want.st_ino) {
            snprintf(why, why_cap, "%s does not define malloc (malloc comes from %s): it is not an allocator", lib,
                     mi.dli_fname);
            return -1;
        }
    }
    static const char *const required[] = { "free", "calloc", "realloc" };
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!own(mi.dli_fbase, required[i])) {
            snprintf(why, why_cap,
                     "%s does not define %s: an allocator that replaces malloc must define malloc, free, calloc and "
                     "realloc",
                     who, required[i]);
            return -1;
        }
    a->malloc = (void *(*)(size_t))m;
    a->free = (void (*)(void *))own(mi.dli_fbase, "free");
    a->calloc = (void *(*)(size_t, size_t))own(mi.dli_fbase, "calloc");
    a->realloc = own_realloc = (void *(*)(void *, size_t))own(mi.dli_fbase, "realloc");
    own_posix_memalign = (int (*)(void **, size_t, size_t))own(mi.dli_fbase, "posix_memalign");
    own_memalign = (void *(*)(size_t, size_t))own(mi.dli_fbase, "memalign");
    own_aligned_alloc = (void *(*)(size_t, size_t))own(mi.dli_fbase, "aligned_alloc");
    const long page = sysconf(_SC_PAGESIZE);
    page_bytes = page > 0 ? (size_t)page : 4096;

    /* Each function: the allocator's own, or the emulation (and its op marked emulated). */
#define PICK(field, name, op, emu)                                                                                     \
    do {                                                                                                               \
        a->field = (__typeof__(a->field))own(mi.dli_fbase, name);                                                      \
        if (!a->field) {                                                                                               \
            a->field = emu;                                                                                            \
            a->emulated |= 1u << (op);                                                                                 \
        }                                                                                                              \
    } while (0)
    PICK(memalign, "memalign", MT_WL_MEMALIGN, emu_memalign);
    PICK(posix_memalign, "posix_memalign", MT_WL_POSIX_MEMALIGN, emu_posix_memalign);
    PICK(aligned_alloc, "aligned_alloc", MT_WL_ALIGNED_ALLOC, emu_memalign);
    PICK(valloc, "valloc", MT_WL_VALLOC, emu_valloc);
    PICK(pvalloc, "pvalloc", MT_WL_PVALLOC, emu_pvalloc);
    PICK(reallocarray, "reallocarray", MT_WL_REALLOCARRAY, emu_reallocarray);
    /* Called as the overflow check and the allocator's realloc in every case, its own or not (the
     * emulated bit above still says whether it has one): glibc's reallocarray calls realloc by name,
     * which in mtrace-sim is the process's own heap's (sim_heap.c), and the block it returned was
     * then freed by glibc ("double free or corruption"). */
    a->reallocarray = emu_reallocarray;
    PICK(usable_size, "malloc_usable_size", MT_WL_USABLE_SIZE, emu_usable_size);
#undef PICK
    a->has_mallopt = own(mi.dli_fbase, "mallopt") != NULL;
    if (!own_posix_memalign && !own_memalign && !own_aligned_alloc)
        a->unsupported = 1u << MT_WL_MEMALIGN | 1u << MT_WL_POSIX_MEMALIGN | 1u << MT_WL_ALIGNED_ALLOC |
                         1u << MT_WL_VALLOC | 1u << MT_WL_PVALLOC;
    return 0;
}
