/* The trace format end to end without the shim: records written with mt_writer (which encodes with
 * the shared mt_enc_call / mt_enc_event) must come back from the reader field for field, across
 * threads and chunk boundaries, in packed form too; cut or damaged files must give a prefix of the
 * records or an error that names an offset, and never a crash or a damaged record. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mtrace/file_io.h"
#include "mtrace/json_reader.h"
#include "mtrace/trace_reader.h"
#include "mtrace/trace_writer.h"
#include "mtrace/workload.h"
#include "test_util.h"

/* One temporary directory per test case (unchecked fixture: it runs in the runner, so the directory
 * is removed even when a test fails). */
static char *g_dir;
TEST_DIR_FIXTURE(g_dir, "format", NULL)

/* ---- helpers ----------------------------------------------------------------------------------- */

static mt_writer_t *open_writer(const char *path, const mt_file_header_t *tmpl)
{
    mt_writer_t *w;
    mt_error_t err = { "" };
    const int rc = mt_writer_open(&w, path, tmpl, &err);
    ck_assert_msg(rc == 0, "mt_writer_open: %d %s", rc, err.msg);
    return w;
}

static void close_writer(mt_writer_t *w, int seal)
{
    mt_error_t err = { "" };
    const int rc = mt_writer_close(w, seal, &err);
    ck_assert_msg(rc == 0, "mt_writer_close: %d %s", rc, err.msg);
}

static void write_list(mt_writer_t *w, uint32_t thread, uint32_t tid, const rec_list_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        const int rc = write_record(w, thread, tid, &l->v[i]);
        if (rc != 0) /* a plain if: a passing ck_assert costs a write to Check's pipe, per record here */
            ck_abort_msg("write_record %zu: %d %s", i, rc, mt_writer_error(w));
    }
}

static mt_trace_t *open_trace(const char *path)
{
    mt_trace_t *t;
    mt_error_t err = { "" };
    const int rc = mt_trace_open(&t, path, &err);
    ck_assert_msg(rc == 0, "mt_trace_open %s: %d %s", path, rc, err.msg);
    return t;
}

static void read_all_ok(const char *path, rec_list_t *out)
{
    mt_error_t err = { "" };
    const int rc = read_file_order(path, out, &err);
    ck_assert_msg(rc == 0, "reading %s: %d %s", path, rc, err.msg);
}

static void read_thread_ok(const mt_trace_t *t, size_t i, rec_list_t *out)
{
    mt_error_t err = { "" };
    const int rc = read_thread(t, i, out, &err);
    ck_assert_msg(rc == 0, "reading thread %zu: %d %s", i, rc, err.msg);
}

/* Every thread's records, thread after thread. */
static void read_threads_ok(const char *path, rec_list_t *out)
{
    mt_trace_t *t = open_trace(path);
    for (size_t i = 0; i < mt_trace_thread_count(t); i++)
        read_thread_ok(t, i, out);
    mt_trace_close(t);
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

/* (These two run in loops of thousands: plain checks, since a passing ck_assert writes to a pipe.) */
static void patch_file(const char *path, uint64_t off, const void *bytes, size_t len)
{
    const int fd = open(path, O_WRONLY);
    if (fd < 0 || pwrite(fd, bytes, len, (off_t)off) != (ssize_t)len)
        ck_abort_msg("patching %s: %s", path, strerror(errno));
    close(fd);
}

static uint8_t read_byte(const char *path, uint64_t off)
{
    const int fd = open(path, O_RDONLY);
    uint8_t b = 0;
    if (fd < 0 || pread(fd, &b, 1, (off_t)off) != 1)
        ck_abort_msg("reading %s: %s", path, strerror(errno));
    close(fd);
    return b;
}

/* Sizes of every magnitude, including the extremes. */
static uint64_t gen_size(rng_t *g)
{
    switch (rng_below(g, 8)) {
    case 0:
        return 0;
    case 1:
        return UINT64_MAX;
    case 2:
        return rng_below(g, 1ull << 40);
    case 3:
        return rng_next(g);
    case 4:
        return rng_below(g, 1 << 20);
    default:
        return 1 + rng_below(g, 512);
    }
}

/* Heap-like addresses mostly (small deltas), with jumps and the extremes now and then. */
static uint64_t gen_ptr(rng_t *g)
{
    switch (rng_below(g, 16)) {
    case 0:
        return 0;
    case 1:
        return UINT64_MAX;
    case 2:
        return rng_next(g);
    default:
        return 0x55550000ull * 0x100 + rng_below(g, 1 << 24) * 16;
    }
}

/* A random call record in the form the reader decodes it to: the fields its op carries, result and
 * usable zero when it returned NULL, posix_memalign's error in arg[0]. */
static mt_record_t gen_call(rng_t *g, uint64_t time)
{
    const unsigned op = 1 + (unsigned)rng_below(g, MT_OP_LAST_CALL);
    mt_record_t r = exp_call(op, time);
    const int block = mt_op_allocates(op);
    if (rng_below(g, 8) == 0) {
        r.flags |= MT_FLAG_STACK;
        r.stack = (uint32_t)rng_next(g);
    }
    if (rng_below(g, 8) == 0)
        r.flags |= MT_FLAG_HEAP_GREW;
    if (block && rng_below(g, 8) == 0)
        r.flags |= MT_FLAG_MMAPPED;
    if (block && rng_below(g, 10) == 0)
        r.flags |= MT_FLAG_NULL;
    uint64_t requested;
    switch (op) {
    case MT_OP_CALLOC:
    case MT_OP_REALLOCARRAY:
        if (op == MT_OP_REALLOCARRAY)
            r.ptr = gen_ptr(g);
        r.count = rng_below(g, 4) ? 1 + rng_below(g, 100) : gen_size(g);
        r.size = gen_size(g);
        requested = r.count * r.size;
        break;
    case MT_OP_REALLOC:
        r.ptr = gen_ptr(g);
        r.size = gen_size(g);
        requested = r.size;
        break;
    case MT_OP_MEMALIGN:
    case MT_OP_ALIGNED_ALLOC:
    case MT_OP_POSIX_MEMALIGN:
        r.align = rng_below(g, 4) ? 1ull << rng_below(g, 20) : rng_next(g);
        r.size = gen_size(g);
        requested = r.size;
        break;
    case MT_OP_FREE:
        r.ptr = gen_ptr(g);
        return r;
    case MT_OP_USABLE_SIZE:
        r.ptr = gen_ptr(g);
        r.size = gen_size(g);
        return r;
    case MT_OP_MALLOPT:
        r.arg[0] = (int32_t)rng_next(g);
        r.arg[1] = (int32_t)rng_next(g);
        r.arg[2] = rng_below(g, 2) ? (int32_t)rng_next(g) : 1;
        r.nargs = 3;
        return r;
    case MT_OP_MALLOC_TRIM:
        r.arg[0] = (int64_t)(rng_below(g, 2) ? gen_size(g) : 0);
        r.arg[1] = rng_below(g, 2);
        r.nargs = 2;
        return r;
    default:
        r.size = gen_size(g);
        requested = r.size;
        break;
    }
    if (r.flags & MT_FLAG_NULL) {
        if (op == MT_OP_POSIX_MEMALIGN) {
            r.arg[0] = rng_below(g, 2) ? EINVAL : ENOMEM;
            r.nargs = 1;
        }
        return r;
    }
    r.result = gen_ptr(g);
    /* slack is signed on disk: a usable size below the request must survive too */
    r.usable = requested + (rng_below(g, 16) ? rng_below(g, 64) : (uint64_t) - (int64_t)rng_below(g, 64));
    return r;
}

static const unsigned varint_events[] = { MT_EV_THREAD_START, MT_EV_THREAD_EXIT, MT_EV_THREAD_CREATE, MT_EV_FORK,
                                          MT_EV_RSS,          MT_EV_TRUNCATED,   MT_EV_CONTROL,       MT_EV_LOST };
static const unsigned byte_events[] = { MT_EV_EXEC, MT_EV_MARK, MT_EV_STACK, MT_EV_MODULE };

/* A random event; opaque payloads are taken from `scratch` (at least 256 bytes). */
static mt_record_t gen_event(rng_t *g, uint64_t time, uint8_t *scratch)
{
    if (rng_below(g, 2)) {
        const unsigned op = varint_events[rng_below(g, sizeof varint_events / sizeof varint_events[0])];
        uint64_t v[4];
        const unsigned n = op == MT_EV_RSS ? 4 : 1;
        for (unsigned i = 0; i < n; i++)
            v[i] = rng_below(g, 2) ? rng_below(g, 1000) : rng_next(g);
        return exp_event_varints(op, time, n, v);
    }
    const unsigned op = byte_events[rng_below(g, sizeof byte_events / sizeof byte_events[0])];
    const size_t len = rng_below(g, 4) ? rng_below(g, 32) : rng_below(g, 256);
    for (size_t i = 0; i < len; i++)
        scratch[i] = (uint8_t)rng_next(g);
    return exp_event_bytes(op, time, scratch, len);
}

/* Time moves forward mostly, sometimes by a lot, sometimes back (TSCs of different cores). */
static uint64_t gen_time(rng_t *g, uint64_t t)
{
    switch (rng_below(g, 32)) {
    case 0:
        return t - rng_below(g, 1000);
    case 1:
        return t + rng_below(g, 1ull << 40);
    default:
        return t + rng_below(g, 300);
    }
}

/* Appends n random records (events one in eight) to l. */
static void gen_records(rng_t *g, rec_list_t *l, size_t n, uint64_t *time)
{
    uint8_t scratch[256];
    for (size_t i = 0; i < n; i++) {
        *time = gen_time(g, *time);
        const mt_record_t r = rng_below(g, 8) ? gen_call(g, *time) : gen_event(g, *time, scratch);
        rec_list_push(l, &r);
    }
}

/* ---- every op and event ------------------------------------------------------------------------ */

/* build_every_op's parts: each takes the time of the record before its first and returns the time
 * of its last, so that the times run on from one part to the next as they did in one function (the
 * round-trip tests compare the records, times included). PUSH() appends r as it stands. */
#define PUSH() rec_list_push(l, &r)

/* malloc, calloc, realloc and reallocarray: a block, a failure, realloc(NULL, n), in place, moved
 * and realloc(p, 0). */
static uint64_t push_plain_allocations(rec_list_t *l, uint64_t t)
{
    mt_record_t r;
    r = exp_call(MT_OP_MALLOC, t += 10);
    r.size = 100;
    r.result = 0x555555559ac0;
    r.usable = 104;
    PUSH();
    r = exp_call(MT_OP_MALLOC, t += 10);
    r.size = UINT64_MAX;
    r.flags = MT_FLAG_NULL;
    PUSH();
    r = exp_call(MT_OP_MALLOC, t += 10);
    r.size = 0;
    r.result = 0x555555559b30;
    r.usable = 24;
    PUSH();
    r = exp_call(MT_OP_CALLOC, t += 7);
    r.count = 10;
    r.size = 24;
    r.result = 0x555555559b50;
    r.usable = 248;
    PUSH();
    r = exp_call(MT_OP_CALLOC, t += 7);
    r.count = 1ull << 62;
    r.size = 16;
    r.flags = MT_FLAG_NULL;
    PUSH();
    r = exp_call(MT_OP_REALLOC, t += 3);
    r.ptr = 0;
    r.size = 64;
    r.result = 0x555555559c50;
    r.usable = 72;
    PUSH();
    /* in place: the same address comes back */
    r = exp_call(MT_OP_REALLOC, t += 3);
    r.ptr = 0x555555559c50;
    r.size = 32;
    r.result = 0x555555559c50;
    r.usable = 72;
    PUSH();
    /* moved */
    r = exp_call(MT_OP_REALLOC, t += 3);
    r.ptr = 0x555555559c50;
    r.size = 100000;
    r.result = 0x55555555a000;
    r.usable = 100008;
    PUSH();
    /* realloc(p, 0) frees p and returns NULL */
    r = exp_call(MT_OP_REALLOC, t += 3);
    r.ptr = 0x55555555a000;
    r.size = 0;
    r.flags = MT_FLAG_NULL;
    PUSH();
    r = exp_call(MT_OP_REALLOCARRAY, t += 3);
    r.ptr = 0x555555559b50;
    r.count = 8;
    r.size = 16;
    r.result = 0x555555559b50;
    r.usable = 248;
    PUSH();
    r = exp_call(MT_OP_REALLOCARRAY, t += 3);
    r.ptr = 0x555555559b50;
    r.count = 1ull << 62;
    r.size = 16;
    r.flags = MT_FLAG_NULL;
    PUSH();
    return t;
}

/* memalign, posix_memalign (its failures with their error), aligned_alloc, valloc, pvalloc. */
static uint64_t push_aligned_allocations(rec_list_t *l, uint64_t t)
{
    mt_record_t r;
    r = exp_call(MT_OP_MEMALIGN, t += 5);
    r.align = 32;
    r.size = 100;
    r.result = 0x55555555b020;
    r.usable = 104;
    PUSH();
    r = exp_call(MT_OP_POSIX_MEMALIGN, t += 5);
    r.align = 64;
    r.size = 200;
    r.result = 0x55555555b100;
    r.usable = 200;
    PUSH();
    /* posix_memalign's failure: no block, its error in arg[0] */
    r = exp_call(MT_OP_POSIX_MEMALIGN, t += 5);
    r.align = 3;
    r.size = 10;
    r.flags = MT_FLAG_NULL;
    r.arg[0] = EINVAL;
    r.nargs = 1;
    PUSH();
    r = exp_call(MT_OP_POSIX_MEMALIGN, t += 5);
    r.align = 64;
    r.size = UINT64_MAX;
    r.flags = MT_FLAG_NULL;
    r.arg[0] = ENOMEM;
    r.nargs = 1;
    PUSH();
    r = exp_call(MT_OP_ALIGNED_ALLOC, t += 5);
    r.align = 128;
    r.size = 256;
    r.result = 0x55555555b200;
    r.usable = 264;
    PUSH();
    r = exp_call(MT_OP_ALIGNED_ALLOC, t += 5);
    r.align = 1ull << 63;
    r.size = 1;
    r.flags = MT_FLAG_NULL;
    PUSH();
    r = exp_call(MT_OP_VALLOC, t += 5);
    r.size = 1000;
    r.result = 0x55555555c000;
    r.usable = 1000;
    PUSH();
    r = exp_call(MT_OP_PVALLOC, t += 5);
    r.size = 1000;
    r.result = 0x55555555d000;
    r.usable = 4096;
    PUSH();
    return t;
}

/* malloc_usable_size, mallopt, malloc_trim and free, with the edge values of their arguments. */
static uint64_t push_other_calls(rec_list_t *l, uint64_t t)
{
    mt_record_t r;
    r = exp_call(MT_OP_USABLE_SIZE, t += 1);
    r.ptr = 0x555555559ac0;
    r.size = 104;
    PUSH();
    r = exp_call(MT_OP_USABLE_SIZE, t += 1);
    r.ptr = 0;
    r.size = 0;
    PUSH();
    /* mallopt's parameters are signed: M_TOP_PAD is -2, values may be negative */
    r = exp_call(MT_OP_MALLOPT, t += 1);
    r.arg[0] = -2;
    r.arg[1] = -5;
    r.arg[2] = 0;
    r.nargs = 3;
    PUSH();
    r = exp_call(MT_OP_MALLOPT, t += 1);
    r.arg[0] = INT32_MIN;
    r.arg[1] = INT32_MAX;
    r.arg[2] = 1;
    r.nargs = 3;
    PUSH();
    /* malloc_trim's pad is a size_t, its return 0 or 1 */
    r = exp_call(MT_OP_MALLOC_TRIM, t += 1);
    r.arg[0] = (int64_t)(UINT64_MAX >> 1);
    r.arg[1] = 1;
    r.nargs = 2;
    PUSH();
    r = exp_call(MT_OP_MALLOC_TRIM, t += 1);
    r.arg[0] = 0;
    r.arg[1] = 0;
    r.nargs = 2;
    PUSH();
    r = exp_call(MT_OP_FREE, t += 1);
    r.ptr = 0x555555559ac0;
    PUSH();
    r = exp_call(MT_OP_FREE, t += 1);
    r.ptr = 0;
    PUSH(); /* free(NULL) */
    return t;
}

/* Each flag alone and together, stack ids, a clock that steps back, a signed slack. */
static uint64_t push_flagged_calls(rec_list_t *l, uint64_t t)
{
    mt_record_t r;
    /* glibc's path flags, stack ids, both in one extension byte */
    r = exp_call(MT_OP_MALLOC, t += 1);
    r.size = 1 << 20;
    r.result = 0x7ffff7a00010;
    r.usable = (1 << 20) + 4080;
    r.flags = MT_FLAG_MMAPPED;
    PUSH();
    r = exp_call(MT_OP_MALLOC, t += 1);
    r.size = 200000;
    r.result = 0x55555557a000;
    r.usable = 200008;
    r.flags = MT_FLAG_HEAP_GREW;
    PUSH();
    r = exp_call(MT_OP_CALLOC, t += 1);
    r.count = 3;
    r.size = 5;
    r.result = 0x55555555e000;
    r.usable = 24;
    r.flags = MT_FLAG_STACK;
    r.stack = 7;
    PUSH();
    r = exp_call(MT_OP_MALLOC, t += 1);
    r.size = 9;
    r.result = 0x7ffff7b00010;
    r.usable = 24;
    r.flags = MT_FLAG_MMAPPED | MT_FLAG_HEAP_GREW | MT_FLAG_STACK;
    r.stack = UINT32_MAX;
    PUSH();
    r = exp_call(MT_OP_FREE, t += 1);
    r.ptr = 0x7ffff7b00010;
    r.flags = MT_FLAG_STACK | MT_FLAG_HEAP_GREW;
    r.stack = 1;
    PUSH();
    r = exp_call(MT_OP_MALLOC, t += 1);
    r.size = 9;
    r.flags = MT_FLAG_NULL | MT_FLAG_STACK;
    r.stack = 3;
    PUSH();
    /* a clock that steps back, and a usable size below the request (signed slack) */
    r = exp_call(MT_OP_MALLOC, t -= 500);
    r.size = 50;
    r.result = 0x555555560000;
    r.usable = 40;
    PUSH();
    r = exp_call(MT_OP_FREE, t += 1);
    r.ptr = UINT64_MAX;
    PUSH();
    return t;
}
#undef PUSH

/* Every event, with the payloads the shim writes. */
static void push_every_event(rec_list_t *l, uint64_t t)
{
    mt_record_t r;
    static const uint8_t stack_payload[] = { 0x07, 0x00, 0x10, 0x20, 0x00, 0xff, 0x00 };
    static const uint8_t module_payload[] = { 0x00, 0x10, 0x40, 0x00, '/', 'l', 'i', 'b', 0x00 };
    const uint64_t creator[] = { 0 }, lost[] = { 7 }, created[] = { 2 }, pid[] = { 4242 },
                   rss[] = { 1000, 200, 50, 123456789012ull }, err[] = { 28 }, ctl[] = { MT_CTL_PAUSE },
                   nlost[] = { UINT64_MAX }, pages[] = { 0x7ffff7a00010ull, 256, 64, MT_PAGES_AT_END },
                   vm[] = { MT_VM_UNMAP, 0x7ffff6000000ull, 1u << 20, 200 };
    r = exp_event_varints(MT_EV_THREAD_START, t += 1, 1, creator);
    rec_list_push(l, &r);
    r = exp_event_varints(MT_EV_THREAD_CREATE, t += 1, 1, created);
    rec_list_push(l, &r);
    r = exp_event_varints(MT_EV_FORK, t += 1, 1, pid);
    rec_list_push(l, &r);
    r = exp_event_bytes(MT_EV_EXEC, t += 1, "/bin/true", 9);
    rec_list_push(l, &r);
    r = exp_event_varints(MT_EV_RSS, t += 1, 4, rss);
    rec_list_push(l, &r);
    r = exp_event_bytes(MT_EV_MARK, t += 1, "phase 1", 7);
    rec_list_push(l, &r);
    r = exp_event_bytes(MT_EV_MARK, t += 1, "", 0);
    rec_list_push(l, &r);
    r = exp_event_varints(MT_EV_TRUNCATED, t += 1, 1, err);
    rec_list_push(l, &r);
    r = exp_event_bytes(MT_EV_STACK, t += 1, stack_payload, sizeof stack_payload);
    rec_list_push(l, &r);
    r = exp_event_bytes(MT_EV_MODULE, t += 1, module_payload, sizeof module_payload);
    rec_list_push(l, &r);
    r = exp_event_varints(MT_EV_CONTROL, t += 1, 1, ctl);
    rec_list_push(l, &r);
    r = exp_event_varints(MT_EV_LOST, t += 1, 1, nlost);
    rec_list_push(l, &r);
    r = exp_event_varints(MT_EV_PAGES, t += 1, 4, pages);
    rec_list_push(l, &r);
    r = exp_event_varints(MT_EV_VM, t += 1, 4, vm);
    rec_list_push(l, &r);
    r = exp_event_varints(MT_EV_THREAD_EXIT, t += 1, 1, lost);
    rec_list_push(l, &r);
}

/* One of each call, the edge cases of each (NULL results, realloc(NULL, n), realloc(p, 0), errors,
 * negative mallopt values, extreme sizes), each flag, and every event kind. Values look like what
 * the shim records for glibc on x86-64. */
static void build_every_op(rec_list_t *l)
{
    uint64_t t = 1000;
    t = push_plain_allocations(l, t);
    t = push_aligned_allocations(l, t);
    t = push_other_calls(l, t);
    t = push_flagged_calls(l, t);
    push_every_event(l, t);
}

START_TEST(every_op_round_trips)
{
    char *path = path_in(g_dir, "ops.mtr");
    rec_list_t want = { 0 }, got = { 0 };
    build_every_op(&want);
    /* every call op and every event op appears at least once */
    unsigned seen[MT_OP_MAX + 1] = { 0 };
    for (size_t i = 0; i < want.n; i++)
        seen[want.v[i].op]++;
    for (unsigned op = 1; op <= MT_OP_MAX; op++)
        if (mt_op_name(op))
            ck_assert_msg(seen[op], "no %s record in the test", mt_op_name(op));

    mt_writer_t *w = open_writer(path, NULL);
    write_list(w, 1, 4242, &want);
    close_writer(w, 1);

    read_all_ok(path, &got);
    assert_lists_eq(&got, &want, "every op");
    /* records start right after the first chunk's header and follow each other */
    ck_assert_uint_eq(got.v[0].offset, MT_CHUNK_SIZE + MT_CHUNK_HEADER_SIZE);
    for (size_t i = 1; i < got.n; i++)
        ck_assert_uint_gt(got.v[i].offset, got.v[i - 1].offset);

    mt_trace_t *t = open_trace(path);
    ck_assert_uint_eq(mt_trace_chunk_count(t), 1);
    ck_assert_uint_eq(mt_trace_thread_count(t), 1);
    ck_assert_uint_eq(mt_trace_thread(t, 0)->thread, 1);
    ck_assert_uint_eq(mt_trace_thread(t, 0)->tid, 4242);
    const mt_chunk_ref_t *c = mt_trace_chunk(t, 0);
    ck_assert_uint_eq(c->offset, MT_CHUNK_SIZE);
    ck_assert_uint_eq(c->h.seq, 0);
    ck_assert_uint_eq(c->h.flags, MT_CHUNK_SEALED);
    ck_assert_uint_eq(c->h.base_time, want.v[0].time);
    ck_assert_int_eq(mt_trace_is_packed(t), 0);
    ck_assert_uint_eq(mt_trace_file_size(t), 2 * MT_CHUNK_SIZE);
    mt_trace_close(t);
    rec_list_free(&want);
    rec_list_free(&got);
    free(path);
}
END_TEST

/* Version 1 files are still read: the same records written in both versions' syntax read back the
 * same, unaligned pointers and the extremes included; version 2 is shorter on 16-byte aligned ones.
 * (Version 3 writes calls as version 2 does; its PAGES event has no earlier form.) */
START_TEST(versions_1_and_2_read_alike)
{
    rec_list_t want = { 0 }, heap = { 0 }, every = { 0 };
    rng_t g = { 0x5eed2 };
    uint64_t time = 1000;
    rec_list_t all = { 0 };
    gen_records(&g, &all, 20000, &time);
    for (size_t i = 0; i < all.n; i++) /* malloc_trim is a call of version 4 on */
        if (all.v[i].op <= mt_last_call(2) || all.v[i].op >= MT_FIRST_EVENT)
            rec_list_push(&want, &all.v[i]);
    rec_list_free(&all);
    build_every_op(&every);
    for (size_t i = 0; i < every.n; i++)
        if (every.v[i].op != MT_EV_PAGES && every.v[i].op != MT_EV_VM && every.v[i].op != MT_OP_MALLOC_TRIM)
            rec_list_push(&want, &every.v[i]);
    rec_list_free(&every);
    for (size_t i = 0; i < 20000; i++) { /* a heap's calls: aligned blocks up to 4 MiB apart */
        mt_record_t r = exp_call(i % 2 ? MT_OP_FREE : MT_OP_MALLOC, 5000 + i);
        if (i % 2) {
            r.ptr = 0x7f0000000000ull + rng_below(&g, 1 << 18) * 16;
        } else {
            r.size = 48;
            r.usable = 56;
            r.result = 0x7f0000000000ull + rng_below(&g, 1 << 18) * 16;
        }
        rec_list_push(&heap, &r);
    }
    uint64_t used[2][2] = { { 0 } };
    for (unsigned v = 1; v <= 2; v++) {
        const rec_list_t *lists[2] = { &want, &heap };
        for (unsigned k = 0; k < 2; k++) {
            char name[32];
            snprintf(name, sizeof name, "v%u-%u.mtr", v, k);
            char *path = path_in(g_dir, name);
            mt_file_header_t h;
            mt_writer_default_header(&h);
            h.version = v;
            mt_writer_t *w = open_writer(path, &h);
            write_list(w, 1, 7, lists[k]);
            close_writer(w, 1);
            rec_list_t got = { 0 };
            read_all_ok(path, &got);
            assert_lists_eq(&got, lists[k], name);
            mt_trace_t *t = open_trace(path);
            ck_assert_uint_eq(mt_trace_header(t)->version, v);
            for (size_t c = 0; c < mt_trace_chunk_count(t); c++)
                used[v - 1][k] += mt_trace_chunk(t, c)->h.used;
            mt_trace_close(t);
            rec_list_free(&got);
            free(path);
        }
    }
    /* a delta of up to 2^18 units takes 3 bytes with its sign and flag bits; in bytes, over 2^20
     * (more than half of them here) takes 4 */
    ck_assert_msg(used[1][1] + 10000 < used[0][1], "heap records: v2 %llu bytes, v1 %llu",
                  (unsigned long long)used[1][1], (unsigned long long)used[0][1]);
    rec_list_free(&want);
    rec_list_free(&heap);
}
END_TEST

START_TEST(default_header_and_finish_fields)
{
    char *path = path_in(g_dir, "hdr.mtr");
    mt_writer_t *w = open_writer(path, NULL);
    mt_record_t r = exp_call(MT_OP_MALLOC, 500);
    r.size = 1;
    r.result = 0x1000;
    r.usable = 24;
    ck_assert_int_eq(mt_writer_call(w, 1, 11, &r), 0);
    r.time = 900;
    ck_assert_int_eq(mt_writer_call(w, 3, 33, &r), 0);
    r.time = 700;
    ck_assert_int_eq(mt_writer_call(w, 1, 11, &r), 0);
    ck_assert_uint_eq(mt_writer_chunks(w), 2);
    close_writer(w, 1);

    mt_trace_t *t = open_trace(path);
    const mt_file_header_t *h = mt_trace_header(t);
    ck_assert_mem_eq(h->magic, MT_TRACE_MAGIC, MT_TRACE_MAGIC_LEN);
    ck_assert_uint_eq(h->version, MT_TRACE_VERSION);
    ck_assert_uint_eq(h->header_size, sizeof(mt_file_header_t));
    ck_assert_uint_eq(h->chunk_size, MT_CHUNK_SIZE);
    ck_assert_uint_eq(h->ptr_size, sizeof(void *));
    ck_assert_uint_eq(h->little_endian, 1);
    ck_assert_uint_eq(h->ticks_per_sec, 1000000000u);
    ck_assert_uint_eq(h->flags, MT_HDR_COMPLETE); /* time in ns: no TSC flag */
    ck_assert_uint_eq(h->chunks_used, 3);
    ck_assert_uint_eq(h->threads, 3);
    ck_assert_uint_eq(h->end_time, 900);
    ck_assert_double_eq(mt_trace_ticks_per_sec(t), 1e9);
    mt_trace_close(t);

    /* unsealed: the header as given, no finish fields */
    w = open_writer(path, NULL);
    ck_assert_int_eq(mt_writer_call(w, 1, 11, &r), 0);
    close_writer(w, 0);
    t = open_trace(path);
    h = mt_trace_header(t);
    ck_assert_uint_eq(h->flags, 0);
    ck_assert_uint_eq(h->chunks_used, 0);
    ck_assert_uint_eq(h->end_time, 0);
    ck_assert_uint_eq(mt_trace_chunk(t, 0)->h.flags, 0);
    mt_trace_close(t);
    free(path);
}
END_TEST

START_TEST(template_header_kept)
{
    char *path = path_in(g_dir, "tmpl.mtr");
    mt_file_header_t tmpl;
    mt_writer_default_header(&tmpl);
    tmpl.pid = 1234;
    tmpl.ppid = 1;
    tmpl.flags = MT_HDR_TIME_TSC | MT_HDR_GLIBC_FLAGS | MT_HDR_STACKS;
    tmpl.ticks_per_sec = 2400000000ull;
    tmpl.start_time = 77;
    tmpl.end_time = 99999;
    tmpl.lost_calls = 5;
    tmpl.max_frames = 16;
    mt_writer_t *w = open_writer(path, &tmpl);
    close_writer(w, 1);
    mt_trace_t *t = open_trace(path);
    const mt_file_header_t *h = mt_trace_header(t);
    ck_assert_uint_eq(h->pid, 1234);
    ck_assert_uint_eq(h->ppid, 1);
    ck_assert_uint_eq(h->flags, MT_HDR_TIME_TSC | MT_HDR_GLIBC_FLAGS | MT_HDR_STACKS | MT_HDR_COMPLETE);
    ck_assert_uint_eq(h->ticks_per_sec, 2400000000ull);
    ck_assert_uint_eq(h->start_time, 77);
    ck_assert_uint_eq(h->end_time, 99999); /* a template's end time wins over the records' */
    ck_assert_uint_eq(h->lost_calls, 5);
    ck_assert_uint_eq(h->max_frames, 16);
    ck_assert_uint_eq(h->chunks_used, 1);
    ck_assert_uint_eq(mt_trace_chunk_count(t), 0);
    ck_assert_uint_eq(mt_trace_thread_count(t), 0);
    mt_trace_close(t);
    free(path);
}
END_TEST

/* The writer refuses what it cannot encode, with a message. */
START_TEST(writer_rejects_bad_records)
{
    char *path = path_in(g_dir, "bad.mtr");
    mt_writer_t *w = open_writer(path, NULL);
    mt_record_t r = exp_call(MT_OP_NONE, 1);
    ck_assert_int_eq(mt_writer_call(w, 1, 1, &r), -EINVAL);
    ck_assert_str_ne(mt_writer_error(w), "");
    r.op = MT_EV_MARK; /* an event is not a call */
    ck_assert_int_eq(mt_writer_call(w, 1, 1, &r), -EINVAL);
    r = exp_call(MT_OP_FREE, 1);
    r.flags = MT_FLAG_NULL; /* free returns no block */
    ck_assert_int_eq(mt_writer_call(w, 1, 1, &r), -EINVAL);
    r.flags = 0;
    ck_assert_int_eq(mt_writer_call(w, 0, 1, &r), -EINVAL); /* thread numbers start at 1 */
    ck_assert_int_eq(mt_writer_event(w, 1, 1, MT_OP_MALLOC, 1, NULL, 0), -EINVAL);
    ck_assert_int_eq(mt_writer_event(w, 1, 1, MT_EV_LAST + 1, 1, NULL, 0), -EINVAL); /* no such event */
    close_writer(w, 1);
    mt_file_header_t h2;
    mt_writer_default_header(&h2);
    h2.version = 2;
    w = open_writer(path, &h2);
    ck_assert_int_eq(mt_writer_event(w, 1, 1, MT_EV_PAGES, 1, NULL, 0), -EINVAL); /* not in version 2 */
    r = exp_call(MT_OP_MALLOC_TRIM, 1);
    ck_assert_int_eq(mt_writer_call(w, 1, 1, &r), -EINVAL); /* nor malloc_trim (version 4) */
    static uint8_t big[MT_CHUNK_SIZE];
    ck_assert_int_eq(mt_writer_event(w, 1, 1, MT_EV_MARK, 1, big, sizeof big), -EMSGSIZE);
    ck_assert_int_eq(mt_writer_header_string(w, MT_STR_END, "x", 1), -EINVAL);
    ck_assert_int_eq(mt_writer_header_string(w, MT_STR_ENV, big, 70000), -EINVAL);
    ck_assert_ptr_nonnull(strstr(mt_writer_error(w), path));
    /* nothing was written by the refused calls */
    ck_assert_uint_eq(mt_writer_chunks(w), 0);
    close_writer(w, 1);
    mt_trace_t *t = open_trace(path);
    ck_assert_uint_eq(mt_trace_chunk_count(t), 0);
    mt_trace_close(t);

    mt_error_t err = { "" };
    char *nodir = path_in(g_dir, "missing/x.mtr");
    ck_assert_int_eq(mt_writer_open(&w, nodir, NULL, &err), -ENOENT);
    ck_assert_ptr_null(w);
    ck_assert_ptr_nonnull(strstr(err.msg, nodir));
    free(nodir);
    free(path);
}
END_TEST

/* The largest event a chunk can hold fills a fresh chunk to its last byte and reads back whole,
 * sealed or not; one byte more is refused. */
static void check_largest_event(int seal)
{
    char *path = path_in(g_dir, seal ? "bigev-sealed.mtr" : "bigev-open.mtr");
    const size_t area = MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE;
    const size_t len = area - 1 - 1 - 3; /* op, time delta 0, 3-byte length */
    uint8_t *payload = malloc(len + 1);
    ck_assert_ptr_nonnull(payload);
    for (size_t i = 0; i < len + 1; i++)
        payload[i] = (uint8_t)(i * 7 + 1);
    rec_list_t want = { 0 }, got = { 0 };
    mt_record_t r = exp_event_bytes(MT_EV_MARK, 5, "a", 1);
    rec_list_push(&want, &r);
    r = exp_event_bytes(MT_EV_STACK, 6, payload, len);
    rec_list_push(&want, &r);
    mt_writer_t *w = open_writer(path, NULL);
    ck_assert_int_eq(mt_writer_event(w, 1, 1, MT_EV_STACK, 6, payload, len + 1), -EMSGSIZE);
    write_list(w, 1, 1, &want);
    ck_assert_uint_eq(mt_writer_chunks(w), 2); /* the big one could not join the first */
    close_writer(w, seal);
    read_all_ok(path, &got);
    assert_lists_eq(&got, &want, "big event");
    mt_trace_t *t = open_trace(path);
    ck_assert_uint_eq(mt_trace_chunk(t, 0)->h.flags, MT_CHUNK_SEALED); /* sealed when it filled */
    ck_assert_uint_eq(mt_trace_chunk(t, 1)->h.flags, seal ? MT_CHUNK_SEALED : 0);
    mt_cursor_t c;
    mt_error_t err;
    ck_assert_int_eq(mt_cursor_init(&c, t), 0);
    ck_assert_int_eq(mt_cursor_load(&c, 1, &err), 0);
    ck_assert_int_eq(mt_cursor_next(&c, &r, &err), 1);
    ck_assert_int_eq(mt_cursor_next(&c, &r, &err), 0);
    ck_assert_uint_eq(mt_cursor_used(&c), area); /* the record ends at the chunk's last byte */
    mt_cursor_fini(&c);
    mt_trace_close(t);
    rec_list_free(&want);
    rec_list_free(&got);
    free(payload);
    free(path);
}

START_TEST(largest_event_fills_a_chunk_sealed)
{
    check_largest_event(1);
}
END_TEST

START_TEST(largest_event_fills_a_chunk_unsealed)
{
    check_largest_event(0);
}
END_TEST

/* ---- threads and chunks ------------------------------------------------------------------------ */

START_TEST(many_threads_interleaved)
{
    enum { NTHREADS = 64, PER_THREAD = 400 };
    char *path = path_in(g_dir, "threads.mtr");
    rng_t g = { 42 };
    rec_list_t want[NTHREADS] = { { 0 } };
    uint64_t time[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        time[i] = 1000000 + (uint64_t)i;
        gen_records(&g, &want[i], PER_THREAD, &time[i]);
    }
    /* feed them in a random interleaving, each thread's in its own order */
    mt_writer_t *w = open_writer(path, NULL);
    size_t next[NTHREADS] = { 0 }, left = NTHREADS * PER_THREAD;
    uint32_t first_use[NTHREADS], nused = 0;
    while (left) {
        const size_t i = rng_below(&g, NTHREADS);
        if (next[i] == want[i].n)
            continue;
        if (next[i] == 0)
            first_use[nused++] = (uint32_t)i + 1;
        const int rc = write_record(w, (uint32_t)i + 1, 10000 + (uint32_t)i, &want[i].v[next[i]++]);
        if (rc != 0) /* a plain if, as in write_list */
            ck_abort_msg("%s", mt_writer_error(w));
        left--;
    }
    close_writer(w, 1);

    mt_trace_t *t = open_trace(path);
    ck_assert_uint_eq(mt_trace_thread_count(t), NTHREADS);
    ck_assert_uint_eq(mt_trace_header(t)->threads, NTHREADS);
    /* chunks are claimed in order of each thread's first record, as in the shim */
    ck_assert_uint_eq(nused, NTHREADS);
    uint32_t k = 0;
    for (size_t i = 0; i < mt_trace_chunk_count(t); i++)
        if (mt_trace_chunk(t, i)->h.seq == 0)
            ck_assert_uint_eq(mt_trace_chunk(t, i)->h.thread, first_use[k++]);
    ck_assert_uint_eq(k, NTHREADS);
    for (size_t i = 0; i < NTHREADS; i++) {
        const mt_thread_info_t *ti = mt_trace_thread(t, i);
        ck_assert_uint_eq(ti->thread, i + 1);
        ck_assert_uint_eq(ti->tid, 10000 + i);
        rec_list_t got = { 0 };
        read_thread_ok(t, i, &got);
        char what[32];
        snprintf(what, sizeof what, "thread %zu", i + 1);
        assert_lists_eq(&got, &want[i], what);
        rec_list_free(&got);
        rec_list_free(&want[i]);
    }
    mt_trace_close(t);
    free(path);
}
END_TEST

/* Enough records for several chunks per thread: each new chunk has seq + 1, base_time = the time of
 * its first record and fresh delta bases, and the records run on across the boundary unchanged. */
static void check_rollover(int seal)
{
    enum { NTHREADS = 3, PER_THREAD = 60000 };
    char *path = path_in(g_dir, seal ? "roll-sealed.mtr" : "roll-open.mtr");
    rng_t g = { 7 + (uint64_t)seal };
    rec_list_t want[NTHREADS] = { { 0 } };
    mt_writer_t *w = open_writer(path, NULL);
    for (int i = 0; i < NTHREADS; i++) {
        uint64_t time = 1ull << 40;
        gen_records(&g, &want[i], PER_THREAD, &time);
    }
    /* round robin in runs of 100: chunks of different threads alternate in the file */
    for (size_t base = 0; base < PER_THREAD; base += 100)
        for (uint32_t i = 0; i < NTHREADS; i++)
            for (size_t k = base; k < base + 100; k++)
                if (write_record(w, i + 1, 500 + i, &want[i].v[k]) != 0) /* a plain if, as in write_list */
                    ck_abort_msg("write_record %zu of thread %u: %s", k, i + 1, mt_writer_error(w));
    const uint64_t nchunks = mt_writer_chunks(w);
    close_writer(w, seal);

    mt_trace_t *t = open_trace(path);
    ck_assert_uint_eq(mt_trace_chunk_count(t), nchunks);
    ck_assert_uint_eq(mt_trace_file_size(t), (nchunks + 1) * MT_CHUNK_SIZE);
    for (size_t i = 0; i < mt_trace_chunk_count(t); i++)
        ck_assert_uint_eq(mt_trace_chunk(t, i)->offset, (i + 1) * MT_CHUNK_SIZE); /* no holes */
    const uint32_t *order = mt_trace_thread_chunks(t);
    for (size_t i = 0; i < NTHREADS; i++) {
        const mt_thread_info_t *ti = mt_trace_thread(t, i);
        ck_assert_uint_ge(ti->nchunks, 4);
        rec_list_t got = { 0 };
        read_thread_ok(t, i, &got);
        char what[48];
        snprintf(what, sizeof what, "thread %zu, seal %d", i + 1, seal);
        assert_lists_eq(&got, &want[i], what);

        /* walk the thread's chunks: seq in order, base_time = first record's time, all but the
         * last sealed (filled up), the last sealed only when the writer sealed at close */
        size_t rec = 0;
        mt_cursor_t c;
        ck_assert_int_eq(mt_cursor_init(&c, t), 0);
        for (uint32_t k = 0; k < ti->nchunks; k++) {
            const size_t idx = order[ti->first + k];
            const mt_chunk_ref_t *ref = mt_trace_chunk(t, idx);
            ck_assert_uint_eq(ref->h.seq, k);
            ck_assert_uint_eq(ref->h.thread, i + 1);
            ck_assert_uint_eq(ref->h.tid, 500 + i);
            if (k > 0) /* chunks of a thread appear in the file in the order of their seq */
                ck_assert_uint_gt(ref->offset, mt_trace_chunk(t, order[ti->first + k - 1])->offset);
            const int last = k + 1 == ti->nchunks;
            ck_assert_uint_eq(ref->h.flags, (!last || seal) ? MT_CHUNK_SEALED : 0);
            ck_assert_uint_eq(ref->h.base_time, want[i].v[rec].time);
            mt_error_t err;
            ck_assert_int_eq(mt_cursor_load(&c, idx, &err), 0);
            mt_record_t r;
            size_t n = 0;
            while (mt_cursor_next(&c, &r, &err) > 0)
                n++;
            ck_assert_uint_gt(n, 0);
            if (ref->h.flags & MT_CHUNK_SEALED) {
                ck_assert_uint_eq(mt_cursor_used(&c), ref->h.used);
                /* a chunk closes only when the next record no longer fits */
                if (!last)
                    ck_assert_uint_gt(ref->h.used,
                                      MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE - MT_MAX_CALL_RECORD - 256 - 21);
            }
            rec += n;
        }
        ck_assert_uint_eq(rec, PER_THREAD);
        mt_cursor_fini(&c);
        rec_list_free(&got);
        rec_list_free(&want[i]);
    }
    ck_assert_uint_eq(mt_trace_header(t)->flags & MT_HDR_COMPLETE, seal ? MT_HDR_COMPLETE : 0);
    mt_trace_close(t);
    free(path);
}

START_TEST(chunk_rollover_sealed)
{
    check_rollover(1);
}
END_TEST

START_TEST(chunk_rollover_unsealed)
{
    check_rollover(0);
}
END_TEST

/* ---- header strings ---------------------------------------------------------------------------- */

START_TEST(header_strings)
{
    char *path = path_in(g_dir, "strings.mtr");
    mt_writer_t *w = open_writer(path, NULL);
    static const char cmdline[] = "prog\0--flag\0arg"; /* NUL-separated, kept whole */
    ck_assert_int_eq(mt_writer_header_string(w, MT_STR_CMDLINE, cmdline, sizeof cmdline - 1), 0);
    ck_assert_int_eq(mt_writer_header_string(w, MT_STR_EXE, "/usr/bin/prog", 13), 0);
    ck_assert_int_eq(mt_writer_header_string(w, MT_STR_ENV, "MTRACE_OUT=x.mtr", 16), 0);
    ck_assert_int_eq(mt_writer_header_string(w, MT_STR_ENV, "MALLOC_ARENA_MAX=2", 18), 0);
    ck_assert_int_eq(mt_writer_header_string(w, MT_STR_ENV, "", 0), 0);
    ck_assert_int_eq(mt_writer_header_string(w, MT_STR_HOST, "box", 3), 0);
    close_writer(w, 1);

    mt_trace_t *t = open_trace(path);
    size_t len = 0;
    const char *s = mt_trace_string(t, MT_STR_CMDLINE, 0, &len);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(len, sizeof cmdline - 1);
    ck_assert_mem_eq(s, cmdline, len);
    s = mt_trace_string(t, MT_STR_EXE, 0, &len);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(len, 13);
    ck_assert_mem_eq(s, "/usr/bin/prog", 13);
    s = mt_trace_string(t, MT_STR_ENV, 1, &len);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(len, 18);
    ck_assert_mem_eq(s, "MALLOC_ARENA_MAX=2", 18);
    s = mt_trace_string(t, MT_STR_ENV, 2, &len);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(len, 0);
    ck_assert_ptr_null(mt_trace_string(t, MT_STR_ENV, 3, &len));
    ck_assert_ptr_null(mt_trace_string(t, MT_STR_GLIBC, 0, &len));
    s = mt_trace_string(t, MT_STR_HOST, 0, &len);
    ck_assert_ptr_nonnull(s);
    ck_assert_mem_eq(s, "box", 3);
    mt_trace_close(t);
    free(path);
}
END_TEST

/* ---- shared clock reads --------------------------------------------------------------------------- */

/* A trace whose header says the recorder read the clock every 8 calls: thread 1's calls at times
 * 100 x4, 180 x2, the mark at 180, 300 x2; thread 2 (another chunk) one call at 50. */
static void write_shared_reads(const char *path, int say_every)
{
    mt_writer_t *w = open_writer(path, NULL);
    static const char clock[] = "source=tsc reads=every-8-calls-while-one-thread tsc_ns=12.0 monotonic_ns=30.0";
    static const char per_call[] = "source=tsc reads=per-call tsc_ns=12.0 monotonic_ns=30.0";
    const char *c = say_every ? clock : per_call;
    ck_assert_int_eq(mt_writer_header_string(w, MT_STR_CLOCK, c, strlen(c)), 0);
    static const uint64_t times[] = { 100, 100, 100, 100, 180, 180 };
    for (unsigned i = 0; i < 6; i++) {
        mt_record_t r = { .op = i & 1 ? MT_OP_FREE : MT_OP_MALLOC, .time = times[i] };
        if (i & 1)
            r.ptr = 0x1000 + 0x100 * (i - 1);
        else
            r.size = 32, r.result = 0x1000 + 0x100 * i, r.usable = 40;
        ck_assert_int_eq(mt_writer_call(w, 1, 11, &r), 0);
    }
    ck_assert_int_eq(mt_writer_event(w, 1, 11, MT_EV_MARK, 180, "m", 1), 0);
    for (unsigned i = 0; i < 2; i++) {
        const mt_record_t r = { .op = MT_OP_MALLOC, .time = 300, .size = 8, .result = 0x9000 + 0x10 * i, .usable = 24 };
        ck_assert_int_eq(mt_writer_call(w, 1, 11, &r), 0);
    }
    const mt_record_t r2 = { .op = MT_OP_MALLOC, .time = 50, .size = 8, .result = 0x8000, .usable = 24 };
    ck_assert_int_eq(mt_writer_call(w, 2, 12, &r2), 0);
    close_writer(w, 1);
}

/* Thread index i's record times through a thread cursor, spread or as stored. */
static size_t thread_times(mt_trace_t *t, size_t i, int spread, uint64_t *out, size_t cap)
{
    mt_thread_cursor_t tc;
    ck_assert_int_eq(mt_thread_cursor_init(&tc, t, i), 0);
    if (!spread)
        tc.c.spread_reads = 0;
    mt_record_t r;
    mt_error_t err = { "" };
    size_t n = 0;
    int rc;
    while ((rc = mt_thread_cursor_next(&tc, &r, &err)) > 0 && n < cap)
        out[n++] = r.time;
    ck_assert_msg(rc == 0, "%d %s", rc, err.msg);
    mt_thread_cursor_fini(&tc);
    return n;
}

/* The calls that share a read take times spread up to the next later record; a run ended by a
 * record of its own time (the mark) or by the chunk's end keeps its times, as does every record of
 * a trace read per call, and of a cursor told to keep the stored times. */
START_TEST(shared_reads_spread)
{
    static const uint64_t spread[] = { 100, 120, 140, 160, 180, 180, 180, 300, 300 };
    static const uint64_t stored[] = { 100, 100, 100, 100, 180, 180, 180, 300, 300 };
    for (int say = 0; say < 2; say++) {
        char *path = path_in(g_dir, say ? "every8.mtr" : "percall.mtr");
        write_shared_reads(path, say);
        mt_trace_t *t = open_trace(path);
        ck_assert_uint_eq(mt_trace_thread_count(t), 2);
        uint64_t got[16];
        for (int keep = 0; keep < 2; keep++) {
            size_t i1 = mt_trace_thread(t, 0)->thread == 1 ? 0 : 1;
            ck_assert_uint_eq(thread_times(t, i1, !keep, got, 16), 9);
            const uint64_t *want = say && !keep ? spread : stored;
            for (size_t k = 0; k < 9; k++)
                ck_assert_msg(got[k] == want[k], "%s, %s: record %zu at %" PRIu64 ", expected %" PRIu64,
                              say ? "every 8" : "per call", keep ? "stored" : "spread", k, got[k], want[k]);
            ck_assert_uint_eq(thread_times(t, 1 - i1, !keep, got, 16), 1);
            ck_assert_uint_eq(got[0], 50);
        }
        mt_trace_close(t);
        free(path);
    }
}
END_TEST

/* Runs one after another: the call that ends a run starts the next, and each is spread. */
START_TEST(shared_reads_runs_in_a_row)
{
    char *path = path_in(g_dir, "every8_rows.mtr");
    mt_writer_t *w = open_writer(path, NULL);
    static const char clock[] = "source=tsc reads=every-4-calls-while-one-thread tsc_ns=20.0 monotonic_ns=30.0";
    ck_assert_int_eq(mt_writer_header_string(w, MT_STR_CLOCK, clock, strlen(clock)), 0);
    static const uint64_t times[] = { 100, 100, 100, 100, 180, 180, 180, 180, 260 };
    for (unsigned i = 0; i < 9; i++) {
        const mt_record_t r = {
            .op = MT_OP_MALLOC, .time = times[i], .size = 8, .result = 0x1000 + 0x20 * i, .usable = 24
        };
        ck_assert_int_eq(mt_writer_call(w, 1, 11, &r), 0);
    }
    close_writer(w, 1);
    mt_trace_t *t = open_trace(path);
    uint64_t got[16];
    ck_assert_uint_eq(thread_times(t, 0, 1, got, 16), 9);
    for (unsigned i = 0; i < 9; i++)
        ck_assert_msg(got[i] == 100 + 20 * i, "record %u at %" PRIu64 ", expected %u", i, got[i], 100 + 20 * i);
    mt_trace_close(t);
    free(path);
}
END_TEST

/* Damage met while decoding a run ahead: the records before it come first, with their stored times,
 * then the error, as without spreading. */
START_TEST(shared_reads_damage)
{
    char *path = path_in(g_dir, "every8_damaged.mtr");
    write_shared_reads(path, 1);
    mt_trace_t *t = open_trace(path);
    const size_t i1 = mt_trace_thread(t, 0)->thread == 1 ? 0 : 1;
    mt_thread_cursor_t tc;
    ck_assert_int_eq(mt_thread_cursor_init(&tc, t, i1), 0);
    tc.c.spread_reads = 0;
    mt_record_t r;
    mt_error_t err = { "" };
    for (int k = 0; k < 3; k++)
        ck_assert_int_eq(mt_thread_cursor_next(&tc, &r, &err), 1);
    const uint64_t at = r.offset; /* the third call's first byte (the run's third of four) */
    mt_thread_cursor_fini(&tc);
    mt_trace_close(t);
    const int fd = open(path, O_WRONLY);
    ck_assert_int_ge(fd, 0);
    const uint8_t bad = 0x3f; /* no opcode */
    ck_assert_int_eq(pwrite(fd, &bad, 1, (off_t)at), 1);
    close(fd);

    t = open_trace(path);
    ck_assert_int_eq(mt_thread_cursor_init(&tc, t, i1), 0);
    ck_assert(tc.c.spread_reads);
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(mt_thread_cursor_next(&tc, &r, &err), 1);
        ck_assert_uint_eq(r.time, 100);
    }
    ck_assert_int_lt(mt_thread_cursor_next(&tc, &r, &err), 0);
    ck_assert_msg(strstr(err.msg, "expected a record opcode") != NULL, "%s", err.msg);
    mt_thread_cursor_fini(&tc);
    mt_trace_close(t);
    free(path);
}
END_TEST

/* Strings fill the header chunk up to its end (keeping room for the end tag) and no further. */
START_TEST(header_strings_fill_the_chunk)
{
    char *path = path_in(g_dir, "fill.mtr");
    mt_writer_t *w = open_writer(path, NULL);
    static char s[1000];
    memset(s, 'x', sizeof s);
    size_t n = 0;
    int rc;
    while ((rc = mt_writer_header_string(w, MT_STR_ENV, s, sizeof s)) == 0)
        n++;
    ck_assert_int_eq(rc, -ENOSPC);
    const size_t room = MT_CHUNK_SIZE - MT_HEADER_STRINGS_OFFSET - 4;
    ck_assert_uint_eq(n, room / (4 + sizeof s));
    /* a smaller one still fits in what is left */
    const size_t left = room - n * (4 + sizeof s);
    ck_assert_int_eq(mt_writer_header_string(w, MT_STR_HOST, s, left - 4), 0);
    ck_assert_int_eq(mt_writer_header_string(w, MT_STR_HOST, s, 0), -ENOSPC);
    close_writer(w, 1);
    mt_trace_t *t = open_trace(path);
    ck_assert_ptr_nonnull(mt_trace_string(t, MT_STR_ENV, (unsigned)n - 1, NULL));
    ck_assert_ptr_null(mt_trace_string(t, MT_STR_ENV, (unsigned)n, NULL));
    size_t len;
    ck_assert_ptr_nonnull(mt_trace_string(t, MT_STR_HOST, 0, &len));
    ck_assert_uint_eq(len, left - 4);
    mt_trace_close(t);
    free(path);
}
END_TEST

/* ---- cut files --------------------------------------------------------------------------------- */

/* Decodes the whole file in file order, comparing each record with full->v[i] as it goes (no copies:
 * this runs 65536 times per test). Returns the number of records, which all matched, or -1 with a
 * message in err. */
static long matching_prefix(const char *path, const rec_list_t *full, mt_error_t *err)
{
    mt_trace_t *t;
    int rc = mt_trace_open(&t, path, err);
    if (rc < 0)
        return -1;
    mt_cursor_t c;
    if (mt_cursor_init(&c, t) < 0)
        ck_abort_msg("out of memory");
    long n = 0;
    for (size_t i = 0; i < mt_trace_chunk_count(t) && rc >= 0; i++) {
        rc = mt_cursor_load(&c, i, err);
        mt_record_t r;
        while (rc >= 0 && (rc = mt_cursor_next(&c, &r, err)) > 0) {
            if ((size_t)n >= full->n || !record_eq(&r, &full->v[n])) {
                char a[512];
                snprintf(err->msg, sizeof err->msg, "record %ld is not the full file's: %s", n,
                         record_str(&r, a, sizeof a));
                rc = -1;
                break;
            }
            n++;
        }
    }
    mt_cursor_fini(&c);
    mt_trace_close(t);
    return rc < 0 ? -1 : n;
}

/* A file cut at any byte of its last chunk (a crash, a copy in progress) opens and gives exactly the
 * records whose bytes are all present, in order: a prefix of the full list, never a damaged record. */
static void check_every_cut(int seal)
{
    char *path = path_in(g_dir, seal ? "cut-sealed.mtr" : "cut-open.mtr");
    rng_t g = { 99 + (uint64_t)seal };
    rec_list_t a = { 0 }, b = { 0 }, last = { 0 };
    uint64_t ta = 100, tb = 200, tl = 300;
    gen_records(&g, &a, 20, &ta);
    gen_records(&g, &b, 20, &tb);
    gen_records(&g, &last, 1000, &tl);
    mt_writer_t *w = open_writer(path, NULL);
    write_list(w, 1, 1, &a);
    write_list(w, 2, 2, &b);
    write_list(w, 3, 3, &last); /* thread 3 starts last: its chunk is the file's last */
    close_writer(w, seal);

    /* the full list in file order, and where each record of the last chunk ends */
    rec_list_t full = { 0 };
    read_all_ok(path, &full);
    ck_assert_uint_eq(full.n, a.n + b.n + last.n);
    const uint64_t size = file_size(path);
    const uint64_t last_off = size - MT_CHUNK_SIZE;
    mt_trace_t *t = open_trace(path);
    ck_assert_uint_eq(mt_trace_chunk(t, mt_trace_chunk_count(t) - 1)->offset, last_off);
    uint64_t *ends = calloc(last.n, sizeof *ends);
    mt_cursor_t c;
    mt_error_t err;
    ck_assert_int_eq(mt_cursor_init(&c, t), 0);
    ck_assert_int_eq(mt_cursor_load(&c, mt_trace_chunk_count(t) - 1, &err), 0);
    mt_record_t r;
    for (size_t i = 0; i < last.n; i++) {
        ck_assert_int_eq(mt_cursor_next(&c, &r, &err), 1);
        assert_record_eq(&r, &last.v[i], "last chunk", i);
        ends[i] = c.base_offset + (uint64_t)(c.p - c.buf);
    }
    ck_assert_int_eq(mt_cursor_next(&c, &r, &err), 0);
    mt_cursor_fini(&c);
    mt_trace_close(t);
    const size_t before = a.n + b.n;

    /* cut from the end down to the chunk's first byte (shrinking keeps the bytes below the cut); with
     * a sweep stride k, at every k-th byte and at every boundary: the chunk header's bytes, each
     * record's end and the bytes either side of it, every byte of every k-th record, and the file's
     * last k bytes */
    const unsigned k = sweep_stride();
    const int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    size_t present = last.n;
    for (uint64_t cut = size; cut + 1 > last_off; cut--) {
        while (present && ends[present - 1] > cut)
            present--;
        /* records 0 .. present - 1 are whole; record `present` (if any) is cut */
        const int boundary = cut <= last_off + MT_CHUNK_HEADER_SIZE || cut + k > size ||
                             (present && cut <= ends[present - 1] + 1) ||
                             (present < last.n && (cut + 1 >= ends[present] || present % k == 0));
        if (k > 1 && (cut - last_off) % k != 0 && !boundary)
            continue;
        if (ftruncate(fd, (off_t)cut) != 0)
            ck_abort_msg("ftruncate: %s", strerror(errno));
        /* a chunk whose header is cut is not there at all */
        const size_t expect = before + (cut >= last_off + MT_CHUNK_HEADER_SIZE ? present : 0);
        const long got = matching_prefix(path, &full, &err);
        /* plain ifs: a passing ck_assert costs a write to Check's pipe, and this loop runs 65536 times */
        if (got < 0)
            ck_abort_msg("cut at %llu: %s", (unsigned long long)cut, err.msg);
        if ((size_t)got != expect)
            ck_abort_msg("cut at %llu (chunk byte %llu): %ld records, expected %zu", (unsigned long long)cut,
                         (unsigned long long)(cut - last_off), got, expect);
        if (cut == last_off)
            break;
    }
    close(fd);
    free(ends);
    rec_list_free(&a);
    rec_list_free(&b);
    rec_list_free(&last);
    rec_list_free(&full);
    free(path);
}

START_TEST(cut_at_every_offset_sealed)
{
    check_every_cut(1);
}
END_TEST

START_TEST(cut_at_every_offset_unsealed)
{
    check_every_cut(0);
}
END_TEST

/* A cut inside the header chunk leaves no trace to read: an error, never a crash. */
START_TEST(cut_in_header_chunk)
{
    char *path = path_in(g_dir, "cut-head.mtr");
    mt_writer_t *w = open_writer(path, NULL);
    ck_assert_int_eq(mt_writer_header_string(w, MT_STR_HOST, "box", 3), 0);
    mt_record_t r = exp_call(MT_OP_FREE, 1);
    ck_assert_int_eq(mt_writer_call(w, 1, 1, &r), 0);
    close_writer(w, 1);
    const int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    /* (Cuts inside a header string: see the case cut_header_strings.) */
    static const uint64_t cuts[] = { 0, 1, 7, 8, 100, 255, 256, 263, 300, MT_CHUNK_SIZE - 1, MT_CHUNK_SIZE };
    for (size_t i = sizeof cuts / sizeof cuts[0]; i-- > 0;) {
        ck_assert_int_eq(ftruncate(fd, (off_t)cuts[i]), 0);
        mt_trace_t *t;
        mt_error_t err = { "" };
        const int rc = mt_trace_open(&t, path, &err);
        if (cuts[i] < sizeof(mt_file_header_t)) {
            ck_assert_int_eq(rc, -EINVAL);
            ck_assert_ptr_nonnull(strstr(err.msg, "offset"));
            ck_assert_ptr_nonnull(strstr(err.msg, path));
        } else {
            /* the header is whole: the trace opens, with no chunks and strings as far as they go */
            ck_assert_msg(rc == 0, "cut at %llu: %s", (unsigned long long)cuts[i], err.msg);
            ck_assert_uint_eq(mt_trace_chunk_count(t), 0);
            size_t len = 0;
            const char *host = mt_trace_string(t, MT_STR_HOST, 0, &len);
            if (cuts[i] >= 256 + 4 + 3) {
                ck_assert_ptr_nonnull(host);
                ck_assert_uint_eq(len, 3);
                ck_assert_mem_eq(host, "box", 3);
            } else
                ck_assert_ptr_null(mt_trace_string(t, MT_STR_HOST, 0, NULL));
            mt_trace_close(t);
        }
    }
    close(fd);
    free(path);
}
END_TEST

/* A raw file cut inside a header string: the list ends where the bytes end (once a known bug: the
 * reader read the header chunk's missing bytes as zeros and returned "b\0\0"). */
START_TEST(cut_header_strings)
{
    char *path = path_in(g_dir, "cut-str.mtr");
    mt_writer_t *w = open_writer(path, NULL);
    ck_assert_int_eq(mt_writer_header_string(w, MT_STR_HOST, "box", 3), 0);
    close_writer(w, 1);
    /* downwards: truncating never brings bytes back */
    for (uint64_t cut = MT_HEADER_STRINGS_OFFSET + 8; cut >= MT_HEADER_STRINGS_OFFSET; cut--) {
        ck_assert_int_eq(truncate(path, (off_t)cut), 0);
        mt_trace_t *t = open_trace(path);
        size_t len = 0;
        const char *host = mt_trace_string(t, MT_STR_HOST, 0, &len);
        /* absent, or whole */
        ck_assert_msg(!host || (len == 3 && !memcmp(host, "box", 3)), "cut at %llu: a %zu-byte string",
                      (unsigned long long)cut, len);
        mt_trace_close(t);
    }
    free(path);
}
END_TEST

/* ---- damaged files ----------------------------------------------------------------------------- */

/* Decodes everything, by file order and by thread; a failure must name the file and an offset. */
static void check_message(const mt_error_t *err, const char *path)
{
    if (!strstr(err->msg, "offset") || !strstr(err->msg, path))
        ck_abort_msg("message without the path or an offset: %s", err->msg);
}

static int read_everything_checked(const char *path, size_t *nrecords)
{
    mt_error_t err = { "" };
    rec_list_t l = { 0 };
    int rc = read_file_order(path, &l, &err);
    *nrecords = l.n;
    rec_list_free(&l);
    if (rc < 0) {
        check_message(&err, path);
        return rc;
    }
    mt_trace_t *t;
    if (mt_trace_open(&t, path, &err) < 0)
        ck_abort_msg("opened once, not twice: %s", err.msg);
    for (size_t i = 0; i < mt_trace_thread_count(t) && rc == 0; i++) {
        rc = read_thread(t, i, &l, &err);
        rec_list_free(&l);
        if (rc < 0)
            check_message(&err, path);
    }
    mt_trace_close(t);
    return rc;
}

/* Every byte of a sealed chunk (header and records) flipped in turn: the reader either reports an
 * error naming an offset or decodes some valid records; it never crashes or reads out of bounds
 * (this test also runs under ASan and UBSan). */
START_TEST(flipped_bytes_in_sealed_chunk)
{
    char *path = path_in(g_dir, "flip.mtr");
    rng_t g = { 5 };
    rec_list_t l1 = { 0 }, l2 = { 0 };
    uint64_t t1 = 10, t2 = 20;
    gen_records(&g, &l1, 300, &t1);
    gen_records(&g, &l2, 30, &t2);
    mt_writer_t *w = open_writer(path, NULL);
    write_list(w, 1, 1, &l1);
    write_list(w, 2, 2, &l2);
    close_writer(w, 1);
    mt_trace_t *t = open_trace(path);
    const uint32_t used = mt_trace_chunk(t, 0)->h.used;
    const uint64_t end = MT_CHUNK_SIZE + MT_CHUNK_HEADER_SIZE + used + 2;
    /* with a sweep stride k, every k-th byte and every one at a boundary: the chunk header's bytes,
     * each record's first and last byte, the bytes past the records */
    const unsigned k = sweep_stride();
    uint8_t *edge = calloc(end - MT_CHUNK_SIZE, 1);
    ck_assert_ptr_nonnull(edge);
    mt_cursor_t c;
    mt_error_t err;
    ck_assert_int_eq(mt_cursor_init(&c, t), 0);
    ck_assert_int_eq(mt_cursor_load(&c, 0, &err), 0);
    mt_record_t r;
    uint64_t start = MT_CHUNK_SIZE + MT_CHUNK_HEADER_SIZE;
    while (mt_cursor_next(&c, &r, &err) > 0) {
        const uint64_t rend = c.base_offset + (uint64_t)(c.p - c.buf);
        ck_assert_uint_le(rend, end);
        edge[start - MT_CHUNK_SIZE] = edge[rend - 1 - MT_CHUNK_SIZE] = 1;
        start = rend;
    }
    mt_cursor_fini(&c);
    mt_trace_close(t);

    static const uint8_t masks[] = { 0xff, 0x01, 0x80, 0x20 };
    unsigned errors = 0, clean = 0;
    for (uint64_t off = MT_CHUNK_SIZE; off < end; off++) {
        if (k > 1 && off % k != 0 && off >= MT_CHUNK_SIZE + MT_CHUNK_HEADER_SIZE && off + 4 < end &&
            !edge[off - MT_CHUNK_SIZE])
            continue;
        const uint8_t orig = read_byte(path, off);
        for (size_t m = 0; m < sizeof masks; m++) {
            const uint8_t b = orig ^ masks[m];
            patch_file(path, off, &b, 1);
            size_t n;
            if (read_everything_checked(path, &n) < 0)
                errors++;
            else
                clean++;
        }
        patch_file(path, off, &orig, 1);
    }
    free(edge);
    /* both outcomes occur: some damage is detectable, some only changes a value */
    ck_assert_uint_gt(errors, 0);
    ck_assert_uint_gt(clean, 0);
    size_t n;
    ck_assert_int_eq(read_everything_checked(path, &n), 0);
    ck_assert_uint_eq(n, l1.n + l2.n);
    rec_list_free(&l1);
    rec_list_free(&l2);
    free(path);
}
END_TEST

/* Writes a sealed trace of `l` on thread 1 and returns the offset of record `k`. */
static uint64_t write_and_locate(const char *path, const rec_list_t *l, size_t k)
{
    mt_writer_t *w = open_writer(path, NULL);
    write_list(w, 1, 1, l);
    close_writer(w, 1);
    rec_list_t got = { 0 };
    read_all_ok(path, &got);
    ck_assert_uint_eq(got.n, l->n);
    const uint64_t off = got.v[k].offset;
    rec_list_free(&got);
    return off;
}

/* Reads the file expecting an error whose message holds `what` and "offset N". */
static void expect_damage(const char *path, uint64_t off, const char *what)
{
    mt_error_t err = { "" };
    rec_list_t l = { 0 };
    const int rc = read_file_order(path, &l, &err);
    rec_list_free(&l);
    ck_assert_int_eq(rc, -EINVAL);
    char want[64];
    snprintf(want, sizeof want, "offset %llu:", (unsigned long long)off);
    ck_assert_msg(strstr(err.msg, want) && strstr(err.msg, what) && strstr(err.msg, path),
                  "expected \"%s\" and \"%s\" in: %s", want, what, err.msg);
}

START_TEST(damage_is_reported_at_its_offset)
{
    char *path = path_in(g_dir, "damage.mtr");
    rec_list_t l = { 0 };
    mt_record_t r = exp_call(MT_OP_MALLOC, 10);
    r.size = 10;
    r.result = 0x1000;
    r.usable = 24;
    rec_list_push(&l, &r);
    r = exp_call(MT_OP_MALLOC, 11);
    r.size = 20;
    r.result = 0x2000;
    r.usable = 24;
    r.flags = MT_FLAG_HEAP_GREW;
    rec_list_push(&l, &r);
    r = exp_call(MT_OP_FREE, 12);
    r.ptr = 0x1000;
    rec_list_push(&l, &r);
    r = exp_event_bytes(MT_EV_MARK, 13, "m", 1);
    rec_list_push(&l, &r);
    r = exp_call(MT_OP_FREE, 14);
    r.ptr = 0x2000;
    rec_list_push(&l, &r);

    /* an opcode that does not exist */
    uint64_t off = write_and_locate(path, &l, 1);
    uint8_t b = 0x1e; /* MT_EV_LAST + 1 */
    patch_file(path, off, &b, 1);
    expect_damage(path, off, "opcode");

    /* an unknown extension flag */
    off = write_and_locate(path, &l, 1);
    b = 0x80;
    patch_file(path, off + 1, &b, 1);
    expect_damage(path, off + 1, "extension flags");

    /* call flags on an event */
    off = write_and_locate(path, &l, 3);
    b = MT_EV_MARK | MT_RF_NULL;
    patch_file(path, off, &b, 1);
    expect_damage(path, off, "call flags");

    /* a block flag on free */
    off = write_and_locate(path, &l, 2);
    b = MT_OP_FREE | MT_RF_MMAPPED;
    patch_file(path, off, &b, 1);
    expect_damage(path, off, "block flags");

    /* a pointer's low bits byte (version 2) out of 1 to 15: the unaligned free's last byte */
    rec_list_t u = { 0 };
    r = exp_call(MT_OP_FREE, 20);
    r.ptr = 0x1001;
    rec_list_push(&u, &r);
    r = exp_call(MT_OP_FREE, 21);
    r.ptr = 0x2000;
    rec_list_push(&u, &r);
    off = write_and_locate(path, &u, 1) - 1;
    ck_assert_uint_eq(read_byte(path, off), 1);
    b = 0x10;
    patch_file(path, off, &b, 1);
    expect_damage(path, off, "low 4 bits of a pointer");
    b = 0;
    patch_file(path, off, &b, 1);
    expect_damage(path, off, "low 4 bits of a pointer");
    rec_list_free(&u);

    /* a sealed chunk whose stated length ends inside its last record */
    off = write_and_locate(path, &l, 4);
    mt_trace_t *t = open_trace(path);
    const uint32_t used = mt_trace_chunk(t, 0)->h.used - 1;
    mt_trace_close(t);
    patch_file(path, MT_CHUNK_SIZE + offsetof(mt_chunk_header_t, used), &used, sizeof used);
    expect_damage(path, off, "runs past the end of its sealed chunk");

    rec_list_free(&l);
    free(path);
}
END_TEST

/* A bad varint in a known event's payload is an error even in an unsealed chunk: the payload
 * length says the bytes are all there. */
START_TEST(bad_event_payload)
{
    char *path = path_in(g_dir, "payload.mtr");
    mt_writer_t *w = open_writer(path, NULL);
    static const uint8_t bad[] = { 0x80 };
    ck_assert_int_eq(mt_writer_event(w, 1, 1, MT_EV_THREAD_EXIT, 5, bad, sizeof bad), 0);
    close_writer(w, 0);
    expect_damage(path, MT_CHUNK_SIZE + MT_CHUNK_HEADER_SIZE, "bad varint in thread_exit");
    free(path);
}
END_TEST

/* ---- bad input --------------------------------------------------------------------------------- */

/* Opens `path` expecting `code` and a message with the path, "offset" and each given string. */
static void expect_open_error(const char *path, int code, const char *s1, const char *s2)
{
    mt_trace_t *t = (mt_trace_t *)1;
    mt_error_t err = { "" };
    const int rc = mt_trace_open(&t, path, &err);
    ck_assert_msg(rc == code, "%s: got %d, expected %d (%s)", path, rc, code, err.msg);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err.msg, path) != NULL, "no path in: %s", err.msg);
    ck_assert_msg(strstr(err.msg, "offset") != NULL, "no offset in: %s", err.msg);
    if (s1)
        ck_assert_msg(strstr(err.msg, s1) != NULL, "no \"%s\" in: %s", s1, err.msg);
    if (s2)
        ck_assert_msg(strstr(err.msg, s2) != NULL, "no \"%s\" in: %s", s2, err.msg);
}

/* Writes a header-only trace from a modified default header. */
static char *write_header_file(const char *name, void (*edit)(mt_file_header_t *))
{
    char *path = path_in(g_dir, name);
    mt_file_header_t h;
    mt_writer_default_header(&h);
    edit(&h);
    mt_writer_t *w = open_writer(path, &h);
    close_writer(w, 0);
    return path;
}

static void edit_nothing(mt_file_header_t *h)
{
    (void)h;
}
static void edit_magic(mt_file_header_t *h)
{
    memcpy(h->magic, "MTRACE\0\0", 8);
}
static void edit_version_new(mt_file_header_t *h)
{
    h->version = MT_TRACE_VERSION + 1;
}
static void edit_version_zero(mt_file_header_t *h)
{
    h->version = 0;
}
static void edit_chunk_size(mt_file_header_t *h)
{
    h->chunk_size = 4096;
}
static void edit_ptr_size(mt_file_header_t *h)
{
    h->ptr_size = 4;
}
static void edit_big_endian(mt_file_header_t *h)
{
    h->little_endian = 0;
}
static void edit_header_size(mt_file_header_t *h)
{
    h->header_size = 100;
}

/* A FIFO given as a trace, workload or result is refused at once: opening it for reading would
 * otherwise wait for a writer forever (the test's timeout fails it). A directory too. */
START_TEST(fifo_and_directory_refused)
{
    char *fifo = path_in(g_dir, "fifo.mtr");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    char *dir = path_in(g_dir, "adir.mtr");
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    const char *paths[] = { fifo, dir };
    for (unsigned i = 0; i < 2; i++) {
        mt_error_t err = { "" };
        mt_trace_t *t = NULL;
        ck_assert_int_eq(mt_trace_open(&t, paths[i], &err), -EINVAL);
        ck_assert_msg(strstr(err.msg, "offset 0:") && strstr(err.msg, "regular file"), "%s", err.msg);
        mt_wl_t *w = NULL;
        ck_assert_int_eq(mt_wl_open(&w, paths[i], &err), -EINVAL);
        ck_assert_msg(strstr(err.msg, paths[i]) && strstr(err.msg, "regular file"), "%s", err.msg);
        ck_assert_int_le(mt_file_is_workload(paths[i]), 0);
        mt_jval_t *j = NULL;
        ck_assert_int_eq(mt_json_load(paths[i], &j, &err), -EINVAL);
        ck_assert_msg(strstr(err.msg, "regular file"), "%s", err.msg);
    }
    free(fifo);
    free(dir);
}
END_TEST

/* A NUL byte is not part of a JSON number: "[1<NUL>]" is refused at the NUL, where the number's
 * scan once took it (strchr finds the terminator of its set) and strtod stopped before it. */
START_TEST(json_number_stops_at_nul)
{
    char *p = path_in(g_dir, "nul.json");
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite("[1\0]", 1, 4, f), 4);
    ck_assert_int_eq(fclose(f), 0);
    mt_error_t err = { "" };
    mt_jval_t *j = NULL;
    ck_assert_int_eq(mt_json_load(p, &j, &err), -EINVAL);
    ck_assert_msg(strstr(err.msg, "offset 2:"), "%s", err.msg);
    ck_assert_ptr_null(j);
    free(p);
}
END_TEST

START_TEST(bad_headers)
{
    char *p = path_in(g_dir, "empty.mtr");
    const int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    close(fd);
    expect_open_error(p, -EINVAL, "offset 0:", "magic");
    free(p);

    p = write_header_file("magic.mtr", edit_magic);
    expect_open_error(p, -EINVAL, "offset 0:", "magic");
    free(p);

    /* a newer version: the message names the file's version and the ones this reader knows */
    p = write_header_file("v5.mtr", edit_version_new);
    expect_open_error(p, -ENOTSUP, "version 5", "versions 1 to 4");
    free(p);
    p = write_header_file("v0.mtr", edit_version_zero);
    expect_open_error(p, -ENOTSUP, "version 0", "offset 8:");
    free(p);

    p = write_header_file("chunk.mtr", edit_chunk_size);
    expect_open_error(p, -EINVAL, "offset 16:", "4096");
    free(p);
    p = write_header_file("ptr.mtr", edit_ptr_size);
    expect_open_error(p, -ENOTSUP, "offset 20:", "4-byte");
    free(p);
    p = write_header_file("endian.mtr", edit_big_endian);
    expect_open_error(p, -ENOTSUP, "offset 20:", "big");
    free(p);
    p = write_header_file("hsize.mtr", edit_header_size);
    expect_open_error(p, -EINVAL, "offset 12:", "100");
    free(p);

    /* the magic, then the file ends inside the header */
    p = write_header_file("short.mtr", edit_nothing);
    ck_assert_int_eq(truncate(p, 100), 0);
    expect_open_error(p, -EINVAL, "offset 100:", "header");
    free(p);

    p = path_in(g_dir, "does-not-exist.mtr");
    expect_open_error(p, -ENOENT, "offset 0:", "cannot open");
    free(p);
    expect_open_error(g_dir, -EINVAL, "offset 0:", "regular file");
}
END_TEST

/* A trace with two threads, thread 1 over two chunks; returns its path. */
static char *write_small_trace(const char *dir, const char *name)
{
    char *path = path_in(dir, name);
    rng_t g = { 3 };
    rec_list_t l = { 0 }, m = { 0 };
    uint64_t t = 0, u = 0;
    gen_records(&g, &l, 12000, &t);
    gen_records(&g, &m, 10, &u);
    mt_writer_t *w = open_writer(path, NULL);
    write_list(w, 1, 1, &l);
    write_list(w, 2, 2, &m);
    ck_assert_uint_ge(mt_writer_chunks(w), 3);
    close_writer(w, 1);
    rec_list_free(&l);
    rec_list_free(&m);
    return path;
}

/* Cuts `path` to `size` bytes and expects it to open and to read as truncated (not as whole). */
static void expect_truncated_at(const char *path, uint64_t size, const char *what)
{
    ck_assert_int_eq(truncate(path, (off_t)size), 0);
    mt_trace_t *t = open_trace(path);
    mt_error_t err = { "" };
    ck_assert_msg(mt_trace_check_whole(t, &err) == -ENODATA, "cut at %llu reads as whole", (unsigned long long)size);
    ck_assert_msg(strstr(err.msg, "truncated") && strstr(err.msg, what), "cut at %llu: %s", (unsigned long long)size,
                  err.msg);
    mt_trace_close(t);
}

/* A file cut short after it was written (a partial copy, a full disk) reads its records present but
 * says it is truncated, raw or packed, at a chunk or frame boundary too; a trace whose process was
 * killed (unsealed, no end fields) is whole; and a cut trace is not packed into one that looks whole. */
START_TEST(cut_files_read_as_truncated)
{
    char *raw = write_small_trace(g_dir, "whole.mtr");
    char *cut = path_in(g_dir, "cut.mtr"), *packed = path_in(g_dir, "whole.mtz"), *repacked = path_in(g_dir, "cut.mtz");
    char cmd[8192];
    mt_error_t err = { "" };
    mt_trace_t *t = open_trace(raw);
    ck_assert_int_eq(mt_trace_check_whole(t, &err), 0);
    const uint64_t size = mt_trace_file_size(t);
    mt_trace_close(t);
    ck_assert_int_eq(mt_trace_pack(raw, packed, 3, &err), 0);
    const uint64_t cuts[] = { size - 1, size - MT_CHUNK_SIZE, MT_CHUNK_SIZE + 100, MT_CHUNK_SIZE, 300 };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        snprintf(cmd, sizeof cmd, "cp '%s' '%s'", raw, cut);
        ck_assert_int_eq(system(cmd), 0);
        expect_truncated_at(cut, cuts[i], "the file ends at byte");
    }
    /* packing refuses the cut trace and leaves no output */
    ck_assert_int_eq(mt_trace_pack(cut, repacked, 3, &err), -ENODATA);
    ck_assert_msg(strstr(err.msg, "truncated"), "%s", err.msg);
    ck_assert_int_ne(access(repacked, F_OK), 0);

    /* packed: the whole file is whole; cut inside its last frame (header or data), or where that
     * frame starts, it is not, and the frames before it read as the raw trace's chunks before the
     * cut do (once a cut inside a frame made the file unreadable) */
    t = open_trace(packed);
    ck_assert_int_eq(mt_trace_check_whole(t, &err), 0);
    const uint64_t last = mt_trace_chunk(t, mt_trace_chunk_count(t) - 1)->offset;
    mt_cursor_t c;
    mt_record_t r;
    size_t in_last = 0;
    ck_assert_int_eq(mt_cursor_init(&c, t), 0);
    ck_assert_int_eq(mt_cursor_load(&c, mt_trace_chunk_count(t) - 1, &err), 0);
    while (mt_cursor_next(&c, &r, &err) > 0)
        in_last++;
    mt_cursor_fini(&c);
    mt_trace_close(t);
    rec_list_t all = { 0 }, kept = { 0 };
    ck_assert_int_eq(read_file_order(packed, &all, &err), 0);
    ck_assert_uint_gt(all.n, in_last);
    const uint64_t packed_cuts[] = { file_size(packed) - 1, last + MT_PACK_FRAME_HEADER_SIZE + 33, last + 5 };
    for (size_t i = 0; i < sizeof packed_cuts / sizeof packed_cuts[0]; i++) {
        expect_truncated_at(packed, packed_cuts[i], "inside the packed frame at offset");
        ck_assert_int_eq(read_file_order(packed, &kept, &err), 0);
        ck_assert_uint_eq(kept.n, all.n - in_last);
        rec_list_free(&kept);
    }
    rec_list_free(&all);
    expect_truncated_at(packed, last, "frames");

    /* a killed process's trace: no end fields, whole chunks: unfinished, not truncated */
    rng_t g = { 5 };
    rec_list_t l = { 0 };
    uint64_t tm = 0;
    gen_records(&g, &l, 2000, &tm);
    mt_writer_t *w = open_writer(raw, NULL);
    write_list(w, 1, 1, &l);
    close_writer(w, 0);
    rec_list_free(&l);
    t = open_trace(raw);
    ck_assert_int_eq(mt_trace_check_whole(t, &err), 0);
    const uint64_t killed_size = mt_trace_file_size(t);
    mt_trace_close(t);
    expect_truncated_at(raw, killed_size - 1, "inside a chunk");
    free(raw);
    free(cut);
    free(packed);
    free(repacked);
}
END_TEST

START_TEST(bad_chunk_headers)
{
    char *p = write_small_trace(g_dir, "chunks.mtr");
    const uint64_t c1 = MT_CHUNK_SIZE, c2 = 2 * MT_CHUNK_SIZE;
    uint8_t saved[MT_CHUNK_HEADER_SIZE];
    const int fd = open(p, O_RDONLY);
    ck_assert_int_eq(pread(fd, saved, sizeof saved, (off_t)c2), (ssize_t)sizeof saved);
    close(fd);

    const uint32_t bad_magic = 0xdeadbeef;
    patch_file(p, c2, &bad_magic, 4);
    expect_open_error(p, -EINVAL, "offset 131072:", "MTCK");
    patch_file(p, c2, saved, sizeof saved);

    const uint16_t kind = 2;
    patch_file(p, c2 + offsetof(mt_chunk_header_t, kind), &kind, 2);
    expect_open_error(p, -EINVAL, "offset 131076:", "kind");
    patch_file(p, c2, saved, sizeof saved);

    const uint32_t zero = 0;
    patch_file(p, c2 + offsetof(mt_chunk_header_t, thread), &zero, 4);
    expect_open_error(p, -EINVAL, "offset 131080:", "thread");
    patch_file(p, c2, saved, sizeof saved);

    const uint32_t too_much = MT_CHUNK_SIZE;
    patch_file(p, c2 + offsetof(mt_chunk_header_t, used), &too_much, 4);
    expect_open_error(p, -EINVAL, "offset 131092:", "65536");
    patch_file(p, c2, saved, sizeof saved);

    /* A chunk present twice, as when the recorder was killed while moving it out of its thread's
     * home chunk: its records are read once. */
    rec_list_t before = { 0 }, after = { 0 };
    read_threads_ok(p, &before);
    uint8_t *chunk = malloc(MT_CHUNK_SIZE);
    const int fd2 = open(p, O_RDONLY);
    ck_assert_int_eq(pread(fd2, chunk, MT_CHUNK_SIZE, (off_t)c1), (ssize_t)MT_CHUNK_SIZE);
    close(fd2);
    const uint64_t end = (file_size(p) + MT_CHUNK_SIZE - 1) / MT_CHUNK_SIZE * MT_CHUNK_SIZE;
    patch_file(p, end, chunk, MT_CHUNK_SIZE);
    read_threads_ok(p, &after);
    ck_assert_uint_gt(before.n, 0);
    assert_lists_eq(&after, &before, "a chunk present twice");
    rec_list_free(&before);
    rec_list_free(&after);
    free(chunk);
    free(p);
}
END_TEST

/* A chunk slot full of zeros (claimed by a process that died before its header was written) is
 * skipped, and a file that ends inside a chunk header just has one chunk less. */
START_TEST(zero_and_partial_chunk_headers)
{
    char *p = write_small_trace(g_dir, "zero.mtr");
    mt_trace_t *t = open_trace(p);
    const size_t n = mt_trace_chunk_count(t);
    mt_trace_close(t);
    static const uint8_t zeros[MT_CHUNK_HEADER_SIZE];
    patch_file(p, MT_CHUNK_SIZE, zeros, sizeof zeros);
    t = open_trace(p);
    ck_assert_uint_eq(mt_trace_chunk_count(t), n - 1);
    mt_trace_close(t);
    ck_assert_int_eq(truncate(p, (off_t)(n * MT_CHUNK_SIZE + MT_CHUNK_HEADER_SIZE - 1)), 0);
    t = open_trace(p);
    ck_assert_uint_eq(mt_trace_chunk_count(t), n - 2);
    mt_trace_close(t);
    free(p);
}
END_TEST

/* ---- packing ----------------------------------------------------------------------------------- */

/* Names of the files in dir, sorted, each followed by a space. */
static void list_dir(const char *dir, char *buf, size_t cap)
{
    struct dirent **names;
    const int n = scandir(dir, &names, NULL, alphasort);
    ck_assert_int_ge(n, 0);
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.')
            len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, "%s ", names[i]->d_name);
        free(names[i]);
    }
    free(names);
}

static void pack_ok(const char *in, const char *out)
{
    mt_error_t err = { "" };
    const int rc = mt_trace_pack(in, out, 3, &err);
    ck_assert_msg(rc == 0, "pack %s: %d %s", in, rc, err.msg);
}

/* The packed trace gives exactly the raw trace's records, threads, header and strings. */
static void check_packed_equal(const char *raw, const char *packed)
{
    mt_trace_t *a = open_trace(raw), *b = open_trace(packed);
    ck_assert_int_eq(mt_trace_is_packed(a), 0);
    ck_assert_int_eq(mt_trace_is_packed(b), 1);
    mt_file_header_t ha = *mt_trace_header(a), hb = *mt_trace_header(b);
    /* the same header but for the packed flag, the offset of the first frame and the frame count */
    ck_assert_uint_eq(hb.flags, ha.flags | MT_HDR_PACKED);
    ck_assert_uint_eq(ha.data_offset, 0);
    ck_assert_uint_ge(hb.data_offset, MT_HEADER_STRINGS_OFFSET + 4);
    ck_assert_uint_eq(hb.data_offset % 8, 0);
    ck_assert_uint_eq(hb.packed_frames, mt_trace_chunk_count(b));
    hb.flags = ha.flags;
    hb.data_offset = 0;
    hb.packed_frames = 0;
    ck_assert_mem_eq(&ha, &hb, sizeof ha);
    for (unsigned tag = 1; tag <= MT_STR_PATH; tag++) {
        for (unsigned i = 0;; i++) {
            size_t la = 0, lb = 0;
            const char *sa = mt_trace_string(a, tag, i, &la), *sb = mt_trace_string(b, tag, i, &lb);
            ck_assert_int_eq(sa == NULL, sb == NULL);
            if (!sa)
                break;
            ck_assert_uint_eq(la, lb);
            ck_assert_mem_eq(sa, sb, la);
        }
    }
    /* chunk for chunk, in file order: the same header, sealed at the bytes the reader decodes */
    ck_assert_uint_eq(mt_trace_chunk_count(a), mt_trace_chunk_count(b));
    mt_cursor_t c;
    ck_assert_int_eq(mt_cursor_init(&c, a), 0);
    for (size_t i = 0; i < mt_trace_chunk_count(a); i++) {
        const mt_chunk_header_t *ca = &mt_trace_chunk(a, i)->h, *cb = &mt_trace_chunk(b, i)->h;
        mt_error_t err;
        mt_record_t r;
        ck_assert_int_eq(mt_cursor_load(&c, i, &err), 0);
        while (mt_cursor_next(&c, &r, &err) > 0) {
        }
        ck_assert_uint_eq(cb->magic, MT_CHUNK_MAGIC);
        ck_assert_uint_eq(cb->flags, MT_CHUNK_SEALED);
        ck_assert_uint_eq(cb->used, mt_cursor_used(&c));
        ck_assert_uint_eq(cb->kind, ca->kind);
        ck_assert_uint_eq(cb->thread, ca->thread);
        ck_assert_uint_eq(cb->tid, ca->tid);
        ck_assert_uint_eq(cb->seq, ca->seq);
        ck_assert_uint_eq(cb->base_time, ca->base_time);
    }
    mt_cursor_fini(&c);
    ck_assert_uint_eq(mt_trace_thread_count(a), mt_trace_thread_count(b));
    for (size_t i = 0; i < mt_trace_thread_count(a); i++) {
        ck_assert_uint_eq(mt_trace_thread(a, i)->thread, mt_trace_thread(b, i)->thread);
        ck_assert_uint_eq(mt_trace_thread(a, i)->tid, mt_trace_thread(b, i)->tid);
        ck_assert_uint_eq(mt_trace_thread(a, i)->nchunks, mt_trace_thread(b, i)->nchunks);
        rec_list_t ra = { 0 }, rb = { 0 };
        read_thread_ok(a, i, &ra);
        read_thread_ok(b, i, &rb);
        ck_assert_uint_gt(ra.n, 0);
        assert_lists_eq(&rb, &ra, "packed thread");
        rec_list_free(&ra);
        rec_list_free(&rb);
    }
    mt_trace_close(a);
    mt_trace_close(b);
    rec_list_t fa = { 0 }, fb = { 0 };
    read_all_ok(raw, &fa);
    read_all_ok(packed, &fb);
    assert_lists_eq(&fb, &fa, "packed file order");
    rec_list_free(&fa);
    rec_list_free(&fb);
    ck_assert_uint_lt(file_size(packed), file_size(raw));
}

START_TEST(pack_round_trip)
{
    /* a finished trace with header strings, several threads, several chunks each */
    char *raw = write_small_trace(g_dir, "pack.mtr");
    mt_writer_t *w;
    char *packed = path_in(g_dir, "pack.mtz");
    pack_ok(raw, packed);
    check_packed_equal(raw, packed);

    /* a crashed one: unsealed chunks */
    rng_t g = { 11 };
    rec_list_t l = { 0 };
    uint64_t t = 0;
    gen_records(&g, &l, 20000, &t);
    w = open_writer(raw, NULL);
    ck_assert_int_eq(mt_writer_header_string(w, MT_STR_CMDLINE, "a\0b", 3), 0);
    ck_assert_int_eq(mt_writer_header_string(w, MT_STR_ENV, "MTRACE_X=1", 10), 0);
    write_list(w, 5, 55, &l);
    write_list(w, 2, 22, &l);
    close_writer(w, 0);
    pack_ok(raw, packed);
    check_packed_equal(raw, packed);

    /* one cut in the middle of a record of its last chunk is refused: packed, it would read as whole */
    rec_list_t full = { 0 };
    read_all_ok(raw, &full);
    const uint64_t cut = full.v[full.n - 10].offset + 1;
    ck_assert_int_eq(truncate(raw, (off_t)cut), 0);
    mt_error_t err = { "" };
    ck_assert_int_eq(mt_trace_pack(raw, packed, 3, &err), -ENODATA);
    ck_assert_msg(strstr(err.msg, "truncated"), "%s", err.msg);
    rec_list_free(&full);
    rec_list_free(&l);

    /* an empty trace packs to a header */
    w = open_writer(raw, NULL);
    close_writer(w, 1);
    pack_ok(raw, packed);
    mt_trace_t *tr = open_trace(packed);
    ck_assert_int_eq(mt_trace_is_packed(tr), 1);
    /* the header, the strings' end tag, padding to 8 bytes: nothing else */
    ck_assert_uint_eq(mt_trace_header(tr)->data_offset, MT_HEADER_STRINGS_OFFSET + 8);
    ck_assert_uint_eq(file_size(packed), MT_HEADER_STRINGS_OFFSET + 8);
    ck_assert_uint_eq(mt_trace_chunk_count(tr), 0);
    mt_trace_close(tr);

    free(raw);
    free(packed);
}
END_TEST

/* A byte changed anywhere in a plain frame's compressed data is an error, never other records read
 * without complaint: frames carry zstd's checksum of their content (before, about a third of
 * single-bit flips decoded to different records). */
START_TEST(packed_frame_damage_is_an_error)
{
    char *raw = path_in(g_dir, "flip.mtr"), *packed = path_in(g_dir, "flip.mtz");
    rng_t g = { 21 };
    rec_list_t l = { 0 }, want = { 0 };
    uint64_t t = 0;
    gen_records(&g, &l, 3000, &t);
    mt_writer_t *w = open_writer(raw, NULL);
    write_list(w, 1, 1, &l);
    close_writer(w, 1);
    mt_error_t err = { "" };
    ck_assert_int_eq(mt_trace_pack_flags(raw, packed, 3, MT_PACK_PLAIN, &err), 0);
    read_all_ok(packed, &want);
    mt_trace_t *tr = open_trace(packed);
    const uint64_t frame = mt_trace_header(tr)->data_offset;
    mt_trace_close(tr);
    uint8_t fh[MT_PACK_FRAME_HEADER_SIZE];
    const int fd = open(packed, O_RDONLY);
    ck_assert_int_eq(pread(fd, fh, sizeof fh, (off_t)frame), (ssize_t)sizeof fh);
    close(fd);
    const uint64_t start = frame + MT_PACK_FRAME_HEADER_SIZE + MT_CHUNK_HEADER_SIZE, len = mt_load_u32(fh + 4);
    size_t silent = 0, tried = 0;
    for (uint64_t off = start; off < start + len; off += 11) {
        for (unsigned bit = 0; bit < 8; bit += 5) {
            const uint8_t was = read_byte(packed, off), flipped = (uint8_t)(was ^ (1u << bit));
            patch_file(packed, off, &flipped, 1);
            rec_list_t got = { 0 };
            mt_error_t e = { "" };
            const int rc = read_file_order(packed, &got, &e);
            int same = rc == 0 && got.n == want.n;
            for (size_t k = 0; same && k < want.n; k++)
                same = record_eq(&got.v[k], &want.v[k]);
            if (rc == 0 && !same)
                silent++;
            rec_list_free(&got);
            patch_file(packed, off, &was, 1);
            tried++;
        }
    }
    ck_assert_msg(silent == 0, "%zu of %zu flipped bits read as other records without an error", silent, tried);
    rec_list_free(&l);
    rec_list_free(&want);
    free(raw);
    free(packed);
}
END_TEST

/* Packing fails cleanly: no output file, no leftover temporary, and an existing output untouched. */
START_TEST(pack_failures_leave_nothing)
{
    char *dir = path_in(g_dir, "fail");
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    char *raw = write_small_trace(dir, "in.mtr");
    char *packed = path_in(dir, "out.mtz");
    char listing[4096];
    mt_error_t err = { "" };

    /* damage in a sealed chunk: found while packing */
    const uint8_t b = 0x1c;
    patch_file(raw, MT_CHUNK_SIZE + MT_CHUNK_HEADER_SIZE, &b, 1); /* the first opcode */
    int rc = mt_trace_pack(raw, packed, 3, &err);
    ck_assert_int_lt(rc, 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "offset"));
    list_dir(dir, listing, sizeof listing);
    ck_assert_str_eq(listing, "in.mtr ");

    /* the output named as the input: refused, the trace left as it was */
    const uint64_t raw_size = file_size(raw);
    rc = mt_trace_pack(raw, raw, 3, &err);
    ck_assert_int_eq(rc, -EINVAL);
    ck_assert_msg(strstr(err.msg, "is the trace to pack"), "%s", err.msg);
    ck_assert_uint_eq(file_size(raw), raw_size);

    /* an existing output stays as it was */
    const int fd = open(packed, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_eq(write(fd, "old", 3), 3);
    close(fd);
    rc = mt_trace_pack(raw, packed, 3, &err);
    ck_assert_int_lt(rc, 0);
    ck_assert_uint_eq(file_size(packed), 3);
    list_dir(dir, listing, sizeof listing);
    ck_assert_str_eq(listing, "in.mtr out.mtz ");
    unlink(packed);

    /* no input */
    char *none = path_in(dir, "none.mtr");
    rc = mt_trace_pack(none, packed, 3, &err);
    ck_assert_int_eq(rc, -ENOENT);
    ck_assert_ptr_nonnull(strstr(err.msg, none));
    list_dir(dir, listing, sizeof listing);
    ck_assert_str_eq(listing, "in.mtr ");

    /* nowhere to write */
    free(raw);
    raw = write_small_trace(dir, "in.mtr");
    char *nodir = path_in(dir, "nodir/out.mtz");
    rc = mt_trace_pack(raw, nodir, 3, &err);
    ck_assert_int_lt(rc, 0);
    ck_assert_ptr_nonnull(strstr(err.msg, nodir));
    list_dir(dir, listing, sizeof listing);
    ck_assert_str_eq(listing, "in.mtr ");

    /* an input that is packed already */
    pack_ok(raw, packed);
    char *again = path_in(dir, "again.mtz");
    rc = mt_trace_pack(packed, again, 3, &err);
    ck_assert_int_eq(rc, -EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "packed"));
    list_dir(dir, listing, sizeof listing);
    ck_assert_str_eq(listing, "in.mtr out.mtz ");

    free(again);
    free(nodir);
    free(none);
    free(raw);
    free(packed);
    free(dir);
}
END_TEST

/* ---- suite ------------------------------------------------------------------------------------- */

static TCase *tcase(Suite *s, const char *name)
{
    TCase *tc = tcase_create(name);
    tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
    suite_add_tcase(s, tc);
    return tc;
}

/* Text from files shown on a terminal: controls of both ranges and malformed UTF-8 escaped, UTF-8
 * text kept, and the same through the CSV quoting. */
static void check_escape(const char *in, const char *want)
{
    char buf[256];
    ck_assert_uint_eq(mt_escape_text(buf, sizeof buf, in, strlen(in)), strlen(in));
    ck_assert_msg(!strcmp(buf, want), "escape of \"%s\": \"%s\", expected \"%s\"", in, buf, want);
}

START_TEST(escape_text)
{
    check_escape("plain text", "plain text");
    check_escape("a\x1b[2Jb\x07", "a\\x1b[2Jb\\x07");
    check_escape("back\\slash\x7f", "back\\x5cslash\\x7f");
    check_escape("\xc3\xa9t\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80",
                 "\xc3\xa9t\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80");
    check_escape("\xc2\x9b"
                 "31m",
                 "\\xc2\\x9b"
                 "31m"); /* C1 CSI, UTF-8 encoded */
    check_escape("\x9b"
                 "31m",
                 "\\x9b"
                 "31m");                             /* C1 CSI, a raw byte */
    check_escape("\xc2\xa0nbsp", "\xc2\xa0nbsp");    /* U+00A0 is text */
    check_escape("\xc0\xaf", "\\xc0\\xaf");          /* overlong */
    check_escape("\xed\xa0\x80", "\\xed\\xa0\\x80"); /* a surrogate */
    check_escape("\xe6\x97", "\\xe6\\x97");          /* cut short */
    char csv[256];
    FILE *f = fmemopen(csv, sizeof csv, "w");
    mt_put_csv_field(f, "say \"\xc3\xa9\x1b\"");
    fclose(f);
    ck_assert_str_eq(csv, "\"say \"\"\xc3\xa9\\x1b\"\"\"");
}
END_TEST

/* The one UTF-8 rule (mt_utf8_len): the length of the well-formed sequence at s, or 0. */
START_TEST(utf8_len)
{
    static const struct {
        const char *s;
        size_t len, want;
        const char *what;
    } cases[] = {
        /* ASCII, controls and NUL included: one byte each (the callers decide what a control is) */
        { "a", 1, 1, "ASCII" },
        { "\x1b", 1, 1, "ESC" },
        { "", 1, 1, "NUL" },
        { "\x7f", 1, 1, "DEL" },
        { "a", 0, 0, "no byte" },
        /* the shortest and the longest of each length; what follows is not counted */
        { "\xc2\x80", 2, 2, "U+0080" },
        { "\xdf\xbf", 2, 2, "U+07FF" },
        { "\xc3\xa9xyz", 5, 2, "U+00E9 then ASCII" },
        { "\xe0\xa0\x80", 3, 3, "U+0800" },
        { "\xed\x9f\xbf", 3, 3, "U+D7FF, below the surrogates" },
        { "\xee\x80\x80", 3, 3, "U+E000, above them" },
        { "\xef\xbf\xbf", 3, 3, "U+FFFF (XML's rule refuses it)" },
        { "\xf0\x90\x80\x80", 4, 4, "U+10000" },
        { "\xf0\x9f\x98\x80", 4, 4, "U+1F600" },
        { "\xf4\x8f\xbf\xbf", 4, 4, "U+10FFFF" },
        /* overlong forms */
        { "\xc0\xaf", 2, 0, "overlong '/' in 2" },
        { "\xc1\xbf", 2, 0, "overlong U+007F" },
        { "\xe0\x80\xaf", 3, 0, "overlong '/' in 3" },
        { "\xe0\x9f\xbf", 3, 0, "overlong U+07FF" },
        { "\xf0\x80\x80\xaf", 4, 0, "overlong '/' in 4" },
        { "\xf0\x8f\xbf\xbf", 4, 0, "overlong U+FFFF" },
        /* surrogates */
        { "\xed\xa0\x80", 3, 0, "U+D800" },
        { "\xed\xbf\xbf", 3, 0, "U+DFFF" },
        /* past U+10FFFF */
        { "\xf4\x90\x80\x80", 4, 0, "U+110000" },
        { "\xf5\x80\x80\x80", 4, 0, "F5 lead" },
        { "\xfe", 1, 0, "FE" },
        { "\xff", 1, 0, "FF" },
        /* cut short: by a byte that does not continue it, or by len */
        { "\x80", 1, 0, "a lone continuation byte" },
        { "\xc3", 1, 0, "2 of 1" },
        { "\xc3x", 2, 0, "2, ASCII next" },
        { "\xe6\x97", 2, 0, "3 of 2" },
        { "\xe6\x97\xa5", 2, 0, "3, len 2" },
        { "\xf0\x9f\x98", 3, 0, "4 of 3" },
        { "\xf0\x9f\x98\x80", 3, 0, "4, len 3" },
        { "\xf0\x9f\x98"
          "a",
          4, 0, "4, ASCII last" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const size_t got = mt_utf8_len(cases[i].s, cases[i].len);
        ck_assert_msg(got == cases[i].want, "mt_utf8_len of %s: %zu, expected %zu", cases[i].what, got, cases[i].want);
    }
}
END_TEST

/* ---- modeled frames ------------------------------------------------------------------------- */

/* The kind of each frame of a packed trace in file order, 'M' ("MTCM") or 'Z' ("MTCZ"), and the
 * offset of each frame in offs (when given). */
static size_t frame_kinds(const char *path, char *kinds, size_t cap, uint64_t *offs)
{
    mt_trace_t *t = open_trace(path);
    uint64_t off = mt_trace_header(t)->data_offset;
    const uint64_t size = mt_trace_file_size(t);
    mt_trace_close(t);
    size_t n = 0;
    const int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    while (off < size && n + 1 < cap) {
        uint8_t fh[8];
        ck_assert_int_eq(pread(fd, fh, sizeof fh, (off_t)off), 8);
        const uint32_t magic = mt_load_u32(fh);
        ck_assert(magic == MT_PACK_FRAME_MAGIC || magic == 0x4d43544du);
        if (offs)
            offs[n] = off;
        kinds[n++] = magic == MT_PACK_FRAME_MAGIC ? 'Z' : 'M';
        off += MT_PACK_FRAME_HEADER_SIZE + MT_CHUNK_HEADER_SIZE + mt_load_u32(fh + 4);
    }
    kinds[n] = 0;
    close(fd);
    return n;
}

/* Records the way a program makes them: blocks freed young, addresses reused by the next block of
 * their size, reallocs in place and moved, so that the model's references are taken. */
static void gen_heap_records(rng_t *g, rec_list_t *l, size_t n, uint64_t *time)
{
    uint64_t live[64], freed[16], top = 0x555555560000ull;
    size_t nlive = 0, nfreed = 0;
    for (size_t i = 0; i < n; i++) {
        *time += rng_below(g, 200);
        const unsigned k = (unsigned)rng_below(g, 10);
        mt_record_t r;
        if (k < 5 && nlive < 64) {
            r = exp_call(rng_below(g, 8) ? MT_OP_MALLOC : MT_OP_CALLOC, *time);
            r.size = 16 * (1 + rng_below(g, 4));
            if (r.op == MT_OP_CALLOC)
                r.count = 1;
            r.usable = r.size + 8;
            r.result = nfreed && rng_below(g, 4) ? freed[--nfreed] : (top += 128);
            live[nlive++] = r.result;
        } else if (k < 9 && nlive) {
            r = exp_call(MT_OP_FREE, *time);
            const size_t j = nlive - 1 - rng_below(g, nlive < 3 ? nlive : 3);
            r.ptr = live[j];
            live[j] = live[--nlive];
            if (nfreed < 16)
                freed[nfreed++] = r.ptr;
        } else if (nlive) {
            r = exp_call(MT_OP_REALLOC, *time);
            const size_t j = rng_below(g, nlive);
            r.ptr = live[j];
            r.size = 100;
            r.usable = 104;
            r.result = rng_below(g, 2) ? r.ptr : (top += 128);
            live[j] = r.result;
        } else {
            const uint64_t v[1] = { 3 };
            r = exp_event_varints(MT_EV_CONTROL, *time, 1, v);
        }
        rec_list_push(l, &r);
    }
}

static void pack_flags_ok(const char *in, const char *out, unsigned flags)
{
    mt_error_t err = { "" };
    const int rc = mt_trace_pack_flags(in, out, 3, flags, &err);
    ck_assert_msg(rc == 0, "pack %s: %d %s", in, rc, err.msg);
}

/* Modeled frames by default, for every op and event kind and for many chunks of a heap's records;
 * plain frames on request; both kinds mixed in one file. Each gives the raw trace's records. */
START_TEST(pack_modeled_frames)
{
    char *raw = path_in(g_dir, "model.mtr"), *packed = path_in(g_dir, "model.mtz");
    char *plain = path_in(g_dir, "plain.mtz"), *mixed = path_in(g_dir, "mixed.mtz");
    char kinds[256];
    rec_list_t ops = { 0 };
    build_every_op(&ops);
    mt_writer_t *w = open_writer(raw, NULL);
    write_list(w, 1, 4242, &ops);
    close_writer(w, 1);
    pack_ok(raw, packed);
    check_packed_equal(raw, packed);
    ck_assert_uint_eq(frame_kinds(packed, kinds, sizeof kinds, NULL), 1);
    ck_assert_str_eq(kinds, "M");
    rec_list_free(&ops);

    rng_t g = { 5 };
    rec_list_t heap[2] = { { 0 }, { 0 } };
    uint64_t t = 1000;
    gen_heap_records(&g, &heap[0], 60000, &t);
    gen_heap_records(&g, &heap[1], 30000, &t);
    gen_records(&g, &heap[1], 2000, &t); /* random ones too, every kind */
    w = open_writer(raw, NULL);
    write_list(w, 1, 11, &heap[0]);
    write_list(w, 2, 22, &heap[1]);
    close_writer(w, 1);
    pack_ok(raw, packed);
    check_packed_equal(raw, packed);
    const size_t n = frame_kinds(packed, kinds, sizeof kinds, NULL);
    ck_assert_uint_ge(n, 4);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(kinds[i], 'M');

    /* plain frames, as mtrace wrote before modeled ones: still read, and larger */
    pack_flags_ok(raw, plain, MT_PACK_PLAIN);
    check_packed_equal(raw, plain);
    ck_assert_uint_eq(frame_kinds(plain, kinds, sizeof kinds, NULL), n);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(kinds[i], 'Z');
    ck_assert_uint_lt(file_size(packed), file_size(plain));

    /* frames of both kinds in one file: every other frame taken from the plain file */
    uint64_t moff[256], poff[256];
    frame_kinds(packed, kinds, sizeof kinds, moff);
    frame_kinds(plain, kinds, sizeof kinds, poff);
    moff[n] = file_size(packed);
    poff[n] = file_size(plain);
    FILE *out = fopen(mixed, "wb"), *fm = fopen(packed, "rb"), *fp = fopen(plain, "rb");
    ck_assert(out && fm && fp);
    uint8_t *buf = malloc(2 * MT_CHUNK_SIZE);
    ck_assert_uint_eq(fread(buf, 1, moff[0], fm), moff[0]);
    fwrite(buf, 1, moff[0], out);
    for (size_t i = 0; i < n; i++) {
        FILE *from = i % 2 ? fp : fm;
        const uint64_t *o = i % 2 ? poff : moff;
        fseek(from, (long)o[i], SEEK_SET);
        ck_assert_uint_eq(fread(buf, 1, o[i + 1] - o[i], from), o[i + 1] - o[i]);
        fwrite(buf, 1, o[i + 1] - o[i], out);
    }
    free(buf);
    fclose(out);
    fclose(fm);
    fclose(fp);
    check_packed_equal(raw, mixed);
    frame_kinds(mixed, kinds, sizeof kinds, NULL);
    ck_assert_int_eq(kinds[0], 'M');
    ck_assert_int_eq(kinds[1], 'Z');
    rec_list_free(&heap[0]);
    rec_list_free(&heap[1]);
    free(raw);
    free(packed);
    free(plain);
    free(mixed);
}
END_TEST

/* A damaged modeled frame is an error that names the file and the offset, and never a crash. */
START_TEST(pack_modeled_frame_damage)
{
    char *raw = write_small_trace(g_dir, "mdamage.mtr"), *packed = path_in(g_dir, "mdamage.mtz");
    pack_ok(raw, packed);
    char kinds[64];
    uint64_t offs[64];
    const size_t nframes = frame_kinds(packed, kinds, sizeof kinds, offs);
    ck_assert_uint_ge(nframes, 1);
    ck_assert_int_eq(kinds[0], 'M');
    const uint64_t payload = offs[0] + MT_PACK_FRAME_HEADER_SIZE + MT_CHUNK_HEADER_SIZE;

    /* the first stream's length out of range: found at the payload's first byte */
    uint8_t saved[4];
    const int fd = open(packed, O_RDONLY);
    ck_assert_int_eq(pread(fd, saved, 4, (off_t)payload), 4);
    close(fd);
    static const uint8_t huge[4] = { 0xff, 0xff, 0xff, 0x7f };
    patch_file(packed, payload, huge, sizeof huge);
    rec_list_t l = { 0 };
    mt_error_t err = { "" };
    ck_assert_int_lt(read_file_order(packed, &l, &err), 0);
    char want[64];
    snprintf(want, sizeof want, ": offset %llu: bad modeled frame", (unsigned long long)payload);
    ck_assert_msg(strstr(err.msg, want) && strstr(err.msg, packed), "message: %s", err.msg);
    rec_list_free(&l);
    patch_file(packed, payload, saved, sizeof saved);

    /* any byte of the first frame changed: an error naming an offset, or records; with a sweep
     * stride k, every k-th byte and every one at a boundary: each stream's length and method, the
     * first and last 4 bytes of its data (a zstd frame's magic and checksum) */
    const uint64_t end = nframes > 1 ? offs[1] : file_size(packed);
    const uint64_t stop = end < payload + 2000 ? end : payload + 2000;
    const unsigned k = sweep_stride();
    uint8_t *bytes = calloc(end - payload, 1), edge[2000] = { 0 };
    ck_assert_ptr_nonnull(bytes);
    const int rfd = open(packed, O_RDONLY);
    ck_assert_int_eq(pread(rfd, bytes, end - payload, (off_t)payload), (ssize_t)(end - payload));
    close(rfd);
    const uint8_t *q = bytes, *const qend = bytes + (end - payload);
    for (int stream = 0; stream < 13; stream++) {
        const uint8_t *head = q;
        uint64_t len, t = 0;
        ck_assert_int_ge(mt_get_uvarint(&q, qend, &len), 0);
        if (len)
            ck_assert_int_ge(mt_get_uvarint(&q, qend, &t), 0);
        const size_t data = (size_t)(q - bytes), stored = (size_t)(t >> 1);
        ck_assert_uint_le(data + stored, end - payload);
        for (size_t i = (size_t)(head - bytes); i < data + stored; i++)
            if (i < sizeof edge && (i < data + 4 || i + 4 >= data + stored))
                edge[i] = 1;
        q += stored;
    }
    ck_assert_ptr_eq(q, qend); /* the payload ends with the last stream */
    free(bytes);
    for (uint64_t off = payload; off < stop; off++) {
        if (k > 1 && (off - payload) % k != 0 && !edge[off - payload] && off + 4 < end)
            continue;
        const uint8_t b = read_byte(packed, off), x = (uint8_t)(b ^ (off % 2 ? 0xff : 0x01));
        patch_file(packed, off, &x, 1);
        rec_list_t r = { 0 };
        mt_error_t e = { "" };
        if (read_file_order(packed, &r, &e) < 0 && !strstr(e.msg, ": offset "))
            ck_abort_msg("no offset in: %s", e.msg);
        rec_list_free(&r);
        patch_file(packed, off, &b, 1);
    }
    free(raw);
    free(packed);
}
END_TEST

/* ---- workload writer --------------------------------------------------------------------------- */

#define WL_STREAMS 64u

/* Whether this process has a file open that was removed and whose name ended in ".held": the
 * workload writer's file of finished streams' frames (see workload_writer.c). */
static int held_file_open(void)
{
    DIR *d = opendir("/proc/self/fd");
    ck_assert_ptr_nonnull(d);
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) && !found) {
        char target[4096];
        const ssize_t n = readlinkat(dirfd(d), e->d_name, target, sizeof target - 1);
        if (n > 0) {
            target[n] = 0;
            found = strstr(target, ".held (deleted)") != NULL;
        }
    }
    closedir(d);
    return found;
}

/* WL_STREAMS streams of random ops (seeded: the same ops every call), interleaved a few ops at a
 * time: counts from none to several frames, slots and sizes at random so that the frames compress
 * poorly and the last frames of the streams come to more than the writer keeps in memory. With
 * `end`, each stream is ended (mt_wl_writer_end_thread) once its ops are written, in the order they
 * finish; *spilled says whether the held frames went to a file. */
static void write_random_workload(const char *path, int end, int *spilled)
{
    mt_wl_writer_t *w;
    mt_error_t err = { "" };
    const mt_wl_header_t tmpl = { .source_pid = 1 };
    ck_assert_msg(mt_wl_writer_open(&w, path, &tmpl, NULL, 0, &err) == 0, "%s", err.msg);
    rng_t r = { 42 };
    uint64_t left[WL_STREAMS], ns[WL_STREAMS];
    uint32_t open_streams = 0;
    for (uint32_t i = 0; i < WL_STREAMS; i++) {
        ck_assert_int_eq(mt_wl_writer_add_thread(w, i + 1, 1000 + i, 0), (int)i);
        left[i] = i % 16 == 5 ? 0 : rng_below(&r, 40000);
        ns[i] = 0;
        if (left[i])
            open_streams++;
        else if (end)
            ck_assert_int_eq(mt_wl_writer_end_thread(w, i, &err), 0); /* a stream of no ops */
    }
    while (open_streams) {
        uint32_t i = (uint32_t)rng_below(&r, WL_STREAMS);
        while (!left[i])
            i = (i + 1) % WL_STREAMS;
        for (uint64_t k = 1 + rng_below(&r, 50); k && left[i]; k--, left[i]--) {
            mt_wl_rec_t op = { .op = MT_WL_MALLOC, .slot = 1 + rng_below(&r, 1u << 20) };
            ns[i] += rng_below(&r, 100000);
            op.time_ns = ns[i];
            switch (rng_below(&r, 8)) {
            case 0:
                op.op = MT_WL_FREE;
                op.old_size = rng_below(&r, 1u << 20);
                break;
            case 1:
                op.op = MT_WL_MARK;
                op.data = (const uint8_t *)"a label";
                op.len = 7;
                break;
            case 2:
                op.op = MT_WL_WAIT;
                op.thread = (uint32_t)rng_below(&r, WL_STREAMS);
                op.n = rng_below(&r, 40000);
                break;
            default:
                op.size = rng_below(&r, 1u << 24);
                break;
            }
            if (mt_wl_writer_put(w, i, &op, &err) < 0) /* not ck_assert: each one writes to Check's pipe */
                ck_abort_msg("%s", err.msg);
        }
        if (!left[i]) {
            open_streams--;
            if (end)
                ck_assert_msg(mt_wl_writer_end_thread(w, i, &err) == 0, "%s", err.msg);
        }
    }
    *spilled = held_file_open();
    const mt_wl_header_t fin = { .slots = 1u << 20 };
    ck_assert_msg(mt_wl_writer_close(w, &fin, &err) == 0, "%s", err.msg);
    ck_assert(!held_file_open());
}

/* A PAGES event's print fields: read where all seven varints are there and agree, and nowhere else
 * (four fields, one cut short, more changed or zero than compared, none compared, another event). */
static int prints_of(unsigned op, const uint64_t *v, unsigned n, mt_pages_prints_t *out)
{
    uint8_t buf[80], *q = buf;
    for (unsigned k = 0; k < n; k++)
        q = mt_put_uvarint(q, v[k]);
    const mt_record_t r = { .op = op, .data = buf, .len = (uint32_t)(q - buf) };
    return mt_pages_prints(&r, out);
}

START_TEST(pages_prints_fields)
{
    mt_pages_prints_t pr = { 0 };
    const uint64_t whole[] = { 0x7ffff7a00010ull, 16, 16, MT_PAGES_AT_END, 16, 3, 5 };
    ck_assert_int_eq(prints_of(MT_EV_PAGES, whole, 7, &pr), 1);
    ck_assert_uint_eq(pr.sampled, 16);
    ck_assert_uint_eq(pr.changed, 3);
    ck_assert_uint_eq(pr.zero, 5);
    ck_assert_int_eq(prints_of(MT_EV_PAGES, whole, 4, &pr), 0); /* a block without prints */
    ck_assert_int_eq(prints_of(MT_EV_PAGES, whole, 6, &pr), 0); /* cut short */
    ck_assert_int_eq(prints_of(MT_EV_VM, whole, 7, &pr), 0);
    const uint64_t more_changed[] = { 1, 16, 16, MT_PAGES_AT_END, 4, 5, 0 };
    ck_assert_int_eq(prints_of(MT_EV_PAGES, more_changed, 7, &pr), 0);
    const uint64_t more_zero[] = { 1, 16, 16, MT_PAGES_AT_END, 4, 2, 3 };
    ck_assert_int_eq(prints_of(MT_EV_PAGES, more_zero, 7, &pr), 0);
    const uint64_t none[] = { 1, 16, 16, MT_PAGES_AT_END, 0, 0, 0 };
    ck_assert_int_eq(prints_of(MT_EV_PAGES, none, 7, &pr), 0);
    const uint64_t all_zero[] = { 1, 16, 16, MT_PAGES_AT_EXIT, 4, 0, 4 };
    ck_assert_int_eq(prints_of(MT_EV_PAGES, all_zero, 7, &pr), 1);
    ck_assert_uint_eq(pr.zero, 4);
}
END_TEST

/* A stream ended as soon as its ops are written gives back its buffer, yet the file is the bytes
 * of the same streams left open until close: the ended streams' last frames, held in memory and
 * past 1 MiB in a removed file beside the output, go where close puts every stream's last frame. */
START_TEST(ended_streams_write_the_same_bytes)
{
    char *open_wl = path_in(g_dir, "open.mtw"), *ended_wl = path_in(g_dir, "ended.mtw");
    int spilled;
    write_random_workload(open_wl, 0, &spilled);
    ck_assert(!spilled);
    write_random_workload(ended_wl, 1, &spilled);
    ck_assert_msg(spilled, "the ended streams' frames never left memory: the test writes too little");
    ck_assert_msg(files_same(open_wl, ended_wl), "ending streams early changed the workload's bytes");
    char listing[256];
    list_dir(g_dir, listing, sizeof listing);
    ck_assert_str_eq(listing, "ended.mtw open.mtw ");
    free(open_wl);
    free(ended_wl);
}
END_TEST

static Suite *format_suite(void)
{
    Suite *s = suite_create("format");
    TCase *tc = tcase(s, "records");
    tcase_add_test(tc, every_op_round_trips);
    tcase_add_test(tc, versions_1_and_2_read_alike);
    tcase_add_test(tc, default_header_and_finish_fields);
    tcase_add_test(tc, template_header_kept);
    tcase_add_test(tc, writer_rejects_bad_records);
    tcase_add_test(tc, largest_event_fills_a_chunk_sealed);
    tcase_add_test(tc, largest_event_fills_a_chunk_unsealed);

    tc = tcase(s, "threads_and_chunks");
    tcase_add_test(tc, many_threads_interleaved);
    tcase_add_test(tc, chunk_rollover_sealed);
    tcase_add_test(tc, chunk_rollover_unsealed);

    tc = tcase(s, "header_strings");
    tcase_add_test(tc, header_strings);
    tcase_add_test(tc, shared_reads_spread);
    tcase_add_test(tc, shared_reads_damage);
    tcase_add_test(tc, shared_reads_runs_in_a_row);
    tcase_add_test(tc, header_strings_fill_the_chunk);

    tc = tcase(s, "cut_files");
    tcase_set_timeout(tc, 300); /* 65536 opens per test: a minute and more under ASan on a busy machine */
    tcase_add_test(tc, cut_at_every_offset_sealed);
    tcase_add_test(tc, cut_at_every_offset_unsealed);
    tcase_add_test(tc, cut_in_header_chunk);
    tcase_add_test(tc, cut_files_read_as_truncated);

    tc = tcase(s, "damaged_files");
    tcase_add_test(tc, flipped_bytes_in_sealed_chunk);
    tcase_add_test(tc, damage_is_reported_at_its_offset);
    tcase_add_test(tc, bad_event_payload);

    tc = tcase(s, "bad_input");
    tcase_add_test(tc, bad_headers);
    tcase_add_test(tc, fifo_and_directory_refused);
    tcase_add_test(tc, json_number_stops_at_nul);
    tcase_add_test(tc, bad_chunk_headers);
    tcase_add_test(tc, zero_and_partial_chunk_headers);

    tc = tcase(s, "pack");
    tcase_add_test(tc, pack_round_trip);
    tcase_add_test(tc, packed_frame_damage_is_an_error);
    tcase_add_test(tc, pack_failures_leave_nothing);
    tcase_add_test(tc, pack_modeled_frames);
    tcase_add_test(tc, pack_modeled_frame_damage);

    tc = tcase(s, "escape_text");
    tcase_add_test(tc, escape_text);
    tcase_add_test(tc, utf8_len);

    tc = tcase(s, "pages_prints");
    tcase_add_test(tc, pages_prints_fields);

    tc = tcase(s, "cut_header_strings");
    tcase_add_test(tc, cut_header_strings);

    tc = tcase(s, "workload_writer");
    tcase_add_test(tc, ended_streams_write_the_same_bytes);
    return s;
}

int main(void)
{
    return run_suite(format_suite());
}
