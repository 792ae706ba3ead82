/* Stacks of many shapes, for the shim's frame walker (libmtrace/shim_stacks.c): each probe calls
 * unw_backtrace and then malloc from the same function, so that the stack the shim records for the
 * malloc has the frames unw_backtrace gives past the first (which is the return address of the
 * unw_backtrace call, where the record's first is that of the malloc call). Shapes: plain recursion
 * to 0..79 frames (past any MTRACE_STACKS and its cut), recursion through frames whose CFA is RBP
 * (alloca), a frame that realigns the stack (a DWARF expression: libunwind's own walk), calls back
 * from libc (qsort, bsearch), a signal handler (a signal frame), another thread, and recursion
 * through every one of these at once.
 *
 * Every probe mallocs a size of its own (PROBE_BASE + its number) and frees the block. Info: one
 * line a probe, "probe SIZE M F1 ... F(M-1)": the frames unw_backtrace gave, in hex, but the first
 * (M at most 80, and then there may have been more). stdout: the number of probes.
 *   usage: fp_stackwalk INFO */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <fcntl.h>
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROBE_BASE 70000
#define FRAMES_MAX 80

static int info_fd = -1;
static unsigned probes;
static volatile unsigned sink;

static __attribute__((noinline)) void probe(void)
{
    void *f[FRAMES_MAX];
    const int m = unw_backtrace(f, FRAMES_MAX);
    const size_t size = PROBE_BASE + probes++;
    void *b = malloc(size);
    if (!b)
        abort();
    free(b);
    if (info_fd < 0)
        return;
    static char line[64 + FRAMES_MAX * 20]; /* handlers probe only while the main thread waits */
    int len = snprintf(line, sizeof line, "probe %zu %d", size, m);
    for (int i = 1; i < m; i++)
        len += snprintf(line + len, sizeof line - (size_t)len, " %lx", (unsigned long)(uintptr_t)f[i]);
    line[len++] = '\n';
    if (write(info_fd, line, (size_t)len) != len)
        abort();
}

/* Plain recursion: CFA = RSP + a constant in each frame. */
static __attribute__((noinline)) void down(int depth)
{
    if (depth <= 0)
        probe();
    else
        down(depth - 1);
    sink++; /* not a tail call */
}

/* Recursion through frames of a size set at run time: the CFA is RBP + 16 in each. */
static __attribute__((noinline)) void down_alloca(int depth)
{
    volatile char *a = __builtin_alloca((size_t)depth * 16 + 8);
    a[0] = (char)depth;
    if (depth <= 0)
        probe();
    else
        down_alloca(depth - 1);
    sink += a[0];
}

/* A frame that realigns the stack pointer: its CFA is a DWARF expression. */
static __attribute__((noinline)) void realigned(void (*then)(void))
{
    char buf[64] __attribute__((aligned(64)));
    memset(buf, (int)sink, sizeof buf);
    __asm__ volatile("" : : "r"(buf) : "memory");
    then();
    sink += (unsigned)buf[3];
}

static int probes_in_compare;

static int compare(const void *a, const void *b)
{
    if (probes_in_compare > 0) {
        probes_in_compare--;
        probe();
    }
    return *(const int *)a - *(const int *)b;
}

static __attribute__((noinline)) void from_libc(void)
{
    int v[16];
    for (int i = 0; i < 16; i++)
        v[i] = (i * 7) % 16;
    probes_in_compare = 2;
    qsort(v, 16, sizeof v[0], compare);
    probes_in_compare = 1;
    const int key = 5;
    if (!bsearch(&key, v, 16, sizeof v[0], compare))
        abort();
}

static void handler(int sig)
{
    (void)sig;
    probe();
    down(3);
}

static __attribute__((noinline)) void from_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0 || raise(SIGUSR1) != 0)
        abort();
}

static void *thread_main(void *arg)
{
    (void)arg;
    probe();
    down(5);
    down_alloca(5);
    return NULL;
}

/* Everything at once: depth frames of each kind in turn, then the probe through each. */
static void mixed_probe(void)
{
    probe();
    from_libc();
    from_handler();
}

static __attribute__((noinline)) void mixed(int depth)
{
    if (depth <= 0)
        realigned(mixed_probe);
    else if (depth % 3 == 0)
        down_alloca(0), mixed(depth - 1);
    else if (depth % 3 == 1)
        realigned(probe), mixed(depth - 1);
    else
        mixed(depth - 1);
    sink++;
}

int main(int argc, char **argv)
{
    if (argc > 1 && argv[1][0])
        info_fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    for (int d = 0; d < FRAMES_MAX; d++)
        down(d);
    for (int d = 0; d < 70; d += 3)
        down_alloca(d);
    realigned(probe);
    from_libc();
    from_handler();
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, NULL) != 0 || pthread_join(t, NULL) != 0)
        abort();
    for (int d = 0; d < 12; d++)
        mixed(d);
    printf("stackwalk: %u probes\n", probes);
    return 0;
}
