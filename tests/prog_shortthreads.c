/* Creates and joins argv[1] threads (2000 without it), one at a time; each makes argv[2] calls (100
 * without it), malloc and free in turn, of a few hundred bytes it writes, as a short-lived worker
 * would. Prints its own peak RSS (VmHWM): the recorder must give back what it kept for a thread
 * once the thread has exited, so the traced peak stays that of one thread, not of all of them. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "prog_util.h"

static long calls_per_thread = 100;

static void *work(void *arg)
{
    const uintptr_t k = (uintptr_t)arg;
    for (long i = 0; i + 1 < calls_per_thread; i += 2) {
        const size_t size = 64 + (size_t)((k * 7 + (uintptr_t)i) % 448);
        char *p = malloc(size);
        if (!p)
            return (void *)1;
        memset(p, 0x5a, size);
        free(p);
    }
    return NULL;
}

static uint64_t peak_rss_kb(void)
{
    char buf[4096];
    FILE *f = fopen("/proc/self/status", "r");
    uint64_t kb = 0;
    if (!f)
        return 0;
    while (fgets(buf, sizeof buf, f)) {
        unsigned long long v;
        if (sscanf(buf, "VmHWM: %llu kB", &v) == 1)
            kb = v;
    }
    fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    const long n = argc > 1 ? atol(argv[1]) : 2000;
    if (argc > 2)
        calls_per_thread = atol(argv[2]);
    long failed = 0;
    for (long k = 0; k < n; k++) {
        pthread_t th;
        void *ret;
        if (pthread_create(&th, NULL, work, (void *)(uintptr_t)k) != 0)
            return 1;
        pthread_join(th, &ret);
        failed += ret != NULL;
    }
    put("threads", (uint64_t)n);
    put("failed", (uint64_t)failed);
    put("peak_rss_kb", peak_rss_kb());
    flush_out();
    return failed != 0;
}
