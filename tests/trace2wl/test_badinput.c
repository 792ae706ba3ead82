/* trace2wl on input it must refuse, through the program itself ($TRACE2WL; $MTRACE for mtrace
 * convert): exit status 1 for a bad trace or an output in the way, 2 for a bad command line; exactly
 * one line on stderr, naming the file (and the byte offset, for a damaged trace); nothing left in
 * the output's folder: no workload and no PATH.partial.XXXXXX. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mtrace/trace_reader.h"
#include "mtrace/workload.h"
#include "t2w_util.h"
#include "test_util.h"

static char *g_dir;
TEST_DIR_FIXTURE(g_dir, "t2w-bad", "T2W_KEEP")

static const char *prog(const char *var)
{
    const char *p = getenv(var);
    ck_assert_msg(p && *p, "set %s to the program's path", var);
    return p;
}

/* A sound trace of two threads, several chunks each. */
static void write_sample(const char *path, int calls)
{
    tb_t b;
    tb_open(&b, path);
    tb_start(&b, 1, 10, 0);
    tb_create(&b, 1, 20, 2);
    tb_start(&b, 2, 30, 1);
    uint64_t t = 100;
    for (int k = 0; k < calls; k++) {
        /* 2000 mallocs, then their frees (k and k - 2000 have the same thread), and again */
        const uint32_t th = 1 + (uint32_t)(k & 1);
        const uint64_t p = 0x100000 + (uint64_t)(k % 2000) * 0x40 + (uint64_t)(k / 4000) * 0x1000000;
        if ((k / 2000) % 2 == 0)
            tb_malloc(&b, th, t++, 24 + (uint64_t)(k % 7), p);
        else
            tb_free(&b, th, t++, p);
    }
    tb_close(&b);
}

/* Runs argv with stdout and stderr to files in g_dir; returns the exit status, stderr in *errtext. */
static int run(char *const argv[], char **errtext)
{
    char *out = path_in(g_dir, "stdout.txt"), *err = path_in(g_dir, "stderr.txt");
    const int rc = run_cmd(out, err, argv);
    *errtext = read_text(err, NULL);
    ck_assert_ptr_nonnull(*errtext);
    unlink(out);
    unlink(err);
    free(out);
    free(err);
    return rc;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Nothing of the output in g_dir: no file named `name`, no partial file. */
static void assert_no_output(const char *name)
{
    DIR *d = opendir(g_dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        ck_assert_msg(!strstr(e->d_name, ".partial."), "left behind: %s", e->d_name);
        ck_assert_msg(strcmp(e->d_name, name) != 0, "left behind: %s", e->d_name);
    }
    closedir(d);
}

/* trace2wl IN -o OUT must fail with status 1 and one line naming IN and an offset. */
static void expect_refused(const char *in, const char *want_offset)
{
    char *out = path_in(g_dir, "out.mtw");
    char *const argv[] = { (char *)prog("TRACE2WL"), (char *)in, "-o", out, NULL };
    char *err;
    const int rc = run(argv, &err);
    ck_assert_msg(rc == 1, "exit status %d, expected 1; stderr: %s", rc, err);
    ck_assert_msg(count_lines(err) == 1 && err[strlen(err) - 1] == '\n', "expected one line on stderr: [%s]", err);
    ck_assert_msg(strncmp(err, "trace2wl: ", 10) == 0, "stderr: %s", err);
    ck_assert_msg(strstr(err, in) != NULL, "stderr does not name %s: %s", in, err);
    ck_assert_msg(strstr(err, "offset") != NULL, "stderr names no offset: %s", err);
    if (want_offset) {
        char w[64];
        snprintf(w, sizeof w, "offset %s:", want_offset);
        ck_assert_msg(strstr(err, w) != NULL, "stderr does not say \"%s\": %s", w, err);
    }
    assert_no_output("out.mtw");
    free(err);
    free(out);
}

static void copy_prefix(const char *from, const char *to, off_t n)
{
    size_t len;
    char *data = read_text(from, &len);
    ck_assert_ptr_nonnull(data);
    ck_assert_uint_le((size_t)n, len);
    FILE *f = fopen(to, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    free(data);
}

static off_t file_size(const char *path)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return st.st_size;
}

static void poke(const char *path, off_t at, const void *bytes, size_t n)
{
    const int fd = open(path, O_WRONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, bytes, n, at), (ssize_t)n);
    close(fd);
}

/* ---- not a trace --------------------------------------------------------------------------------- */

START_TEST(not_a_trace)
{
    char *in = path_in(g_dir, "notes.txt");
    FILE *f = fopen(in, "w");
    fputs("this is not a trace\n", f);
    fclose(f);
    expect_refused(in, "0");
    free(in);
}
END_TEST

START_TEST(empty_file)
{
    char *in = path_in(g_dir, "empty.mtr");
    fclose(fopen(in, "w"));
    expect_refused(in, "0");
    free(in);
}
END_TEST

START_TEST(missing_file)
{
    char *in = path_in(g_dir, "nothing-here.mtr");
    expect_refused(in, NULL);
    free(in);
}
END_TEST

START_TEST(directory_as_input)
{
    expect_refused(g_dir, NULL);
}
END_TEST

/* A workload is no trace. */
START_TEST(workload_as_input)
{
    char *tr = path_in(g_dir, "a.mtr"), *wl = path_in(g_dir, "a.mtw");
    write_sample(tr, 100);
    convert_ok(tr, wl, NULL);
    expect_refused(wl, "0");
    free(tr);
    free(wl);
}
END_TEST

/* ---- truncated traces ---------------------------------------------------------------------------- */

/* Cut inside the file header: nothing to read. */
START_TEST(truncated_in_header)
{
    char *good = path_in(g_dir, "good.mtr"), *in = path_in(g_dir, "cut.mtr");
    write_sample(good, 1000);
    const off_t cuts[] = { 8, 100, 255 };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        copy_prefix(good, in, cuts[i]);
        expect_refused(in, NULL);
    }
    free(good);
    free(in);
}
END_TEST

/* A packed trace cut inside a frame: an error (its frames have sizes). */
START_TEST(truncated_packed)
{
    char *good = path_in(g_dir, "good.mtr"), *packed = path_in(g_dir, "good.mtz"), *in = path_in(g_dir, "cut.mtz");
    write_sample(good, 40000);
    mt_error_t err;
    ck_assert_int_eq(mt_trace_pack(good, packed, 3, &err), 0);
    const off_t size = file_size(packed);
    const off_t cuts[] = { size - 1, size / 2, size - 100 };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        copy_prefix(packed, in, cuts[i]);
        expect_refused(in, NULL);
    }
    free(good);
    free(packed);
    free(in);
}
END_TEST

/* A raw trace cut inside its records is what a copy or a full disk leaves: its records up to the
 * cut are read, but a workload of them would replay part of the run as all of it. The converter
 * refuses it, naming the file, the cut and "truncated", and leaves no output. */
START_TEST(truncated_raw_is_refused)
{
    char *good = path_in(g_dir, "good.mtr"), *in = path_in(g_dir, "cut.mtr");
    write_sample(good, 40000);
    const off_t size = file_size(good);
    /* inside a chunk, and at a chunk boundary (the header counts the chunks) */
    const off_t cuts[] = { size - 70000, size - MT_CHUNK_SIZE };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        char at[32];
        snprintf(at, sizeof at, "%lld", (long long)cuts[i]);
        copy_prefix(good, in, cuts[i]);
        expect_refused(in, at);
    }
    free(good);
    free(in);
}
END_TEST

/* ---- damaged traces ------------------------------------------------------------------------------ */

/* The offset of a record of thread index `ti` three quarters into its records. */
static uint64_t late_record(const char *path, size_t ti)
{
    mt_trace_t *t;
    mt_error_t err;
    ck_assert_int_eq(mt_trace_open(&t, path, &err), 0);
    rec_list_t l = { 0 };
    ck_assert_int_eq(read_thread(t, ti, &l, &err), 0);
    const uint64_t off = l.v[l.n * 3 / 4].offset;
    rec_list_free(&l);
    mt_trace_close(t);
    return off;
}

/* An undefined opcode inside a sealed chunk, far into the trace: the conversion is well under way
 * (the output exists as a partial file) when the damage is met. */
START_TEST(corrupt_record)
{
    char *in = path_in(g_dir, "bad.mtr");
    for (size_t ti = 0; ti < 2; ti++) {
        write_sample(in, 40000);
        const uint64_t off = late_record(in, ti);
        const uint8_t undefined_op = 14;
        poke(in, (off_t)off, &undefined_op, 1);
        char want[32];
        snprintf(want, sizeof want, "%" PRIu64, off);
        expect_refused(in, want);
    }
    free(in);
}
END_TEST

/* Bytes of a sealed chunk's records overwritten with 0xff: varints that never end. */
START_TEST(corrupt_bytes)
{
    char *in = path_in(g_dir, "bad.mtr");
    write_sample(in, 40000);
    const uint64_t off = late_record(in, 1);
    uint8_t junk[24];
    memset(junk, 0xff, sizeof junk);
    poke(in, (off_t)off + 1, junk, sizeof junk);
    expect_refused(in, NULL);
    free(in);
}
END_TEST

START_TEST(corrupt_chunk_header)
{
    char *in = path_in(g_dir, "bad.mtr");
    write_sample(in, 40000);
    const uint32_t bad = 0x12345678;
    poke(in, 2 * 65536, &bad, 4); /* the second record chunk's magic */
    expect_refused(in, "131072");
    free(in);
}
END_TEST

START_TEST(corrupt_packed_frame)
{
    char *good = path_in(g_dir, "good.mtr"), *in = path_in(g_dir, "bad.mtz");
    write_sample(good, 40000);
    mt_error_t err;
    ck_assert_int_eq(mt_trace_pack(good, in, 3, &err), 0);
    const off_t size = file_size(in);
    uint8_t junk[16];
    memset(junk, 0x5a, sizeof junk);
    poke(in, size - 200, junk, sizeof junk); /* inside the last frame's zstd data */
    expect_refused(in, NULL);
    free(good);
    free(in);
}
END_TEST

/* ---- the output -------------------------------------------------------------------------------- */

START_TEST(existing_output)
{
    char *in = path_in(g_dir, "a.mtr"), *out = path_in(g_dir, "out.mtw");
    write_sample(in, 100);
    FILE *f = fopen(out, "w");
    fputs("precious\n", f);
    fclose(f);
    char *err;
    {
        char *const argv[] = { (char *)prog("TRACE2WL"), in, "-o", out, NULL };
        const int rc = run(argv, &err);
        ck_assert_msg(rc == 1, "exit status %d: %s", rc, err);
        ck_assert_msg(count_lines(err) == 1, "expected one line: %s", err);
        ck_assert_msg(strstr(err, out) && strstr(err, "--force"), "stderr: %s", err);
        char *text = read_text(out, NULL);
        ck_assert_str_eq(text, "precious\n");
        free(text);
        free(err);
    }
    {
        char *const argv[] = { (char *)prog("TRACE2WL"), in, "-o", out, "--force", "--quiet", NULL };
        const int rc = run(argv, &err);
        ck_assert_msg(rc == 0, "exit status %d: %s", rc, err);
        ck_assert_str_eq(err, "");
        ck_assert_int_eq(mt_file_is_workload(out), 1);
        wl_mem_t m;
        wl_load(&m, out);
        ck_assert_uint_eq(m.nthreads, 2);
        wl_free(&m);
        free(err);
    }
    /* and the same through mtrace convert */
    {
        char *const argv[] = { (char *)prog("MTRACE"), "convert", in, "-o", out, NULL };
        const int rc = run(argv, &err);
        ck_assert_msg(rc == 1, "exit status %d: %s", rc, err);
        ck_assert_msg(count_lines(err) == 1 && strstr(err, out), "stderr: %s", err);
        free(err);
    }
    DIR *d = opendir(g_dir);
    struct dirent *e;
    while ((e = readdir(d)))
        ck_assert_msg(!strstr(e->d_name, ".partial."), "left behind: %s", e->d_name);
    closedir(d);
    free(in);
    free(out);
}
END_TEST

/* An output that cannot be created: status 1, one line naming it. */
START_TEST(output_not_creatable)
{
    char *in = path_in(g_dir, "a.mtr"), *out = path_in(g_dir, "no/such/dir/out.mtw");
    write_sample(in, 100);
    char *const argv[] = { (char *)prog("TRACE2WL"), in, "-o", out, NULL };
    char *err;
    const int rc = run(argv, &err);
    ck_assert_msg(rc == 1, "exit status %d: %s", rc, err);
    ck_assert_msg(count_lines(err) == 1 && strstr(err, out), "stderr: %s", err);
    free(err);
    free(in);
    free(out);
}
END_TEST

/* A bad command line: status 2, the usage on stderr, nothing written. */
START_TEST(usage_errors)
{
    char *in = path_in(g_dir, "a.mtr"), *out = path_in(g_dir, "out.mtw");
    write_sample(in, 100);
    const char *t2w = prog("TRACE2WL");
    char *const cases[][6] = {
        { (char *)t2w, NULL },
        { (char *)t2w, in, NULL },
        { (char *)t2w, "-o", out, NULL },
        { (char *)t2w, in, "-o", NULL },
        { (char *)t2w, in, "-o", out, "--bogus", NULL },
        { (char *)t2w, in, in, "-o", out, NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *err;
        const int rc = run(cases[i], &err);
        ck_assert_msg(rc == 2, "case %zu: exit status %d: %s", i, rc, err);
        ck_assert_msg(strstr(err, "usage:") != NULL, "case %zu: stderr: %s", i, err);
        free(err);
        assert_no_output("out.mtw");
    }
    char *const help[] = { (char *)t2w, "--help", NULL };
    char *err;
    ck_assert_int_eq(run(help, &err), 0);
    free(err);
    free(in);
    free(out);
}
END_TEST

static Suite *badinput_suite(void)
{
    Suite *s = suite_create("trace2wl-badinput");
    const struct {
        const char *name;
        const TTest *t;
    } tests[] = {
        { "not_a_trace", not_a_trace },
        { "empty_file", empty_file },
        { "missing_file", missing_file },
        { "directory_as_input", directory_as_input },
        { "workload_as_input", workload_as_input },
        { "truncated_in_header", truncated_in_header },
        { "truncated_packed", truncated_packed },
        { "truncated_raw_is_refused", truncated_raw_is_refused },
        { "corrupt_record", corrupt_record },
        { "corrupt_bytes", corrupt_bytes },
        { "corrupt_chunk_header", corrupt_chunk_header },
        { "corrupt_packed_frame", corrupt_packed_frame },
        { "existing_output", existing_output },
        { "output_not_creatable", output_not_creatable },
        { "usage_errors", usage_errors },
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        TCase *tc = tcase_create(tests[i].name);
        tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
        tcase_add_test(tc, tests[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    return run_suite(badinput_suite());
}
