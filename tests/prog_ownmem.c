/* Memory a program manages itself, outside malloc: an anonymous mapping it writes whole, gives back
 * with madvise(MADV_DONTNEED), writes a part of again, then unmaps; and pages it adds to the break
 * with sbrk() and brk(), writes, and gives back. Each phase holds its memory for a while, so that
 * the recorder's RSS samples (every 10 ms) see it. The peaks, in MiB: the mapping MAP_MIB, then the
 * break BRK_MIB beside the part of the mapping written again (AGAIN_MIB): the break's phase is the
 * program's peak. Prints "key value" lines: what each call returned. */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prog_util.h"

#define MIB (1u << 20)
#define MAP_MIB 32u
#define AGAIN_MIB 4u
#define BRK_MIB 48u

int main(void)
{
    uint8_t *m = mmap(NULL, MAP_MIB * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    put("mapped", m != MAP_FAILED);
    if (m == MAP_FAILED)
        return 1;
    write_pages(m, MAP_MIB * MIB);
    hold();
    put("advised", madvise(m, MAP_MIB * MIB, MADV_DONTNEED) == 0);
    write_pages(m, AGAIN_MIB * MIB);
    hold();
    /* half of the break's pages from sbrk, the other half from brk */
    uint8_t *b = sbrk(BRK_MIB / 2 * MIB);
    put("sbrk_grew", b != (void *)-1);
    if (b == (void *)-1)
        return 1;
    put("brk_grew", brk(b + BRK_MIB * MIB) == 0);
    write_pages(b, BRK_MIB * MIB);
    hold();
    put("sbrk_shrank", sbrk(-(intptr_t)(BRK_MIB / 2 * MIB)) != (void *)-1);
    put("brk_shrank", brk(b) == 0);
    hold();
    put("unmapped", munmap(m, MAP_MIB * MIB) == 0);
    flush_out();
    return 0;
}
