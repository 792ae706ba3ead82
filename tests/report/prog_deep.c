/* A stack deeper than the recorder's limit and one shallower: descend(40) mallocs 40 calls down
 * (then frees), shallow() mallocs from main's own frame. */
#include <stdlib.h>

__attribute__((noinline)) static void *descend(int n)
{
    if (n == 0)
        return malloc(48);
    void *p = descend(n - 1);
    __asm__ volatile("" ::: "memory"); /* no tail call: every level is a frame */
    return p;
}

__attribute__((noinline)) static void *shallow(void)
{
    return malloc(24);
}

int main(void)
{
    free(descend(40));
    free(shallow());
    return 0;
}
