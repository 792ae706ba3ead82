/* A daemon-like start: closes every descriptor above stderr (the shim's trace file included), opens
 * a file of its own, which gets the lowest free number (the one the trace file had), writes 5 bytes
 * to it, then makes 400,000 malloc/free pairs (several 64 KiB trace chunks). Prints the file's size
 * at the end, which must still be 5: the shim must never write the trace into the program's file.
 *   usage: prog_closefds FILE */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prog_util.h"

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *warm = malloc(100); /* the trace file exists before the descriptors are closed */
    free(warm);
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    const int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, "hello", 5) != 5)
        return 3;
    put("fd", (uint64_t)fd);
    for (int i = 0; i < 400000; i++) {
        volatile char *p = malloc(24 + (size_t)(i % 200));
        if (!p)
            return 4;
        p[0] = 1;
        free((void *)p);
    }
    struct stat st;
    if (fstat(fd, &st) != 0)
        return 5;
    put("size", (uint64_t)st.st_size);
    flush_out();
    return 0;
}
