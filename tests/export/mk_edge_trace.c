/* export_mk_edge_trace OUT: a trace written record by record with the cases that real programs
 * seldom show, for export-clickhouse to check against mtrace report: failed calls (a calloc whose
 * count * size passes 2^64 among them), realloc(p, 0) returning NULL, realloc in place, moved and
 * failed, reallocarray, every aligned allocator, free(NULL), frees of unknown blocks and a double
 * free, an address handed out again while its block is live, size 0, temporaries and blocks freed by
 * another thread, stacks defined twice, used without a definition, and an id past the range. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "mtrace/trace_format.h"
#include "mtrace/trace_writer.h"

static mt_writer_t *w;
static uint64_t now = 1000;

static void call(uint32_t thread, unsigned op, uint32_t flags, uint32_t stack, uint64_t ptr, uint64_t count,
                 uint64_t size, uint64_t align, uint64_t result)
{
    now += 700;
    mt_record_t r = { .op = (uint8_t)op,
                      .flags = flags | (stack ? MT_FLAG_STACK : 0),
                      .stack = stack,
                      .time = now,
                      .ptr = ptr,
                      .count = count,
                      .size = size,
                      .align = align,
                      .result = result,
                      .usable = result ? size * (count ? count : 1) : 0 };
    if (op == MT_OP_POSIX_MEMALIGN && (flags & MT_FLAG_NULL))
        r.arg[0] = ENOMEM, r.nargs = 1;
    if (op == MT_OP_MALLOPT)
        r.arg[0] = 1, r.arg[1] = 64, r.arg[2] = 1, r.nargs = 3;
    if (mt_writer_call(w, thread, 7000 + thread, &r) < 0) {
        fprintf(stderr, "export_mk_edge_trace: %s\n", mt_writer_error(w));
        exit(1);
    }
}

static void stack_def(uint32_t thread, uint32_t id, uint64_t base, unsigned n)
{
    uint8_t p[256], *q = p;
    q = mt_put_uvarint(q, id);
    q = mt_put_uvarint(q, n);
    uint64_t prev = 0;
    for (unsigned i = 0; i < n; i++) {
        const uint64_t f = base + 16 * i;
        q = mt_put_svarint(q, (int64_t)(f - prev));
        prev = f;
    }
    now += 10;
    if (mt_writer_event(w, thread, 7000 + thread, MT_EV_STACK, now, p, (size_t)(q - p)) < 0)
        exit(1);
}

static void rss(uint32_t thread, uint64_t pages)
{
    uint8_t p[64], *q = p;
    q = mt_put_uvarint(q, pages + 100);
    q = mt_put_uvarint(q, pages);
    q = mt_put_uvarint(q, 10);
    q = mt_put_uvarint(q, now);
    now += 10;
    if (mt_writer_event(w, thread, 7000 + thread, MT_EV_RSS, now, p, (size_t)(q - p)) < 0)
        exit(1);
}

enum {
    M = MT_OP_MALLOC,
    F = MT_OP_FREE,
    C = MT_OP_CALLOC,
    R = MT_OP_REALLOC,
    RA = MT_OP_REALLOCARRAY,
    NUL = MT_FLAG_NULL
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: export_mk_edge_trace OUT\n");
        return 2;
    }
    mt_file_header_t h;
    mt_writer_default_header(&h);
    h.flags |= MT_HDR_STACKS;
    mt_error_t err;
    if (mt_writer_open(&w, argv[1], &h, &err) < 0) {
        fprintf(stderr, "export_mk_edge_trace: %s\n", err.msg);
        return 1;
    }
    static const char cmdline[] = "export_mk_edge_trace\0edges";
    mt_writer_header_string(w, MT_STR_CMDLINE, cmdline, sizeof cmdline - 1);
    const uint64_t A = 0x10000, B = 0x20000, Cb = 0x30000, D = 0x40000, E = 0x50000, Fb = 0x60000, G = 0x70000,
                   H = 0x80000, I = 0x90000, J = 0xa0000, K = 0xb0000, L = 0xc0000, Mb = 0xd0000, N = 0xe0000;
    stack_def(1, 1, 0x400000, 4);
    stack_def(1, 2, 0x500000, 6);
    stack_def(1, 1, 0x600000, 2); /* a second definition of 1: the first one counts */
    rss(1, 5);
    call(1, M, 0, 1, 0, 0, 100, 0, A);
    call(1, F, 0, 0, A, 0, 0, 0, 0); /* temporary */
    call(1, M, 0, 2, 0, 0, 200, 0, B);
    call(1, M, 0, 1, 0, 0, 300, 0, Cb);
    call(1, F, 0, 0, B, 0, 0, 0, 0);  /* not temporary: C came after */
    call(2, F, 0, 0, Cb, 0, 0, 0, 0); /* not temporary: another thread */
    call(1, M, NUL, 1, 0, 0, (uint64_t)1 << 62, 0, 0);
    call(1, C, NUL, 1, 0, (uint64_t)1 << 33, (uint64_t)1 << 33, 0, 0); /* count * size past 2^64 */
    call(1, C, 0, 2, 0, 10, 10, 0, D);
    call(1, R, NUL, 2, D, 0, 0, 0, 0); /* realloc(D, 0) freed D: no failure */
    call(1, M, 0, 0, 0, 0, 50, 0, E);
    call(1, R, NUL, 1, E, 0, 5000, 0, 0); /* failed: E stays */
    rss(2, 9);
    call(1, R, 0, 1, E, 0, 80, 0, E);    /* in place */
    call(1, R, 0, 2, E, 0, 8000, 0, Fb); /* moved */
    call(1, RA, 0, 1, Fb, 4, 100, 0, G);
    call(1, F, 0, 0, 0, 0, 0, 0, 0);         /* free(NULL) */
    call(1, F, 0, 0, 0xdead000, 0, 0, 0, 0); /* never allocated */
    call(1, F, 0, 0, G, 0, 0, 0, 0);
    call(1, F, 0, 0, G, 0, 0, 0, 0); /* double free */
    stack_def(1, 3, 0x700000, 3);
    call(1, M, 0, 3, 0, 0, 64, 0, H);
    call(1, M, 0, 1, 0, 0, 128, 0, H); /* H again while live: a free the trace lacks */
    call(1, MT_OP_POSIX_MEMALIGN, 0, 2, 0, 0, 256, 64, I);
    call(1, MT_OP_ALIGNED_ALLOC, 0, 3, 0, 0, 512, 128, J);
    call(2, MT_OP_MEMALIGN, 0, 1, 0, 0, 100, 4096, K);
    call(2, MT_OP_VALLOC, 0, 0, 0, 0, 10, 0, L);
    call(2, MT_OP_PVALLOC, 0, 2, 0, 0, 10, 0, Mb);
    call(2, MT_OP_POSIX_MEMALIGN, NUL, 0, 0, 0, (uint64_t)1 << 50, 64, 0);
    call(1, MT_OP_USABLE_SIZE, 0, 0, I, 0, 256, 0, 0);
    call(1, MT_OP_MALLOPT, 0, 0, 0, 0, 0, 0, 0);
    call(2, M, 0, 5, 0, 0, 1000, 0, 0x100000);              /* stack 5: never defined */
    call(2, M, 0, (1u << 24) + 5, 0, 0, 2000, 0, 0x110000); /* an id past the range */
    call(1, M, 0, 3, 0, 0, 0, 0, N);                        /* size 0 */
    call(2, F, 0, 0, K, 0, 0, 0, 0);
    call(1, F, 0, 0, J, 0, 0, 0, 0);
    rss(1, 3);
    if (mt_writer_close(w, 1, &err) < 0) {
        fprintf(stderr, "export_mk_edge_trace: %s\n", err.msg);
        return 1;
    }
    return 0;
}
