/* The functions libmtrace.so forwards to, in one table (mt_g.real): the allocator's, found after ours
 * in the lookup order and used only when they come from the object that defines malloc (else
 * emulated with those that do), and the process functions the shim wraps. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "mtrace/same_object.h"
#include "shim.h"

/* Emulations used when the next allocator lacks an entry point that libc provides: calling libc's
 * version would hand a foreign block to glibc's allocator. */
static void *emu_memalign(size_t align, size_t size)
{
    void *p = NULL;
    return mt_g.real.posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size) ? NULL : p;
}

static void *emu_aligned_alloc(size_t align, size_t size)
{
    return mt_g.real.memalign(align, size);
}

static void *emu_valloc(size_t size)
{
    return mt_g.real.memalign((size_t)sysconf(_SC_PAGESIZE), size);
}

static void *emu_pvalloc(size_t size)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return mt_g.real.memalign(page, (size + page - 1) & ~(page - 1));
}

static void *emu_reallocarray(void *p, size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return mt_g.real.realloc(p, bytes);
}

static size_t emu_usable_size(void *p)
{
    (void)p;
    return 0;
}

/* Resolves `name` in the objects after ours; NULL unless it comes from the same object as malloc. */
static void *resolve_same(const char *name, const void *malloc_base)
{
    return mt_sym_in_object(RTLD_NEXT, name, malloc_base);
}

void mt_resolve_real(void)
{
    mt_real_api_t *r = &mt_g.real;
    void *(*m)(size_t) = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    Dl_info info;
    const void *base = (m && dladdr((void *)m, &info)) ? info.dli_fbase : NULL;
    r->free = (void (*)(void *))resolve_same("free", base);
    r->calloc = (void *(*)(size_t, size_t))resolve_same("calloc", base);
    r->realloc = (void *(*)(void *, size_t))resolve_same("realloc", base);
    r->posix_memalign = (int (*)(void **, size_t, size_t))resolve_same("posix_memalign", base);
    r->memalign = (void *(*)(size_t, size_t))resolve_same("memalign", base);
    r->aligned_alloc = (void *(*)(size_t, size_t))resolve_same("aligned_alloc", base);
    r->valloc = (void *(*)(size_t))resolve_same("valloc", base);
    r->pvalloc = (void *(*)(size_t))resolve_same("pvalloc", base);
    /* Not the allocator's reallocarray: glibc's calls realloc through the PLT, that is our realloc,
     * and the call would be recorded twice. emu_reallocarray does what glibc's does. */
    r->reallocarray = NULL;
    r->malloc_usable_size = (size_t(*)(void *))resolve_same("malloc_usable_size", base);
    r->mallopt = (int (*)(int, int))dlsym(RTLD_NEXT, "mallopt");
    r->malloc_trim = (int (*)(size_t))dlsym(RTLD_NEXT, "malloc_trim");
    if (!m || !r->free || !r->calloc || !r->realloc)
        abort(); /* no allocator to forward to: the program could not run without us either */
    if (!r->memalign)
        r->memalign = emu_memalign;
    if (!r->aligned_alloc)
        r->aligned_alloc = emu_aligned_alloc;
    if (!r->valloc)
        r->valloc = emu_valloc;
    if (!r->pvalloc)
        r->pvalloc = emu_pvalloc;
    if (!r->reallocarray)
        r->reallocarray = emu_reallocarray;
    if (!r->malloc_usable_size)
        r->malloc_usable_size = emu_usable_size;
    /* glibc's chunk headers and brk are only ours to read when glibc's malloc answers: malloc comes
     * from libc itself. Not __libc_malloc: tcmalloc (and jemalloc, mimalloc when built so) define it
     * too, and their blocks have no glibc chunk header before them. */
    void *libc_sym = dlsym(RTLD_DEFAULT, "gnu_get_libc_version");
    Dl_info li;
    mt_g.glibc = libc_sym && dladdr(libc_sym, &li) && li.dli_fbase == base &&
                 !dlsym(RTLD_DEFAULT, "__malloc_debug_enable_mcheck");
    mt_g.alloc_base = base;
    r->mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
    r->munmap = (int (*)(void *, size_t))dlsym(RTLD_NEXT, "munmap");
    r->mremap = (void *(*)(void *, size_t, size_t, int, ...))dlsym(RTLD_NEXT, "mremap");
    r->madvise = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "madvise");
    r->fork = (pid_t(*)(void))dlsym(RTLD_NEXT, "fork");
    r->execve = (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT, "execve");
    r->execv = (int (*)(const char *, char *const[]))dlsym(RTLD_NEXT, "execv");
    r->execvp = (int (*)(const char *, char *const[]))dlsym(RTLD_NEXT, "execvp");
    r->execvpe = (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT, "execvpe");
    r->fexecve = (int (*)(int, char *const[], char *const[]))dlsym(RTLD_NEXT, "fexecve");
    r->execveat = (int (*)(int, const char *, char *const[], char *const[], int))dlsym(RTLD_NEXT, "execveat");
    r->pthread_create = (mt_pthread_create_fn_t)dlsym(RTLD_NEXT, "pthread_create");
    r->exit_ = (mt_exit_fn_t)dlsym(RTLD_NEXT, "_exit");
    r->Exit_ = (mt_exit_fn_t)dlsym(RTLD_NEXT, "_Exit");
    r->dlclose = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
    /* Published last: a thread that sees malloc set sees everything else. */
    atomic_store((_Atomic(void *) *)&r->malloc, (void *)m);
}
