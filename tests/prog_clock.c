/* The recorder's clock policy at work (libmtrace/shim_clock.c): argv[1] malloc/free pairs of 100
 * bytes while the process has one thread, then a thread that makes as many of 200 bytes, then,
 * after joining it, as many of 300 bytes in the main thread. Prints "key value" lines. */
#include <pthread.h>
#include <stdlib.h>

#include "prog_util.h"

static long pairs;

static void churn(size_t size)
{
    for (long i = 0; i < pairs; i++) {
        char *p = malloc(size);
        *(volatile char *)p = 1;
        free(p);
    }
}

static void *second(void *arg)
{
    (void)arg;
    churn(200);
    return NULL;
}

int main(int argc, char **argv)
{
    pairs = argc > 1 ? atol(argv[1]) : 1000;
    churn(100);
    pthread_t th;
    if (pthread_create(&th, NULL, second, NULL) || pthread_join(th, NULL))
        return 1;
    churn(300);
    put("pairs", (uint64_t)pairs);
    flush_out();
    return 0;
}
