/* The replay process's own heap.
 *
 * mtrace-sim replays a program's calls against the allocator under test, which the replay driver
 * preloads. Everything else in the process that calls malloc would allocate from that allocator
 * too: the workload reader's tables (8 blocks), glibc's stdio, and the thread vector (DTV) that
 * pthread_create allocates for the RSS sampler. Those blocks sit in the allocator's heap before the
 * program's first call, where the program had none, and move everything after them. On an allocator
 * that places large blocks first-fit in large segments (mimalloc), that was enough to change the
 * replay's peak by up to 30 %: tests/prog_partial at six seeds, natively 92 to 125 MB, replayed
 * 17 % under to 30 % over; with the replay's own blocks kept out of the allocator, within 1.1 %
 * (bench/RESULTS.md, "The replay's own heap").
 *
 * An executable's definitions come before any preloaded library's, so mtrace-sim defines malloc and
 * its family here: every call that reaches these names is the process's own, served from memory it
 * maps for itself and counts as bookkeeping (sim_heap_resident_bytes), and the replay calls the
 * allocator's functions through the pointers sim_alloc_init() looks up past this executable
 * (RTLD_NEXT). Not built with a sanitizer, whose runtime defines malloc itself (meson.build).
 *
 * The calls the allocator itself makes by these names (one whose calloc calls its malloc by name,
 * not through an alias) go to the allocator, and so do the calls made before this executable's
 * constructor runs (libraries starting up: libstdc++'s emergency pool, which Debian's jemalloc and
 * tcmalloc bring), as they do in the program.
 *
 * A small allocator for the few hundred blocks the process makes: blocks aligned to 16 bytes behind a
 * 32-byte header; power-of-two classes of 32 bytes to 64 KiB carved from 1 MiB chunks and kept on
 * one free list per class; larger blocks, and alignments above 16, each mapped on its own. One lock.
 * A pointer that no region of this heap holds (a block an allocator made by another name, glibc's
 * valloc say, then freed through free) goes to the next definition of the function. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim.h"

#define HDR 32u
#define CHUNK ((size_t)1 << 20)
#define MIN_SHIFT 5u  /* the smallest class: 32 bytes, header included */
#define MAX_SHIFT 16u /* the largest: 64 KiB */
#define NCLASS (MAX_SHIFT - MIN_SHIFT + 1)
#define LARGE UINT32_MAX
#define MAGIC 0x6d746870u /* "mthp" */

typedef struct hdr {
    void *base;     /* a large block's mapping; on a free list, the next free block */
    size_t len;     /* a large block's mapping length */
    size_t cap;     /* bytes usable from the block's start */
    uint32_t cls;   /* class index, or LARGE */
    uint32_t magic; /* MAGIC: a mark for whoever reads a core dump */
} hdr_t;
_Static_assert(sizeof(hdr_t) == HDR, "the header keeps blocks 16-byte aligned");

typedef struct region {
    uintptr_t lo, hi;
} region_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static hdr_t *free_list[NCLASS];
static uint8_t *chunk_next, *chunk_end;
/* Every mapping of this heap, chunks and large blocks; the table is a mapping of its own. */
static region_t *regions;
static size_t nregions, cap_regions;

static size_t page_size(void)
{
    static size_t page;
    if (!page) {
        const long p = sysconf(_SC_PAGESIZE);
        page = p > 0 ? (size_t)p : 4096;
    }
    return page;
}

static void *map(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Under the lock. 0, or -1 when the table cannot grow (the mapping is then given back). */
static int add_region(void *p, size_t len)
{
    if (nregions == cap_regions) {
        const size_t cap = cap_regions ? cap_regions * 2 : page_size() / sizeof(region_t);
        region_t *n = map(cap * sizeof *n);
        if (!n)
            return -1;
        if (regions) {
            memcpy(n, regions, nregions * sizeof *n);
            munmap(regions, cap_regions * sizeof *n);
        }
        regions = n;
        cap_regions = cap;
    }
    regions[nregions++] = (region_t){ (uintptr_t)p, (uintptr_t)p + len };
    return 0;
}

/* Under the lock: the index of the region holding p, or -1. */
static long find_region(const void *p)
{
    for (size_t i = 0; i < nregions; i++)
        if ((uintptr_t)p >= regions[i].lo && (uintptr_t)p < regions[i].hi)
            return (long)i;
    return -1;
}

static hdr_t *header(void *p)
{
    return (hdr_t *)((uint8_t *)p - HDR);
}

/* A block of its own mapping, `align` (a power of two, at least 16) aligned. Under the lock. */
static void *large_block(size_t size, size_t align)
{
    const size_t page = page_size();
    if (size > SIZE_MAX / 2 - align - HDR - page) {
        errno = ENOMEM;
        return NULL;
    }
    const size_t len = (size + align + HDR + page - 1) & ~(page - 1);
    uint8_t *base = map(len);
    if (!base || add_region(base, len) < 0) {
        if (base)
            munmap(base, len);
        errno = ENOMEM;
        return NULL;
    }
    uint8_t *p = (uint8_t *)(((uintptr_t)base + HDR + align - 1) & ~(uintptr_t)(align - 1));
    *header(p) = (hdr_t){ .base = base, .len = len, .cap = (size_t)(base + len - p), .cls = LARGE, .magic = MAGIC };
    return p;
}

/* Under the lock. */
static void *small_block(size_t size)
{
    unsigned c = 0;
    while (((size_t)1 << (MIN_SHIFT + c)) - HDR < size)
        c++;
    hdr_t *h = free_list[c];
    if (h) {
        free_list[c] = h->base;
    } else {
        const size_t bytes = (size_t)1 << (MIN_SHIFT + c);
        if ((size_t)(chunk_end - chunk_next) < bytes) {
            uint8_t *chunk = map(CHUNK);
            if (!chunk || add_region(chunk, CHUNK) < 0) {
                if (chunk)
                    munmap(chunk, CHUNK);
                errno = ENOMEM;
                return NULL;
            }
            chunk_next = chunk; /* the old chunk's rest is left unused */
            chunk_end = chunk + CHUNK;
        }
        h = (hdr_t *)chunk_next;
        chunk_next += bytes;
    }
    *h = (hdr_t){ .cap = ((size_t)1 << (MIN_SHIFT + c)) - HDR, .cls = c, .magic = MAGIC };
    return (uint8_t *)h + HDR;
}

static void *heap_alloc(size_t size, size_t align)
{
    pthread_mutex_lock(&lock);
    void *p = align <= 16 && size <= ((size_t)1 << MAX_SHIFT) - HDR ? small_block(size) : large_block(size, align);
    pthread_mutex_unlock(&lock);
    return p;
}

/* 1 if p is this heap's (its capacity in *cap), 0 if not. */
static int ours(void *p, size_t *cap)
{
    pthread_mutex_lock(&lock);
    const int found = find_region(p) >= 0;
    if (found && cap)
        *cap = header(p)->cap;
    pthread_mutex_unlock(&lock);
    return found;
}

/* Set on a thread while dlsym runs for next(): dlsym may allocate, and free what an earlier call
 * left (its error string), through these very functions. Volatile: glibc declares dlsym a leaf
 * (it calls back into no caller's file), so gcc dropped the store around the call, and the
 * recursion it guards against overflowed the stack. */
static __thread volatile int resolving;

/* The next definition of `name` after this executable: the allocator's, or glibc's. NULL when
 * called from within that lookup: the caller then serves the call itself (an allocation) or leaves
 * the block (a free of a block this heap did not make, such as dlsym's error string in the
 * recorder's start-up pool). */
static void *next(const char *name, void *volatile *cache)
{
    void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (!f && !resolving) {
        resolving = 1;
        f = dlsym(RTLD_NEXT, name);
        resolving = 0;
        __atomic_store_n(cache, f, __ATOMIC_RELEASE);
    }
    return f;
}

/* The allocator's object (sim_heap_forward_from): calls from it go to the allocator. */
static uintptr_t fwd_lo, fwd_hi;

void sim_heap_forward_from(uintptr_t lo, uintptr_t hi)
{
    __atomic_store_n(&fwd_lo, lo, __ATOMIC_RELAXED);
    __atomic_store_n(&fwd_hi, hi, __ATOMIC_RELEASE);
}

/* Whether the call that returns to ra comes from the allocator's object. */
static inline int from_allocator(const void *ra)
{
    const uintptr_t hi = __atomic_load_n(&fwd_hi, __ATOMIC_ACQUIRE);
    return (uintptr_t)ra >= __atomic_load_n(&fwd_lo, __ATOMIC_RELAXED) && (uintptr_t)ra < hi;
}

/* 0 until this executable's constructor runs, which comes after every library's. The calls before
 * it come from the libraries' own start-up and go to the allocator, as they do in the program:
 * libstdc++, which Debian's jemalloc and tcmalloc bring, allocates its 72704-byte emergency pool
 * there, and on tcmalloc that block moved the program's peak by 5 MB when this heap took it. */
static int started;

__attribute__((constructor)) static void heap_start(void)
{
    __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
}

/* Before the start, or for a call from the allocator itself (ra: where it returns to): the
 * allocator's `name`. Else, or within the lookup: NULL, this heap serves the call. */
static void *early(const char *name, void *volatile *cache, const void *ra)
{
    return __atomic_load_n(&started, __ATOMIC_ACQUIRE) && !from_allocator(ra) ? NULL : next(name, cache);
}

void *malloc(size_t size)
{
    static void *volatile f;
    void *(*other)(size_t) = (void *(*)(size_t))early("malloc", &f, __builtin_return_address(0));
    return other ? other(size) : heap_alloc(size, 16);
}

void free(void *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&lock);
    const long r = find_region(p);
    if (r >= 0) {
        hdr_t *h = header(p);
        if (h->cls == LARGE) {
            regions[r] = regions[--nregions];
            munmap(h->base, h->len);
        } else {
            h->base = free_list[h->cls];
            free_list[h->cls] = h;
        }
    }
    pthread_mutex_unlock(&lock);
    if (r < 0) {
        static void *volatile f;
        void (*other)(void *) = (void (*)(void *))next("free", &f);
        if (other)
            other(p);
    }
}

void *calloc(size_t n, size_t size)
{
    static void *volatile f;
    void *(*other)(size_t, size_t) = (void *(*)(size_t, size_t))early("calloc", &f, __builtin_return_address(0));
    if (other)
        return other(n, size);
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = heap_alloc(bytes, 16); /* not malloc(): gcc makes malloc and memset a call to calloc */
    if (p)
        memset(p, 0, bytes);
    return p;
}

static void *volatile realloc_next;

void *realloc(void *p, size_t size)
{
    size_t cap;
    if (!p && !early("realloc", &realloc_next, __builtin_return_address(0)))
        return heap_alloc(size, 16);
    if (!p || !ours(p, &cap)) {
        void *(*other)(void *, size_t) = (void *(*)(void *, size_t))next("realloc", &realloc_next);
        return other ? other(p, size) : NULL;
    }
    if (size == 0) { /* glibc's realloc(p, 0): frees p, returns NULL */
        free(p);
        return NULL;
    }
    if (size <= cap)
        return p;
    void *n = malloc(size);
    if (n) {
        memcpy(n, p, cap);
        free(p);
    }
    return n;
}

void *reallocarray(void *p, size_t n, size_t size)
{
    static void *volatile f;
    void *(*other)(void *, size_t, size_t) =
        (void *(*)(void *, size_t, size_t))early("reallocarray", &f, __builtin_return_address(0));
    if (other)
        return other(p, n, size);
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, bytes);
}

int posix_memalign(void **out, size_t align, size_t size)
{
    static void *volatile f;
    int (*other)(void **, size_t, size_t) =
        (int (*)(void **, size_t, size_t))early("posix_memalign", &f, __builtin_return_address(0));
    if (other)
        return other(out, align, size);
    if (!align || (align & (align - 1)) || align % sizeof(void *))
        return EINVAL;
    const int saved = errno;
    void *p = heap_alloc(size, align < 16 ? 16 : align);
    const int e = errno;
    errno = saved;
    if (!p)
        return e;
    *out = p;
    return 0;
}

void *memalign(size_t align, size_t size)
{
    static void *volatile f;
    void *(*other)(size_t, size_t) = (void *(*)(size_t, size_t))early("memalign", &f, __builtin_return_address(0));
    if (other)
        return other(align, size);
    const size_t a = sim_memalign_alignment(align, 16);
    return a ? heap_alloc(size, a) : NULL;
}

void *aligned_alloc(size_t align, size_t size)
{
    static void *volatile f;
    void *(*other)(size_t, size_t) = (void *(*)(size_t, size_t))early("aligned_alloc", &f, __builtin_return_address(0));
    if (other)
        return other(align, size);
    return memalign(align, size);
}

void *valloc(size_t size)
{
    static void *volatile f;
    void *(*other)(size_t) = (void *(*)(size_t))early("valloc", &f, __builtin_return_address(0));
    if (other)
        return other(size);
    return heap_alloc(size, page_size());
}

void *pvalloc(size_t size)
{
    static void *volatile f;
    void *(*other)(size_t) = (void *(*)(size_t))early("pvalloc", &f, __builtin_return_address(0));
    if (other)
        return other(size);
    const size_t page = page_size();
    if (size > SIZE_MAX - (page - 1)) {
        errno = ENOMEM;
        return NULL;
    }
    return heap_alloc(size ? (size + page - 1) & ~(page - 1) : page, page);
}

size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    size_t cap;
    if (ours(p, &cap))
        return cap;
    static void *volatile f;
    size_t (*other)(void *) = (size_t(*)(void *))next("malloc_usable_size", &f);
    return other ? other(p) : 0;
}

uint64_t sim_heap_resident_bytes(int64_t (*resident)(const void *p, size_t len, void *arg), void *arg)
{
    uint64_t total = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nregions; i++) {
        const int64_t b = resident((const void *)regions[i].lo, regions[i].hi - regions[i].lo, arg);
        total += b > 0 ? (uint64_t)b : 0;
    }
    if (regions) {
        const int64_t b = resident(regions, cap_regions * sizeof *regions, arg);
        total += b > 0 ? (uint64_t)b : 0;
    }
    pthread_mutex_unlock(&lock);
    return total;
}
