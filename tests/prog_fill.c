/* Large buffers filled over a while, one after another, as a renderer draws frames: a 16 MiB buffer
 * calloc'd and filled at once and kept; then FRAMES frames of 24 MiB, each calloc'd while the frame
 * before is still live, that one freed right after, and the new one filled in 30 steps 10 ms apart
 * (a small malloc and free at each: the calls at which a recorder samples). glibc maps each buffer
 * fresh, so the program's peak is the kept buffer and one frame, about 40 MiB: a frame's pages come
 * after the frame before has gone. A replay that wrote each frame as it was made held two frames at
 * once, 64 MiB. Prints "fill FRAMES". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MiB (1024u * 1024u)
#define FRAME (24 * MiB)
#define STEPS 30

static void fill_slowly(char *p)
{
    const struct timespec tick = { 0, 10 * 1000 * 1000 };
    for (int k = 0; k < STEPS; k++) {
        memset(p + (size_t)k * (FRAME / STEPS), k + 1, FRAME / STEPS);
        void *small = malloc(64);
        if (!small)
            abort();
        memset(small, k, 64);
        free(small);
        nanosleep(&tick, NULL);
    }
}

int main(int argc, char **argv)
{
    const int frames = argc > 1 ? atoi(argv[1]) : 3;
    char *kept = calloc(1, 16 * MiB);
    if (!kept)
        abort();
    memset(kept, 1, 16 * MiB);
    char *prev = calloc(1, FRAME);
    if (!prev)
        abort();
    fill_slowly(prev);
    for (int f = 1; f < frames; f++) {
        char *next = calloc(1, FRAME);
        if (!next)
            abort();
        free(prev);
        fill_slowly(next);
        prev = next;
    }
    printf("fill %d\n", frames);
    free(prev);
    free(kept);
    return 0;
}
