/* A program that holds 16 MiB of a library's static pages from its start (lib_static_pages.c) and
 * mallocs, writes and frees 8 MiB: its peak is both at once, of which the trace's calls show 8. */
#include <stdlib.h>
#include <string.h>

#include "prog_util.h"

unsigned static_pages_byte(size_t i);

int main(void)
{
    const size_t len = 8u << 20;
    unsigned char *p = malloc(len);
    if (!p)
        return 1;
    memset(p, 1, len);
    hold();
    put("static", static_pages_byte(4096));
    put("block", p[len - 1]);
    free(p);
    flush_out();
    return 0;
}
