/* malloc_trim between two phases in two threads, as a program with a garbage collector calls it
 * after a collection: the main thread makes 48 MiB of 1 KiB blocks, keeping a small block after
 * every 64th so that the heap's top cannot shrink, and frees the 1 KiB ones; with the argument
 * "trim" it then calls malloc_trim(0), which gives the free pages inside the heap back (glibc). A
 * second thread then makes 48 MiB of 1 KiB blocks in its own arena, writes and frees them. Peak
 * RSS: about 48 MiB with the trim, 96 MiB without. Prints "trim RC". */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 1024
#define BLOCKS (48 * 1024)

static void *phase(void *arg)
{
    (void)arg;
    void **v = malloc(BLOCKS * sizeof *v);
    if (!v)
        abort();
    for (int i = 0; i < BLOCKS; i++) {
        v[i] = malloc(BLOCK);
        if (!v[i])
            abort();
        memset(v[i], i, BLOCK);
    }
    for (int i = 0; i < BLOCKS; i++)
        free(v[i]);
    free(v);
    return NULL;
}

int main(int argc, char **argv)
{
    static void *pins[BLOCKS / 64], *blocks[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) {
        blocks[i] = malloc(BLOCK);
        if (!blocks[i])
            abort();
        memset(blocks[i], i, BLOCK);
        if (i % 64 == 63 && !(pins[i / 64] = malloc(32)))
            abort();
    }
    for (int i = 0; i < BLOCKS; i++)
        free(blocks[i]);
    const int rc = argc > 1 && !strcmp(argv[1], "trim") ? malloc_trim(0) : -1;
    pthread_t th;
    if (pthread_create(&th, NULL, phase, NULL) || pthread_join(th, NULL))
        abort();
    for (int i = 0; i < BLOCKS / 64; i++)
        free(pins[i]);
    printf("trim %d\n", rc);
    return 0;
}
