/* What the recorder's copy-out costs on this machine: a full 64 KiB home chunk goes to the trace
 * file with pwrite, then the chunk is zeroed (libmtrace/shim_chunks.c, move_out). Times N such
 * writes, CPU per write, in three ways: to new offsets (what the recorder does: the page cache
 * takes new pages), to one offset over and over (the same copy into pages already cached), and to
 * new offsets of a file preallocated with fallocate.
 *   usage: copyout FILE [N]     (N default 1000; FILE is made, truncated and removed) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 65536u

static double cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: copyout FILE [N]\n");
        return 2;
    }
    const char *path = argv[1];
    const int n = argc > 2 ? atoi(argv[2]) : 1000;
    if (n <= 0) {
        fprintf(stderr, "copyout: N must be positive\n");
        return 2;
    }
    char *buf = aligned_alloc(4096, CHUNK);
    if (!buf)
        return 1;
    memset(buf, 1, CHUNK);
    static const char *const what[] = { "new offsets", "one offset", "new offsets, fallocated" };
    for (int mode = 0; mode < 3; mode++) {
        const int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0) {
            perror(path);
            return 1;
        }
        if (mode == 2 && fallocate(fd, 0, 0, (off_t)CHUNK * n) != 0)
            perror("fallocate");
        const double t0 = cpu_ns();
        for (int i = 0; i < n; i++) {
            const off_t at = mode == 1 ? 0 : (off_t)i * CHUNK;
            if (pwrite(fd, buf, CHUNK, at) != (ssize_t)CHUNK) {
                perror("pwrite");
                return 1;
            }
            memset(buf, 0, CHUNK);
            buf[0] = (char)i;
        }
        const double t1 = cpu_ns();
        printf("%-24s %8.2f us CPU per 64 KiB pwrite and memset (%d writes)\n", what[mode], (t1 - t0) / n / 1e3, n);
        close(fd);
        unlink(path);
    }
    free(buf);
    return 0;
}
