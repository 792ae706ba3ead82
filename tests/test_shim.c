/* The preload shim end to end: small programs (tests/prog_*.c) run under LD_PRELOAD=libmtrace.so
 * and their traces are read back with the reader. The programs print the pointers, sizes and return
 * values they saw ("key value" lines), so the test can predict each record exactly.
 *
 * Not built under a sanitizer: an ASan runtime must come first in the link order, and LD_PRELOAD
 * puts the shim ahead of it (see tests/meson.build). */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mtrace/clock.h"
#include "mtrace/trace_reader.h"
#include "test_output.h"
#include "test_util.h"

#ifndef MT_SHIM_PATH
#error "MT_SHIM_PATH (the built libmtrace.so) comes from tests/meson.build"
#endif
#ifndef MT_PROG_DIR
#error "MT_PROG_DIR (where the prog_* test programs are built) comes from tests/meson.build"
#endif

static char *g_dir; /* one per test case, removed by the runner even when a test fails */
TEST_DIR_FIXTURE(g_dir, "shim", NULL)

/* ---- running programs -------------------------------------------------------------------------- */

typedef struct run_opts {
    const char *prog;    /* file name in MT_PROG_DIR */
    const char *args[4]; /* after argv[0] */
    int preload;         /* run under the shim */
    const char *trace;   /* MTRACE_OUT, or NULL */
    const char *env[6];  /* more NAME=VALUE */
    rlim_t fsize;        /* RLIMIT_FSIZE for the program, 0: as is */
} run_opts_t;

static char *prog_path(const char *name)
{
    return path_in(MT_PROG_DIR, name);
}

/* Starts the program with a clean environment (only what the test sets: the tests' own MALLOC_*
 * settings must not reach it). stdout goes to `out_fd`, stderr to `err_fd`. */
static pid_t spawn(const run_opts_t *o, int out_fd, int err_fd)
{
    char *path = prog_path(o->prog);
    char *argv[8] = { path };
    for (int i = 0; i < 4 && o->args[i]; i++)
        argv[i + 1] = (char *)o->args[i];
    char *envp[16];
    int n = 0;
    char preload[4200], out[4200];
    if (o->preload) {
        snprintf(preload, sizeof preload, "LD_PRELOAD=%s", MT_SHIM_PATH);
        envp[n++] = preload;
    }
    if (o->trace) {
        snprintf(out, sizeof out, "MTRACE_OUT=%s", o->trace);
        envp[n++] = out;
    }
    for (int i = 0; i < 6 && o->env[i]; i++)
        envp[n++] = (char *)o->env[i];
    envp[n] = NULL;

    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(out_fd, STDOUT_FILENO);
        dup2(err_fd, STDERR_FILENO);
        if (o->fsize) {
            const struct rlimit rl = { o->fsize, o->fsize };
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
                _exit(126);
        }
        execve(path, argv, envp);
        _exit(127);
    }
    free(path);
    return pid;
}

/* Runs the program to its end, capturing stdout and stderr in files of g_dir. */
static void run(const run_opts_t *o, run_result_t *r)
{
    capture_t c;
    capture_open(&c, g_dir);
    const pid_t pid = spawn(o, c.out_fd, c.err_fd);
    capture_started(&c);
    ck_assert_int_eq(waitpid(pid, &r->status, 0), pid);
    capture_finish(&c, r);
}

static void assert_exit(const run_result_t *r, int code)
{
    ck_assert_msg(WIFEXITED(r->status) && WEXITSTATUS(r->status) == code, "status %#x, expected exit %d; stderr: %s",
                  r->status, code, r->err);
}

/* The value the program printed for `key`. */
static uint64_t value(const run_result_t *r, const char *key)
{
    const size_t klen = strlen(key);
    for (const char *line = r->out; line && *line;) {
        if (!strncmp(line, key, klen) && line[klen] == ' ')
            return strtoull(line + klen + 1, NULL, 10);
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    ck_abort_msg("the program printed no \"%s\"; its output:\n%s", key, r->out);
    return 0;
}

/* Lines of `s` that start with `prefix`, and all its lines. */
static void count_lines(const char *s, const char *prefix, int *matching, int *all)
{
    *matching = *all = 0;
    for (const char *line = s; *line;) {
        const char *nl = strchr(line, '\n');
        (*all)++;
        if (!strncmp(line, prefix, strlen(prefix)))
            (*matching)++;
        if (!nl)
            break;
        line = nl + 1;
    }
}

/* ---- reading traces ---------------------------------------------------------------------------- */

static mt_trace_t *open_ok(const char *path)
{
    mt_trace_t *t;
    mt_error_t err = { "" };
    const int rc = mt_trace_open(&t, path, &err);
    ck_assert_msg(rc == 0, "opening %s: %d %s", path, rc, err.msg);
    return t;
}

static void thread_records(const mt_trace_t *t, size_t i, rec_list_t *out)
{
    mt_error_t err = { "" };
    const int rc = read_thread(t, i, out, &err);
    ck_assert_msg(rc == 0, "reading thread %zu: %d %s", i, rc, err.msg);
}

/* The same with the times as stored: a trace whose calls share clock reads has them spread by the
 * reader (mt_cursor_t.spread_reads), and the clock policy's test looks at what the recorder wrote. */
static void thread_records_stored(const mt_trace_t *t, size_t i, rec_list_t *out)
{
    mt_thread_cursor_t tc;
    ck_assert_int_eq(mt_thread_cursor_init(&tc, t, i), 0);
    tc.c.spread_reads = 0;
    mt_record_t r;
    mt_error_t err = { "" };
    int rc;
    while ((rc = mt_thread_cursor_next(&tc, &r, &err)) > 0)
        rec_list_push(out, &r);
    ck_assert_msg(rc == 0, "reading thread %zu: %d %s", i, rc, err.msg);
    mt_thread_cursor_fini(&tc);
}

/* Index of the thread with OS thread id `tid`. */
static size_t thread_by_tid(const mt_trace_t *t, uint64_t tid)
{
    for (size_t i = 0; i < mt_trace_thread_count(t); i++)
        if (mt_trace_thread(t, i)->tid == tid)
            return i;
    ck_abort_msg("no thread with tid %llu in the trace", (unsigned long long)tid);
    return 0;
}

/* The call records of a list (events left out). */
static void calls_of(const rec_list_t *l, rec_list_t *out)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].op <= MT_OP_LAST_CALL)
            rec_list_push(out, &l->v[i]);
}

static size_t count_op(const rec_list_t *l, unsigned op)
{
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++)
        n += l->v[i].op == op;
    return n;
}

/* The first record with `op`, or NULL. */
static const mt_record_t *find_op(const rec_list_t *l, unsigned op)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].op == op)
            return &l->v[i];
    return NULL;
}

static int string_is(const mt_trace_t *t, unsigned tag, const char *want)
{
    size_t len;
    const char *s = mt_trace_string(t, tag, 0, &len);
    return s && len == strlen(want) && !memcmp(s, want, len);
}

/* The header states the recorder's clock, how often calls read it and what one read of it cost at
 * start (MT_STR_CLOCK): "source=tsc reads=R tsc_ns=N monotonic_ns=M" where there is a time-stamp
 * counter, else "source=monotonic reads=R monotonic_ns=M", each cost a positive number of ns, R
 * "per-call" or "every-K-calls-while-one-thread". Returns K (1 for per-call). */
static unsigned assert_clock_stated(const mt_trace_t *t)
{
    size_t len;
    const char *s = mt_trace_string(t, MT_STR_CLOCK, 0, &len);
    ck_assert_msg(s != NULL, "no CLOCK string in the header");
    char buf[128], reads[64];
    ck_assert_uint_lt(len, sizeof buf);
    memcpy(buf, s, len);
    buf[len] = 0;
    double own = 0, mono = 0;
    int used = 0;
    if (MT_CLOCK_IS_TSC)
        ck_assert_msg(sscanf(buf, "source=tsc reads=%63s tsc_ns=%lf monotonic_ns=%lf%n", reads, &own, &mono, &used) ==
                          3,
                      "CLOCK string: %s", buf);
    else
        ck_assert_msg(sscanf(buf, "source=monotonic reads=%63s monotonic_ns=%lf%n", reads, &mono, &used) == 2,
                      "CLOCK string: %s", buf);
    ck_assert_msg((size_t)used == len, "CLOCK string has more: %s", buf);
    ck_assert_msg(mono > 0 && mono < 1e6 && (!MT_CLOCK_IS_TSC || (own > 0 && own < 1e6)), "CLOCK costs: %s", buf);
    if (!strcmp(reads, "per-call"))
        return 1;
    unsigned every = 0;
    used = 0;
    ck_assert_msg(sscanf(reads, "every-%u-calls-while-one-thread%n", &every, &used) == 1 &&
                      (size_t)used == strlen(reads),
                  "CLOCK reads: %s", buf);
    ck_assert_uint_gt(every, 1);
    return every;
}

static int file_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Entries of g_dir whose names start with `prefix`. */
static int count_files(const char *prefix)
{
    DIR *d = opendir(g_dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += !strncmp(e->d_name, prefix, strlen(prefix));
    closedir(d);
    return n;
}

/* A thread's stream starts with THREAD_START and, when the thread ended normally, ends with
 * THREAD_EXIT carrying its count of lost calls. */
static void assert_framed(const rec_list_t *l, uint64_t creator, uint64_t lost)
{
    ck_assert_uint_ge(l->n, 2);
    ck_assert_uint_eq(l->v[0].op, MT_EV_THREAD_START);
    ck_assert_uint_eq(l->v[0].nargs, 1);
    ck_assert_int_eq(l->v[0].arg[0], (int64_t)creator);
    const mt_record_t *last = &l->v[l->n - 1];
    ck_assert_uint_eq(last->op, MT_EV_THREAD_EXIT);
    ck_assert_uint_eq(last->nargs, 1);
    ck_assert_int_eq(last->arg[0], (int64_t)lost);
}

/* ---- (a) every call, in order ------------------------------------------------------------------ */

START_TEST(known_calls_recorded_exactly)
{
    char *trace = path_in(g_dir, "calls.mtr");
    char *prog = prog_path("prog_calls");
    run_result_t r;
    run(&(run_opts_t){ .prog = "prog_calls", .preload = 1, .trace = trace }, &r);
    assert_exit(&r, 0);
    ck_assert_str_eq(r.err, "");
#define V(key) value(&r, key)
    /* the scenario does what it says: realloc shrinks in place, then moves; the failures fail */
    ck_assert_uint_eq(V("r1"), V("r0"));
    ck_assert_uint_ne(V("r2"), V("r1"));
    ck_assert_uint_eq(V("r3"), 0);
    ck_assert_uint_eq(V("e1"), 0);
    ck_assert_uint_eq(V("e2"), EINVAL);
    ck_assert_uint_eq(V("fail"), 0);

    /* what the trace must hold, call by call (time aside) */
    const mt_record_t want[] = {
        { .op = MT_OP_MALLOC, .size = 100, .result = V("a"), .usable = V("u_a") },
        { .op = MT_OP_USABLE_SIZE, .ptr = V("a"), .size = V("u_a") },
        { .op = MT_OP_CALLOC, .count = 10, .size = 24, .result = V("c"), .usable = V("u_c") },
        { .op = MT_OP_USABLE_SIZE, .ptr = V("c"), .size = V("u_c") },
        { .op = MT_OP_REALLOC, .ptr = 0, .size = 64, .result = V("r0"), .usable = V("u_r0") },
        { .op = MT_OP_USABLE_SIZE, .ptr = V("r0"), .size = V("u_r0") },
        { .op = MT_OP_REALLOC, .ptr = V("r0"), .size = 32, .result = V("r1"), .usable = V("u_r1") },
        { .op = MT_OP_USABLE_SIZE, .ptr = V("r1"), .size = V("u_r1") },
        { .op = MT_OP_REALLOC, .ptr = V("r1"), .size = 100000, .result = V("r2"), .usable = V("u_r2") },
        { .op = MT_OP_USABLE_SIZE, .ptr = V("r2"), .size = V("u_r2") },
        { .op = MT_OP_REALLOC, .flags = MT_FLAG_NULL, .ptr = V("r2"), .size = 0 },
        { .op = MT_OP_REALLOCARRAY, .ptr = 0, .count = 8, .size = 16, .result = V("ra"), .usable = V("u_ra") },
        { .op = MT_OP_USABLE_SIZE, .ptr = V("ra"), .size = V("u_ra") },
        { .op = MT_OP_POSIX_MEMALIGN, .align = 64, .size = 200, .result = V("pm"), .usable = V("u_pm") },
        { .op = MT_OP_USABLE_SIZE, .ptr = V("pm"), .size = V("u_pm") },
        { .op = MT_OP_POSIX_MEMALIGN, .flags = MT_FLAG_NULL, .align = 3, .size = 10, .arg = { EINVAL }, .nargs = 1 },
        { .op = MT_OP_ALIGNED_ALLOC, .align = 128, .size = 256, .result = V("al"), .usable = V("u_al") },
        { .op = MT_OP_USABLE_SIZE, .ptr = V("al"), .size = V("u_al") },
        { .op = MT_OP_MEMALIGN, .align = 32, .size = 100, .result = V("me"), .usable = V("u_me") },
        { .op = MT_OP_USABLE_SIZE, .ptr = V("me"), .size = V("u_me") },
        { .op = MT_OP_VALLOC, .size = 1000, .result = V("va"), .usable = V("u_va") },
        { .op = MT_OP_USABLE_SIZE, .ptr = V("va"), .size = V("u_va") },
        { .op = MT_OP_PVALLOC, .size = 1000, .result = V("pv"), .usable = V("u_pv") },
        { .op = MT_OP_USABLE_SIZE, .ptr = V("pv"), .size = V("u_pv") },
        { .op = MT_OP_MALLOC, .flags = MT_FLAG_MMAPPED, .size = 1 << 20, .result = V("big"), .usable = V("u_big") },
        { .op = MT_OP_USABLE_SIZE, .ptr = V("big"), .size = V("u_big") },
        { .op = MT_OP_MALLOPT, .arg = { M_ARENA_TEST, -1, (int64_t)V("m1") }, .nargs = 3 },
        { .op = MT_OP_MALLOPT, .arg = { -100, -7, (int64_t)V("m2") }, .nargs = 3 },
        { .op = MT_OP_MALLOPT, .arg = { M_MXFAST, 1000, (int64_t)V("m3") }, .nargs = 3 },
        { .op = MT_OP_MALLOC_TRIM, .arg = { 4096, (int64_t)V("t1") }, .nargs = 2 },
        { .op = MT_OP_FREE, .ptr = 0 },
        { .op = MT_OP_MALLOC, .flags = MT_FLAG_NULL, .size = SIZE_MAX },
        { .op = MT_OP_FREE, .ptr = V("a") },
        { .op = MT_OP_FREE, .ptr = V("c") },
        { .op = MT_OP_FREE, .ptr = V("ra") },
        { .op = MT_OP_FREE, .ptr = V("pm") },
        { .op = MT_OP_FREE, .ptr = V("al") },
        { .op = MT_OP_FREE, .ptr = V("me") },
        { .op = MT_OP_FREE, .ptr = V("va") },
        { .op = MT_OP_FREE, .ptr = V("pv") },
        { .op = MT_OP_FREE, .ptr = V("big") },
    };
    const size_t nwant = sizeof want / sizeof want[0];
    ck_assert_int_eq((int64_t)V("m1"), 1);
    ck_assert_int_eq((int64_t)V("m3"), 0);

    mt_trace_t *t = open_ok(trace);
    const mt_file_header_t *h = mt_trace_header(t);
    ck_assert_uint_eq(h->pid, V("pid"));
    ck_assert_uint_eq(h->flags & (MT_HDR_COMPLETE | MT_HDR_TRUNCATED | MT_HDR_GLIBC_FLAGS),
                      MT_HDR_COMPLETE | MT_HDR_GLIBC_FLAGS);
    ck_assert_uint_eq(h->lost_calls, 0);
    ck_assert_uint_eq(h->threads, 1);
    ck_assert_uint_ne(h->end_time, 0);
    ck_assert_msg(string_is(t, MT_STR_PATH, trace), "PATH string is not %s", trace);
    ck_assert_msg(string_is(t, MT_STR_EXE, prog), "EXE string is not %s", prog);
    ck_assert_msg(string_is(t, MT_STR_CMDLINE, prog), "CMDLINE string is not %s", prog);
    assert_clock_stated(t);
    ck_assert_uint_eq(mt_trace_thread_count(t), 1);
    rec_list_t all = { 0 }, calls = { 0 };
    thread_records(t, 0, &all);
    assert_framed(&all, 0, 0);
    calls_of(&all, &calls);
    for (size_t i = 0; i < calls.n && i < nwant; i++) {
        mt_record_t got = calls.v[i], exp = want[i];
        exp.time = got.time;
        got.flags &= ~(uint32_t)MT_FLAG_HEAP_GREW; /* depends on where the heap top happens to be */
        assert_record_eq(&got, &exp, "prog_calls", i);
    }
    ck_assert_uint_eq(calls.n, nwant);
    /* the file ends where its last chunk does: finished traces are truncated to chunks_used */
    ck_assert_uint_eq(mt_trace_file_size(t), h->chunks_used * MT_CHUNK_SIZE);
#undef V
    rec_list_free(&all);
    rec_list_free(&calls);
    mt_trace_close(t);
    run_result_free(&r);
    free(prog);
    free(trace);
}
END_TEST

/* ---- (a2) the clock policy --------------------------------------------------------------------- */

static size_t count_size(const rec_list_t *calls, uint64_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < calls->n; i++)
        n += calls->v[i].op == MT_OP_MALLOC && calls->v[i].size == size;
    return n;
}

/* The longest run of consecutive calls of `size` (malloc's size; the free after each malloc counts
 * too) that share one time, and whether any two consecutive ones of them do: from the first call of
 * that size to the last, other records between them end a run. */
static size_t longest_same_time_run(const rec_list_t *calls, uint64_t size)
{
    size_t longest = 0, run = 0;
    uint64_t prev_time = 0;
    int in = 0;
    for (size_t i = 0; i < calls->n; i++) {
        const mt_record_t *r = &calls->v[i];
        const int ours =
            (r->op == MT_OP_MALLOC && r->size == size) ||
            (r->op == MT_OP_FREE && i > 0 && calls->v[i - 1].op == MT_OP_MALLOC && calls->v[i - 1].size == size);
        if (!ours) {
            in = 0;
            continue;
        }
        run = in && r->time == prev_time ? run + 1 : 1;
        if (in)
            ck_assert_uint_ge(r->time, prev_time); /* a thread's times never go back */
        if (run > longest)
            longest = run;
        prev_time = r->time;
        in = 1;
    }
    return longest;
}

/* MTRACE_CLOCK_EVERY=8: while the process has one thread, calls read the clock every 8 calls (the
 * ones between share the latest read's time, at most 8 in a run); from the second thread's creation
 * on, every call of every thread reads it, and no two consecutive calls share a time. =1: every
 * call reads it from the start. Every call is recorded either way. */
START_TEST(clock_read_every_8_calls_while_one_thread)
{
    enum { PAIRS = 5000 };
    for (unsigned every = 1; every <= 8; every += 7) {
        char *trace = path_in(g_dir, every == 1 ? "clock1.mtr" : "clock8.mtr"), env[32];
        snprintf(env, sizeof env, "MTRACE_CLOCK_EVERY=%u", every);
        run_result_t r;
        run(&(run_opts_t){ .prog = "prog_clock", .args = { "5000" }, .preload = 1, .trace = trace, .env = { env } },
            &r);
        assert_exit(&r, 0);
        ck_assert_str_eq(r.err, "");
        mt_trace_t *t = open_ok(trace);
        ck_assert_uint_eq(assert_clock_stated(t), every);
        ck_assert_uint_eq(mt_trace_thread_count(t), 2);
        rec_list_t all = { 0 }, calls = { 0 }, all2 = { 0 }, calls2 = { 0 }, spread = { 0 }, spread_calls = { 0 };
        thread_records_stored(t, 0, &all);
        calls_of(&all, &calls);
        thread_records_stored(t, 1, &all2);
        calls_of(&all2, &calls2);
        /* Two reads of this VM's clock can give the same tick (CI saw "2 calls share a time" twice
         * in 2026-11-28's full runs, never alone): a run one longer than the policy's is the clock's. */
        const size_t one = longest_same_time_run(&calls, 100);
        if (every == 1)
            ck_assert_msg(one <= 2, "one thread, every call reading the clock: %zu calls share a time", one);
        else
            ck_assert_msg(one == every || one == every + 1,
                          "one thread, a read every %u calls: runs of up to %zu calls share a time", every, one);
        /* what readers make of them: the calls that share a read get times spread up to the next */
        thread_records(t, 0, &spread);
        calls_of(&spread, &spread_calls);
        ck_assert_uint_eq(spread_calls.n, calls.n);
        const size_t spread_run = longest_same_time_run(&spread_calls, 100);
        ck_assert_msg(spread_run < 3, "spread by the reader, %zu calls still share a time", spread_run);
        rec_list_free(&spread);
        rec_list_free(&spread_calls);
        ck_assert_uint_le(longest_same_time_run(&calls2, 200), 2);
        ck_assert_uint_le(longest_same_time_run(&calls, 300), 2);
        ck_assert_uint_eq(count_size(&calls, 100), PAIRS);
        ck_assert_uint_eq(count_size(&calls2, 200), PAIRS);
        ck_assert_uint_eq(count_size(&calls, 300), PAIRS);
        rec_list_free(&all);
        rec_list_free(&calls);
        rec_list_free(&all2);
        rec_list_free(&calls2);
        mt_trace_close(t);
        run_result_free(&r);
        free(trace);
    }
}
END_TEST

/* A call that returns a block is stamped when the real call returns (libmtrace/shim_alloc.c,
 * "When"): under an allocator whose 50th malloc of 4321 bytes sleeps 5 ms first
 * (tests/sim/sleepy_malloc.c), as a call waiting for the allocator's lock would, that malloc's
 * record is 5 ms after the free before it. Stamped at entry it came right after it, and another
 * thread's free of the block it got during the wait could come after it by time. Every call reads
 * the clock (MTRACE_CLOCK_EVERY=1): a shared read would stamp the malloc with an earlier call's time. */
START_TEST(block_calls_stamped_when_they_return)
{
    char *trace = path_in(g_dir, "sleepy.mtr"), preload[8400];
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s:%s", MT_SHIM_PATH, MT_SLEEPY_MALLOC_PATH);
    run_result_t r;
    run(&(run_opts_t){ .prog = "prog_slowmalloc", .trace = trace, .env = { preload, "MTRACE_CLOCK_EVERY=1" } }, &r);
    assert_exit(&r, 0);
    ck_assert_str_eq(r.err, "");
    mt_trace_t *t = open_ok(trace);
    rec_list_t all = { 0 }, calls = { 0 };
    thread_records_stored(t, 0, &all);
    calls_of(&all, &calls);
    size_t k = 0, seen = 0;
    for (; k < calls.n; k++)
        if (calls.v[k].op == MT_OP_MALLOC && calls.v[k].size == 4321 && ++seen == 50)
            break;
    ck_assert_msg(seen == 50 && k > 0, "50 mallocs of 4321 bytes: %zu", seen);
    ck_assert_uint_eq(calls.v[k - 1].op, MT_OP_FREE);
    const double waited = (double)(calls.v[k].time - calls.v[k - 1].time) / mt_trace_ticks_per_sec(t);
    ck_assert_msg(waited >= 0.004, "the sleeping malloc's record %.3f ms after the free before it", waited * 1e3);
    rec_list_free(&all);
    rec_list_free(&calls);
    mt_trace_close(t);
    run_result_free(&r);
    free(trace);
}
END_TEST

/* ---- (b) threads ------------------------------------------------------------------------------- */

START_TEST(threads_lose_nothing)
{
    enum { NTHREADS = 4, CALLS = 1000000 };
    char *trace = path_in(g_dir, "threads.mtr");
    run_result_t r;
    run(&(run_opts_t){ .prog = "prog_threads", .args = { "1000000" }, .preload = 1, .trace = trace }, &r);
    assert_exit(&r, 0);
    ck_assert_str_eq(r.err, "");

    mt_trace_t *t = open_ok(trace);
    const mt_file_header_t *h = mt_trace_header(t);
    ck_assert_uint_eq(h->flags & (MT_HDR_COMPLETE | MT_HDR_TRUNCATED), MT_HDR_COMPLETE);
    ck_assert_uint_eq(h->lost_calls, 0);
    ck_assert_uint_eq(h->threads, NTHREADS + 1);
    ck_assert_uint_eq(mt_trace_thread_count(t), NTHREADS + 1);

    /* the main thread (number 1) created the others, one THREAD_CREATE each */
    ck_assert_uint_eq(mt_trace_thread(t, 0)->thread, 1);
    rec_list_t main_recs = { 0 };
    thread_records(t, 0, &main_recs);
    assert_framed(&main_recs, 0, 0);
    ck_assert_uint_eq(count_op(&main_recs, MT_EV_THREAD_CREATE), NTHREADS);
    uint32_t created = 0; /* bit per thread number */
    for (size_t i = 0; i < main_recs.n; i++)
        if (main_recs.v[i].op == MT_EV_THREAD_CREATE)
            created |= 1u << main_recs.v[i].arg[0];
    ck_assert_uint_eq(created, 0x3cu); /* threads 2 to 5 */

    for (int k = 0; k < NTHREADS; k++) {
        char key[16];
        snprintf(key, sizeof key, "calls%d", k);
        ck_assert_uint_eq(value(&r, key), CALLS);
        snprintf(key, sizeof key, "tid%d", k);
        const size_t ti = thread_by_tid(t, value(&r, key));
        rec_list_t recs = { 0 }, calls = { 0 };
        thread_records(t, ti, &recs);
        /* The shim records glibc's two free(NULL) of thread teardown after THREAD_EXIT (and an RSS
         * sample they may trigger), in a chunk claimed for them: the knownbug case
         * thread_exit_ends_the_stream. Here: the stream up to THREAD_EXIT. */
        const mt_record_t *exit_ev = find_op(&recs, MT_EV_THREAD_EXIT);
        ck_assert_ptr_nonnull(exit_ev);
        for (const mt_record_t *after = exit_ev + 1; after < recs.v + recs.n; after++)
            ck_assert_msg((after->op == MT_OP_FREE && after->ptr == 0) || after->op == MT_EV_RSS,
                          "thread %d: op %u after its exit", k, after->op);
        recs.n = (size_t)(exit_ev - recs.v) + 1;
        assert_framed(&recs, 1, 0);
        calls_of(&recs, &calls);
        /* exactly the thread's calls, in order: malloc of its sizes, then free of that block */
        ck_assert_uint_eq(calls.n, CALLS);
        size_t bad = calls.n;
        for (size_t i = 0; i + 1 < calls.n; i += 2) {
            const mt_record_t *m = &calls.v[i], *f = &calls.v[i + 1];
            if (m->op != MT_OP_MALLOC || m->size != (uint64_t)(k + 1) * 1000 + (i % 7) || !m->result ||
                f->op != MT_OP_FREE || f->ptr != m->result) {
                bad = i;
                break;
            }
        }
        ck_assert_msg(bad == calls.n, "thread %d: record %zu breaks the malloc/free pattern", k, bad);
        rec_list_free(&recs);
        rec_list_free(&calls);
    }
    rec_list_free(&main_recs);
    mt_trace_close(t);
    run_result_free(&r);
    free(trace);
}
END_TEST

/* HEAP_GREW marks exactly the calls during which the heap top moved, as the program saw it with
 * sbrk(0) around each call: not a small malloc after a free gave heap back (the shim once compared
 * with the top the latest recorded call had seen, so that malloc got the flag), and never a free
 * (its record is written before the real free). */
START_TEST(heap_grew_marks_the_calls_that_moved_the_top)
{
    char *trace = path_in(g_dir, "brk.mtr");
    run_result_t r;
    run(&(run_opts_t){ .prog = "prog_brk", .preload = 1, .trace = trace }, &r);
    assert_exit(&r, 0);
    const uint64_t n = value(&r, "calls");
    char key[16];
    int moved[16] = { 0 };
    ck_assert_uint_le(n, 16);
    for (uint64_t k = 0; k < n; k++) {
        snprintf(key, sizeof key, "moved%u", (unsigned)k);
        moved[k] = (int)value(&r, key);
    }
    /* the scenario does what it says: the big block grows the heap, its free trims it, the small
     * malloc after the trim moves nothing */
    ck_assert_int_eq(moved[0], 1);
    ck_assert_int_eq(moved[1], 1);
    ck_assert_int_eq(moved[2], 0);
    mt_trace_t *t = open_ok(trace);
    ck_assert_uint_ne(mt_trace_header(t)->flags & MT_HDR_GLIBC_FLAGS, 0);
    rec_list_t all = { 0 }, calls = { 0 };
    thread_records(t, 0, &all);
    calls_of(&all, &calls);
    size_t first = 0;
    while (first < calls.n && !(calls.v[first].op == MT_OP_MALLOC && calls.v[first].size == 300000))
        first++;
    ck_assert_uint_le(first + n, calls.n);
    for (uint64_t k = 0; k < n; k++) {
        const mt_record_t *c = &calls.v[first + k];
        const int want = c->op == MT_OP_FREE ? 0 : moved[k];
        ck_assert_msg(!!(c->flags & MT_FLAG_HEAP_GREW) == want, "call %u (op %u): HEAP_GREW %d, heap top moved %d",
                      (unsigned)k, c->op, !!(c->flags & MT_FLAG_HEAP_GREW), moved[k]);
    }
    rec_list_free(&all);
    rec_list_free(&calls);
    mt_trace_close(t);
    run_result_free(&r);
    free(trace);
}
END_TEST

/* Runs prog_exit MODE PAIRS under the shim, checks its exit code, and returns the trace, which must be
 * complete, with a clock rate, and hold the main thread's PAIRS malloc/free pairs after its last
 * record from before them (the output's "pairs" line needs no malloc). */
static mt_trace_t *exit_trace(const char *mode, const char *pairs, int code, char **path)
{
    *path = path_in(g_dir, mode[0] == '_' ? mode + 1 : mode);
    run_result_t r;
    run(&(run_opts_t){ .prog = "prog_exit", .args = { mode, pairs }, .preload = 1, .trace = *path }, &r);
    assert_exit(&r, code);
    ck_assert_str_eq(r.err, "");
    run_result_free(&r);
    mt_trace_t *t = open_ok(*path);
    const mt_file_header_t *h = mt_trace_header(t);
    ck_assert_msg(h->flags & MT_HDR_COMPLETE, "%s: trace not finished", mode);
    ck_assert_uint_gt(h->ticks_per_sec, 0);
    ck_assert_uint_gt(h->end_time, h->start_time);
    return t;
}

static size_t main_thread_mallocs(const mt_trace_t *t, unsigned *last_op)
{
    rec_list_t recs = { 0 };
    thread_records(t, 0, &recs);
    const size_t n = count_op(&recs, MT_OP_MALLOC);
    *last_op = recs.n ? recs.v[recs.n - 1].op : 0;
    rec_list_free(&recs);
    return n;
}

/* _exit and _Exit run no destructors; the shim finishes the trace in them: complete, with its end
 * time and clock rate, THREAD_EXIT last in the calling thread, and the exit code passed on. */
START_TEST(exit_without_destructors_finishes_the_trace)
{
    const char *modes[] = { "_exit", "_Exit" };
    for (int i = 0; i < 2; i++) {
        char *path;
        mt_trace_t *t = exit_trace(modes[i], "1000", 3 + i, &path);
        unsigned last;
        ck_assert_uint_ge(main_thread_mallocs(t, &last), 1000);
        ck_assert_uint_eq(last, MT_EV_THREAD_EXIT);
        mt_trace_close(t);
        free(path);
    }
}
END_TEST

/* A vfork child's _exit runs on the parent's memory: finishing the trace there would stop the
 * parent's tracing. The parent's calls after it are all recorded. */
START_TEST(vfork_child_exit_leaves_the_parent_tracing)
{
    char *path;
    mt_trace_t *t = exit_trace("vfork", "2000", 0, &path);
    unsigned last;
    ck_assert_uint_ge(main_thread_mallocs(t, &last), 2000);
    ck_assert_uint_eq(mt_trace_header(t)->lost_calls, 0);
    mt_trace_close(t);
    free(path);
}
END_TEST

/* _exit from one thread while another allocates without pause: the trace is finished, reads whole,
 * and the exiting thread's records all come before its THREAD_EXIT. */
START_TEST(exit_from_a_thread_while_another_allocates)
{
    for (int round = 0; round < 5; round++) {
        char *path;
        mt_trace_t *t = exit_trace("thread", "20000", 5, &path);
        ck_assert_uint_eq(mt_trace_thread_count(t), 2);
        rec_list_t recs = { 0 };
        thread_records(t, 1, &recs);
        ck_assert_uint_ge(count_op(&recs, MT_OP_MALLOC), 20000);
        ck_assert_uint_eq(recs.v[recs.n - 1].op, MT_EV_THREAD_EXIT);
        rec_list_free(&recs);
        unsigned last;
        main_thread_mallocs(t, &last); /* reads the main thread's stream to its end, or fails */
        mt_trace_close(t);
        free(path);
    }
}
END_TEST

/* _exit from a signal handler (it is async-signal-safe) may interrupt the thread inside the recorder.
 * A timer signals every 37 us; a signal that fires during a system call of the recorder (the copy-out
 * of a full chunk) is delivered as it returns, so a run often ends between sealing a chunk and
 * starting the next (5 of 40 runs here), more rarely in the middle of a record. Either way the
 * finished trace reads whole, and a THREAD_EXIT, when written, is the thread's last record: none is
 * written over a record in progress. */
START_TEST(exit_from_a_signal_handler_inside_the_recorder)
{
    for (int round = 0; round < 30; round++) {
        char *path;
        mt_trace_t *t = exit_trace("signal", "100", 6, &path);
        rec_list_t recs = { 0 };
        thread_records(t, 0, &recs); /* reads the stream to its end, or fails */
        ck_assert_uint_gt(count_op(&recs, MT_OP_MALLOC), 0);
        /* one assertion per run, not per record: in a forked test every assertion passed is a write
         * to Check's pipe, and a run holds as many records as the program made calls in 3.7 ms */
        size_t exit_at = recs.n;
        for (size_t i = 0; i + 1 < recs.n && exit_at == recs.n; i++)
            if (recs.v[i].op == MT_EV_THREAD_EXIT)
                exit_at = i;
        ck_assert_msg(exit_at == recs.n, "run %d: record %zu of %zu follows THREAD_EXIT", round, exit_at + 1, recs.n);
        rec_list_free(&recs);
        mt_trace_close(t);
        free(path);
    }
}
END_TEST

/* Every THREAD_CREATE names a thread that the trace holds, once, whose THREAD_START names its
 * creator: with 1000 threads that reuse at once the memory the shim's start-up freed in them, a
 * creator that read it after pthread_create returned recorded garbage for several of them. */
START_TEST(thread_create_names_the_new_thread)
{
    char *trace = path_in(g_dir, "spawn.mtr");
    run_result_t r;
    run(&(run_opts_t){ .prog = "prog_spawn", .args = { "1000" }, .preload = 1, .trace = trace }, &r);
    assert_exit(&r, 0);
    const uint64_t n = value(&r, "threads");
    mt_trace_t *t = open_ok(trace);
    ck_assert_uint_eq(mt_trace_thread_count(t), n + 1);
    rec_list_t main_recs = { 0 };
    thread_records(t, 0, &main_recs);
    uint8_t *seen = calloc(n + 2, 1);
    size_t creates = 0;
    for (size_t i = 0; i < main_recs.n; i++) {
        if (main_recs.v[i].op != MT_EV_THREAD_CREATE)
            continue;
        const int64_t no = main_recs.v[i].arg[0];
        ck_assert_msg(no >= 2 && no <= (int64_t)n + 1 && !seen[no], "THREAD_CREATE names thread %lld", (long long)no);
        seen[no] = 1;
        creates++;
    }
    ck_assert_uint_eq(creates, n);
    for (size_t k = 1; k < mt_trace_thread_count(t); k++) {
        rec_list_t recs = { 0 };
        thread_records(t, k, &recs);
        ck_assert(seen[mt_trace_thread(t, k)->thread]);
        ck_assert_uint_eq(recs.v[0].op, MT_EV_THREAD_START);
        ck_assert_int_eq(recs.v[0].arg[0], 1);
        rec_list_free(&recs);
    }
    free(seen);
    rec_list_free(&main_recs);
    mt_trace_close(t);
    run_result_free(&r);
    free(trace);
}
END_TEST

/* glibc frees (free(NULL), twice) after the thread's key destructors have run, the shim's included:
 * those records follow THREAD_EXIT in the thread's last chunk, not in a chunk claimed for them
 * (64 KiB of file per exiting thread, as the shim once did). */
START_TEST(thread_exit_ends_the_stream)
{
    char *trace = path_in(g_dir, "exit.mtr");
    run_result_t r;
    run(&(run_opts_t){ .prog = "prog_threads", .args = { "1000" }, .preload = 1, .trace = trace }, &r);
    assert_exit(&r, 0);
    mt_trace_t *t = open_ok(trace);
    for (int k = 0; k < 4; k++) {
        char key[16];
        snprintf(key, sizeof key, "tid%d", k);
        const size_t ti = thread_by_tid(t, value(&r, key));
        rec_list_t recs = { 0 };
        thread_records(t, ti, &recs);
        const mt_record_t *exit_ev = find_op(&recs, MT_EV_THREAD_EXIT);
        ck_assert_ptr_nonnull(exit_ev);
        for (const mt_record_t *after = exit_ev + 1; after < recs.v + recs.n; after++)
            ck_assert_msg(after->op <= MT_OP_LAST_CALL || after->op == MT_EV_RSS, "thread %d: event %u after its exit",
                          k, after->op);
        recs.n = (size_t)(exit_ev - recs.v) + 1;
        assert_framed(&recs, 1, 0);
        ck_assert_uint_eq(mt_trace_thread(t, ti)->nchunks, 1);
        rec_list_free(&recs);
    }
    mt_trace_close(t);
    run_result_free(&r);
    free(trace);
}
END_TEST

/* ---- many short threads ------------------------------------------------------------------------ */

enum { SHORT_CALLS = 100 };

/* Checks the stream of prog_shortthreads' thread number `no` (the k-th it created is thread k + 2)
 * up to its THREAD_EXIT: framed, and its calls exactly the program's, malloc of its sizes then free
 * of that block. Returns 0 if the stream has no THREAD_EXIT (a thread still running). */
static int check_short_thread(const mt_trace_t *t, size_t ti)
{
    const uint64_t k = mt_trace_thread(t, ti)->thread - 2;
    rec_list_t recs = { 0 }, calls = { 0 };
    thread_records(t, ti, &recs);
    const mt_record_t *exit_ev = find_op(&recs, MT_EV_THREAD_EXIT);
    if (!exit_ev) {
        rec_list_free(&recs);
        return 0;
    }
    recs.n = (size_t)(exit_ev - recs.v) + 1;
    assert_framed(&recs, 1, 0);
    calls_of(&recs, &calls);
    ck_assert_msg(calls.n == SHORT_CALLS, "thread %llu: %zu calls", (unsigned long long)k + 2, calls.n);
    for (size_t i = 0; i + 1 < calls.n; i += 2) {
        const mt_record_t *m = &calls.v[i], *f = &calls.v[i + 1];
        ck_assert_msg(m->op == MT_OP_MALLOC && m->size == 64 + (k * 7 + i) % 448 && m->result && f->op == MT_OP_FREE &&
                          f->ptr == m->result,
                      "thread %llu: call %zu is not the program's", (unsigned long long)k + 2, i);
    }
    rec_list_free(&recs);
    rec_list_free(&calls);
    return 1;
}

/* 2000 threads created and joined one at a time: the recorder gives back the pages it wrote for a
 * thread once the thread is gone, so the traced program's peak RSS stays near the untraced one.
 * Before, every ended thread kept 4 to 64 KiB of its trace chunk resident: +58 MB at 2000 threads
 * for 1.7 MB untraced (bench/RESULTS.md); now +0.3 MB. The bound is generous: 4 MiB. And the trace
 * holds every thread's calls. */
START_TEST(ended_threads_leave_no_trace_pages_resident)
{
    enum { THREADS = 2000 };
    char *trace = path_in(g_dir, "short.mtr");
    run_result_t native, traced;
    run(&(run_opts_t){ .prog = "prog_shortthreads", .args = { "2000" } }, &native);
    run(&(run_opts_t){ .prog = "prog_shortthreads", .args = { "2000" }, .preload = 1, .trace = trace }, &traced);
    assert_exit(&native, 0);
    assert_exit(&traced, 0);
    const uint64_t untraced_kb = value(&native, "peak_rss_kb"), traced_kb = value(&traced, "peak_rss_kb");
    ck_assert_msg(traced_kb <= untraced_kb + 4096, "peak RSS %llu kB traced, %llu kB untraced",
                  (unsigned long long)traced_kb, (unsigned long long)untraced_kb);

    mt_trace_t *t = open_ok(trace);
    const mt_file_header_t *h = mt_trace_header(t);
    ck_assert_uint_eq(h->flags & (MT_HDR_COMPLETE | MT_HDR_TRUNCATED), MT_HDR_COMPLETE);
    ck_assert_uint_eq(h->lost_calls, 0);
    ck_assert_uint_eq(mt_trace_thread_count(t), THREADS + 1);
    for (size_t ti = 0; ti < mt_trace_thread_count(t); ti++)
        if (mt_trace_thread(t, ti)->thread != 1)
            ck_assert_msg(check_short_thread(t, ti), "thread %u has no THREAD_EXIT", mt_trace_thread(t, ti)->thread);
    mt_trace_close(t);
    run_result_free(&native);
    run_result_free(&traced);
    free(trace);
}
END_TEST

/* The pages given back stay in the file: a program killed while its threads come and go leaves
 * every ended thread's calls readable, whole. Killed once its trace file has grown to 8 MiB: more
 * than 60 threads have claimed a chunk by then. */
START_TEST(sigkill_keeps_the_records_of_ended_threads)
{
    char *trace = path_in(g_dir, "short-killed.mtr");
    const int nul = open("/dev/null", O_WRONLY);
    const pid_t pid = spawn(
        &(run_opts_t){ .prog = "prog_shortthreads", .args = { "100000000" }, .preload = 1, .trace = trace }, nul, nul);
    close(nul);
    struct stat st;
    while (stat(trace, &st) != 0 || st.st_size < (8 << 20)) {
        ck_assert_int_eq(waitpid(pid, NULL, WNOHANG), 0); /* still running */
        usleep(1000);
    }
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    mt_trace_t *t = open_ok(trace);
    ck_assert_uint_eq(mt_trace_header(t)->flags & MT_HDR_COMPLETE, 0);
    size_t ended = 0;
    for (size_t ti = 0; ti < mt_trace_thread_count(t); ti++)
        if (mt_trace_thread(t, ti)->thread != 1)
            ended += (size_t)check_short_thread(t, ti);
    ck_assert_uint_ge(ended, 60);
    mt_trace_close(t);
    free(trace);
}
END_TEST

/* ---- (c) fork ---------------------------------------------------------------------------------- */

/* Checks the parent's and the child's trace of prog_fork. */
static void check_fork_traces(const run_result_t *r, const char *parent_path, const char *child_path)
{
    const uint64_t child = value(r, "child_pid"), parent = value(r, "parent_pid");
    ck_assert_uint_eq(value(r, "forked"), child);

    mt_trace_t *t = open_ok(parent_path);
    ck_assert_uint_eq(mt_trace_header(t)->pid, parent);
    ck_assert_uint_eq(mt_trace_header(t)->flags & MT_HDR_COMPLETE, MT_HDR_COMPLETE);
    rec_list_t recs = { 0 }, calls = { 0 };
    thread_records(t, 0, &recs);
    const mt_record_t *fork_ev = find_op(&recs, MT_EV_FORK);
    ck_assert_ptr_nonnull(fork_ev);
    ck_assert_uint_eq(fork_ev->nargs, 1);
    ck_assert_int_eq(fork_ev->arg[0], (int64_t)child);
    calls_of(&recs, &calls);
    /* the parent's calls only: 111 before the fork, 444 after; nothing of the child's */
    int saw111 = 0, saw444 = 0;
    for (size_t i = 0; i < calls.n; i++) {
        const mt_record_t *c = &calls.v[i];
        if (c->op != MT_OP_MALLOC)
            continue;
        ck_assert_uint_ne(c->size, 222);
        ck_assert_uint_ne(c->size, 333);
        saw111 += c->size == 111 && c->result == value(r, "parent_p");
        saw444 += c->size == 444 && c->result == value(r, "parent_q");
    }
    ck_assert_int_eq(saw111, 1);
    ck_assert_int_eq(saw444, 1);
    rec_list_free(&recs);
    rec_list_free(&calls);
    mt_trace_close(t);

    /* the child's own file: its pid, its parent, exactly its calls */
    t = open_ok(child_path);
    ck_assert_uint_eq(mt_trace_header(t)->pid, child);
    ck_assert_uint_eq(mt_trace_header(t)->ppid, parent);
    ck_assert_uint_eq(mt_trace_header(t)->flags & MT_HDR_COMPLETE, MT_HDR_COMPLETE);
    ck_assert_uint_eq(mt_trace_thread_count(t), 1);
    thread_records(t, 0, &recs);
    assert_framed(&recs, 0, 0);
    calls_of(&recs, &calls);
    ck_assert_uint_eq(calls.n, 3);
    ck_assert_uint_eq(calls.v[0].op, MT_OP_MALLOC);
    ck_assert_uint_eq(calls.v[0].size, 222);
    ck_assert_uint_eq(calls.v[0].result, value(r, "child_c1"));
    ck_assert_uint_eq(calls.v[1].op, MT_OP_MALLOC);
    ck_assert_uint_eq(calls.v[1].size, 333);
    ck_assert_uint_eq(calls.v[1].result, value(r, "child_c2"));
    ck_assert_uint_eq(calls.v[2].op, MT_OP_FREE);
    ck_assert_uint_eq(calls.v[2].ptr, value(r, "child_c1"));
    rec_list_free(&recs);
    rec_list_free(&calls);
    mt_trace_close(t);
}

START_TEST(fork_child_gets_its_own_file)
{
    char *trace = path_in(g_dir, "fork.mtr");
    run_result_t r;
    run(&(run_opts_t){ .prog = "prog_fork", .preload = 1, .trace = trace }, &r);
    assert_exit(&r, 0);
    ck_assert_str_eq(r.err, "");
    /* MTRACE_OUT names no %p: the child's file is the path with ".PID" appended */
    char *child_trace;
    ck_assert_int_ge(asprintf(&child_trace, "%s.%llu", trace, (unsigned long long)value(&r, "child_pid")), 0);
    check_fork_traces(&r, trace, child_trace);
    ck_assert_int_eq(count_files("fork.mtr"), 2);
    run_result_free(&r);
    free(child_trace);
    free(trace);
}
END_TEST

START_TEST(fork_with_pid_in_path)
{
    char *pattern = path_in(g_dir, "pfork.%p.mtr");
    run_result_t r;
    run(&(run_opts_t){ .prog = "prog_fork", .preload = 1, .trace = pattern }, &r);
    assert_exit(&r, 0);
    char *parent, *child;
    ck_assert_int_ge(asprintf(&parent, "%s/pfork.%llu.mtr", g_dir, (unsigned long long)value(&r, "parent_pid")), 0);
    ck_assert_int_ge(asprintf(&child, "%s/pfork.%llu.mtr", g_dir, (unsigned long long)value(&r, "child_pid")), 0);
    check_fork_traces(&r, parent, child);
    ck_assert_int_eq(count_files("pfork."), 2);
    run_result_free(&r);
    free(parent);
    free(child);
    free(pattern);
}
END_TEST

START_TEST(fork_not_followed)
{
    char *trace = path_in(g_dir, "nofollow.mtr");
    run_result_t r;
    run(&(run_opts_t){ .prog = "prog_fork", .preload = 1, .trace = trace, .env = { "MTRACE_FOLLOW_FORK=0" } }, &r);
    assert_exit(&r, 0);
    ck_assert_str_eq(r.err, "");
    ck_assert_int_eq(count_files("nofollow.mtr"), 1); /* no file for the child */
    mt_trace_t *t = open_ok(trace);
    rec_list_t recs = { 0 };
    thread_records(t, 0, &recs);
    const mt_record_t *fork_ev = find_op(&recs, MT_EV_FORK);
    ck_assert_ptr_nonnull(fork_ev);
    ck_assert_int_eq(fork_ev->arg[0], (int64_t)value(&r, "child_pid"));
    rec_list_free(&recs);
    mt_trace_close(t);
    run_result_free(&r);
    free(trace);
}
END_TEST

/* ---- (d) SIGKILL ------------------------------------------------------------------------------- */

/* Checks that `calls` is prog_loop's sequence from its start: the i-th malloc of size i % 1000 + 1,
 * then the free of that block. Returns the number of mallocs. */
static size_t check_loop_prefix(const rec_list_t *calls)
{
    size_t i = 0;
    for (; i < calls->n; i++) {
        const mt_record_t *c = &calls->v[i];
        const size_t k = i / 2;
        const int ok = (i % 2 == 0) ? (c->op == MT_OP_MALLOC && c->size == k % 1000 + 1 && c->result != 0)
                                    : (c->op == MT_OP_FREE && c->ptr == calls->v[i - 1].result);
        if (!ok) {
            char buf[512];
            ck_abort_msg("call %zu is not prog_loop's: %s", i, record_str(c, buf, sizeof buf));
        }
    }
    return (calls->n + 1) / 2;
}

START_TEST(sigkill_leaves_a_readable_prefix)
{
    char *trace = path_in(g_dir, "killed.mtr");
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    char *err = path_in(g_dir, "killed.err");
    const int efd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const pid_t pid = spawn(&(run_opts_t){ .prog = "prog_loop", .preload = 1, .trace = trace }, fds[1], efd);
    close(fds[1]);
    close(efd);

    /* read progress lines until the program has done 300000 iterations, then kill it mid-call */
    FILE *in = fdopen(fds[0], "r");
    ck_assert_ptr_nonnull(in);
    char line[128];
    unsigned long long reported = 0;
    while (reported < 300000 && fgets(line, sizeof line, in))
        ck_assert_int_eq(sscanf(line, "done %llu", &reported), 1);
    ck_assert_uint_ge(reported, 300000);
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    fclose(in);

    mt_trace_t *t = open_ok(trace);
    const mt_file_header_t *h = mt_trace_header(t);
    ck_assert_uint_eq(h->flags & MT_HDR_COMPLETE, 0);
    ck_assert_uint_eq(h->end_time, 0);
    ck_assert_uint_eq(mt_trace_thread_count(t), 1);
    rec_list_t recs = { 0 }, calls = { 0 };
    thread_records(t, 0, &recs); /* no error: at most the record being written is missing */
    ck_assert_uint_eq(recs.v[0].op, MT_EV_THREAD_START);
    ck_assert_ptr_null(find_op(&recs, MT_EV_THREAD_EXIT));
    calls_of(&recs, &calls);
    const size_t mallocs = check_loop_prefix(&calls);
    ck_assert_msg(mallocs >= reported, "%zu mallocs in the trace, the program reported %llu", mallocs, reported);
    rec_list_free(&recs);
    rec_list_free(&calls);
    mt_trace_close(t);
    free(err);
    free(trace);
}
END_TEST

/* ---- (e) file size limit ----------------------------------------------------------------------- */

/* Runs prog_loop with RLIMIT_FSIZE of 256 KiB, untraced and traced. `exact`: the calls recorded and
 * the calls counted lost add up to the program's calls exactly. */
static void check_file_size_limit(int exact)
{
    enum { ITER = 300000, LIMIT = 256 * 1024 };
    char *trace = path_in(g_dir, "fsize.mtr");
    run_result_t plain, traced;
    const run_opts_t o = { .prog = "prog_loop", .args = { "300000", "3" }, .fsize = LIMIT };
    run(&o, &plain);
    run_opts_t ot = o;
    ot.preload = 1;
    ot.trace = trace;
    run(&ot, &traced);

    /* the program does not notice: same output, same exit status, no SIGXFSZ */
    assert_exit(&plain, 3);
    assert_exit(&traced, 3);
    ck_assert_str_eq(traced.out, plain.out);
    int mtrace_lines, lines;
    count_lines(traced.err, "mtrace:", &mtrace_lines, &lines);
    ck_assert_msg(mtrace_lines == 1 && lines == 1, "expected one mtrace: line on stderr, got: %s", traced.err);

    struct stat st;
    ck_assert_int_eq(stat(trace, &st), 0);
    ck_assert_int_le(st.st_size, LIMIT);
    mt_trace_t *t = open_ok(trace);
    const mt_file_header_t *h = mt_trace_header(t);
    ck_assert_uint_eq(h->flags & MT_HDR_TRUNCATED, MT_HDR_TRUNCATED);
    ck_assert_int_eq(h->truncated_errno, EFBIG);
    rec_list_t recs = { 0 }, calls = { 0 };
    thread_records(t, 0, &recs);
    calls_of(&recs, &calls);
    const size_t mallocs = check_loop_prefix(&calls);
    ck_assert_uint_gt(mallocs, 1000);
    ck_assert_uint_lt(mallocs, ITER);
    /* the stop is on record, and every call is either recorded or counted as lost */
    const mt_record_t *trunc = find_op(&recs, MT_EV_TRUNCATED);
    ck_assert_ptr_nonnull(trunc);
    ck_assert_int_eq(trunc->arg[0], EFBIG);
    const mt_record_t *exit_ev = &recs.v[recs.n - 1];
    ck_assert_uint_eq(exit_ev->op, MT_EV_THREAD_EXIT);
    ck_assert_uint_eq((uint64_t)exit_ev->arg[0], h->lost_calls);
    /* Every call of the program is recorded or counted lost, and nothing else: the loop's calls
     * plus the one malloc of stdout's buffer by its first printf (a pipe is fully buffered). The
     * shim's own calls while it stops (strerror's for its message) are not the program's. */
    (void)exact;
    ck_assert_uint_eq(calls.n + h->lost_calls, 2 * ITER + 1);
    rec_list_free(&recs);
    rec_list_free(&calls);
    mt_trace_close(t);
    run_result_free(&plain);
    run_result_free(&traced);
    free(trace);
}

START_TEST(file_size_limit_truncates_quietly)
{
    check_file_size_limit(0);
}
END_TEST

/* knownbug: the shim counts the free(NULL) that strerror makes for its own message as a lost call. */
START_TEST(lost_counts_only_program_calls)
{
    check_file_size_limit(1);
}
END_TEST

/* ---- (f) no place to write --------------------------------------------------------------------- */

/* Runs prog_loop untraced and traced into `trace`: the same output and status, one line of
 * explanation on stderr that names the path. */
static void check_untraceable(const char *trace)
{
    run_result_t plain, traced;
    const run_opts_t o = { .prog = "prog_loop", .args = { "20000", "5" } };
    run(&o, &plain);
    run_opts_t ot = o;
    ot.preload = 1;
    ot.trace = trace;
    run(&ot, &traced);
    assert_exit(&plain, 5);
    assert_exit(&traced, 5);
    ck_assert_str_eq(traced.out, plain.out);
    int mtrace_lines, lines;
    count_lines(traced.err, "mtrace:", &mtrace_lines, &lines);
    ck_assert_msg(mtrace_lines == 1 && lines == 1, "expected one mtrace: line on stderr, got: %s", traced.err);
    ck_assert_msg(strstr(traced.err, trace), "the message does not name %s: %s", trace, traced.err);
    run_result_free(&plain);
    run_result_free(&traced);
}

/* An option value that is not a number in range is said once on stderr and its default used; the
 * program's output and status stay its own, and the trace is written. */
START_TEST(bad_option_values)
{
    static const struct {
        const char *env, *name;
    } cases[] = {
        { "MTRACE_STACKS=abc", "MTRACE_STACKS" },
        { "MTRACE_STACKS=65", "MTRACE_STACKS" },
        { "MTRACE_RSS_MS=-5", "MTRACE_RSS_MS" },
        { "MTRACE_MAX_SIZE=0", "MTRACE_MAX_SIZE" },
        { "MTRACE_MAX_SIZE=99999999999999999999", "MTRACE_MAX_SIZE" },
    };
    run_result_t plain;
    const run_opts_t o = { .prog = "prog_loop", .args = { "2000", "3" } };
    run(&o, &plain);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "opt%zu.mtr", i);
        char *trace = path_in(g_dir, name);
        run_opts_t ot = o;
        ot.preload = 1;
        ot.trace = trace;
        ot.env[0] = cases[i].env;
        run_result_t traced;
        run(&ot, &traced);
        assert_exit(&traced, 3);
        ck_assert_str_eq(traced.out, plain.out);
        int mtrace_lines, lines;
        count_lines(traced.err, "mtrace:", &mtrace_lines, &lines);
        ck_assert_msg(mtrace_lines == 1 && lines == 1 && strstr(traced.err, cases[i].env) &&
                          strstr(traced.err, "using"),
                      "%s: expected one line naming it, got: %s", cases[i].env, traced.err);
        mt_trace_t *t = open_ok(trace);
        ck_assert_uint_eq(mt_trace_header(t)->max_frames, 0); /* the default, 0 stacks */
        mt_trace_close(t);
        run_result_free(&traced);
        free(trace);
    }
    run_result_free(&plain);
}
END_TEST

START_TEST(unwritable_directory)
{
    check_untraceable("/proc/nonexistent/x.mtr");
    /* a regular file where a directory is expected */
    char *file = path_in(g_dir, "plainfile");
    const int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_eq(write(fd, "data", 4), 4);
    close(fd);
    char *trace = path_in(file, "x.mtr");
    check_untraceable(trace);
    struct stat st;
    ck_assert_int_eq(stat(file, &st), 0);
    ck_assert(S_ISREG(st.st_mode) && st.st_size == 4);
    /* a directory without write permission stops only an unprivileged user */
    if (geteuid() != 0) {
        char *ro = path_in(g_dir, "readonly");
        ck_assert_int_eq(mkdir(ro, 0500), 0);
        char *t2 = path_in(ro, "x.mtr");
        check_untraceable(t2);
        ck_assert(!file_exists(t2));
        free(t2);
        free(ro);
    }
    free(trace);
    free(file);
}
END_TEST

/* A program that closes every descriptor and opens a file that gets the trace file's old number:
 * its file stays exactly as it wrote it (once a bug: the trace went into it), and the shim opens
 * its trace file again and records every call. */
START_TEST(closed_descriptor_not_reused)
{
    char *trace = path_in(g_dir, "fds.mtr"), *own = path_in(g_dir, "own.txt");
    run_result_t r;
    run(&(run_opts_t){ .prog = "prog_closefds", .args = { own }, .preload = 1, .trace = trace }, &r);
    assert_exit(&r, 0);
    ck_assert_uint_eq(value(&r, "size"), 5);
    struct stat st;
    ck_assert_int_eq(stat(own, &st), 0);
    ck_assert_int_eq(st.st_size, 5);
    ck_assert_str_eq(r.err, "");
    mt_trace_t *t = open_ok(trace);
    ck_assert_uint_eq(mt_trace_thread_count(t), 1);
    rec_list_t recs = { 0 }, calls = { 0 };
    thread_records(t, 0, &recs);
    calls_of(&recs, &calls);
    ck_assert_uint_eq(calls.n, 2 + 2 * 400000); /* the warm-up pair and the loop */
    rec_list_free(&recs);
    rec_list_free(&calls);
    mt_trace_close(t);
    run_result_free(&r);
    free(trace);
    free(own);
}
END_TEST

/* ---- (g) symlinks and existing files ----------------------------------------------------------- */

START_TEST(symlink_not_followed)
{
    char *target = path_in(g_dir, "precious");
    char *link = path_in(g_dir, "link.mtr");
    const int fd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_eq(write(fd, "precious\n", 9), 9);
    close(fd);
    ck_assert_int_eq(symlink(target, link), 0);
    check_untraceable(link);
    char *content = read_text_ok(target);
    ck_assert_str_eq(content, "precious\n");
    free(content);
    char buf[4096];
    const ssize_t n = readlink(link, buf, sizeof buf - 1);
    ck_assert_int_gt(n, 0);
    buf[n] = 0;
    ck_assert_str_eq(buf, target);

    /* a dangling link: its target is not created */
    char *dangling = path_in(g_dir, "dangling.mtr");
    char *nowhere = path_in(g_dir, "nowhere");
    ck_assert_int_eq(symlink(nowhere, dangling), 0);
    check_untraceable(dangling);
    ck_assert(!file_exists(nowhere));
    free(nowhere);
    free(dangling);
    free(link);
    free(target);
}
END_TEST

START_TEST(existing_file_not_overwritten)
{
    char *trace = path_in(g_dir, "taken.mtr");
    const int fd = open(trace, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_eq(write(fd, "mine", 4), 4);
    close(fd);
    run_result_t r;
    run(&(run_opts_t){ .prog = "prog_calls", .preload = 1, .trace = trace }, &r);
    assert_exit(&r, 0);
    ck_assert_str_eq(r.err, "");
    char *content = read_text_ok(trace);
    ck_assert_str_eq(content, "mine");
    free(content);
    /* the trace went next to it, with the pid appended */
    char *actual;
    ck_assert_int_ge(asprintf(&actual, "%s.%llu", trace, (unsigned long long)value(&r, "pid")), 0);
    mt_trace_t *t = open_ok(actual);
    ck_assert_msg(string_is(t, MT_STR_PATH, actual), "PATH string is not %s", actual);
    mt_trace_close(t);
    free(actual);
    run_result_free(&r);
    free(trace);
}
END_TEST

/* ---- (h) the control API ----------------------------------------------------------------------- */

START_TEST(control_api_under_the_shim)
{
    char *trace = path_in(g_dir, "control.mtr");
    run_result_t r;
    run(&(run_opts_t){ .prog = "prog_control", .preload = 1, .trace = trace, .env = { "MTRACE_PAUSED=1" } }, &r);
    assert_exit(&r, 0);
    ck_assert_str_eq(r.err, "");
    ck_assert_int_eq((int64_t)value(&r, "rc_start"), 0);
    ck_assert_int_eq((int64_t)value(&r, "rc_mark"), 0);
    ck_assert_int_eq((int64_t)value(&r, "rc_pause"), 0);
    ck_assert_int_eq((int64_t)value(&r, "rc_resume"), 0);
    ck_assert_int_eq((int64_t)value(&r, "rc_sync"), 0);
    ck_assert_int_eq((int64_t)value(&r, "rc_stop"), 0);
    ck_assert_int_eq((int64_t)value(&r, "rc_after_stop"), -ENODEV);

    mt_trace_t *t = open_ok(trace);
    const mt_file_header_t *h = mt_trace_header(t);
    ck_assert_uint_eq(h->flags & MT_HDR_COMPLETE, MT_HDR_COMPLETE);
    ck_assert_uint_eq(mt_trace_thread_count(t), 1);
    rec_list_t recs = { 0 };
    thread_records(t, 0, &recs);
    /* exactly this, RSS samples aside: nothing before start, while paused or after stop */
    const uint64_t ctl_start[] = { MT_CTL_START }, ctl_pause[] = { MT_CTL_PAUSE }, ctl_resume[] = { MT_CTL_RESUME },
                   ctl_stop[] = { MT_CTL_STOP }, zero[] = { 0 };
    rec_list_t want = { 0 };
    mt_record_t e = exp_event_varints(MT_EV_THREAD_START, 0, 1, zero);
    rec_list_push(&want, &e);
    e = exp_event_varints(MT_EV_CONTROL, 0, 1, ctl_start);
    rec_list_push(&want, &e);
    e = (mt_record_t){ .op = MT_OP_MALLOC, .size = 1002, .result = value(&r, "recorded1") };
    rec_list_push(&want, &e);
    e = (mt_record_t){ .op = MT_OP_FREE, .ptr = value(&r, "recorded1") };
    rec_list_push(&want, &e);
    e = exp_event_bytes(MT_EV_MARK, 0, "x", 1);
    rec_list_push(&want, &e);
    e = exp_event_varints(MT_EV_CONTROL, 0, 1, ctl_pause);
    rec_list_push(&want, &e);
    e = exp_event_varints(MT_EV_CONTROL, 0, 1, ctl_resume);
    rec_list_push(&want, &e);
    e = (mt_record_t){ .op = MT_OP_MALLOC, .size = 1004, .result = value(&r, "recorded2") };
    rec_list_push(&want, &e);
    e = (mt_record_t){ .op = MT_OP_FREE, .ptr = value(&r, "recorded2") };
    rec_list_push(&want, &e);
    e = exp_event_varints(MT_EV_CONTROL, 0, 1, ctl_stop);
    rec_list_push(&want, &e);
    e = exp_event_varints(MT_EV_THREAD_EXIT, 0, 1, zero);
    rec_list_push(&want, &e);

    rec_list_t got = { 0 };
    for (size_t i = 0; i < recs.n; i++) {
        if (recs.v[i].op == MT_EV_RSS)
            continue;
        mt_record_t g = recs.v[i];
        g.time = 0;
        g.flags &= ~(uint32_t)(MT_FLAG_HEAP_GREW | MT_FLAG_MMAPPED);
        g.usable = 0; /* glibc's business */
        rec_list_push(&got, &g);
    }
    assert_lists_eq(&got, &want, "control");
    /* stopped traces are finished like any other: the file ends at its last chunk */
    ck_assert_uint_eq(mt_trace_file_size(t), h->chunks_used * MT_CHUNK_SIZE);
    ck_assert_uint_eq(h->chunks_used, mt_trace_chunk_count(t) + 1);
    rec_list_free(&got);
    rec_list_free(&want);
    rec_list_free(&recs);
    mt_trace_close(t);
    run_result_free(&r);
    free(trace);
}
END_TEST

START_TEST(control_api_without_the_shim)
{
    run_result_t r;
    run(&(run_opts_t){ .prog = "prog_control" }, &r);
    assert_exit(&r, 0);
    ck_assert_str_eq(r.err, "");
    static const char *const keys[] = { "rc_start", "rc_mark", "rc_pause",     "rc_resume",
                                        "rc_sync",  "rc_stop", "rc_after_stop" };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_int_eq((int64_t)value(&r, keys[i]), -ENODEV);
    ck_assert_uint_ne(value(&r, "recorded2"), 0); /* and the program did its work */
    run_result_free(&r);
}
END_TEST

/* ---- (i) exec ---------------------------------------------------------------------------------- */

/* Runs prog_exec with `how` ("" for execv) and checks both images' files. */
static void check_exec(const char *how, const char *name)
{
    char *trace = path_in(g_dir, name);
    char *prog = prog_path("prog_exec");
    run_result_t r;
    run(&(run_opts_t){ .prog = "prog_exec", .args = { how }, .preload = 1, .trace = trace }, &r);
    assert_exit(&r, 0);
    ck_assert_str_eq(r.err, "");
    const uint64_t pid = value(&r, "first_pid");
    ck_assert_uint_eq(value(&r, "second_pid"), pid);
    ck_assert_uint_eq(value(&r, "second_argc"), (how ? 100 : 2));

    /* the first image: its malloc, the exec event with the path, end fields but not complete */
    mt_trace_t *t = open_ok(trace);
    const mt_file_header_t *h = mt_trace_header(t);
    ck_assert_uint_eq(h->pid, pid);
    ck_assert_uint_eq(h->flags & MT_HDR_COMPLETE, 0);
    ck_assert_uint_ne(h->end_time, 0);
    rec_list_t recs = { 0 };
    thread_records(t, 0, &recs);
    const mt_record_t *m = find_op(&recs, MT_OP_MALLOC);
    ck_assert_ptr_nonnull(m);
    ck_assert_uint_eq(m->size, 333);
    ck_assert_uint_eq(m->result, value(&r, "first_p"));
    const mt_record_t *ex = find_op(&recs, MT_EV_EXEC);
    ck_assert_ptr_nonnull(ex);
    ck_assert_uint_eq(ex->len, strlen(prog));
    ck_assert_mem_eq(ex->data, prog, ex->len);
    for (size_t i = 0; i < recs.n; i++)
        ck_assert_msg(recs.v[i].op != MT_OP_MALLOC || recs.v[i].size != 444,
                      "the second image's call in the first file");
    rec_list_free(&recs);
    mt_trace_close(t);

    /* the second image: its own file, path.PID, with its call */
    char *second;
    ck_assert_int_ge(asprintf(&second, "%s.%llu", trace, (unsigned long long)pid), 0);
    t = open_ok(second);
    h = mt_trace_header(t);
    ck_assert_uint_eq(h->pid, pid);
    ck_assert_uint_eq(h->flags & MT_HDR_COMPLETE, MT_HDR_COMPLETE);
    thread_records(t, 0, &recs);
    rec_list_t calls = { 0 };
    calls_of(&recs, &calls);
    ck_assert_uint_eq(calls.n, 2);
    ck_assert_uint_eq(calls.v[0].op, MT_OP_MALLOC);
    ck_assert_uint_eq(calls.v[0].size, 444);
    ck_assert_uint_eq(calls.v[0].result, value(&r, "second_p"));
    ck_assert_uint_eq(calls.v[1].op, MT_OP_FREE);
    ck_assert_uint_eq(calls.v[1].ptr, value(&r, "second_p"));
    rec_list_free(&recs);
    rec_list_free(&calls);
    mt_trace_close(t);
    ck_assert_int_eq(count_files(name), 2);
    free(second);
    free(prog);
    run_result_free(&r);
    free(trace);
}

START_TEST(exec_gets_its_own_file)
{
    check_exec(NULL, "exec.mtr");
}
END_TEST

/* execl with more arguments than the wrapper keeps on its stack: the same two files. */
START_TEST(execl_long_list)
{
    check_exec("execl-long", "execl.mtr");
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

static Suite *shim_suite(void)
{
    Suite *s = suite_create("shim");
    TCase *tc = tcase(s, "calls");
    tcase_add_test(tc, known_calls_recorded_exactly);

    tc = tcase(s, "threads");
    tcase_add_test(tc, threads_lose_nothing);
    tcase_add_test(tc, clock_read_every_8_calls_while_one_thread);
    tcase_add_test(tc, block_calls_stamped_when_they_return);
    tcase_add_test(tc, thread_create_names_the_new_thread);
    tcase_add_test(tc, heap_grew_marks_the_calls_that_moved_the_top);
    tcase_add_test(tc, exit_without_destructors_finishes_the_trace);
    tcase_add_test(tc, vfork_child_exit_leaves_the_parent_tracing);
    tcase_add_test(tc, exit_from_a_thread_while_another_allocates);
    tcase_add_test(tc, exit_from_a_signal_handler_inside_the_recorder);

    tc = tcase(s, "short_threads");
    tcase_add_test(tc, ended_threads_leave_no_trace_pages_resident);
    tcase_add_test(tc, sigkill_keeps_the_records_of_ended_threads);

    tc = tcase(s, "fork");
    tcase_add_test(tc, fork_child_gets_its_own_file);
    tcase_add_test(tc, fork_with_pid_in_path);
    tcase_add_test(tc, fork_not_followed);

    tc = tcase(s, "kill");
    tcase_add_test(tc, sigkill_leaves_a_readable_prefix);

    tc = tcase(s, "limits");
    tcase_add_test(tc, file_size_limit_truncates_quietly);
    tcase_add_test(tc, unwritable_directory);
    tcase_add_test(tc, bad_option_values);
    tcase_add_test(tc, closed_descriptor_not_reused);

    tc = tcase(s, "files");
    tcase_add_test(tc, symlink_not_followed);
    tcase_add_test(tc, existing_file_not_overwritten);

    tc = tcase(s, "control");
    tcase_add_test(tc, control_api_under_the_shim);
    tcase_add_test(tc, control_api_without_the_shim);

    tc = tcase(s, "exec");
    tcase_add_test(tc, exec_gets_its_own_file);
    tcase_add_test(tc, execl_long_list);

    /* Known shim bugs, one case each (named in tests/meson.build): left out of the main run
     * (CK_EXCLUDE_TAGS=knownbug), each run on its own and expected to fail until fixed. */
    tc = tcase(s, "thread_exit_ends_the_stream");
    tcase_add_test(tc, thread_exit_ends_the_stream);
    tc = tcase(s, "lost_counts_only_program_calls");
    tcase_add_test(tc, lost_counts_only_program_calls);
    return s;
}

int main(void)
{
    /* The shim must exist: a missing one would make every test fail for the wrong reason. */
    if (access(MT_SHIM_PATH, R_OK) != 0) {
        fprintf(stderr, "%s: %s; skipping\n", MT_SHIM_PATH, strerror(errno));
        return 77;
    }
    return run_suite(shim_suite());
}
