/* Calls on glibc's main arena whose effect on the heap top is known: for each call, "movedN 1" when
 * sbrk(0) after it differs from sbrk(0) before it, else "movedN 0" (N counts the calls from 0).
 * A block of 300000 bytes (kept off mmap by M_MMAP_THRESHOLD) grows the heap; its free gives the
 * space back (above M_TRIM_THRESHOLD); the small blocks after each trim move nothing, though the
 * heap top is then not where any earlier call left it. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

#include "prog_util.h"

static unsigned n;
static void *before;

static void pre(void)
{
    before = sbrk(0);
}

static void post(void)
{
    char key[16];
    snprintf(key, sizeof key, "moved%u", n++);
    put(key, sbrk(0) != before);
}

int main(void)
{
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 * 1024);
    mallopt(M_TOP_PAD, 0);
    pre();
    char *a = malloc(300000);
    post();
    a[0] = 1;
    pre();
    free(a);
    post();
    pre();
    char *b = malloc(16);
    post();
    pre();
    char *c = calloc(1, 300000);
    post();
    pre();
    free(c);
    post();
    pre();
    char *d = realloc(NULL, 40);
    post();
    pre();
    char *e = malloc(24);
    post();
    pre();
    free(e);
    post();
    pre();
    free(d);
    post();
    pre();
    free(b);
    post();
    put("calls", n);
    flush_out();
    return 0;
}
