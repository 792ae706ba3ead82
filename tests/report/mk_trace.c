/* report_mktrace OUT [RSS_EVERY [CALLS [THREADS [PROG [ARG...]]]]]: writes a trace record by record
 * (mt_writer), for the shell tests that need a trace in every build, sanitized ones included
 * (recording needs the LD_PRELOAD shim, which cannot run there). THREADS threads (default 2), CALLS
 * calls (default 8000) of sizes from 0 to 64 KiB, a live set that grows and then shrinks, an RSS
 * sample every RSS_EVERY calls (default 250; CALLS or more: one, at the first call), the command
 * line PROG ARG... (default "report_mktrace demo") as the bytes given, invalid UTF-8 included. The
 * chunks are sealed, the header complete. Exit 0, or 1 with a message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/trace_format.h"
#include "mtrace/trace_writer.h"

enum { SLOTS = 300 };

static int put(mt_writer_t *w, uint32_t thread, const mt_record_t *r)
{
    if (mt_writer_call(w, thread, 4000 + thread, r) < 0) {
        fprintf(stderr, "report_mktrace: %s\n", mt_writer_error(w));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: report_mktrace OUT [RSS_EVERY [CALLS [THREADS [PROG [ARG...]]]]]\n");
        return 2;
    }
    const unsigned rss_every = argc >= 3 ? (unsigned)strtoul(argv[2], NULL, 10) : 250;
    const unsigned calls = argc >= 4 ? (unsigned)strtoul(argv[3], NULL, 10) : 8000;
    const unsigned nthreads = argc >= 5 ? (unsigned)strtoul(argv[4], NULL, 10) : 2;
    if (!rss_every || !calls || !nthreads || nthreads > 1000) {
        fprintf(stderr, "report_mktrace: RSS_EVERY and CALLS must be 1 or more, THREADS 1 to 1000\n");
        return 2;
    }
    /* the command line as /proc/self/cmdline holds one: the arguments separated by NUL */
    static const char demo[] = "report_mktrace\0demo";
    char cmdline[4096];
    memcpy(cmdline, demo, sizeof demo);
    size_t cmdline_len = sizeof demo - 1;
    if (argc > 5) {
        cmdline_len = 0;
        for (int a = 5; a < argc; a++) {
            const size_t len = strlen(argv[a]) + 1;
            if (cmdline_len + len > sizeof cmdline) {
                fprintf(stderr, "report_mktrace: the command line is over %zu bytes\n", sizeof cmdline);
                return 2;
            }
            memcpy(cmdline + cmdline_len, argv[a], len);
            cmdline_len += len;
        }
        cmdline_len--; /* no NUL after the last */
    }
    mt_writer_t *w;
    mt_error_t err;
    if (mt_writer_open(&w, argv[1], NULL, &err) < 0) {
        fprintf(stderr, "report_mktrace: %s\n", err.msg);
        return 1;
    }
    mt_writer_header_string(w, MT_STR_CMDLINE, cmdline, cmdline_len);
    uint64_t slot[SLOTS] = { 0 }, size[SLOTS] = { 0 };
    uint64_t t = 1000000, live = 0, next = 0x7f0000100000ull;
    unsigned x = 12345;
    for (unsigned i = 0; i < calls; i++) {
        x = x * 1103515245u + 12345u;
        /* (x >> 30) % 2: the threads of the 2-thread trace the tests' expected figures were made from */
        const uint32_t th = 1 + (nthreads == 2 ? (x >> 30) % 2 : (x >> 20) % nthreads);
        const unsigned k = (x >> 8) % SLOTS;
        const int grow = i < calls / 2 ? (x >> 4) % 4 != 0 : (x >> 4) % 4 == 0;
        t += 1000 + (x >> 16) % 2000;
        mt_record_t r = { .time = t };
        if (slot[k] && !grow) {
            r.op = MT_OP_FREE;
            r.ptr = slot[k];
            live -= size[k];
            slot[k] = 0;
        } else if (!slot[k]) {
            r.op = (x >> 12) % 5 ? MT_OP_MALLOC : MT_OP_CALLOC;
            r.size = (x >> 20) % 8 ? (uint64_t)1 << ((x >> 14) % 17) : 0;
            r.count = 1;
            r.result = next += 0x10000;
            r.usable = r.size;
            slot[k] = r.result;
            size[k] = r.size;
            live += r.size;
        } else {
            r.op = MT_OP_REALLOC;
            r.ptr = slot[k];
            r.size = size[k] >= 32768 ? size[k] / 4 : size[k] * 2 + 16;
            r.result = (x >> 13) % 2 ? slot[k] : (next += 0x10000);
            r.usable = r.size;
            live += r.size - size[k];
            slot[k] = r.result;
            size[k] = r.size;
        }
        if (put(w, th, &r) < 0)
            return 1;
        if (i % rss_every == 0) { /* RSS: size, resident and shared pages, monotonic ns */
            uint8_t payload[64], *q = payload;
            q = mt_put_uvarint(q, 20000 + live / 4096);
            q = mt_put_uvarint(q, 500 + live / 4096);
            q = mt_put_uvarint(q, 300);
            q = mt_put_uvarint(q, t);
            if (mt_writer_event(w, th, 4000 + th, MT_EV_RSS, t, payload, (size_t)(q - payload)) < 0) {
                fprintf(stderr, "report_mktrace: %s\n", mt_writer_error(w));
                return 1;
            }
        }
    }
    if (mt_writer_close(w, 1, &err) < 0) {
        fprintf(stderr, "report_mktrace: %s\n", err.msg);
        return 1;
    }
    return 0;
}
