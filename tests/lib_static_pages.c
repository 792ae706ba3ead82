/* A library whose constructor writes STATIC_MIB of its .bss before the program's main: anonymous
 * pages no malloc call makes, that the program holds from its start (what relocated data is to a
 * large C++ library: libLLVM's 10.9 MB in clang). Used by prog_static_pages.c. */
#include <stddef.h>

#define STATIC_MIB 16u

static volatile unsigned char pages[STATIC_MIB << 20];

__attribute__((constructor)) static void write_them(void)
{
    for (size_t i = 0; i < sizeof pages; i += 4096)
        pages[i] = 1;
}

unsigned static_pages_byte(size_t i);
unsigned static_pages_byte(size_t i)
{
    return pages[i % sizeof pages];
}
