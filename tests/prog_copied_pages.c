/* Memory that becomes the program's anonymous memory by being written, in mappings of files: the
 * writable segments of a library loaded with dlopen (LIB: tests/lib_copied_pages.c, 8 MiB written
 * by its constructor), then FILE mapped private and writable, COPIED_MIB of it written (as a Java
 * VM maps and relocates its class data archive), then both given back (munmap, dlclose). Beside
 * them a malloc'd block, written, so that the heap is there too. Each phase holds its memory for a
 * while, so that the recorder's RSS samples (every 10 ms) see it. Prints "key value" lines: what
 * each call returned, and the process's VmHWM in KiB at the end.
 *   usage: prog_copied_pages LIB FILE (a file of at least FILE_MIB MiB) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prog_util.h"

#define MIB (1u << 20)
#define HEAP_MIB 2u
#define FILE_MIB 16u   /* mapped private and writable */
#define COPIED_MIB 10u /* of it written */

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    uint8_t *block = malloc(HEAP_MIB * MIB);
    if (!block)
        return 1;
    write_pages(block, HEAP_MIB * MIB);
    hold();
    void *lib = dlopen(argv[1], RTLD_NOW);
    put("loaded", lib != NULL);
    if (!lib)
        return 1;
    hold();
    const int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
    put("file_opened", fd >= 0);
    if (fd < 0)
        return 1;
    uint8_t *m = mmap(NULL, FILE_MIB * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    close(fd);
    put("file_mapped", m != MAP_FAILED);
    if (m == MAP_FAILED)
        return 1;
    write_pages(m, COPIED_MIB * MIB);
    hold();
    put("file_unmapped", munmap(m, FILE_MIB * MIB) == 0);
    put("unloaded", dlclose(lib) == 0);
    hold();
    free(block);
    put("vmhwm_kb", (uint64_t)status_kb("VmHWM:"));
    flush_out();
    return 0;
}
