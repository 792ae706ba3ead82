/* A library loaded with dlopen whose constructor writes its data: DATA_MIB of initialized data
 * (in the file: each page written is copied from it) and BSS_MIB of .bss, anonymous pages that no
 * malloc call and no mapping the program made show (what relocated data is to a plugin: LLVM's
 * gold plugin, loaded by nm, 7.6 MB). Used by prog_copied_pages.c. */
#include <stddef.h>

#define DATA_MIB 2u
#define BSS_MIB 6u

static volatile unsigned char data[DATA_MIB << 20] = { 1 };
static volatile unsigned char bss[BSS_MIB << 20];

__attribute__((constructor)) static void write_them(void)
{
    for (size_t i = 0; i < sizeof data; i += 4096)
        data[i] = 2;
    for (size_t i = 0; i < sizeof bss; i += 4096)
        bss[i] = 1;
}

unsigned copied_pages_byte(size_t i);
unsigned copied_pages_byte(size_t i)
{
    return data[i % sizeof data] + bss[i % sizeof bss];
}
