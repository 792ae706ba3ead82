/* libmtrace/file_io.h */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "file_io.h"

int mt_errorf(mt_error_t *err, int code, const char *path, uint64_t offset, const char *fmt, ...)
{
    if (err) {
        int n = snprintf(err->msg, sizeof err->msg, "%s: offset %llu: ", path, (unsigned long long)offset);
        if (n < 0 || (size_t)n >= sizeof err->msg)
            n = 0;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return code;
}

int mt_pread_some(int fd, void *buf, size_t len, uint64_t off, size_t *got)
{
    size_t n = 0;
    while (n < len) {
        const ssize_t r = pread(fd, (uint8_t *)buf + n, len - n, (off_t)(off + n));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    *got = n;
    return 0;
}

int mt_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
    size_t got;
    const int rc = mt_pread_some(fd, buf, len, off, &got);
    return rc < 0 ? rc : got == len ? 0 : -EIO;
}

int mt_write_full(int fd, const void *buf, size_t len, uint64_t off)
{
    const uint8_t *p = buf;
    while (len) {
        const ssize_t w = off == UINT64_MAX ? write(fd, p, len) : pwrite(fd, p, len, (off_t)off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (w == 0)
            return -EIO;
        p += w;
        len -= (size_t)w;
        if (off != UINT64_MAX)
            off += (uint64_t)w;
    }
    return 0;
}
