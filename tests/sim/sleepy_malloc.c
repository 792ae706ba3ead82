/* sleepy_malloc.so: glibc's allocator, except that every 50th malloc of SLEEPY_SIZE bytes sleeps 5 ms
 * first, as a call would take whose thread the scheduler put off its CPU, and every malloc of
 * BUSY_SIZE bytes works BUSY_NS of CPU time first, as a slow allocator would. For the tests that
 * the replay's average call time leaves the sleeping calls out, and that its own cost per op leaves
 * the allocator's time out (test_sim_summary.c). */
#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

#define SLEEPY_SIZE 4321
#define SLEEPY_EVERY 50
#define BUSY_SIZE 1234
#define BUSY_NS 20000

void *__libc_malloc(size_t);
void __libc_free(void *);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);

void *malloc(size_t size);
void free(void *p);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t size);

static atomic_uint sleepy_calls;

static long long thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void *malloc(size_t size)
{
    if (size == BUSY_SIZE)
        for (const long long t0 = thread_cpu_ns(); thread_cpu_ns() - t0 < BUSY_NS;)
            ;
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
