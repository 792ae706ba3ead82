/* scatter_malloc: a test allocator, preloaded into mtrace-sim (mtrace replay --allocator PATH), that
 * spreads its blocks over more of the address space than the simulator's slot table has windows for.
 *
 * The slot table (simulator/sim_thread.c) stores a block's address as the index of its 512 MiB window
 * in a table of 62 and an offset; an address in a 63rd window is kept whole in slot_far. glibc,
 * jemalloc, tcmalloc and mimalloc keep their blocks in a few regions and never get there, so this
 * allocator gives every block a mapping of its own, placed round-robin in WINDOWS windows of 512 MiB.
 *
 * Each block carries a header, just before the pointer handed out, with a magic that depends on that
 * pointer: free, realloc and malloc_usable_size abort on any other pointer, so a replay that hands
 * back a wrongly decoded address dies of SIGABRT instead of going on quietly.
 *
 * Everything in the process allocates through it once preloaded, the dynamic loader and libc
 * included, from any thread and from inside libc's own locks: so no locks and no libc calls but
 * mmap, munmap and memcpy; the only shared state is atomic counters. The exported names never call
 * each other (a call from inside a module goes through the global scope, which is glibc's when the
 * module is dlopened by a test rather than preloaded), only the static helpers below.
 *
 * Built three ways (SCATTER_FUNCS, meson.build) for the tests of the simulator's emulation of what an
 * allocator does not define (test_sim_emulate.c): 2, every function (scatter_malloc.so); 1, without
 * valloc, pvalloc and reallocarray, as Debian's jemalloc lacks pvalloc and reallocarray
 * (partial_malloc.so); 0, only malloc, free, calloc, realloc and mallopt (basic_malloc.so). A glibc
 * block handed to one of those by a replay that called glibc's version aborts on its header. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000 /* Linux 4.17; an older kernel takes the address as a hint */
#endif

#define WINDOW_SHIFT 29 /* 512 MiB: the simulator's window */
#define WINDOW_BYTES ((uintptr_t)1 << WINDOW_SHIFT)
#define WINDOWS 80 /* more than the simulator's 62, so that some blocks are sure to fall outside them */
/* 32 TiB up: far from where the kernel puts the program, its libraries, the heap and the stacks */
#define WINDOW_BASE ((uintptr_t)0x200000000000)
#define MAGIC UINT64_C(0x5ca77e2ed0b10c5a)

#ifndef SCATTER_FUNCS
#define SCATTER_FUNCS 2
#endif

/* Just before each block. 16 bytes aligned, as every pointer handed out is (as glibc's are), so the
 * block starts right after it. */
typedef struct hdr {
    _Alignas(16) uint64_t magic; /* MAGIC ^ the block's address */
    size_t size;                 /* requested */
    void *map;                   /* the block's mapping */
    size_t map_len;
} hdr_t;

_Static_assert(sizeof(hdr_t) % 16 == 0, "the header keeps blocks 16-byte aligned");

static atomic_uint_fast64_t next_window;      /* round-robin over the windows */
static atomic_uintptr_t window_used[WINDOWS]; /* bytes placed in each window so far (never given back) */

static size_t page_size(void)
{
    static atomic_size_t page; /* every thread that finds it unset stores the same value */
    size_t v = atomic_load_explicit(&page, memory_order_relaxed);
    if (!v) {
        const unsigned long p = getauxval(AT_PAGESZ); /* no allocation, unlike some sysconf paths */
        v = p ? (size_t)p : 4096;
        atomic_store_explicit(&page, v, memory_order_relaxed);
    }
    return v;
}

/* A fresh mapping of `len` bytes (a multiple of the page), at the next window's next free address
 * if that is free, anywhere otherwise. NULL (errno set) if there is no memory. */
static void *map_block(size_t len)
{
    const unsigned w = (unsigned)(atomic_fetch_add_explicit(&next_window, 1, memory_order_relaxed) % WINDOWS);
    const uintptr_t off = atomic_fetch_add_explicit(&window_used[w], len, memory_order_relaxed);
    void *p = MAP_FAILED;
    if (off < WINDOW_BYTES && len <= WINDOW_BYTES - off) {
        void *const hint = (void *)(WINDOW_BASE + w * WINDOW_BYTES + off);
        /* NOREPLACE: something already there (another library's mapping) fails with EEXIST
         * instead of being silently unmapped, as MAP_FIXED would */
        p = mmap(hint, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    }
    if (p == MAP_FAILED)
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* A block of `size` bytes aligned to `align` (a power of two), zeroed (fresh anonymous pages). */
static void *block_alloc(size_t size, size_t align)
{
    const size_t page = page_size();
    if (align < 16)
        align = 16;
    /* room for the header, the padding up to the alignment and the block, in whole pages */
    const size_t extra = sizeof(hdr_t) + (align > 16 ? align : 0) + page;
    if (size > SIZE_MAX - extra) {
        errno = ENOMEM;
        return NULL;
    }
    const size_t len = (sizeof(hdr_t) + (align > 16 ? align : 0) + size + page - 1) & ~(page - 1);
    char *const map = map_block(len);
    if (!map) {
        errno = ENOMEM;
        return NULL;
    }
    const uintptr_t user = ((uintptr_t)map + sizeof(hdr_t) + align - 1) & ~(uintptr_t)(align - 1);
    hdr_t *const h = (hdr_t *)user - 1;
    h->magic = MAGIC ^ user;
    h->size = size;
    h->map = map;
    h->map_len = len;
    return (void *)user;
}

/* The header of a block handed out here; aborts for any other pointer. */
static hdr_t *block_hdr(void *p)
{
    hdr_t *const h = (hdr_t *)p - 1;
    if (((uintptr_t)p & 15) || h->magic != (MAGIC ^ (uintptr_t)p))
        abort();
    return h;
}

static void block_free(void *p)
{
    if (!p)
        return;
    hdr_t *const h = block_hdr(p);
    void *const map = h->map;
    const size_t len = h->map_len;
    h->magic = 0; /* a stale copy of the pointer no longer passes, should the range be mapped again */
    munmap(map, len);
}

#if SCATTER_FUNCS >= 1
static int pow2(size_t a)
{
    return a && !(a & (a - 1));
}
#endif

void *malloc(size_t size)
{
    return block_alloc(size, 16);
}

void free(void *p)
{
    block_free(p);
}

void *calloc(size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return block_alloc(bytes, 16); /* fresh anonymous pages are zero */
}

/* Always a new block, in the next window: a block that moves is what the tests want to see, and the
 * old pointer must be decoded right for its header to pass. realloc(p, 0) frees p, as glibc does. */
static void *block_realloc(void *p, size_t size)
{
    if (!p)
        return block_alloc(size, 16);
    const hdr_t *const h = block_hdr(p);
    if (size == 0) {
        block_free(p);
        return NULL;
    }
    void *const q = block_alloc(size, 16);
    if (!q)
        return NULL; /* p stays, as realloc promises */
    memcpy(q, p, h->size < size ? h->size : size);
    block_free(p);
    return q;
}

void *realloc(void *p, size_t size)
{
    return block_realloc(p, size);
}

#if SCATTER_FUNCS >= 2
void *reallocarray(void *p, size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return block_realloc(p, bytes);
}
#endif

#if SCATTER_FUNCS >= 1
void *memalign(size_t align, size_t size)
{
    /* glibc rounds an alignment that is not a power of two up to one */
    size_t a = 16;
    while (a < align && a <= SIZE_MAX / 2)
        a <<= 1;
    if (a < align) {
        errno = EINVAL;
        return NULL;
    }
    return block_alloc(size, a);
}

int posix_memalign(void **out, size_t align, size_t size)
{
    if (!pow2(align) || align % sizeof(void *))
        return EINVAL;
    const int saved = errno; /* posix_memalign reports through its result, not errno */
    void *const p = block_alloc(size, align);
    errno = saved;
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *aligned_alloc(size_t align, size_t size)
{
    if (!pow2(align)) {
        errno = EINVAL;
        return NULL;
    }
    return block_alloc(size, align);
}
#endif

#if SCATTER_FUNCS >= 2
void *valloc(size_t size)
{
    return block_alloc(size, page_size());
}

void *pvalloc(size_t size)
{
    const size_t page = page_size();
    if (size > SIZE_MAX - page) {
        errno = ENOMEM;
        return NULL;
    }
    return block_alloc(size ? (size + page - 1) & ~(page - 1) : page, page);
}
#endif

#if SCATTER_FUNCS >= 1
size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    const hdr_t *const h = block_hdr(p);
    return (size_t)((char *)h->map + h->map_len - (char *)p);
}
#endif

/* Nothing to tune: every setting is accepted and ignored, so a workload's mallopt calls and
 * mtrace-sim --mallopt do not warn. */
int mallopt(int param, int value)
{
    (void)param;
    (void)value;
    return 1;
}
