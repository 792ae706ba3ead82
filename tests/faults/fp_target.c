/* Started by fp_spawn (vfork + execve, posix_spawn), built dynamic and static: allocates a known
 * sequence (malloc(2000 + T), realloc to 3000 + T, free) where T is argv[1], and says so.
 *   usage: fp_target T */
#define _GNU_SOURCE
#include <stdlib.h>

#include "fp_util.h"

int main(int argc, char **argv)
{
    const int tag = argc > 1 ? atoi(argv[1]) : 0;
    char *p = malloc(2000 + (size_t)tag);
    if (!p)
        return 3;
    p[0] = 1;
    char *q = realloc(p, 3000 + (size_t)tag);
    if (!q)
        return 3;
    free(q);
    fp_say("target %d ok\n", tag);
    return 10 + tag;
}
