/* Shared by the fault-injection programs (tests/faults/fp_*.c) and test_faults.c.
 *
 * The programs print only deterministic lines on stdout, so that a traced run's stdout can be
 * compared byte for byte with an untraced run's; what varies from run to run (pids, tids, pointers,
 * counts) goes as "key value" lines to an info file named on the command line, appended with one
 * write(2) per line (O_APPEND: processes and threads never interleave inside a line). Nothing here
 * calls malloc: every allocation the programs make is one the tests expect. */
#ifndef MTRACE_FP_UTIL_H
#define MTRACE_FP_UTIL_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Size of the i-th malloc of worker k in the kill and churn programs: the thread can be told from
 * any of its sizes ((size - 1) % 16 == k), and the sequence from its start is known. */
static inline size_t fp_seq_size(unsigned k, uint64_t i)
{
    return 1 + (size_t)k + 16 * (size_t)((i * 37 + (uint64_t)k * 11) % 251);
}

static const char *fp_info_path;

/* Appends one formatted line to the info file (no-op without one). */
__attribute__((format(printf, 1, 2))) static inline void fp_info(const char *fmt, ...)
{
    if (!fp_info_path || !*fp_info_path)
        return;
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    const int fd = open(fp_info_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    ssize_t w = write(fd, line, (size_t)n);
    (void)w;
    close(fd);
}

/* Writes a whole string to a file descriptor with write(2). */
static inline void fp_write(int fd, const char *s)
{
    size_t len = strlen(s), off = 0;
    while (off < len) {
        const ssize_t n = write(fd, s + off, len - off);
        if (n <= 0)
            return;
        off += (size_t)n;
    }
}

__attribute__((format(printf, 1, 2))) static inline void fp_say(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0)
        fp_write(STDOUT_FILENO, line);
}

#endif
