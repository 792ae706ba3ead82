/* Output for the test programs that test_shim.c runs under the shim: "key value" lines collected in a
 * static buffer and written with write(2), so that printing itself never calls malloc (stdio would
 * allocate its buffer on first use, and that call would show up in the trace). */
#ifndef MTRACE_PROG_UTIL_H
#define MTRACE_PROG_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
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
