/* Memory a program maps itself that is not anonymous in the RSS's accounting: a shared anonymous
 * mapping (MAP_SHARED | MAP_ANONYMOUS, as a server's shared buffers are) written in part, which the
 * kernel counts as shared memory beside the file pages; and a file mapped with MAP_FIXED over half
 * of a private anonymous mapping, which takes that half away. The shared mapping is then grown by
 * mremap() to SHARED_GROWN_MIB (it may move; it stays shared memory). Beside them a private mapping and
 * malloc'd blocks, written, so that the heap and the program's own anonymous memory are there too.
 * Each phase holds its memory for a while, so that the recorder's RSS samples (every 10 ms) see it.
 * With "write", FILE is mapped shared, written and unmapped instead (write_file_mapping). Prints
 * "key value" lines: what each call returned, and the process's VmHWM in KiB at the end. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prog_util.h"

#define MIB (1u << 20)
#define SHARED_MIB 64u /* mapped shared; SHARED_WRITTEN_MIB of it written */
#define SHARED_WRITTEN_MIB 32u
#define SHARED_GROWN_MIB 96u /* by mremap, after the writes: nothing more written */
#define PRIVATE_MIB 16u      /* mapped private and written; its second half then replaced by a file */
#define HEAP_BLOCKS 64u      /* of 256 KiB each, written */

/* The output phase of a linker (ld.gold): FILE mapped shared and written whole, then unmapped,
 * with no malloc call meanwhile. */
static int write_file_mapping(const char *path)
{
    void *volatile first = malloc(64); /* a call before: the trace's first RSS sample is taken at it */
    free(first);
    const int fd = open(path, O_RDWR | O_CLOEXEC);
    put("file_opened", fd >= 0);
    if (fd < 0)
        return 1;
    const off_t len = lseek(fd, 0, SEEK_END);
    uint8_t *m = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    put("file_mapped", m != MAP_FAILED);
    close(fd);
    if (m == MAP_FAILED)
        return 1;
    write_pages(m, (size_t)len);
    put("file_unmapped", munmap(m, (size_t)len) == 0);
    put("vmhwm_kb", (uint64_t)status_kb("VmHWM:"));
    flush_out();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[2], "write") == 0)
        return write_file_mapping(argv[1]);
    if (argc != 2)
        return 2; /* usage: prog_shmem FILE [write] (a file of at least PRIVATE_MIB / 2 MiB) */
    uint8_t *s = mmap(NULL, SHARED_MIB * MIB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    put("shared_mapped", s != MAP_FAILED);
    uint8_t *p = mmap(NULL, PRIVATE_MIB * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    put("private_mapped", p != MAP_FAILED);
    if (s == MAP_FAILED || p == MAP_FAILED)
        return 1;
    write_pages(s, SHARED_WRITTEN_MIB * MIB);
    write_pages(p, PRIVATE_MIB * MIB);
    void *blocks[HEAP_BLOCKS];
    for (unsigned i = 0; i < HEAP_BLOCKS; i++) {
        blocks[i] = malloc(256u << 10);
        if (!blocks[i])
            return 1;
        write_pages(blocks[i], 256u << 10);
    }
    hold();
    /* the file over the private mapping's second half: those anonymous pages go */
    const int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
    put("file_opened", fd >= 0);
    if (fd < 0)
        return 1;
    void *f = mmap(p + PRIVATE_MIB / 2 * MIB, PRIVATE_MIB / 2 * MIB, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
    put("file_mapped_fixed", f == p + PRIVATE_MIB / 2 * MIB);
    close(fd);
    hold();
    uint8_t *g = mremap(s, SHARED_MIB * MIB, SHARED_GROWN_MIB * MIB, MREMAP_MAYMOVE);
    put("shared_grown", g != MAP_FAILED);
    if (g == MAP_FAILED)
        return 1;
    s = g;
    hold();
    for (unsigned i = 0; i < HEAP_BLOCKS; i++)
        free(blocks[i]);
    put("shared_unmapped", munmap(s, SHARED_GROWN_MIB * MIB) == 0);
    put("private_unmapped", munmap(p, PRIVATE_MIB * MIB) == 0);
    put("vmhwm_kb", (uint64_t)status_kb("VmHWM:"));
    flush_out();
    return 0;
}
