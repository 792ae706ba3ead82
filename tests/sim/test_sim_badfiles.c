/* Bad workload files through mtrace-sim and mtrace replay: not a workload, cut short at many offsets,
 * damaged frame headers and data, and a workload its writer never finished. Each must give exit
 * status 1 and one line on stderr naming the file and the offset (or what was expected), within a
 * time limit: never a crash, never a hang. A sweep of single-byte damage over a frame and the index
 * checks the same of every outcome, where the damage may also go unnoticed (zstd frames carry no
 * checksum: damaged data can decode to other valid ops), as long as the replay ends cleanly.
 *
 * Some cases are regressions of mtrace-sim bugs these tests found (fixed); once they ran on their own, as
 * expected to fail (meson.build). */
#define _GNU_SOURCE
#include <check.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim_util.h"
#include "test_util.h"

static char *g_dir;
TEST_DIR_FIXTURE(g_dir, "sim-bad", "SIM_KEEP")

/* Two threads; thread 0's stream spans several frames. */
static void write_good(const char *path, int threads)
{
    wlb_t b;
    wlb_open(&b, path);
    const uint32_t t0 = wlb_thread(&b, 0);
    for (uint64_t i = 0; i < 30000; i++) {
        wlb_malloc(&b, t0, 1 + i % 100, 16 + i % 3000);
        if (i % 100 == 99)
            for (uint64_t s = 1; s <= 100; s++)
                wlb_free(&b, t0, s);
    }
    if (threads > 1) {
        const uint32_t t1 = wlb_thread(&b, 0);
        for (uint64_t i = 0; i < 100; i++) {
            wlb_malloc(&b, t1, 101, 64);
            wlb_free(&b, t1, 101);
        }
    }
    wlb_close(&b);
}

static uint8_t *file_bytes(const char *path, size_t *len)
{
    char *t = read_text(path, len);
    ck_assert_ptr_nonnull(t);
    return (uint8_t *)t;
}

static void write_bytes(const char *path, const uint8_t *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

typedef struct layout {
    mt_wl_header_t h;
    uint64_t frame0, frame1; /* offsets of thread 0's first two frames */
    uint32_t frame0_nops;
    uint64_t size;
} layout_t;

static layout_t get_layout(const char *path)
{
    layout_t l;
    mt_wl_t *w;
    mt_error_t err;
    ck_assert_msg(mt_wl_open(&w, path, &err) == 0, "%s", err.msg);
    l.h = *mt_wl_header(w);
    ck_assert_uint_ge(mt_wl_thread_frame_count(w, 0), 2);
    l.frame0 = mt_wl_thread_frame(w, 0, 0)->offset;
    l.frame0_nops = mt_wl_thread_frame(w, 0, 0)->nops;
    l.frame1 = mt_wl_thread_frame(w, 0, 1)->offset;
    l.size = mt_wl_file_size(w);
    mt_wl_close(w);
    return l;
}

/* Runs mtrace-sim and mtrace replay on `bad`; both must exit 1 with one line on stderr holding the
 * file's name and each needle. */
static void expect_rejected(const char *bad, const char *what, const char *needle)
{
    char *err = path_in(g_dir, "stderr"), *json = path_in(g_dir, "r.json");
    const char *const sim[] = { SIM_EXE, bad, "--quiet", "--stall-timeout", "5", "--json", json, NULL };
    const char *const rep[] = { MTRACE_EXE, "replay", bad, "--quiet", "--json", json, NULL };
    const char *const *cmds[] = { sim, rep };
    /* Under a sanitizer, where each process costs several times more, the two take a test's damaged
     * files in turn, half each; the plain build runs both on every file. */
    static unsigned turn;
    const int only = SIM_SANITIZER_ALLOCATOR ? (int)(turn++ % 2) : -1;
    for (int c = 0; c < 2; c++) {
        if (only >= 0 && c != only)
            continue;
        const int rc = run(cmds[c], NULL, err, NULL, 60);
        char *e = read_text(err, NULL);
        ck_assert_msg(rc == 1, "%s (%s): exit %d, expected 1: %s", what, c ? "mtrace replay" : "mtrace-sim", rc,
                      e ? e : "");
        free(e);
        char label[256];
        snprintf(label, sizeof label, "%s (%s)", what, c ? "mtrace replay" : "mtrace-sim");
        const char *const needles[] = { bad, needle, NULL };
        assert_one_line(err, label, needles);
    }
    free(err);
    free(json);
}

START_TEST(good_file_replays)
{
    char *wl = path_in(g_dir, "good.mtw");
    write_good(wl, 2);
    char *err = path_in(g_dir, "stderr");
    const char *const argv[] = { SIM_EXE, wl, "--quiet", NULL };
    ck_assert_int_eq(run(argv, NULL, err, NULL, 60), 0);
    free(err);
    free(wl);
}
END_TEST

START_TEST(not_a_workload)
{
    char *text = path_in(g_dir, "text.mtw"), *empty = path_in(g_dir, "empty.mtw"),
         *missing = path_in(g_dir, "missing.mtw"), *trace = path_in(g_dir, "short.mtw");
    write_bytes(text, (const uint8_t *)"hello, world\nthis is not a workload\n", 36);
    write_bytes(empty, (const uint8_t *)"", 0);
    write_bytes(trace, (const uint8_t *)MT_WL_MAGIC, 8); /* the magic and nothing else */
    expect_rejected(text, "a text file", "offset 0");
    expect_rejected(empty, "an empty file", "offset 0");
    expect_rejected(missing, "a missing file", "offset 0");
    expect_rejected(trace, "the magic alone", "offset");
    expect_rejected(g_dir, "a directory", "offset");
    free(text);
    free(empty);
    free(missing);
    free(trace);
}
END_TEST

START_TEST(truncated)
{
    char *wl = path_in(g_dir, "good.mtw"), *cut = path_in(g_dir, "cut.mtw");
    write_good(wl, 2);
    const layout_t l = get_layout(wl);
    size_t len;
    uint8_t *p = file_bytes(wl, &len);
    ck_assert_uint_eq(len, l.size);
    const uint64_t at[] = { 1,
                            7,
                            8,
                            9,
                            100,
                            255,
                            256,
                            l.h.header_size,
                            l.frame0 + 5,
                            l.frame0 + 32,
                            l.frame1 + 40,
                            (l.frame1 + l.h.index_offset) / 2,
                            l.h.index_offset,
                            l.h.index_offset + 4,
                            l.h.index_offset + 8,
                            l.h.index_offset + 20,
                            len - 16,
                            len - 1 };
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        ck_assert_uint_lt(at[i], len);
        write_bytes(cut, p, at[i]);
        char what[64];
        snprintf(what, sizeof what, "cut at %llu of %zu", (unsigned long long)at[i], len);
        expect_rejected(cut, what, "offset");
    }
    free(p);
    free(wl);
    free(cut);
}
END_TEST

/* Damage to a frame header or to the start of the frame's zstd data. */
START_TEST(damaged_frames)
{
    char *wl = path_in(g_dir, "good.mtw"), *bad = path_in(g_dir, "bad.mtw");
    write_good(wl, 2);
    const layout_t l = get_layout(wl);
    size_t len;
    uint8_t *p = file_bytes(wl, &len);
    const struct {
        const char *what;
        uint64_t off; /* from the frame header */
        uint32_t value;
        int xor_byte; /* else: write value as a u32 */
    } cases[] = {
        { "frame magic", 0, 0x12345678, 0 },
        { "frame thread", 4, 1, 0 },
        { "frame thread out of range", 4, 9999, 0 },
        { "frame raw size + 1", 8, 0, 0 }, /* value filled below */
        { "frame raw size huge", 8, 0x7fffffff, 0 },
        { "frame zstd size huge", 12, 0x7fffffff, 0 },
        { "frame zstd size short", 12, 0, 0 }, /* value filled below */
        { "frame op count + 1000", 24, 0, 0 }, /* value filled below */
        { "zstd magic", 32, 0xff, 1 },
        { "zstd frame header", 36, 0xff, 1 },
    };
    uint32_t raw, zsize;
    memcpy(&raw, p + l.frame0 + 8, 4);
    memcpy(&zsize, p + l.frame0 + 12, 4);
    for (int f = 0; f < 2; f++) {
        const uint64_t base = f ? l.frame1 : l.frame0;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            uint8_t *q = malloc(len);
            memcpy(q, p, len);
            uint32_t v = cases[i].value;
            if (!strcmp(cases[i].what, "frame raw size + 1"))
                v = raw + 1;
            else if (!strcmp(cases[i].what, "frame zstd size short"))
                v = zsize / 2;
            else if (!strcmp(cases[i].what, "frame op count + 1000"))
                v = l.frame0_nops + 1000;
            if (cases[i].xor_byte)
                q[base + cases[i].off] ^= (uint8_t)v;
            else
                memcpy(q + base + cases[i].off, &v, 4);
            write_bytes(bad, q, len);
            free(q);
            char what[128];
            snprintf(what, sizeof what, "%s (frame at %llu)", cases[i].what, (unsigned long long)base);
            expect_rejected(bad, what, "offset|expected");
        }
    }
    free(p);
    free(wl);
    free(bad);
}
END_TEST

/* The op decoder the replay runs on every op takes exactly the op bytes that name an op: each of the
 * 256 byte values, followed by zero fields. */
START_TEST(op_bytes_checked)
{
    for (unsigned b = 0; b < 256; b++) {
        uint8_t buf[16] = { (uint8_t)b };
        const uint8_t *p = buf;
        uint64_t prev_ns = 5;
        mt_wl_rec_t r;
        const int rc = mt_wl_decode_op(&p, buf + sizeof buf, &r, &prev_ns);
        if (mt_wl_op_name(b)) {
            ck_assert_msg(rc == 0, "op byte %u (%s) refused", b, mt_wl_op_name(b));
            ck_assert_uint_eq(r.op, b);
            ck_assert_uint_eq(r.time_ns, 5);
        } else {
            ck_assert_msg(rc < 0, "op byte %u is not an op, but decoded", b);
            ck_assert_ptr_eq(p, buf);
        }
    }
}
END_TEST

/* A frame header whose op count disagrees with the index, or an index entry that names another
 * frame of the same thread: the workload reader rejects both ("expected a frame of thread 0 (magic
 * "MLWF", ops A to B)"), and so must the simulator, rather than replay what the frame header says,
 * silently dropping or repeating ops. */
START_TEST(frame_op_count_checked)
{
    char *wl = path_in(g_dir, "good.mtw"), *bad = path_in(g_dir, "bad.mtw");
    write_good(wl, 1);
    const layout_t l = get_layout(wl);
    size_t len;
    uint8_t *p = file_bytes(wl, &len);
    /* the reader itself rejects each of these files */
    const uint32_t counts[] = { l.frame0_nops - 10, l.frame0_nops + 1000 };
    for (int i = 0; i < 3; i++) {
        uint8_t *q = malloc(len);
        memcpy(q, p, len);
        if (i < 2) {
            memcpy(q + l.frame0 + 24, &counts[i], 4);
        } else {
            const uint64_t fe = l.h.index_offset + 8 + sizeof(mt_wl_thread_entry_t);
            memcpy(q + fe + offsetof(mt_wl_frame_entry_t, offset), &l.frame1, 8);
        }
        write_bytes(bad, q, len);
        free(q);
        mt_wl_t *w;
        mt_error_t err;
        ck_assert_int_eq(mt_wl_open(&w, bad, &err), 0);
        mt_wl_cursor_t *c;
        ck_assert_int_eq(mt_wl_cursor_open(&c, w, 0), 0);
        mt_wl_rec_t r;
        int rc;
        while ((rc = mt_wl_cursor_next(c, &r, &err)) > 0) {
        }
        ck_assert_msg(rc < 0, "case %d: the workload reader took the file", i);
        mt_wl_cursor_close(c);
        mt_wl_close(w);
        expect_rejected(bad,
                        i == 0   ? "frame op count - 10"
                        : i == 1 ? "frame op count + 1000"
                                 : "index entry on the other frame",
                        "offset|expected");
    }
    free(p);
    free(wl);
    free(bad);
}
END_TEST

/* The simulator's messages about a frame name the file once ("mtrace-sim: F: F: offset ..." today). */
START_TEST(frame_error_names_file_once)
{
    char *wl = path_in(g_dir, "good.mtw"), *bad = path_in(g_dir, "bad.mtw"), *err = path_in(g_dir, "stderr");
    write_good(wl, 1);
    const layout_t l = get_layout(wl);
    size_t len;
    uint8_t *p = file_bytes(wl, &len);
    p[l.frame0] ^= 0xff; /* frame magic */
    write_bytes(bad, p, len);
    const char *const argv[] = { SIM_EXE, bad, "--quiet", NULL };
    ck_assert_int_eq(run(argv, NULL, err, NULL, 60), 1);
    char *e = read_text(err, NULL);
    const char *first = strstr(e, bad);
    ck_assert_msg(first && !strstr(first + strlen(bad), bad), "the file is named more than once: %s", e);
    free(e);
    free(p);
    free(wl);
    free(bad);
    free(err);
}
END_TEST

/* Ops that decode badly or name a slot past the table, in a frame whose zstd data is sound (the
 * writer encodes whatever it is given): the simulator names the file, the frame's offset and the
 * op's byte in the frame's data, as the workload reader does ("PATH: offset N: damaged op at byte
 * B ..."), rather than "damaged op in a frame of thread 0". */
START_TEST(op_errors_name_offset)
{
    char *bad_op = path_in(g_dir, "badop.mtw"), *bad_slot = path_in(g_dir, "badslot.mtw");
    for (int k = 0; k < 2; k++) {
        wlb_t b;
        wlb_open(&b, k ? bad_slot : bad_op);
        const uint32_t t = wlb_thread(&b, 0);
        wlb_malloc(&b, t, 1, 10);
        mt_wl_rec_t r = { .op = MT_WL_MALLOC, .slot = 1000, .size = 10 }; /* the header says 1 slot */
        if (!k)
            r.op = 200; /* no such op */
        wlb_put(&b, t, &r);
        wlb_close(&b);
    }
    /* what the workload reader says of the damaged op, and where the op starts */
    mt_wl_t *w;
    mt_error_t err;
    ck_assert_int_eq(mt_wl_open(&w, bad_op, &err), 0);
    const unsigned long long frame = (unsigned long long)mt_wl_thread_frame(w, 0, 0)->offset;
    mt_wl_cursor_t *c;
    ck_assert_int_eq(mt_wl_cursor_open(&c, w, 0), 0);
    mt_wl_rec_t r;
    int rc;
    while ((rc = mt_wl_cursor_next(c, &r, &err)) > 0) {
    }
    ck_assert_int_lt(rc, 0);
    mt_wl_cursor_close(c);
    mt_wl_close(w);
    const char *said = strstr(err.msg, "offset ");
    size_t at;
    ck_assert_msg(said && sscanf(said, "offset %*u: damaged op at byte %zu", &at) == 1, "reader: %s", err.msg);
    char want[512];
    snprintf(want, sizeof want, "offset %llu: damaged op at byte %zu of the frame's data (thread 0)", frame, at);
    ck_assert_msg(!strncmp(said, want, strlen(want)), "the reader says: %s", err.msg);
    expect_rejected(bad_op, "an op byte that names no op", want);
    snprintf(want, sizeof want,
             "offset %llu: malloc op at byte %zu of the frame's data (thread 0) names slot 1000: expected a slot up "
             "to 1",
             frame, at);
    expect_rejected(bad_slot, "an op naming a slot past the slot count", want);
    free(bad_op);
    free(bad_slot);
}
END_TEST

/* A thread's exit is the last op of its stream: the replay gives the thread's buffers back before
 * its exit counts (a joiner may go on at once), so an op after it is refused, never skipped. */
START_TEST(op_after_exit_refused)
{
    char *bad = path_in(g_dir, "afterexit.mtw");
    wlb_t b;
    wlb_open(&b, bad);
    const uint32_t t = wlb_thread(&b, 0);
    wlb_malloc(&b, t, 1, 10);
    wlb_exit(&b, t);
    wlb_free(&b, t, 1);
    wlb_close(&b);
    expect_rejected(bad, "an op after the thread's exit", "free op at byte");
    expect_rejected(bad, "an op after the thread's exit", "follows the thread's exit: expected the end of its stream");
    free(bad);
}
END_TEST

/* Header fields. */
START_TEST(damaged_header)
{
    char *wl = path_in(g_dir, "good.mtw"), *bad = path_in(g_dir, "bad.mtw");
    write_good(wl, 2);
    const layout_t l = get_layout(wl);
    size_t len;
    uint8_t *p = file_bytes(wl, &len);
    const struct {
        const char *what;
        size_t off;
        uint64_t value;
        int bytes;
    } cases[] = {
        { "version 4", offsetof(mt_wl_header_t, version), MT_WL_VERSION + 1, 4 },
        { "touch entries without a table", offsetof(mt_wl_header_t, touch_entries), 1, 8 },
        { "touch entries past the end", offsetof(mt_wl_header_t, touch_entries), 1ull << 40, 8 },
        { "touch table offset without entries", offsetof(mt_wl_header_t, touch_offset), 256, 8 },
        { "version 1", offsetof(mt_wl_header_t, version), 1, 4 },
        { "version 0", offsetof(mt_wl_header_t, version), 0, 4 },
        { "header size 10", offsetof(mt_wl_header_t, header_size), 10, 4 },
        { "header size past the end", offsetof(mt_wl_header_t, header_size), 1u << 30, 4 },
        { "threads 0", offsetof(mt_wl_header_t, threads), 0, 4 },
        { "threads 3", offsetof(mt_wl_header_t, threads), 3, 4 },
        { "threads huge", offsetof(mt_wl_header_t, threads), 0xffffffffu, 4 },
        { "index offset 0", offsetof(mt_wl_header_t, index_offset), 0, 8 },
        { "index offset past the end", offsetof(mt_wl_header_t, index_offset), 1ull << 40, 8 },
        { "index offset inside a frame", offsetof(mt_wl_header_t, index_offset), 0, 8 }, /* below */
        { "frames + 1", offsetof(mt_wl_header_t, frames), 0, 8 },                        /* below */
        { "frames huge", offsetof(mt_wl_header_t, frames), 1ull << 50, 8 },
        { "not complete", offsetof(mt_wl_header_t, flags), 0, 4 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t *q = malloc(len);
        memcpy(q, p, len);
        uint64_t v = cases[i].value;
        if (!strcmp(cases[i].what, "index offset inside a frame"))
            v = l.frame1 + 7;
        else if (!strcmp(cases[i].what, "frames + 1"))
            v = l.h.frames + 1;
        memcpy(q + cases[i].off, &v, (size_t)cases[i].bytes);
        write_bytes(bad, q, len);
        free(q);
        expect_rejected(bad, cases[i].what, "offset");
    }
    free(p);
    free(wl);
    free(bad);
}
END_TEST

/* The index: thread entries with wrong frame counts, frame entries pointing elsewhere. */
START_TEST(damaged_index)
{
    char *wl = path_in(g_dir, "good.mtw"), *bad = path_in(g_dir, "bad.mtw");
    write_good(wl, 2);
    const layout_t l = get_layout(wl);
    size_t len;
    uint8_t *p = file_bytes(wl, &len);
    const uint64_t te = l.h.index_offset + 8, fe = te + 2 * sizeof(mt_wl_thread_entry_t);
    const struct {
        const char *what;
        uint64_t off;
        uint64_t value;
        int bytes;
    } cases[] = {
        { "index magic", l.h.index_offset, 0x11111111, 4 },
        { "index thread count", l.h.index_offset + 4, 5, 4 },
        { "thread 0 frames + 1", te + offsetof(mt_wl_thread_entry_t, frames), 0, 4 }, /* below */
        { "thread 0 frames 0", te + offsetof(mt_wl_thread_entry_t, frames), 0, 4 },
        { "frame entry thread", fe + offsetof(mt_wl_frame_entry_t, thread), 7, 4 },
        { "frame entry offset past the index", fe + offsetof(mt_wl_frame_entry_t, offset), 0, 8 }, /* below */
        { "frame entry offset into the header", fe + offsetof(mt_wl_frame_entry_t, offset), 8, 8 },
        { "frame entry offset into a frame", fe + offsetof(mt_wl_frame_entry_t, offset), 0, 8 }, /* below */
    };
    uint32_t frames0;
    memcpy(&frames0, p + te + offsetof(mt_wl_thread_entry_t, frames), 4);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t *q = malloc(len);
        memcpy(q, p, len);
        uint64_t v = cases[i].value;
        if (!strcmp(cases[i].what, "thread 0 frames + 1"))
            v = frames0 + 1;
        else if (!strcmp(cases[i].what, "frame entry offset past the index"))
            v = l.h.index_offset + 4;
        else if (!strcmp(cases[i].what, "frame entry offset into a frame"))
            v = l.frame0 + 40;
        memcpy(q + cases[i].off, &v, (size_t)cases[i].bytes);
        write_bytes(bad, q, len);
        free(q);
        expect_rejected(bad, cases[i].what, "offset|expected");
    }
    free(p);
    free(wl);
    free(bad);
}
END_TEST

/* A writer that never closed: what it leaves is its PATH.partial.XXXXXX file. */
START_TEST(unfinished)
{
    char *wl = path_in(g_dir, "unfinished.mtw");
    fflush(NULL);
    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        mt_wl_writer_t *w;
        mt_error_t err;
        mt_wl_header_t tmpl;
        memset(&tmpl, 0, sizeof tmpl);
        if (mt_wl_writer_open(&w, wl, &tmpl, NULL, 0, &err) < 0)
            _exit(3);
        mt_wl_writer_add_thread(w, 1, 1000, 0);
        mt_wl_rec_t r = { .op = MT_WL_THREAD_START };
        mt_wl_writer_put(w, 0, &r, &err);
        for (uint64_t i = 0; i < 40000; i++) { /* enough for a frame or two on disk */
            mt_wl_rec_t m = { .op = MT_WL_MALLOC, .slot = 1, .size = 100 + i, .time_ns = i };
            mt_wl_rec_t f = { .op = MT_WL_FREE, .slot = 1, .time_ns = i };
            mt_wl_writer_put(w, 0, &m, &err);
            mt_wl_writer_put(w, 0, &f, &err);
        }
        _exit(0); /* as if killed: no close */
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_ne(access(wl, F_OK), 0); /* nothing under the final name */
    char *pattern = path_in(g_dir, "unfinished.mtw.partial.*");
    glob_t g;
    ck_assert_int_eq(glob(pattern, 0, NULL, &g), 0);
    ck_assert_uint_eq(g.gl_pathc, 1);
    expect_rejected(g.gl_pathv[0], "unfinished", "not finished");
    globfree(&g);
    free(pattern);
    free(wl);
}
END_TEST

/* Every byte of the first frame's header and of the start of its data, and of the index, flipped in
 * turn; then bytes spread over the rest of the file. One thread, so that ops garbled into other
 * valid ops cannot race on a slot; --touch ends, so that a garbled size that the allocator grants
 * (gigabytes) is not written page by page. */
START_TEST(byte_damage_sweep)
{
    char *wl = path_in(g_dir, "good.mtw"), *bad = path_in(g_dir, "bad.mtw"), *err = path_in(g_dir, "stderr");
    write_good(wl, 1);
    const layout_t l = get_layout(wl);
    size_t len;
    uint8_t *p = file_bytes(wl, &len);
    uint64_t offs[300];
    const size_t want = SIM_SANITIZER_ALLOCATOR ? 100 : sizeof offs / sizeof offs[0]; /* slower there */
    size_t n = 0;
    for (uint64_t o = 0; o < 32 + 48; o++)
        offs[n++] = l.frame0 + o;
    for (uint64_t o = l.h.index_offset; o < len && n < want - 50; o++)
        offs[n++] = o;
    rng_t rng = { 12345 };
    while (n < want)
        offs[n++] = rng_below(&rng, len);
    int rejected = 0, replayed = 0;
    for (size_t i = 0; i < n; i++) {
        const uint64_t o = offs[i];
        p[o] ^= 0x5a;
        write_bytes(bad, p, len);
        p[o] ^= 0x5a;
        const char *const argv[] = { SIM_EXE, bad, "--quiet", "--touch", "ends", "--stall-timeout", "3", NULL };
        const int rc = run(argv, NULL, err, NULL, 60);
        char *e = read_text(err, NULL);
        ck_assert_msg(rc == 0 || rc == 1, "byte %llu damaged: exit %d%s: %s", (unsigned long long)o, rc,
                      rc == RUN_TIMEOUT ? " (hung)"
                      : rc > 128        ? " (died of a signal)"
                                        : "",
                      e ? e : "");
        if (rc == 1) {
            char what[64];
            snprintf(what, sizeof what, "byte %llu damaged", (unsigned long long)o);
            const char *const needles[] = { bad, NULL };
            assert_one_line(err, what, needles);
            rejected++;
        } else {
            ck_assert_msg(!e || !e[0], "byte %llu damaged: exit 0 with stderr: %s", (unsigned long long)o, e);
            replayed++;
        }
        free(e);
    }
    /* most damage is caught */
    ck_assert_msg(rejected > replayed, "%d damaged files rejected, %d replayed", rejected, replayed);
    free(p);
    free(wl);
    free(bad);
    free(err);
}
END_TEST

/* Thread 0's ops, read with the library's cursor: 0, or the reader's error. */
static int read_ops(const char *path, mt_wl_rec_t **ops, size_t *n)
{
    mt_wl_t *w;
    mt_error_t err;
    *ops = NULL;
    *n = 0;
    if (mt_wl_open(&w, path, &err) < 0)
        return -1;
    mt_wl_cursor_t *c;
    int rc = mt_wl_cursor_open(&c, w, 0);
    size_t cap = 0;
    mt_wl_rec_t r;
    while (rc == 0 && (rc = mt_wl_cursor_next(c, &r, &err)) > 0) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 1024;
            *ops = realloc(*ops, cap * sizeof **ops);
            ck_assert_ptr_nonnull(*ops);
        }
        r.data = NULL; /* points into the cursor's buffer */
        (*ops)[(*n)++] = r;
    }
    mt_wl_cursor_close(c);
    mt_wl_close(w);
    return rc < 0 ? -1 : 0;
}

static int same_ops(const mt_wl_rec_t *a, size_t na, const mt_wl_rec_t *b, size_t nb)
{
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (a[i].op != b[i].op || a[i].time_ns != b[i].time_ns || a[i].slot != b[i].slot || a[i].slot2 != b[i].slot2 ||
            a[i].size != b[i].size || a[i].count != b[i].count || a[i].align != b[i].align ||
            a[i].old_size != b[i].old_size || a[i].a != b[i].a || a[i].b != b[i].b || a[i].thread != b[i].thread ||
            a[i].n != b[i].n || a[i].len != b[i].len)
            return 0;
    return 1;
}

/* A byte changed inside a frame's compressed data is an error, never other ops read without
 * complaint: frames carry zstd's checksum of their content. The ops are random, as a program's are
 * (a regular stream compresses so well that nearly any damage already breaks its frame's size). */
START_TEST(frame_data_damage_is_an_error)
{
    char *wl = path_in(g_dir, "random.mtw"), *bad = path_in(g_dir, "bad.mtw");
    wlb_t b;
    wlb_open(&b, wl);
    const uint32_t t0 = wlb_thread(&b, 0);
    uint8_t live[512] = { 0 };
    rng_t rng = { 777 };
    for (int i = 0; i < 20000; i++) {
        const uint64_t s = rng_below(&rng, 512);
        if (live[s])
            wlb_free(&b, t0, s + 1);
        else
            wlb_malloc(&b, t0, s + 1, 1 + rng_below(&rng, 5000));
        live[s] ^= 1;
        wlb_gap(&b, rng_below(&rng, 3000));
    }
    wlb_close(&b);
    const layout_t l = get_layout(wl);
    size_t len, nwant, ngot;
    uint8_t *p = file_bytes(wl, &len);
    mt_wl_rec_t *want, *got;
    ck_assert_int_eq(read_ops(wl, &want, &nwant), 0);
    mt_wl_frame_header_t fh;
    memcpy(&fh, p + l.frame0, sizeof fh);
    size_t silent = 0, tried = 0;
    /* every third byte; with a sweep stride k, every 3k-th but in the zstd frame's first 32 bytes
     * (its header, the first block's header) and its last 32 (the checksum), where every third */
    const uint64_t first = l.frame0 + sizeof fh, end = first + fh.zsize, k = sweep_stride();
    for (uint64_t o = first; o < end; o += 3) {
        if (k > 1 && o >= first + 32 && o + 32 < end && (o - first) % (3 * k) != 0)
            continue;
        p[o] ^= 0x10;
        write_bytes(bad, p, len);
        p[o] ^= 0x10;
        tried++;
        if (read_ops(bad, &got, &ngot) == 0 && !same_ops(got, ngot, want, nwant))
            silent++;
        free(got);
    }
    ck_assert_msg(silent == 0, "%zu of %zu damaged bytes read as other ops without an error", silent, tried);
    free(want);
    free(p);
    free(wl);
    free(bad);
}
END_TEST

static Suite *bad_suite(void)
{
    Suite *s = suite_create("sim_badfiles");
    const struct {
        const char *name;
        const TTest *t;
        int knownbug;
    } cases[] = {
        { "good_file_replays", good_file_replays, 0 },
        { "not_a_workload", not_a_workload, 0 },
        { "truncated", truncated, 0 },
        { "damaged_frames", damaged_frames, 0 },
        { "damaged_header", damaged_header, 0 },
        { "damaged_index", damaged_index, 0 },
        { "unfinished", unfinished, 0 },
        { "byte_damage_sweep", byte_damage_sweep, 0 },
        { "frame_data_damage_is_an_error", frame_data_damage_is_an_error, 0 },
        { "frame_op_count_checked", frame_op_count_checked, 0 },
        { "op_bytes_checked", op_bytes_checked, 0 },
        { "frame_error_names_file_once", frame_error_names_file_once, 1 },
        { "op_errors_name_offset", op_errors_name_offset, 0 },
        { "op_after_exit_refused", op_after_exit_refused, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
        tcase_set_timeout(tc, 500);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    return run_suite(bad_suite());
}
