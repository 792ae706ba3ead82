/* A program with its own allocator linked in (as rustc links jemalloc): malloc, free and the rest
 * defined in the executable and exported (-rdynamic), so that they come before any preloaded
 * library's. A bump allocator over a static arena; free keeps nothing. Makes N blocks (argv[1]),
 * prints "made N". */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA (64u << 20)
static _Alignas(64) unsigned char arena[ARENA];
static size_t used;

/* Each block is preceded by its size, and starts 16-aligned (align: a power of two, 16 or more). */
static void *take(size_t n, size_t align)
{
    size_t at = (used + sizeof(size_t) + align - 1) & ~(align - 1);
    if (n > ARENA || at + n > ARENA) {
        errno = ENOMEM;
        return NULL;
    }
    ((size_t *)(void *)(arena + at))[-1] = n;
    used = at + n;
    return arena + at;
}

void *malloc(size_t n)
{
    return take(n, 16);
}

void free(void *p)
{
    (void)p;
}

void *calloc(size_t k, size_t n)
{
    if (n && k > SIZE_MAX / n)
        return NULL;
    return take(k * n, 16); /* the arena is zero and never reused */
}

void *realloc(void *p, size_t n)
{
    void *q = take(n, 16);
    if (p && q) {
        const size_t old = ((size_t *)p)[-1];
        memcpy(q, p, old < n ? old : n);
    }
    return q;
}

void *aligned_alloc(size_t align, size_t n)
{
    return take(n, align < 16 ? 16 : align);
}

void *memalign(size_t align, size_t n)
{
    return take(n, align < 16 ? 16 : align);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    void *p = take(n, align < 16 ? 16 : align);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

size_t malloc_usable_size(void *p)
{
    return p ? ((size_t *)p)[-1] : 0;
}

int main(int argc, char **argv)
{
    const long n = argc > 1 ? strtol(argv[1], NULL, 10) : 100;
    for (long i = 0; i < n; i++) {
        volatile char *p = malloc(32 + (size_t)i % 100);
        p[0] = 1;
        free((void *)p);
    }
    printf("made %ld\n", n);
    return 0;
}
