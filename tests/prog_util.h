/* Output for the test programs that test_shim.c runs under the shim: "key value" lines collected in a
 * static buffer and written with write(2), so that printing itself never calls malloc (stdio would
 * allocate its buffer on first use, and that call would show up in the trace). */
#ifndef MTRACE_PROG_UTIL_H
#define MTRACE_PROG_UTIL_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char prog_out[16384];
static size_t prog_outn;

static inline void put(const char *key, uint64_t v)
{
    if (prog_outn < sizeof prog_out)
        prog_outn += (size_t)snprintf(prog_out + prog_outn, sizeof prog_out - prog_outn, "%s %llu\n", key,
                                      (unsigned long long)v);
    if (prog_outn > sizeof prog_out)
        prog_outn = sizeof prog_out;
}

static inline void put_ptr(const char *key, const void *p)
{
    put(key, (uint64_t)(uintptr_t)p);
}

/* Writes what put() collected and empties the buffer. */
static inline void flush_out(void)
{
    size_t off = 0;
    while (off < prog_outn) {
        const ssize_t n = write(STDOUT_FILENO, prog_out + off, prog_outn - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    prog_outn = 0;
}

/* A "Key: N kB" line of /proc/self/status (key with its colon, e.g. "RssAnon:"), in KiB; -1 if it is
 * missing. Read with read(2), without malloc. */
static inline long status_kb(const char *key)
{
    static char buf[8192];
    const int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    for (ssize_t n; len < sizeof buf - 1 && (n = read(fd, buf + len, sizeof buf - 1 - len)) > 0;)
        len += (size_t)n;
    close(fd);
    buf[len] = 0;
    const size_t klen = strlen(key);
    for (const char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (!strncmp(line, key, klen))
            return strtol(line + klen, NULL, 10);
    return -1;
}

/* Holds what the program has for 60 ms, so that the recorder's RSS samples (every 10 ms) see it. */
static inline void hold(void)
{
    const struct timespec ts = { 0, 60 * 1000 * 1000 };
    nanosleep(&ts, NULL);
}

/* Writes a byte in each 4 KiB page of [p, p + len). */
static inline void write_pages(volatile uint8_t *p, size_t len)
{
    for (size_t off = 0; off < len; off += 4096)
        p[off] = 1;
}

#endif
