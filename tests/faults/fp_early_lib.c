/* Linked by fp_early: a constructor of priority 101 that allocates. The loader runs it before the
 * preloaded shim's own constructor (a library the program needs comes later in the load order than
 * LD_PRELOAD's, and initializers run in reverse load order among independent objects). */
#include <stdlib.h>

extern void *fp_early_block;
extern void *fp_early_freed;
void *fp_early_block;
void *fp_early_freed;

__attribute__((constructor(101))) static void early(void)
{
    fp_early_block = malloc(5151); /* freed by main */
    fp_early_freed = malloc(5152);
    free(fp_early_freed);
}
