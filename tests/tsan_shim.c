/* The shim's concurrent paths under ThreadSanitizer (built only with -Db_sanitize=thread).
 *
 * The shim cannot be preloaded into a TSan program: the TSan runtime allocates while it starts, and an
 * instrumented malloc called then crashes (its shadow memory does not exist yet); placed after the
 * runtime, the shim is no longer the malloc the program calls, and TSan's pthread_create would run the
 * shim's thread trampoline before the new thread is known to TSan. So each case runs a child that
 * dlopens the TSan-built libmtrace.so with RTLD_LOCAL once the runtime is up (the shim starts tracing
 * in its constructor, as when preloaded) and calls the shim's own malloc, free, calloc, realloc and
 * mtrace_control through dlsym from several threads at once: chunk claiming, thread numbering, RSS
 * samples, the brk check, pauses, marks, truncation and the final sealing all run concurrently. The
 * shim's "real" allocator is then the next malloc its dlsym(RTLD_NEXT) finds (TSan's). The parent then
 * reads the trace with the format library. */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mtrace/trace_format.h"
#include "test_util.h"

#define NWORKERS 6 /* besides the main thread, which works too */
#define ITERS 20000
#define NEXCH 64

typedef struct shim_api {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*control)(int, const char *);
} shim_api_t;

static shim_api_t api;
static _Atomic(void *) exch[NEXCH];
static atomic_int workers_done;

/* Per iteration: malloc and free, and every 4th iteration calloc, realloc and free. Every 64th block goes
 * to the exchange instead, and the one it displaces (made by another thread as a rule) is freed here.
 * To TSan an allocation and a free are writes of the block, so a block handed over needs a
 * happens-before edge (acquire-release); a rare one leaves long stretches in which the threads' calls
 * into the shim are unordered, as in a real program. */
static void work(unsigned k)
{
    for (unsigned i = 0; i < ITERS; i++) {
        char *p = api.malloc(16 + (k * 7 + i) % 512);
        if (!p)
            abort();
        p[0] = 1;
        if (i % 64 == 0) {
            void *old = atomic_exchange_explicit(&exch[(k * 13 + i / 64) % NEXCH], p, memory_order_acq_rel);
            api.free(old); /* free(NULL) at first: recorded as a call like any other */
        } else {
            api.free(p);
        }
        if (i % 4 == 0) {
            char *q = api.calloc(2, 24);
            q = api.realloc(q, 100 + i % 200);
            api.free(q);
        }
    }
}

static void *worker_main(void *arg)
{
    work((unsigned)(uintptr_t)arg);
    atomic_fetch_add_explicit(&workers_done, 1, memory_order_relaxed);
    return NULL;
}

/* Marks, and in "control" mode pauses and resumes, while the workers run. */
static void *control_main(void *arg)
{
    const int pause = *(const int *)arg;
    unsigned n = 0;
    while (atomic_load_explicit(&workers_done, memory_order_relaxed) < NWORKERS) {
        char label[32];
        snprintf(label, sizeof label, "m%u", n++);
        api.control(MT_CTL_MARK, label);
        if (pause && n % 8 == 0) {
            api.control(MT_CTL_PAUSE, NULL);
            usleep(100);
            api.control(MT_CTL_RESUME, NULL);
        }
        usleep(200);
    }
    return NULL;
}

static int child(const char *mode)
{
    void *h = dlopen(MT_SHIM_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", MT_SHIM_PATH, dlerror());
        return 2;
    }
    api.malloc = (void *(*)(size_t))dlsym(h, "malloc");
    api.free = (void (*)(void *))dlsym(h, "free");
    api.calloc = (void *(*)(size_t, size_t))dlsym(h, "calloc");
    api.realloc = (void *(*)(void *, size_t))dlsym(h, "realloc");
    api.control = (int (*)(int, const char *))dlsym(h, "mtrace_control");
    if (!api.malloc || !api.free || !api.calloc || !api.realloc || !api.control) {
        fprintf(stderr, "the shim lacks an entry point: %s\n", dlerror());
        return 2;
    }
    int pause = strcmp(mode, "control") == 0;
    pthread_t th[NWORKERS], ctl;
    for (unsigned k = 0; k < NWORKERS; k++)
        if (pthread_create(&th[k], NULL, worker_main, (void *)(uintptr_t)(k + 1)) != 0)
            return 2;
    if (pthread_create(&ctl, NULL, control_main, &pause) != 0)
        return 2;
    work(0);
    for (unsigned k = 0; k < NWORKERS; k++)
        pthread_join(th[k], NULL);
    pthread_join(ctl, NULL);
    for (unsigned i = 0; i < NEXCH; i++)
        api.free(atomic_load_explicit(&exch[i], memory_order_relaxed));
    /* Seals the trace now: the shim's destructor would, but after this process's TSan report. */
    const int rc = api.control(MT_CTL_STOP, NULL);
    if (rc != 0 && strcmp(mode, "truncate") != 0) {
        fprintf(stderr, "mtrace_control(STOP): %d\n", rc);
        return 2;
    }
    return 0;
}

static char *g_dir;
TEST_DIR_FIXTURE(g_dir, "tsan-shim", NULL)

/* Runs this program as the child for `mode`, tracing into dir/mode.mtr; returns the trace's path. */
static char *run_child(const char *mode, const char *max_size)
{
    char name[64];
    snprintf(name, sizeof name, "%s.mtr", mode);
    char *trace = path_in(g_dir, name);
    fflush(NULL);
    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setenv("MTRACE_OUT", trace, 1);
        setenv("MTRACE_RSS_MS", "1", 1);
        setenv("MTRACE_QUIET", "1", 1);
        if (max_size)
            setenv("MTRACE_MAX_SIZE", max_size, 1);
        execl("/proc/self/exe", "tsan_shim", "child", mode, (char *)NULL);
        _exit(127);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st), "the %s child died of signal %d", mode, WTERMSIG(st));
    /* ThreadSanitizer exits 66 after a report (TSAN_OPTIONS exitcode) */
    ck_assert_msg(WEXITSTATUS(st) == 0, "the %s child exited %d (66: ThreadSanitizer reported a race)", mode,
                  WEXITSTATUS(st));
    return trace;
}

typedef struct counts {
    uint64_t op[MT_OP_MAX + 1];
    size_t threads;
} counts_t;

/* Reads every thread's records (each must decode to its end) and counts them by op. */
static const mt_file_header_t *read_counts(const char *path, mt_trace_t **tp, counts_t *c)
{
    mt_error_t err;
    ck_assert_msg(mt_trace_open(tp, path, &err) == 0, "%s", err.msg);
    memset(c, 0, sizeof *c);
    c->threads = mt_trace_thread_count(*tp);
    for (size_t i = 0; i < c->threads; i++) {
        rec_list_t recs = { 0 };
        ck_assert_msg(read_thread(*tp, i, &recs, &err) == 0, "thread %zu: %s", i, err.msg);
        for (size_t r = 0; r < recs.n; r++)
            c->op[recs.v[r].op]++;
        rec_list_free(&recs);
    }
    return mt_trace_header(*tp);
}

#define ALL (uint64_t)(NWORKERS + 1) * ITERS

START_TEST(threads_every_call_recorded)
{
    char *path = run_child("full", NULL);
    mt_trace_t *t;
    counts_t c;
    const mt_file_header_t *h = read_counts(path, &t, &c);
    ck_assert_uint_eq(h->flags & (MT_HDR_COMPLETE | MT_HDR_TRUNCATED), MT_HDR_COMPLETE);
    ck_assert_uint_eq(h->lost_calls, 0);
    ck_assert_uint_ge(c.threads, NWORKERS + 1);
    ck_assert_uint_eq(c.op[MT_OP_MALLOC], ALL);
    ck_assert_uint_eq(c.op[MT_OP_CALLOC], ALL / 4);
    ck_assert_uint_eq(c.op[MT_OP_REALLOC], ALL / 4);
    ck_assert_uint_eq(c.op[MT_OP_FREE], ALL + NEXCH + ALL / 4);
    ck_assert_uint_gt(c.op[MT_EV_MARK], 0);
    mt_trace_close(t);
    free(path);
}
END_TEST

START_TEST(threads_with_pauses)
{
    char *path = run_child("control", NULL);
    mt_trace_t *t;
    counts_t c;
    const mt_file_header_t *h = read_counts(path, &t, &c);
    ck_assert_uint_eq(h->flags & (MT_HDR_COMPLETE | MT_HDR_TRUNCATED), MT_HDR_COMPLETE);
    ck_assert_uint_le(c.op[MT_OP_MALLOC], ALL);
    ck_assert_uint_gt(c.op[MT_OP_MALLOC], 0);
    ck_assert_uint_gt(c.op[MT_EV_CONTROL], 0);
    mt_trace_close(t);
    free(path);
}
END_TEST

START_TEST(threads_truncated)
{
    char *path = run_child("truncate", "1"); /* MiB: 16 chunks, full long before the threads end */
    mt_trace_t *t;
    counts_t c;
    const mt_file_header_t *h = read_counts(path, &t, &c);
    ck_assert_uint_eq(h->flags & MT_HDR_TRUNCATED, MT_HDR_TRUNCATED);
    ck_assert_uint_lt(c.op[MT_OP_MALLOC], ALL);
    mt_trace_close(t);
    free(path);
}
END_TEST

static Suite *tsan_shim_suite(void)
{
    Suite *s = suite_create("tsan_shim");
    const struct {
        const char *name;
        const TTest *test;
    } cases[] = {
        { "every_call", threads_every_call_recorded },
        { "pauses", threads_with_pauses },
        { "truncated", threads_truncated },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "child") == 0)
        return child(argv[2]);
    return run_suite(tsan_shim_suite());
}
