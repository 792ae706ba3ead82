/* make_golden OUTDIR: writes the golden traces of tests/golden (NAME.mtz, packed) into OUTDIR.
 *
 * Not part of a normal test run's inputs: tests/golden holds its output, committed, with the
 * expected `mtrace dump` of each converted workload (NAME.wl.txt) and some workload header fields
 * (NAME.info.txt). The trace2wl-golden-reproducible test runs it to check that the committed traces
 * are still what it writes. To regenerate after a deliberate change:
 *   build/tests/trace2wl/make_golden tests/golden && tests/trace2wl/golden.sh regen \
 *       build/trace2wl/trace2wl build/cli/mtrace tests/golden
 * and review the diff of the expected files. The traces use mt_writer's default header (pid, clocks
 * and times zero), so the same records always give the same bytes. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mtrace/trace_reader.h"
#include "t2w_util.h"

static void pack(const char *raw, const char *dir, const char *name)
{
    char out[4096];
    snprintf(out, sizeof out, "%s/%s.mtz", dir, name);
    unlink(out);
    mt_error_t err;
    if (mt_trace_pack(raw, out, 19, &err) < 0) {
        fprintf(stderr, "make_golden: %s\n", err.msg);
        exit(1);
    }
    unlink(raw);
}

/* One thread, every call: slots recycled, realloc's forms, failures, mallopt, marks. */
static void golden_calls(tb_t *b)
{
    tb_start(b, 1, 1000, 0);
    tb_mark(b, 1, 1100, "begin");
    tb_malloc(b, 1, 1200, 100, 0x1000);
    tb_calloc(b, 1, 1300, 4, 25, 0x2000);
    tb_free(b, 1, 1400, 0x1000);
    tb_malloc(b, 1, 1500, 50, 0x3000);
    tb_realloc(b, 1, 1600, 0x2000, 200, 0x2000);
    tb_realloc(b, 1, 1700, 0x2000, 5000, 0x4000);
    tb_realloc(b, 1, 1800, 0, 64, 0x5000);
    tb_realloc(b, 1, 1900, 0x5000, 0, 0);
    tb_realloc(b, 1, 2000, 0x3000, 1ull << 40, 0);
    tb_reallocarray(b, 1, 2100, 0, 3, 10, 0x6000);
    tb_reallocarray(b, 1, 2200, 0x6000, 4, 10, 0x6100);
    tb_aligned(b, MT_OP_MEMALIGN, 1, 2300, 64, 100, 0x7000);
    tb_aligned(b, MT_OP_ALIGNED_ALLOC, 1, 2400, 32, 64, 0x7100);
    tb_aligned(b, MT_OP_POSIX_MEMALIGN, 1, 2500, 16, 48, 0x7200);
    tb_aligned(b, MT_OP_POSIX_MEMALIGN, 1, 2600, 16, 1ull << 41, 0);
    tb_valloc(b, MT_OP_VALLOC, 1, 2700, 4096, 0x8000);
    tb_valloc(b, MT_OP_PVALLOC, 1, 2800, 100, 0x9000);
    tb_usable(b, 1, 2900, 0x7000, 112);
    tb_usable(b, 1, 2950, 0, 0);
    tb_mallopt(b, 1, 3000, -3, 65536, 1);
    tb_free(b, 1, 3100, 0);
    tb_malloc(b, 1, 3200, 1ull << 50, 0);
    tb_free(b, 1, 3300, 0x7000);
    tb_free(b, 1, 3310, 0x7100);
    tb_malloc(b, 1, 3400, 10, 0xa000);
    tb_malloc(b, 1, 3500, 20, 0xb000);
    tb_malloc(b, 1, 3600, 30, 0xc000);
    tb_free(b, 1, 3700, 0x9000);
    tb_mark(b, 1, 3800, "end");
}

/* Threads: creation waits (one thread's start stamped before its creation), a block freed and one
 * realloc'd by another thread, addresses the allocator hands from one thread to another (no waits),
 * a malloc stamped before the free that released its address, a thread that exits and one that gets
 * its tid and frees the exited thread's block, joins. */
static void golden_threads(tb_t *b)
{
    tb_tid(b, 3, 777);
    tb_tid(b, 4, 777);
    tb_start(b, 1, 1000, 0);
    tb_malloc(b, 1, 1100, 100, 0xa000);
    tb_malloc(b, 1, 1200, 200, 0xb000);
    tb_create(b, 1, 1300, 2);
    tb_start(b, 2, 1350, 1);
    tb_create(b, 1, 1400, 3);
    tb_start(b, 3, 1390, 1);
    tb_free(b, 2, 1500, 0xa000);
    tb_realloc(b, 3, 1600, 0xb000, 300, 0xc000);
    tb_malloc(b, 2, 1650, 40, 0xd000);
    tb_free(b, 1, 1700, 0xc000);
    tb_malloc(b, 3, 1740, 16, 0xe000);
    tb_malloc(b, 2, 1750, 8, 0xa000);
    tb_free(b, 3, 1760, 0xe000);
    tb_malloc(b, 2, 1770, 24, 0xe000);
    tb_malloc(b, 3, 1780, 32, 0xf000);
    tb_malloc(b, 1, 1790, 48, 0xd000); /* thread 2 frees 0xd000 at 1800 */
    tb_free(b, 2, 1800, 0xd000);
    tb_exit(b, 3, 1900);
    tb_create(b, 1, 2000, 4);
    tb_start(b, 4, 2050, 1);
    tb_free(b, 4, 2100, 0xf000);
    tb_malloc(b, 4, 2150, 64, 0x10000);
    tb_exit(b, 4, 2200);
    tb_malloc(b, 1, 2300, 72, 0x11000);
    tb_free(b, 1, 2400, 0xd000);
    tb_free(b, 2, 2500, 0xe000);
    tb_exit(b, 2, 2600);
}

/* What the converter drops and repairs: unknown and double frees, a realloc of an unknown block,
 * a chain of two inversions. */
static void golden_repairs(tb_t *b)
{
    tb_start(b, 1, 1000, 0);
    tb_create(b, 1, 1010, 2);
    tb_create(b, 1, 1020, 3);
    tb_start(b, 2, 1030, 1);
    tb_start(b, 3, 1040, 1);
    tb_free(b, 1, 1100, 0xdead0);
    tb_malloc(b, 1, 1200, 100, 0xa000);
    tb_malloc(b, 1, 1210, 100, 0xb000);
    tb_free(b, 1, 1300, 0xa000);
    tb_free(b, 1, 1400, 0xa000); /* double */
    tb_realloc(b, 1, 1500, 0xbeef0, 64, 0xc000);
    tb_usable(b, 1, 1550, 0xcafe0, 32);
    tb_malloc(b, 2, 1590, 10, 0xb000); /* chain: before thread 1's free of 0xb000 */
    tb_free(b, 2, 1592, 0xc000);
    tb_malloc(b, 3, 1580, 20, 0xc000); /* before thread 2's free of 0xc000 */
    tb_free(b, 1, 1600, 0xb000);
    tb_free(b, 3, 1700, 0xc000);
    tb_free(b, 3, 1710, 0xc000); /* double */
    tb_free(b, 2, 1800, 0xb000);
}

static void fatal(const char *msg)
{
    fprintf(stderr, "make_golden: %s\n", msg);
    exit(1);
}

int main(int argc, char **argv)
{
    t2w_fatal = fatal;
    if (argc != 2) {
        fprintf(stderr, "usage: make_golden OUTDIR\n");
        return 2;
    }
    const char *dir = argv[1];
    static const struct {
        const char *name;
        void (*fn)(tb_t *);
    } traces[] = {
        { "calls", golden_calls },
        { "threads", golden_threads },
        { "repairs", golden_repairs },
    };
    for (size_t i = 0; i < sizeof traces / sizeof traces[0]; i++) {
        char raw[4096];
        snprintf(raw, sizeof raw, "%s/%s.raw.mtr", dir, traces[i].name);
        tb_t b;
        tb_open(&b, raw);
        traces[i].fn(&b);
        tb_close(&b);
        pack(raw, dir, traces[i].name);
    }
    return 0;
}
