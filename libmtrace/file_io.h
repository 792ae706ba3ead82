/* File I/O and error messages shared by the format library's readers and writers (not installed). */
#ifndef MTRACE_FILE_IO_H
#define MTRACE_FILE_IO_H

#include <stddef.h>
#include <stdint.h>

#include "mtrace/trace_reader.h"

/* Fills err (if any) with "PATH: offset N: " and the message; returns code. */
int mt_errorf(mt_error_t *err, int code, const char *path, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Reads up to len bytes at off, retrying short reads and EINTR; *got is what the file held.
 * 0 (also at the end of the file) or a negative errno. */
int mt_pread_some(int fd, void *buf, size_t len, uint64_t off, size_t *got);
/* All len bytes at off, or -EIO if the file ends first. */
int mt_pread_full(int fd, void *buf, size_t len, uint64_t off);
/* All len bytes written at off (or at the file position when off is UINT64_MAX). */
int mt_write_full(int fd, const void *buf, size_t len, uint64_t off);

#endif
