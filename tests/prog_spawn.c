/* Creates argv[1] threads, four at a time; each allocates small blocks at once and fills them, as a
 * worker that starts on a task would: memory the shim's thread start-up freed in the new thread
 * gets reused and overwritten right away (the shim once read it in the creator afterwards, and
 * named a thread 0x01010101 in its THREAD_CREATE). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "prog_util.h"

static void *work(void *arg)
{
    (void)arg;
    void *keep[8];
    for (int i = 0; i < 8; i++) {
        keep[i] = malloc(24);
        memset(keep[i], 0xab, 24);
    }
    for (int i = 0; i < 8; i++)
        free(keep[i]);
    return NULL;
}

int main(int argc, char **argv)
{
    const long n = argc > 1 ? atol(argv[1]) : 400;
    for (long k = 0; k < n; k += 4) {
        pthread_t th[4];
        for (int i = 0; i < 4; i++)
            if (pthread_create(&th[i], NULL, work, NULL) != 0)
                return 1;
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
    }
    put("threads", (uint64_t)(n + 3) / 4 * 4);
    flush_out();
    return 0;
}
