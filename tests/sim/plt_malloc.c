/* A preloadable allocator that calls its own functions by name, through the PLT, as a small
 * allocator built without aliases does: calloc is its malloc and memset, realloc its malloc, memcpy
 * and free, and its malloc and free are glibc's (__libc_malloc, __libc_free), which abort on a block
 * they did not make. In mtrace-sim those calls by name reach mtrace-sim's own malloc first
 * (simulator/sim_heap.c), which must hand them to this library: otherwise a calloc'd block comes
 * from mtrace-sim's heap and this library's free aborts on it (test sim-plt-allocator). */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <string.h>

void *__libc_malloc(size_t);
void __libc_free(void *);
void *malloc(size_t size);
void free(void *p);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t size);

void *malloc(size_t size)
{
    return __libc_malloc(size);
}

void free(void *p)
{
    __libc_free(p);
}

void *calloc(size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = malloc(bytes); /* by name: through the PLT */
    if (p)
        memset(p, 0, bytes);
    return p;
}

void *realloc(void *p, size_t size)
{
    if (!p)
        return malloc(size);
    if (!size) {
        free(p);
        return NULL;
    }
    void *q = malloc(size);
    if (q) {
        const size_t old = malloc_usable_size(p);
        memcpy(q, p, old < size ? old : size);
        free(p);
    }
    return q;
}
