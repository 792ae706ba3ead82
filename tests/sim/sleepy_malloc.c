/* sleepy_malloc.so: glibc's allocator, except that every 50th malloc of SLEEPY_SIZE bytes sleeps 5 ms
 * first, as a call would take whose thread the scheduler put off its CPU. For the test that the
 * replay's average call time leaves such calls out (test_sim_summary.c). */
#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

#define SLEEPY_SIZE 4321
#define SLEEPY_EVERY 50

void *__libc_malloc(size_t);
void __libc_free(void *);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);

void *malloc(size_t size);
void free(void *p);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t size);

static atomic_uint sleepy_calls;

void *malloc(size_t size)
{
    if (size == SLEEPY_SIZE && atomic_fetch_add(&sleepy_calls, 1) % SLEEPY_EVERY == SLEEPY_EVERY - 1) {
        const struct timespec ts = { 0, 5000000 };
        nanosleep(&ts, NULL);
    }
    return __libc_malloc(size);
}

void free(void *p)
{
    __libc_free(p);
}

void *calloc(size_t n, size_t size)
{
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    return __libc_realloc(p, size);
}
