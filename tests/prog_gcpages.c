/* A garbage collector's pages, as node's V8 keeps them: PAGES mappings of PAGE_KIB each, mapped by
 * the program itself and written whole; while they are held, a malloc'd block of BLOCK_MIB is
 * written and freed (the program's peak: both at once); at the end each mapping is given back with
 * madvise(MADV_DONTNEED) and then unmapped, so that its unmap finds no page resident. The only
 * count of its written pages is the madvise's, at the end of its life. Prints "key value" lines. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "prog_util.h"

#define PAGES 64u
#define PAGE_KIB 512u
#define BLOCK_MIB 16u

int main(void)
{
    static uint8_t *page[PAGES];
    const size_t len = (size_t)PAGE_KIB << 10;
    for (unsigned i = 0; i < PAGES; i++) {
        page[i] = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page[i] == MAP_FAILED)
            return 1;
        write_pages(page[i], len);
    }
    put("mapped", PAGES);
    hold();
    uint8_t *b = malloc((size_t)BLOCK_MIB << 20);
    if (!b)
        return 1;
    write_pages(b, (size_t)BLOCK_MIB << 20);
    hold();
    free(b);
    hold();
    unsigned dropped = 0;
    for (unsigned i = 0; i < PAGES; i++)
        dropped += madvise(page[i], len, MADV_DONTNEED) == 0 && munmap(page[i], len) == 0;
    put("dropped", dropped);
    flush_out();
    return 0;
}
