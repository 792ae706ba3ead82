/* Fuzz target: the simulator's loading and decoding path. mtrace-sim opens the workload with mt_wl_open,
 * reads each thread's ops through a workload cursor over buffers of its own (mt_wl_cursor_init); it
 * finds creation points from each stream's first two ops. This target
 * does the same without making the calls, checks what sim_thread_run checks (slots, WAIT threads),
 * and first runs mt_wl_decode_op over the raw input bytes. The input is a workload (fz_wl_expand). */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "fuzz.h"
#include "mtrace/workload.h"

#define RAW_CAP MT_WL_STREAM_BUF_SIZE

static void decode_all(const uint8_t *p, const uint8_t *end)
{
    mt_wl_rec_t r;
    uint64_t prev = 0;
    volatile uint64_t sink = 0;
    while (p < end) {
        const uint8_t *before = p;
        if (mt_wl_decode_op(&p, end, &r, &prev) < 0) {
            if (p != before)
                fz_fail("mt_wl_decode_op moved on and failed");
            p++; /* resynchronize one byte on */
            continue;
        }
        if (p <= before || p > end)
            fz_fail("mt_wl_decode_op left the pointer at %td of %td", p - before, end - before);
        if (r.op == MT_WL_MARK && (r.data < before || r.data + r.len > p))
            fz_fail("a mark's label lies outside its op");
        sink += r.op + r.slot + r.slot2 + r.size + r.time_ns;
        for (uint32_t k = 0; k < r.len; k++)
            sink += r.data[k];
    }
    (void)sink;
}

static uint8_t raw[RAW_CAP];
static uint8_t *zbuf;
static ZSTD_DCtx *dctx;

/* sim_thread.c's loop, for one whole stream: the workload cursor over buffers of the caller's. */
static void replay_stream(const mt_wl_t *w, uint32_t t, uint64_t nslots, uint32_t nthreads)
{
    mt_wl_cursor_t c;
    mt_wl_cursor_init(&c, w, t, raw, zbuf, dctx);
    mt_wl_rec_t r;
    mt_error_t err;
    volatile uint64_t sink = 0;
    while (mt_wl_cursor_next(&c, &r, &err) > 0) {
        if (r.slot > nslots || r.slot2 > nslots)
            return; /* the simulator stops the replay here */
        if (r.op == MT_WL_WAIT && r.thread < nthreads)
            sink += mt_wl_thread(w, r.thread)->ops;
        sink += r.op + r.size + r.count + r.align + r.time_ns;
    }
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fz_buf_t buf;
    if (!zbuf) {
        zbuf = malloc(ZSTD_compressBound(RAW_CAP));
        dctx = ZSTD_createDCtx();
        if (!zbuf || !dctx)
            fz_fail("out of memory");
    }
    decode_all(data, data + size);

    fz_wl_expand(data, size, 0, &buf);
    mt_wl_t *w;
    mt_error_t err;
    if (mt_wl_open(&w, fz_memfile(0, buf.p, buf.n), &err) < 0)
        return 0;
    const mt_wl_header_t *h = mt_wl_header(w);
    const uint32_t nthreads = h->threads;
    if (nthreads == 0 || mt_wl_thread_count(w) != nthreads) {
        mt_wl_close(w);
        return 0;
    }
    uint64_t first = mt_wl_thread(w, 0)->start_ns;
    for (uint32_t i = 1; i < nthreads; i++)
        if (mt_wl_thread(w, i)->start_ns < first)
            first = mt_wl_thread(w, i)->start_ns;
    /* sim_main.c plan_spawns: THREAD_START then WAIT(creator, n) gives a creation point. */
    for (uint32_t k = 0; k < nthreads; k++) {
        const mt_wl_thread_entry_t *e = mt_wl_thread(w, k);
        if (!e->creator || e->creator - 1 >= nthreads || e->creator - 1 == k)
            continue;
        mt_wl_cursor_t *c;
        if (mt_wl_cursor_open(&c, w, k) < 0)
            fz_fail("out of memory");
        mt_wl_rec_t r;
        if (mt_wl_cursor_next(c, &r, &err) > 0 && r.op == MT_WL_THREAD_START)
            (void)mt_wl_cursor_next(c, &r, &err);
        mt_wl_cursor_close(c);
    }
    for (uint32_t t = 0; t < nthreads && t < 256; t++)
        replay_stream(w, t, h->slots, nthreads);
    mt_wl_close(w);
    return 0;
}
