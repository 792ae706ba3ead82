/* Mappings made as a garbage-collected runtime makes its heap pages (Ruby's are 16 KiB): 32 KiB
 * mapped, a head and a tail unmapped so that a 16 KiB-aligned page is left. Of 4000 such pages, a
 * quarter is written whole and unmapped, a quarter written whole and kept to exit, half kept to exit
 * and never written. The program's peak holds the 2000 written pages (31.25 MiB) and 31.25 MiB
 * mapped but never written. Prints "kept N". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PAGE_BYTES (16 * 1024)
#define NPAGES 4000

static char *aligned_page(void)
{
    char *m = mmap(NULL, 2 * PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        abort();
    char *p = (char *)(((uintptr_t)m + PAGE_BYTES - 1) & ~(uintptr_t)(PAGE_BYTES - 1));
    if (p > m && munmap(m, (size_t)(p - m)) != 0)
        abort();
    if (m + 2 * PAGE_BYTES > p + PAGE_BYTES && munmap(p + PAGE_BYTES, (size_t)(m + 2 * PAGE_BYTES - (p + PAGE_BYTES))))
        abort();
    return p;
}

int main(void)
{
    static char *pages[NPAGES];
    for (int i = 0; i < NPAGES; i++) {
        pages[i] = aligned_page();
        if (i % 4 < 2)
            memset(pages[i], i, PAGE_BYTES);
    }
    int kept = 0;
    for (int i = 0; i < NPAGES; i++) {
        if (i % 4 == 0)
            munmap(pages[i], PAGE_BYTES);
        else
            kept++;
    }
    printf("kept %d\n", kept);
    return 0;
}
