/* A large block read whole and written in part, as an image encoder reads the surface it drew on:
 * a 32 MiB block calloc'd (glibc maps it fresh), every page read, one page in 4 written, held, then
 * freed. Reading a page of fresh memory maps the shared zero page, which mincore() calls resident
 * and the RSS does not count: the program's peak holds 8 MiB of it, not 32. Prints "key value"
 * lines: sum (of what it read, 0), peak_anon_kb (RssAnon while the block is held). */
#include <stdint.h>
#include <stdlib.h>

#include "prog_util.h"

#define MiB (1024u * 1024u)
#define BLOCK (32 * MiB)

int main(void)
{
    volatile uint8_t *p = calloc(1, BLOCK);
    if (!p)
        return 1;
    uint64_t sum = 0;
    for (size_t off = 0; off < BLOCK; off += 4096)
        sum += p[off];
    for (size_t off = 0; off < BLOCK; off += 4 * 4096)
        p[off] = 1;
    hold();
    const long anon = status_kb("RssAnon:");
    free((void *)p);
    put("sum", sum);
    put("peak_anon_kb", anon < 0 ? 0 : (uint64_t)anon);
    flush_out();
    return 0;
}
