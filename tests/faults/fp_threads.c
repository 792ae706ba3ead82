/* Thread lifetimes under the shim.
 *
 *   fp_threads INFO churn NSHORT: two workers allocate and free without pause (worker k's i-th malloc
 *     is fp_seq_size(k, i) bytes, then the free of that block) while the main thread starts and joins
 *     NSHORT short-lived threads, eight at a time; short thread j calls malloc(60000 + j),
 *     calloc(3, 8 + j % 5), free of the calloc'd block, free of the malloc'd one, and exits. Then the
 *     workers stop. Info: "worker K TID ITERATIONS", "short J TID".
 *   fp_threads INFO many N: N threads alive at once: thread j calls malloc(20000 + j), waits on a
 *     barrier of all N, frees its block and exits. Info: "many J TID".
 *
 * stdout: a summary that does not depend on the run. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fp_util.h"

static atomic_int stop;

typedef struct worker {
    unsigned k;
    pid_t tid;
    uint64_t iterations;
} worker_t;

static void *churn_worker(void *arg)
{
    worker_t *w = arg;
    w->tid = gettid();
    uint64_t i = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        char *p = malloc(fp_seq_size(w->k, i));
        if (!p)
            abort();
        p[0] = 1;
        free(p);
        i++;
    }
    w->iterations = i;
    return NULL;
}

static void *short_thread(void *arg)
{
    const unsigned j = (unsigned)(uintptr_t)arg;
    fp_info("short %u %d", j, (int)gettid());
    char *p = malloc(60000 + j);
    char *q = calloc(3, 8 + j % 5);
    if (!p || !q)
        abort();
    p[0] = 1;
    free(q);
    free(p);
    return NULL;
}

static pthread_barrier_t all_alive;

static void *many_thread(void *arg)
{
    const unsigned j = (unsigned)(uintptr_t)arg;
    char *p = malloc(20000 + j);
    if (!p)
        abort();
    p[0] = 1;
    fp_info("many %u %d", j, (int)gettid());
    pthread_barrier_wait(&all_alive);
    free(p);
    return NULL;
}

static int churn(unsigned nshort)
{
    static worker_t w[2];
    pthread_t wt[2];
    for (unsigned k = 0; k < 2; k++) {
        w[k].k = k;
        if (pthread_create(&wt[k], NULL, churn_worker, &w[k]) != 0)
            return 1;
    }
    for (unsigned j = 0; j < nshort; j += 8) {
        pthread_t st[8];
        unsigned m = 0;
        for (; m < 8 && j + m < nshort; m++)
            if (pthread_create(&st[m], NULL, short_thread, (void *)(uintptr_t)(j + m)) != 0)
                return 1;
        for (unsigned x = 0; x < m; x++)
            pthread_join(st[x], NULL);
    }
    atomic_store(&stop, 1);
    for (unsigned k = 0; k < 2; k++) {
        pthread_join(wt[k], NULL);
        fp_info("worker %u %d %llu", k, (int)w[k].tid, (unsigned long long)w[k].iterations);
    }
    fp_say("churn: %u short threads, 2 workers\n", nshort);
    return 0;
}

static int many(unsigned n)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 128 * 1024);
    pthread_barrier_init(&all_alive, NULL, n);
    pthread_t *th = calloc(n, sizeof *th); /* one call, on the main thread */
    if (!th)
        return 1;
    for (unsigned j = 0; j < n; j++)
        if (pthread_create(&th[j], &attr, many_thread, (void *)(uintptr_t)j) != 0) {
            fp_say("pthread_create failed at thread %u\n", j);
            _exit(1); /* the others wait on the barrier for ever */
        }
    for (unsigned j = 0; j < n; j++)
        pthread_join(th[j], NULL);
    free(th);
    fp_say("many: %u threads alive at once\n", n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    fp_info_path = argv[1];
    const unsigned n = (unsigned)atoi(argv[3]);
    if (!strcmp(argv[2], "churn"))
        return churn(n);
    if (!strcmp(argv[2], "many"))
        return many(n);
    return 2;
}
