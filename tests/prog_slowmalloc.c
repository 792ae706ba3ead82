/* Calls that the allocator answers late (under tests/sim/sleepy_malloc.c, whose every 50th malloc
 * of 4321 bytes sleeps 5 ms first): 50 malloc/free pairs of 4321 bytes. */
#include <stdlib.h>

int main(void)
{
    for (int i = 0; i < 50; i++) {
        char *p = malloc(4321);
        *(volatile char *)p = 1;
        free(p);
    }
    return 0;
}
