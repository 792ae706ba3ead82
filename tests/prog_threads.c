/* NTHREADS threads, each making argv[1] calls (malloc and free in turn) with sizes of its own;
 * prints each thread's tid and its count of calls. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "prog_util.h"

#define NTHREADS 4

typedef struct worker {
    int index;
    long calls;
    pid_t tid;
    long done;
} worker_t;

static void *work(void *arg)
{
    worker_t *w = arg;
    w->tid = gettid();
    for (long i = 0; i + 1 < w->calls; i += 2) {
        /* thread k allocates (k + 1) * 1000 + 0..6 bytes: its records can be told apart */
        void *p = malloc((size_t)(w->index + 1) * 1000 + (size_t)(i % 7));
        *(volatile char *)p = 1;
        free(p);
        w->done += 2;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const long calls = argc > 1 ? atol(argv[1]) : 1000;
    static worker_t w[NTHREADS];
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        w[i].index = i;
        w[i].calls = calls;
        if (pthread_create(&th[i], NULL, work, &w[i]) != 0)
            return 1;
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < NTHREADS; i++) {
        char key[32];
        snprintf(key, sizeof key, "tid%d", i);
        put(key, (uint64_t)w[i].tid);
        snprintf(key, sizeof key, "calls%d", i);
        put(key, (uint64_t)w[i].done);
    }
    flush_out();
    return 0;
}
