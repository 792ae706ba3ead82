/* For the SIGKILL tests: NTHREADS workers allocate and free for ever, worker k's i-th malloc of
 * fp_seq_size(k, i) bytes followed by the free of that block. Each worker first writes "tid K TID",
 * then "done K N" every 256 iterations (N iterations finished, malloc and free both returned), on
 * stdout, one write(2) per line. The main thread writes "ready" once every worker has started and
 * waits to be killed.
 *   usage: fp_kill NTHREADS */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "fp_util.h"

static pthread_barrier_t started;

static void *worker(void *arg)
{
    const unsigned k = (unsigned)(uintptr_t)arg;
    char line[64];
    snprintf(line, sizeof line, "tid %u %d\n", k, (int)gettid());
    fp_write(STDOUT_FILENO, line);
    pthread_barrier_wait(&started);
    for (uint64_t i = 0;; i++) {
        char *p = malloc(fp_seq_size(k, i));
        if (!p)
            abort();
        p[0] = (char)i;
        free(p);
        if (i % 256 == 255) {
            snprintf(line, sizeof line, "done %u %llu\n", k, (unsigned long long)i + 1);
            fp_write(STDOUT_FILENO, line);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 1;
    if (n < 1 || n > 16)
        return 2;
    pthread_barrier_init(&started, NULL, n + 1);
    for (unsigned k = 0; k < n; k++) {
        pthread_t th;
        if (pthread_create(&th, NULL, worker, (void *)(uintptr_t)k) != 0)
            return 1;
    }
    pthread_barrier_wait(&started);
    fp_write(STDOUT_FILENO, "ready\n");
    for (;;)
        pause();
}
