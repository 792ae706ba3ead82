/* Fault injection for the preload shim: programs (tests/faults/fp_*.c) killed at random moments,
 * fork storms, vfork, posix_spawn and exec chains, threads that come and go by the hundred, signal
 * handlers that allocate, libraries loaded and unloaded, other allocators linked in, allocation
 * before the shim has started, and setuid programs.
 *
 * For every traced run that ends normally: stdout and exit status are those of the untraced run,
 * stderr too (the shim says nothing), the trace opens with the reader and every thread's records
 * decode (mt_thread_cursor), and where the program's calls are known they are exactly the calls
 * recorded. Run one case with CK_RUN_CASE=NAME (tests/faults/meson.build makes one meson test of
 * each). MT_FAULTS_SEED=N changes the random choices of the kill case (printed on failure).
 *
 * Not built under a sanitizer (see tests/meson.build). */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mtrace/trace_reader.h"
#include "../test_output.h"
#include "../test_util.h"
#include "fp_util.h"

#ifndef MT_SHIM_PATH
#error "MT_SHIM_PATH comes from tests/faults/meson.build"
#endif

static char *g_dir; /* one per test case, removed afterwards */
TEST_DIR_FIXTURE(g_dir, "faults", NULL)

static char *fp_path(const char *name)
{
    return path_in(FP_DIR, name);
}

static char *in_dir(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *in_dir(const char *fmt, ...)
{
    char name[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    return path_in(g_dir, name);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- running programs -------------------------------------------------------------------------- */

typedef struct job {
    const char *argv[12]; /* argv[0] is the program's path */
    const char *env[8];   /* NAME=VALUE, besides PATH and the shim's */
    int preload;          /* LD_PRELOAD the shim */
    const char *trace;    /* MTRACE_OUT */
    const char *cwd;
    const char *wrap[8]; /* a command put in front (setpriv ...), or nothing */
    unsigned timeout_s;  /* 0: 45 */
} job_t;

/* Starts the job with a clean environment; stdout to out_fd, stderr to err_fd. */
static pid_t spawn_job(const job_t *j, int out_fd, int err_fd)
{
    const char *argv[24];
    int n = 0;
    for (int i = 0; i < 8 && j->wrap[i]; i++)
        argv[n++] = j->wrap[i];
    for (int i = 0; i < 12 && j->argv[i]; i++)
        argv[n++] = j->argv[i];
    argv[n] = NULL;
    char *envp[16];
    int e = 0;
    char preload[4200], out[4200];
    envp[e++] = (char *)"PATH=/usr/local/bin:/usr/bin:/bin";
    if (j->preload) {
        snprintf(preload, sizeof preload, "LD_PRELOAD=%s", MT_SHIM_PATH);
        envp[e++] = preload;
    }
    if (j->trace) {
        snprintf(out, sizeof out, "MTRACE_OUT=%s", j->trace);
        envp[e++] = out;
    }
    for (int i = 0; i < 8 && j->env[i]; i++)
        envp[e++] = (char *)j->env[i];
    envp[e] = NULL;
    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (out_fd != STDOUT_FILENO)
            dup2(out_fd, STDOUT_FILENO);
        if (err_fd != STDERR_FILENO)
            dup2(err_fd, STDERR_FILENO);
        if (j->cwd && chdir(j->cwd) != 0)
            _exit(126);
        execve(argv[0], (char **)argv, envp);
        _exit(127);
    }
    return pid;
}

/* Waits for pid at most timeout_s seconds; past that kills it and fails the test (a deadlock). */
static int wait_bounded(pid_t pid, unsigned timeout_s, const char *what)
{
    const uint64_t deadline = now_ms() + (uint64_t)(timeout_s ? timeout_s : 45) * 1000;
    int status;
    for (;;) {
        const pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        ck_assert_int_eq(r, 0);
        if (now_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            ck_abort_msg("%s did not finish in %u s (deadlock?)", what, timeout_s ? timeout_s : 45);
        }
        sleep_ms(2);
    }
}

/* Runs the job to its end (or its time limit), capturing stdout and stderr in files of g_dir. */
static void run_job(const job_t *j, run_result_t *r)
{
    capture_t c;
    capture_open(&c, g_dir);
    const pid_t pid = spawn_job(j, c.out_fd, c.err_fd);
    capture_started(&c);
    r->status = wait_bounded(pid, j->timeout_s, j->argv[0]);
    capture_finish(&c, r);
}

static void assert_exit(const run_result_t *r, int code, const char *what)
{
    ck_assert_msg(WIFEXITED(r->status) && WEXITSTATUS(r->status) == code,
                  "%s: status %#x, expected exit %d; stdout: %s; stderr: %s", what, r->status, code, r->out, r->err);
}

/* Runs the job untraced (argument `info_arg` replaced by "", so the untraced run writes no info
 * file) and traced: the same exit status, stdout and stderr. Leaves the traced run's result in *r. */
static void run_pair(const job_t *j, int info_arg, int code, run_result_t *r)
{
    job_t plain = *j;
    plain.preload = 0;
    plain.trace = NULL;
    if (info_arg > 0)
        plain.argv[info_arg] = "";
    run_result_t u;
    run_job(&plain, &u);
    run_job(j, r);
    assert_exit(&u, code, "untraced run");
    assert_exit(r, code, "traced run");
    ck_assert_msg(u.status == r->status, "exit status %#x traced, %#x untraced", r->status, u.status);
    ck_assert_msg(!strcmp(u.out, r->out), "stdout differs\n--- untraced:\n%s\n--- traced:\n%s", u.out, r->out);
    ck_assert_msg(!strcmp(u.err, r->err), "stderr differs\n--- untraced:\n%s\n--- traced:\n%s", u.err, r->err);
    run_result_free(&u);
}

/* ---- the info file ----------------------------------------------------------------------------- */

/* The numbers after `prefix` on the first line that starts with "prefix ". Returns how many. */
static int info_get(const char *text, const char *prefix, uint64_t *v, int max)
{
    const size_t plen = strlen(prefix);
    for (const char *line = text; line && *line;) {
        if (!strncmp(line, prefix, plen) && line[plen] == ' ') {
            const char *s = line + plen;
            int n = 0;
            while (n < max && *s == ' ') {
                char *end;
                v[n] = strtoull(s + 1, &end, 10);
                if (end == s + 1)
                    break;
                n++;
                s = end;
            }
            return n;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return 0;
}

static uint64_t info1(const char *text, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static uint64_t info1(const char *text, const char *fmt, ...)
{
    char prefix[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    uint64_t v;
    ck_assert_msg(info_get(text, prefix, &v, 1) == 1, "no \"%s\" in the info file:\n%.2000s", prefix, text);
    return v;
}

/* ---- reading traces ---------------------------------------------------------------------------- */

typedef struct trace_recs {
    mt_trace_t *t;
    size_t n;        /* threads */
    rec_list_t *thr; /* every record of each thread, in order */
} trace_recs_t;

/* Opens the trace and decodes every record of every thread; any error fails the test. Keeps the first
 * `cap` records of each thread in memory (a worker that allocates for a second makes millions). */
static void load_trace_capped(const char *path, trace_recs_t *tr, size_t cap)
{
    mt_error_t err = { "" };
    int rc = mt_trace_open(&tr->t, path, &err);
    ck_assert_msg(rc == 0, "opening %s: %d %s", path, rc, err.msg);
    tr->n = mt_trace_thread_count(tr->t);
    tr->thr = calloc(tr->n ? tr->n : 1, sizeof *tr->thr);
    ck_assert_ptr_nonnull(tr->thr);
    for (size_t i = 0; i < tr->n; i++) {
        mt_thread_cursor_t tc;
        ck_assert_int_eq(mt_thread_cursor_init(&tc, tr->t, i), 0);
        mt_record_t r;
        while ((rc = mt_thread_cursor_next(&tc, &r, &err)) > 0)
            if (tr->thr[i].n < cap)
                rec_list_push(&tr->thr[i], &r);
        mt_thread_cursor_fini(&tc);
        if (rc != 0)
            ck_abort_msg("%s: thread %zu (number %u): record does not decode: %s", path, i,
                         mt_trace_thread(tr->t, i)->thread, err.msg);
    }
}

static void load_trace(const char *path, trace_recs_t *tr)
{
    load_trace_capped(path, tr, SIZE_MAX);
}

static void free_trace(trace_recs_t *tr)
{
    for (size_t i = 0; i < tr->n; i++)
        rec_list_free(&tr->thr[i]);
    free(tr->thr);
    mt_trace_close(tr->t);
    memset(tr, 0, sizeof *tr);
}

static const mt_file_header_t *hdr(const trace_recs_t *tr)
{
    return mt_trace_header(tr->t);
}

static size_t count_op(const rec_list_t *l, unsigned op)
{
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++)
        n += l->v[i].op == op;
    return n;
}

static const mt_record_t *find_op(const rec_list_t *l, unsigned op)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].op == op)
            return &l->v[i];
    return NULL;
}

/* The call records of a thread (events left out); with `upto_exit`, only those before THREAD_EXIT. */
static void calls_of(const rec_list_t *l, rec_list_t *out, int upto_exit)
{
    for (size_t i = 0; i < l->n; i++) {
        if (upto_exit && l->v[i].op == MT_EV_THREAD_EXIT)
            break;
        if (l->v[i].op <= MT_OP_LAST_CALL)
            rec_list_push(out, &l->v[i]);
    }
}

/* Index of the thread with OS thread id `tid`, or -1. */
static long thread_by_tid(const trace_recs_t *tr, uint64_t tid)
{
    for (size_t i = 0; i < tr->n; i++)
        if (mt_trace_thread(tr->t, i)->tid == tid)
            return (long)i;
    return -1;
}

/* Lost calls: THREAD_EXIT's count, summed over threads. */
static uint64_t lost_in_threads(const trace_recs_t *tr)
{
    uint64_t lost = 0;
    for (size_t i = 0; i < tr->n; i++) {
        const mt_record_t *e = find_op(&tr->thr[i], MT_EV_THREAD_EXIT);
        if (e && e->nargs)
            lost += (uint64_t)e->arg[0];
    }
    return lost;
}

/* A finished trace with nothing lost and nothing cut. */
static void assert_clean(const trace_recs_t *tr, const char *what)
{
    const mt_file_header_t *h = hdr(tr);
    ck_assert_msg((h->flags & (MT_HDR_COMPLETE | MT_HDR_TRUNCATED)) == MT_HDR_COMPLETE,
                  "%s: header flags %#x, expected complete and not truncated", what, h->flags);
    ck_assert_msg(h->lost_calls == 0, "%s: %" PRIu64 " calls lost", what, h->lost_calls);
    ck_assert_msg(lost_in_threads(tr) == 0, "%s: threads lost %" PRIu64 " calls", what, lost_in_threads(tr));
    ck_assert_msg(h->threads == tr->n, "%s: header says %u threads, the file holds %zu", what, h->threads, tr->n);
}

/* Asserts that `calls` holds exactly the expected calls: op, sizes and the pointers the program
 * printed (a zero expected result or ptr is not compared: the block is known only by its size). */
typedef struct want {
    uint8_t op;
    uint64_t size, count, align, ptr, result;
} want_t;

static void assert_calls(const rec_list_t *calls, const want_t *want, size_t n, const char *what)
{
    char buf[512];
    for (size_t i = 0; i < calls->n && i < n; i++) {
        const mt_record_t *c = &calls->v[i];
        const want_t *w = &want[i];
        const int ok = c->op == w->op && c->size == w->size && c->count == w->count && c->align == w->align &&
                       (!w->ptr || c->ptr == w->ptr) && (!w->result || c->result == w->result) &&
                       !(c->flags & MT_FLAG_NULL);
        ck_assert_msg(ok,
                      "%s: call %zu is %s; expected op %u size %" PRIu64 " count %" PRIu64 " ptr %#" PRIx64
                      " result %#" PRIx64,
                      what, i, record_str(c, buf, sizeof buf), w->op, w->size, w->count, w->ptr, w->result);
    }
    if (calls->n != n) {
        char *all = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&all, &len);
        for (size_t i = 0; i < calls->n && i < 40; i++)
            fprintf(m, "\n  %s", record_str(&calls->v[i], buf, sizeof buf));
        fclose(m);
        ck_abort_msg("%s: %zu calls recorded, expected %zu:%s", what, calls->n, n, all);
    }
}

/* Names of the entries of `dir` that start with `prefix`, sorted; returns how many. */
static size_t list_files(const char *dir, const char *prefix, char ***names)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    size_t n = 0, cap = 16;
    char **v = malloc(cap * sizeof *v);
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (n == cap)
            v = realloc(v, (cap *= 2) * sizeof *v);
        v[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(v, n, sizeof *v, (int (*)(const void *, const void *))strcmp);
    *names = v;
    return n;
}

static void free_names(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static int string_has(const mt_trace_t *t, unsigned tag, const char *needle)
{
    size_t len;
    const char *s = mt_trace_string(t, tag, 0, &len);
    return s && memmem(s, len, needle, strlen(needle)) != NULL;
}

/* ==== 1. SIGKILL at random moments ============================================================== */

enum { KILL_MAX_THREADS = 8 };

typedef struct kill_progress {
    int ready;
    int64_t tid[KILL_MAX_THREADS];   /* -1: not reported */
    uint64_t done[KILL_MAX_THREADS]; /* iterations reported finished */
    char partial[256];
    size_t plen;
} kill_progress_t;

static void progress_line(kill_progress_t *p, const char *line)
{
    unsigned k;
    long long v;
    unsigned long long d;
    if (!strcmp(line, "ready"))
        p->ready = 1;
    else if (sscanf(line, "tid %u %lld", &k, &v) == 2 && k < KILL_MAX_THREADS)
        p->tid[k] = v;
    else if (sscanf(line, "done %u %llu", &k, &d) == 2 && k < KILL_MAX_THREADS) {
        if (d > p->done[k])
            p->done[k] = d;
    } else
        ck_abort_msg("fp_kill wrote an unexpected line: \"%s\"", line);
}

/* Reads what is there (waiting at most wait_ms); returns 0 at end of file. */
static int progress_read(kill_progress_t *p, int fd, int wait_ms)
{
    struct pollfd pfd = { fd, POLLIN, 0 };
    if (poll(&pfd, 1, wait_ms) <= 0)
        return 1;
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0)
        return 0;
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            p->partial[p->plen] = 0;
            progress_line(p, p->partial);
            p->plen = 0;
        } else if (p->plen < sizeof p->partial - 1) {
            p->partial[p->plen++] = buf[i];
        }
    }
    return 1;
}

/* Walks one thread's records with a cursor (a worker's trace is too long to hold in memory): worker
 * k's calls must be its sequence from the start (malloc of fp_seq_size(k, i), then the free of that
 * block). In a killed trace (finished 0) the sequence may stop anywhere and the reader must return
 * no error; in a finished one it ends with THREAD_EXIT (counting no lost call), after which only
 * glibc's free(NULL) of thread teardown may come. k < 0: k is found from the first malloc. Returns
 * the finished iterations (malloc and free both recorded); *kout gets k. */
static uint64_t check_worker_seq(const mt_trace_t *t, size_t ti, int k, int finished, int *kout, const char *what)
{
    mt_thread_cursor_t tc;
    ck_assert_int_eq(mt_thread_cursor_init(&tc, t, ti), 0);
    mt_record_t r;
    mt_error_t err = { "" };
    uint64_t iter = 0, pending = 0, nrec = 0;
    int rc, exited = 0;
    char buf[512];
    /* one ck_assert per record would write to Check's pipe each time: test, then abort */
    while ((rc = mt_thread_cursor_next(&tc, &r, &err)) > 0) {
        nrec++;
        if (r.op == MT_EV_RSS)
            continue;
        if (r.op == MT_EV_THREAD_START) {
            if (nrec != 1)
                ck_abort_msg("%s: THREAD_START is record %" PRIu64, what, nrec);
            continue;
        }
        if (exited) {
            if (!(r.op == MT_OP_FREE && r.ptr == 0))
                ck_abort_msg("%s: worker %d: after its exit: %s", what, k, record_str(&r, buf, sizeof buf));
            continue;
        }
        if (r.op == MT_EV_THREAD_EXIT && finished) {
            if (pending || r.nargs != 1 || r.arg[0] != 0)
                ck_abort_msg("%s: worker %d: %s at iteration %" PRIu64, what, k, record_str(&r, buf, sizeof buf), iter);
            exited = 1;
            continue;
        }
        if (r.op == MT_OP_MALLOC && k < 0 && !pending && iter == 0)
            k = (int)((r.size - 1) % 16);
        const int ok = r.op == MT_OP_MALLOC ? (k >= 0 && !pending && r.size == fp_seq_size((unsigned)k, iter) &&
                                               r.result != 0 && !(r.flags & MT_FLAG_NULL))
                       : r.op == MT_OP_FREE ? (pending && r.ptr == pending)
                                            : 0;
        if (!ok)
            ck_abort_msg("%s: worker %d, record %" PRIu64 " (iteration %" PRIu64 ") breaks the sequence: %s", what, k,
                         nrec, iter, record_str(&r, buf, sizeof buf));
        if (r.op == MT_OP_MALLOC) {
            pending = r.result;
        } else {
            pending = 0;
            iter++;
        }
    }
    mt_thread_cursor_fini(&tc);
    if (rc != 0)
        ck_abort_msg("%s: worker %d: the reader returned an error: %s", what, k, err.msg);
    if (finished && !exited)
        ck_abort_msg("%s: worker %d: no THREAD_EXIT", what, k);
    *kout = k;
    return iter;
}

static uint64_t faults_seed(void)
{
    const char *s = getenv("MT_FAULTS_SEED");
    return s && *s ? strtoull(s, NULL, 10) : 20261122;
}

/* One run killed `delay_us` after it said it was ready (or, with early, that long after its start,
 * whatever it said). */
static void kill_run(unsigned nthreads, unsigned delay_us, int early, const char *what, int *outcome)
{
    static int seq;
    char *trace = in_dir("kill.%d.mtr", seq++);
    char *prog = fp_path("fp_kill");
    char nbuf[8];
    snprintf(nbuf, sizeof nbuf, "%u", nthreads);
    const job_t j = { .argv = { prog, nbuf }, .preload = 1, .trace = trace };
    int fds[2];
    ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
    char *errpath = in_dir("kill.err");
    const int efd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ck_assert_int_ge(efd, 0);
    const pid_t pid = spawn_job(&j, fds[1], efd);
    close(fds[1]);
    close(efd);

    kill_progress_t p;
    memset(&p, 0, sizeof p);
    for (unsigned k = 0; k < KILL_MAX_THREADS; k++)
        p.tid[k] = -1;
    const uint64_t start = now_ms();
    if (!early) {
        while (!p.ready) {
            ck_assert_msg(now_ms() - start < 30000, "%s: fp_kill never said it was ready", what);
            ck_assert_msg(progress_read(&p, fds[0], 100), "%s: fp_kill ended before it was ready", what);
        }
    }
    if (early) {
        /* no reading: the kill lands anywhere in the loader or the shim's start-up */
        struct timespec ts = { 0, (long)delay_us * 1000 };
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    } else {
        /* read while waiting, so that the program never blocks on a full pipe */
        const uint64_t kill_at = now_ms() + delay_us / 1000;
        for (uint64_t t; (t = now_ms()) < kill_at;)
            progress_read(&p, fds[0], (int)(kill_at - t));
    }
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "%s: status %#x", what, status);
    /* every line in the pipe was written before the kill: all of it is a lower bound */
    while (progress_read(&p, fds[0], 1000)) {
    }
    close(fds[0]);

    struct stat st;
    if (early) {
        /* Killed anywhere in start-up: no file, or a file without the magic that the reader refuses,
         * or a trace that reads back like any other. Never a file the reader takes for a trace and
         * then finds damaged. */
        if (lstat(trace, &st) != 0) {
            outcome[0]++;
            goto done;
        }
        char magic[MT_TRACE_MAGIC_LEN] = { 0 };
        const int fd = open(trace, O_RDONLY);
        ck_assert_int_ge(fd, 0);
        const ssize_t n = read(fd, magic, sizeof magic);
        close(fd);
        if (n < (ssize_t)sizeof magic || memcmp(magic, MT_TRACE_MAGIC, MT_TRACE_MAGIC_LEN) != 0) {
            mt_trace_t *t;
            mt_error_t err = { "" };
            ck_assert_msg(mt_trace_open(&t, trace, &err) < 0, "%s: a file without the magic opened as a trace", what);
            outcome[1]++;
            goto done;
        }
        outcome[2]++;
    }
    {
        mt_trace_t *t;
        mt_error_t err = { "" };
        const int rc = mt_trace_open(&t, trace, &err);
        ck_assert_msg(rc == 0, "%s: the killed trace does not open: %s", what, err.msg);
        const mt_file_header_t *h = mt_trace_header(t);
        ck_assert_msg(!(h->flags & MT_HDR_COMPLETE) && h->end_time == 0, "%s: a killed trace says it is complete",
                      what);
        ck_assert_uint_eq(h->pid, (uint64_t)pid);
        int seen[KILL_MAX_THREADS] = { 0 };
        for (size_t i = 0; i < mt_trace_thread_count(t); i++) {
            const uint32_t tid = mt_trace_thread(t, i)->tid;
            int k = -1;
            for (unsigned x = 0; x < nthreads; x++)
                if (p.tid[x] == (int64_t)tid)
                    k = (int)x;
            if (tid == (uint32_t)pid) {
                /* the main thread: whatever it did (thread creation) must decode */
                rec_list_t recs = { 0 };
                ck_assert_msg(read_thread(t, i, &recs, &err) == 0, "%s: main thread: %s", what, err.msg);
                rec_list_free(&recs);
                continue;
            }
            if (k < 0 && !early)
                ck_abort_msg("%s: thread with tid %u is none of the workers", what, tid);
            int kk = k;
            const uint64_t iter = check_worker_seq(t, i, k, 0, &kk, what);
            if (kk >= 0 && kk < (int)nthreads) {
                seen[kk]++;
                ck_assert_msg(iter >= p.done[kk],
                              "%s: worker %d: %" PRIu64 " iterations in the trace, the program reported %" PRIu64
                              " before the kill",
                              what, kk, iter, p.done[kk]);
            }
        }
        if (!early)
            for (unsigned x = 0; x < nthreads; x++)
                ck_assert_msg(seen[x] == 1, "%s: worker %u appears %d times in the trace", what, x, seen[x]);
        mt_trace_close(t);
    }
done:
    unlink(trace);
    unlink(errpath);
    free(errpath);
    free(prog);
    free(trace);
}

START_TEST(kill_at_random_moments)
{
    static const unsigned threads[] = { 1, 2, 8 };
    rng_t rng = { faults_seed() };
    char what[128];
    /* 54 runs killed 0-50 ms after the program is ready, 1, 2 and 8 threads in turn */
    for (int run = 0; run < 54; run++) {
        const unsigned n = threads[run % 3];
        const unsigned delay = (unsigned)rng_below(&rng, 51);
        snprintf(what, sizeof what, "run %d (seed %" PRIu64 ", %u threads, kill after %u ms)", run, faults_seed(), n,
                 delay);
        kill_run(n, delay * 1000, 0, what, NULL);
    }
    /* 24 runs killed 0-40 ms after the start: in the loader, in the shim's start-up (the file made,
     * its header being written) or in the first calls */
    int outcome[3] = { 0, 0, 0 };
    for (int run = 0; run < 24; run++) {
        const unsigned n = threads[run % 3];
        const unsigned delay = (unsigned)rng_below(&rng, 40000);
        snprintf(what, sizeof what, "early run %d (seed %" PRIu64 ", %u threads, kill after %u us)", run, faults_seed(),
                 n, delay);
        kill_run(n, delay, 1, what, outcome);
    }
    fprintf(stderr, "early kills: %d without a file, %d without the magic (refused), %d readable traces\n", outcome[0],
            outcome[1], outcome[2]);
}
END_TEST

/* ==== 2. fork storms, vfork, posix_spawn, exec chains =========================================== */

START_TEST(fork_storm)
{
    enum { NCHILD = 200 };
    char *prog = fp_path("fp_forkstorm");
    char *info = in_dir("storm.info");
    char *pattern = in_dir("storm.%%p.mtr");
    run_result_t r;
    const job_t j = { .argv = { prog, info, "200" }, .preload = 1, .trace = pattern, .timeout_s = 50 };
    run_pair(&j, 1, 0, &r);
    char *text = read_text_or_empty(info);
    const uint64_t parent = info1(text, "parent");

    char **names;
    const size_t nfiles = list_files(g_dir, "storm.", &names);
    free_names(names, nfiles);
    /* storm.info and one trace per process: the parent, 200 children, 20 grandchildren */
    ck_assert_uint_eq(nfiles, 1 + 1 + NCHILD + NCHILD / 10);

    /* the parent: its two calls, and a FORK event naming each child */
    char *path = in_dir("storm.%" PRIu64 ".mtr", parent);
    trace_recs_t tr;
    load_trace(path, &tr);
    assert_clean(&tr, "parent");
    ck_assert_uint_eq(tr.n, 1);
    rec_list_t calls = { 0 };
    calls_of(&tr.thr[0], &calls, 1);
    const want_t pw[] = { { .op = MT_OP_MALLOC, .size = 100 },
                          { .op = MT_OP_FREE, .ptr = calls.n ? calls.v[0].result : 0 } };
    assert_calls(&calls, pw, 2, "parent");
    rec_list_free(&calls);
    ck_assert_uint_eq(count_op(&tr.thr[0], MT_EV_FORK), NCHILD);
    uint64_t child_pid[NCHILD];
    for (int i = 0; i < NCHILD; i++) {
        child_pid[i] = info1(text, "child %d", i);
        int found = 0;
        for (size_t x = 0; x < tr.thr[0].n; x++)
            found += tr.thr[0].v[x].op == MT_EV_FORK && (uint64_t)tr.thr[0].v[x].arg[0] == child_pid[i];
        ck_assert_msg(found == 1, "the parent's trace names child %d (pid %" PRIu64 ") %d times", i, child_pid[i],
                      found);
    }
    free_trace(&tr);
    free(path);

    for (int i = 0; i < NCHILD; i++) {
        char what[64];
        snprintf(what, sizeof what, "child %d", i);
        path = in_dir("storm.%" PRIu64 ".mtr", child_pid[i]);
        load_trace(path, &tr);
        assert_clean(&tr, what);
        ck_assert_uint_eq(hdr(&tr)->pid, child_pid[i]);
        ck_assert_uint_eq(hdr(&tr)->ppid, parent);
        ck_assert_uint_eq(tr.n, 1);
        const rec_list_t *l = &tr.thr[0];
        ck_assert_uint_eq(l->v[0].op, MT_EV_THREAD_START);
        ck_assert_uint_eq(l->v[l->n - 1].op, MT_EV_THREAD_EXIT);
        calls_of(l, &calls, 1);
        const uint64_t a = calls.n > 0 ? calls.v[0].result : 0, b = calls.n > 1 ? calls.v[1].result : 0;
        const want_t cw[] = {
            { .op = MT_OP_MALLOC, .size = 1000 + (uint64_t)i },
            { .op = MT_OP_CALLOC, .count = 2, .size = 500 + (uint64_t)i },
            { .op = MT_OP_FREE, .ptr = a },
            { .op = MT_OP_FREE, .ptr = b },
        };
        assert_calls(&calls, cw, 4, what);
        rec_list_free(&calls);
        uint64_t grand = 0;
        if (i % 10 == 0) {
            grand = info1(text, "grand %d", i);
            const mt_record_t *f = find_op(l, MT_EV_FORK);
            ck_assert_msg(f && (uint64_t)f->arg[0] == grand, "%s: no FORK event naming its child %" PRIu64, what,
                          grand);
        }
        ck_assert_uint_eq(count_op(l, MT_EV_FORK), i % 10 == 0);
        free_trace(&tr);
        free(path);
        if (!grand)
            continue;
        snprintf(what, sizeof what, "grandchild %d", i);
        path = in_dir("storm.%" PRIu64 ".mtr", grand);
        load_trace(path, &tr);
        assert_clean(&tr, what);
        ck_assert_uint_eq(hdr(&tr)->ppid, child_pid[i]);
        calls_of(&tr.thr[0], &calls, 1);
        const want_t gw[] = { { .op = MT_OP_MALLOC, .size = 3000 + (uint64_t)i },
                              { .op = MT_OP_FREE, .ptr = calls.n ? calls.v[0].result : 0 } };
        assert_calls(&calls, gw, 2, what);
        rec_list_free(&calls);
        free_trace(&tr);
        free(path);
    }
    free(text);
    run_result_free(&r);
    free(pattern);
    free(info);
    free(prog);
}
END_TEST

/* fp_target's trace: exactly malloc(2000 + tag), realloc to 3000 + tag, free. */
static void check_target_trace(const char *path, int tag, const char *target)
{
    char what[64];
    snprintf(what, sizeof what, "target %d", tag);
    trace_recs_t tr;
    load_trace(path, &tr);
    assert_clean(&tr, what);
    size_t len;
    const char *exe = mt_trace_string(tr.t, MT_STR_EXE, 0, &len);
    ck_assert_msg(exe && len == strlen(target) && !memcmp(exe, target, len), "%s: EXE string is not %s", what, target);
    rec_list_t calls = { 0 };
    calls_of(&tr.thr[0], &calls, 1);
    const uint64_t p = calls.n > 0 ? calls.v[0].result : 0, q = calls.n > 1 ? calls.v[1].result : 0;
    const want_t w[] = {
        { .op = MT_OP_MALLOC, .size = 2000 + (uint64_t)tag },
        { .op = MT_OP_REALLOC, .ptr = p, .size = 3000 + (uint64_t)tag },
        { .op = MT_OP_FREE, .ptr = q },
    };
    assert_calls(&calls, w, 3, what);
    rec_list_free(&calls);
    free_trace(&tr);
}

START_TEST(vfork_and_posix_spawn)
{
    char *prog = fp_path("fp_spawn"), *target = fp_path("fp_target");
#ifdef FP_HAVE_STATIC
    char *static_target = fp_path("fp_target_static");
#else
    char *static_target = strdup("-");
#endif
    char *info = in_dir("spawn.info");
    char *pattern = in_dir("spawn.%%p.mtr");
    run_result_t r;
    const job_t j = { .argv = { prog, info, target, static_target }, .preload = 1, .trace = pattern };
    run_pair(&j, 1, 0, &r);
#ifdef FP_HAVE_STATIC
    ck_assert_str_eq(r.out, "target 1 ok\nvfork exit 11\ntarget 2 ok\nspawn exit 12\ntarget 3 ok\nstatic exit 13\n");
#else
    ck_assert_str_eq(r.out, "target 1 ok\nvfork exit 11\ntarget 2 ok\nspawn exit 12\n");
#endif
    char *text = read_text_or_empty(info);
    const uint64_t vpid = info1(text, "vfork"), spid = info1(text, "spawn");

    /* one trace for the parent, one for each dynamic image started; none for posix_spawn's helper
     * (it is the image's own process before its exec) nor for the static target */
    char **names;
    const size_t n = list_files(g_dir, "spawn.", &names);
    free_names(names, n);
    ck_assert_uint_eq(n, 1 + 3);

    char *path = in_dir("spawn.%" PRIu64 ".mtr", vpid);
    check_target_trace(path, 1, target);
    free(path);
    path = in_dir("spawn.%" PRIu64 ".mtr", spid);
    check_target_trace(path, 2, target);
    free(path);
#ifdef FP_HAVE_STATIC
    path = in_dir("spawn.%" PRIu64 ".mtr", info1(text, "static"));
    ck_assert_msg(access(path, F_OK) != 0, "a trace for the static program");
    free(path);
#endif

    /* the parent: its own calls only; no FORK or EXEC event for a vfork or a spawn */
    DIR *d = opendir(g_dir);
    char *parent = NULL;
    for (struct dirent *e; (e = readdir(d));) {
        unsigned long long pid;
        if (sscanf(e->d_name, "spawn.%llu.mtr", &pid) == 1 && pid != vpid && pid != spid)
            parent = path_in(g_dir, e->d_name);
    }
    closedir(d);
    ck_assert_ptr_nonnull(parent);
    trace_recs_t tr;
    load_trace(parent, &tr);
    assert_clean(&tr, "fp_spawn");
    ck_assert_uint_eq(tr.n, 1);
    ck_assert_ptr_null(find_op(&tr.thr[0], MT_EV_FORK));
    ck_assert_ptr_null(find_op(&tr.thr[0], MT_EV_EXEC));
    rec_list_t calls = { 0 };
    calls_of(&tr.thr[0], &calls, 1);
    const want_t w[] = { { .op = MT_OP_MALLOC, .size = 123 },
                         { .op = MT_OP_FREE, .ptr = calls.n ? calls.v[0].result : 0 } };
    assert_calls(&calls, w, 2, "fp_spawn");
    rec_list_free(&calls);
    free_trace(&tr);
    free(parent);
    free(text);
    run_result_free(&r);
    free(pattern);
    free(info);
    free(static_target);
    free(target);
    free(prog);
}
END_TEST

/* Runs fp_chain N FAMILY: one trace per image, each with exactly its image's calls; every image but
 * the last says that it called exec (EXEC event with the path, end fields, not complete). */
static void check_exec_chain(int n_images, const char *family, const char *const *how, int nhow)
{
    char *prog = fp_path("fp_chain");
    char *info = in_dir("chain.%s.info", family);
    char *trace = in_dir("chain.%s.mtr", family);
    char *name = in_dir("chain.%s.mtr", family), *base = strrchr(name, '/') + 1;
    char nbuf[8];
    snprintf(nbuf, sizeof nbuf, "%d", n_images);
    run_result_t r;
    const job_t j = { .argv = { prog, info, nbuf, family }, .preload = 1, .trace = trace };
    run_pair(&j, 1, 0, &r);
    char want_out[256] = "";
    for (int i = n_images; i >= 0; i--)
        snprintf(want_out + strlen(want_out), sizeof want_out - strlen(want_out), "image %d\n", i);
    ck_assert_str_eq(r.out, want_out);
    char *text = read_text_or_empty(info);
    uint64_t pid = info1(text, "image %d", n_images);

    /* one file per image: chain.mtr, then chain.mtr.PID, then chain.mtr.PID.1 ... */
    char **names;
    const size_t n = list_files(g_dir, base, &names);
    ck_assert_uint_eq(n, (size_t)n_images + 1);
    int seen[16] = { 0 };
    for (size_t f = 0; f < n; f++) {
        char *path = path_in(g_dir, names[f]);
        trace_recs_t tr;
        load_trace(path, &tr);
        ck_assert_uint_eq(hdr(&tr)->pid, pid);
        ck_assert_uint_eq(tr.n, 1);
        rec_list_t calls = { 0 };
        calls_of(&tr.thr[0], &calls, 1);
        ck_assert_uint_ge(calls.n, 1);
        const int image = (int)calls.v[0].size - 500;
        ck_assert_msg(image >= 0 && image <= n_images, "%s: its first call is no image's", names[f]);
        seen[image]++;
        char what[96];
        snprintf(what, sizeof what, "image %d (%s)", image, names[f]);
        const want_t w[] = { { .op = MT_OP_MALLOC, .size = 500 + (uint64_t)image },
                             { .op = MT_OP_FREE, .ptr = calls.v[0].result } };
        assert_calls(&calls, w, 2, what);
        rec_list_free(&calls);
        ck_assert_msg(string_has(tr.t, MT_STR_PATH, names[f]), "%s: PATH string", what);
        const mt_record_t *ex = find_op(&tr.thr[0], MT_EV_EXEC);
        if (image == 0) {
            assert_clean(&tr, what);
            ck_assert_ptr_null(ex);
        } else {
            /* the image that called exec says so: the EXEC event, the end fields, not complete */
            const char *fn = how[image % nhow];
            ck_assert_msg(ex != NULL, "%s left by %s: no EXEC event", what, fn);
            ck_assert_msg(ex->len == strlen(prog) && !memcmp(ex->data, prog, ex->len), "%s: EXEC names another path",
                          what);
            ck_assert_msg(hdr(&tr)->end_time != 0, "%s left by %s: no end fields", what, fn);
            ck_assert_uint_eq(hdr(&tr)->flags & MT_HDR_COMPLETE, 0);
            ck_assert_uint_eq(lost_in_threads(&tr), 0);
        }
        free_trace(&tr);
        free(path);
    }
    for (int i = 0; i <= n_images; i++)
        ck_assert_msg(seen[i] == 1, "image %d has %d traces", i, seen[i]);
    free_names(names, n);
    free(text);
    run_result_free(&r);
    free(name);
    free(trace);
    free(info);
    free(prog);
}

START_TEST(exec_chain)
{
    static const char *const how[] = { "execv", "execve", "execvp", "execvpe" };
    check_exec_chain(8, "v", how, 4); /* images 8 .. 0: each function twice */
}
END_TEST

/* execl, execle and execlp reach execve inside libc, past the execve wrapper: the shim wraps them
 * too (once a known bug: the image that called them read like a killed process). */
START_TEST(exec_chain_l)
{
    static const char *const how[] = { "execl", "execle", "execlp" };
    check_exec_chain(3, "l", how, 3);
}
END_TEST

/* ==== 3. threads ================================================================================ */

START_TEST(thread_churn)
{
    enum { NSHORT = 500 };
    char *prog = fp_path("fp_threads");
    char *info = in_dir("churn.info");
    char *trace = in_dir("churn.mtr");
    run_result_t r;
    const job_t j = { .argv = { prog, info, "churn", "500" }, .preload = 1, .trace = trace, .timeout_s = 50 };
    run_pair(&j, 1, 0, &r);
    char *text = read_text_or_empty(info);
    trace_recs_t tr;
    load_trace_capped(trace, &tr, 100000);
    assert_clean(&tr, "churn");
    ck_assert_uint_eq(tr.n, 1 + 2 + NSHORT);
    ck_assert_uint_eq(count_op(&tr.thr[0], MT_EV_THREAD_CREATE), 2 + NSHORT);
    size_t starts = 0;
    for (size_t i = 0; i < tr.n; i++)
        starts += count_op(&tr.thr[i], MT_EV_THREAD_START);
    ck_assert_uint_eq(starts, tr.n);

    /* the two workers: exactly their sequence, as many iterations as they counted */
    for (unsigned k = 0; k < 2; k++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "worker %u", k);
        uint64_t v[2];
        ck_assert_int_eq(info_get(text, prefix, v, 2), 2);
        const long ti = thread_by_tid(&tr, v[0]);
        ck_assert_msg(ti >= 0, "worker %u (tid %" PRIu64 ") is not in the trace", k, v[0]);
        int kk;
        const uint64_t iter = check_worker_seq(tr.t, (size_t)ti, (int)k, 1, &kk, prefix);
        ck_assert_msg(iter == v[1], "worker %u: %" PRIu64 " iterations recorded, it made %" PRIu64, k, iter, v[1]);
    }
    /* each short thread: its four calls, then its exit (glibc's own free(NULL) may follow) */
    for (unsigned s = 0; s < NSHORT; s++) {
        const long ti = thread_by_tid(&tr, info1(text, "short %u", s));
        ck_assert_msg(ti >= 0, "short thread %u is not in the trace", s);
        const rec_list_t *l = &tr.thr[ti];
        ck_assert_uint_eq(l->v[0].op, MT_EV_THREAD_START);
        ck_assert_int_eq(l->v[0].arg[0], 1); /* created by the main thread */
        const mt_record_t *e = find_op(l, MT_EV_THREAD_EXIT);
        ck_assert_msg(e != NULL, "short thread %u: no THREAD_EXIT", s);
        for (const mt_record_t *a = e + 1; a < l->v + l->n; a++)
            ck_assert_msg((a->op == MT_OP_FREE && a->ptr == 0) || a->op == MT_EV_RSS,
                          "short thread %u: op %u after its exit", s, a->op);
        rec_list_t calls = { 0 };
        calls_of(l, &calls, 1);
        const uint64_t p = calls.n > 0 ? calls.v[0].result : 0, q = calls.n > 1 ? calls.v[1].result : 0;
        const want_t w[] = { { .op = MT_OP_MALLOC, .size = 60000 + s },
                             { .op = MT_OP_CALLOC, .count = 3, .size = 8 + s % 5 },
                             { .op = MT_OP_FREE, .ptr = q },
                             { .op = MT_OP_FREE, .ptr = p } };
        char what[32];
        snprintf(what, sizeof what, "short thread %u", s);
        assert_calls(&calls, w, 4, what);
        rec_list_free(&calls);
    }
    free_trace(&tr);
    free(text);
    run_result_free(&r);
    free(trace);
    free(info);
    free(prog);
}
END_TEST

START_TEST(thousand_threads_at_once)
{
    enum { N = 1000 };
    char *prog = fp_path("fp_threads");
    char *info = in_dir("many.info");
    char *trace = in_dir("many.mtr");
    run_result_t r;
    const job_t j = { .argv = { prog, info, "many", "1000" }, .preload = 1, .trace = trace, .timeout_s = 50 };
    run_pair(&j, 1, 0, &r);
    char *text = read_text_or_empty(info);
    trace_recs_t tr;
    load_trace(trace, &tr);
    assert_clean(&tr, "many");
    ck_assert_uint_eq(tr.n, N + 1);
    size_t starts = 0;
    for (size_t i = 0; i < tr.n; i++)
        starts += count_op(&tr.thr[i], MT_EV_THREAD_START);
    ck_assert_uint_ge(starts, N + 1);
    ck_assert_uint_eq(starts, tr.n);
    ck_assert_uint_eq(count_op(&tr.thr[0], MT_EV_THREAD_CREATE), N);
    for (unsigned s = 0; s < N; s++) {
        const long ti = thread_by_tid(&tr, info1(text, "many %u", s));
        ck_assert_msg(ti >= 0, "thread %u is not in the trace", s);
        rec_list_t calls = { 0 };
        calls_of(&tr.thr[ti], &calls, 1);
        const want_t w[] = { { .op = MT_OP_MALLOC, .size = 20000 + s },
                             { .op = MT_OP_FREE, .ptr = calls.n ? calls.v[0].result : 0 } };
        char what[32];
        snprintf(what, sizeof what, "thread %u", s);
        assert_calls(&calls, w, 2, what);
        rec_list_free(&calls);
    }
    free_trace(&tr);
    free(text);
    run_result_free(&r);
    free(trace);
    free(info);
    free(prog);
}
END_TEST

/* ==== 4. signal handlers that allocate ========================================================== */

/* Runs fp_signal MODE NSIG (with `env`, e.g. stacks): same output traced and untraced, and every
 * call of the main thread (the loop's and the handlers') either recorded or counted as lost. */
static void check_signals(const char *mode, const char *nsig, const char *max_iter, const char *env, const char *what)
{
    char *prog = fp_path("fp_signal");
    char *info = in_dir("signal.%s.%s.info", mode, env ? "stacks" : "plain");
    char *trace = in_dir("signal.%s.%s.mtr", mode, env ? "stacks" : "plain");
    run_result_t r;
    const job_t j = {
        .argv = { prog, info, mode, nsig, max_iter }, .env = { env }, .preload = 1, .trace = trace, .timeout_s = 50
    };
    run_pair(&j, 1, 0, &r);
    char *text = read_text_or_empty(info);
    const uint64_t handled = info1(text, "handled"), hcalls = info1(text, "handler_calls"),
                   loop = info1(text, "loop_calls"), skipped = info1(text, "skipped");
    /* Many signals: all of them, or as many as came before the loop's end. How many arrive depends
     * on the load (on this VM a signal to a busy thread on another CPU waits for a timer tick), so
     * the bound is one that a loaded 2-core machine still meets. */
    ck_assert_msg(handled >= 20, "%s: only %" PRIu64 " signals handled", what, handled);
    /* the loop makes millions of calls: the main thread is read with a cursor, not held in memory */
    mt_trace_t *t;
    mt_error_t err = { "" };
    ck_assert_msg(mt_trace_open(&t, trace, &err) == 0, "%s: %s", what, err.msg);
    const mt_file_header_t *h = mt_trace_header(t);
    ck_assert_uint_eq(h->flags & (MT_HDR_COMPLETE | MT_HDR_TRUNCATED), MT_HDR_COMPLETE);
    const uint64_t tid = info1(text, "tid");
    uint64_t lost = UINT64_MAX, all_lost = 0, recorded = 0, k777 = 0, foreign = 0;
    uint64_t foreign_ptr[16];
    for (size_t i = 0; i < mt_trace_thread_count(t); i++) {
        const int main_thread = mt_trace_thread(t, i)->tid == tid;
        mt_thread_cursor_t tc;
        ck_assert_int_eq(mt_thread_cursor_init(&tc, t, i), 0);
        mt_record_t rec;
        int rc, exited = 0;
        while ((rc = mt_thread_cursor_next(&tc, &rec, &err)) > 0) {
            if (rec.op == MT_EV_THREAD_EXIT && !exited) {
                exited = 1;
                all_lost += (uint64_t)rec.arg[0];
                if (main_thread)
                    lost = (uint64_t)rec.arg[0];
            }
            if (!main_thread || exited || rec.op > MT_OP_LAST_CALL)
                continue;
            /* The main thread makes the loop's calls, the handlers' and those of pthread_create
             * (glibc's thread descriptor and TLS: calls the program cannot count, a calloc): those
             * and the frees of their blocks are left out. */
            int is_foreign = 0;
            if (rec.op == MT_OP_FREE) {
                for (uint64_t f = 0; f < foreign && f < 16; f++)
                    is_foreign |= rec.ptr && foreign_ptr[f] == rec.ptr;
            } else if (!((rec.op == MT_OP_MALLOC && rec.size >= 1 && rec.size <= 512) ||
                         (rec.op == MT_OP_MALLOC && rec.size == 777) ||
                         (rec.op == MT_OP_USABLE_SIZE && rec.ptr == 0))) {
                if (foreign < 16)
                    foreign_ptr[foreign] = rec.result;
                is_foreign = 1;
            }
            if (is_foreign) {
                foreign++;
                continue;
            }
            recorded++;
            k777 += rec.op == MT_OP_MALLOC && rec.size == 777;
        }
        mt_thread_cursor_fini(&tc);
        ck_assert_msg(rc == 0, "%s: thread %zu: %s", what, i, err.msg);
    }
    mt_trace_close(t);
    ck_assert_msg(lost != UINT64_MAX, "%s: the main thread has no THREAD_EXIT", what);
    ck_assert_uint_eq(h->lost_calls, all_lost);
    ck_assert_msg(foreign <= 4, "%s: %" PRIu64 " calls that are neither the loop's nor the handler's", what, foreign);
    fprintf(stderr,
            "%s: %" PRIu64 " signals, %" PRIu64 " handler calls (%" PRIu64 " times skipped inside malloc), %" PRIu64
            " loop calls, %" PRIu64 " recorded, %" PRIu64 " lost (nested in a record being written)\n",
            what, handled, hcalls, skipped, loop, recorded, lost);
    ck_assert_msg(recorded + lost == loop + hcalls,
                  "%s: %" PRIu64 " calls recorded + %" PRIu64 " lost, the program made %" PRIu64 " + %" PRIu64, what,
                  recorded, lost, loop, hcalls);
    ck_assert_uint_le(k777, hcalls / 2);
    free(text);
    run_result_free(&r);
    free(trace);
    free(info);
    free(prog);
}

START_TEST(signal_handlers_allocate)
{
    /* at most 12 million calls (80 MB of trace) each */
    check_signals("usr1", "2000", "3000000", NULL, "SIGUSR1 from a thread");
    check_signals("alrm", "2000", "3000000", NULL, "SIGALRM from a timer");
    check_signals("usr1", "1000", "1000000", "MTRACE_STACKS=8", "SIGUSR1 with stacks");
}
END_TEST

/* ==== 5. dlopen / dlclose ======================================================================= */

typedef struct snapshot {
    uint64_t generation;
    size_t n;
    mt_module_def_t *m;
} snapshot_t;

/* The module of `snap` whose PT_LOAD segments hold `addr`, or NULL. */
static const mt_module_def_t *module_of(const snapshot_t *snap, uint64_t addr)
{
    for (size_t i = 0; i < snap->n; i++) {
        const mt_module_def_t *m = &snap->m[i];
        for (uint32_t s = 0; s < m->nseg; s++)
            if (addr >= m->base + m->seg[s].vaddr && addr < m->base + m->seg[s].vaddr + m->seg[s].memsz)
                return m;
    }
    return NULL;
}

static int module_named(const mt_module_def_t *m, const char *needle)
{
    return m && memmem(m->name, m->name_len, needle, strlen(needle)) != NULL;
}

/* Checks a --stacks trace of fp_dl: MODULE snapshots come again when the set of objects changed,
 * every frame of every stack lies in an object of the snapshot in force when the stack was defined,
 * (with `exact`) the libraries' calls are all there and (with `attribution`) each call's stack goes
 * through the library that made it. Returns the number of generations. */
static size_t check_dl_trace(const char *trace, unsigned rounds, int exact, int attribution, const char *what)
{
    trace_recs_t tr;
    load_trace(trace, &tr);
    assert_clean(&tr, what);
    ck_assert_uint_eq(tr.n, 1);
    ck_assert_uint_eq(hdr(&tr)->flags & MT_HDR_STACKS, MT_HDR_STACKS);
    const rec_list_t *l = &tr.thr[0];
    snapshot_t cur = { 0, 0, NULL };
    size_t generations = 0, stacks = 0, snap_with_a = 0, snap_with_b = 0, lib_calls = 0;
    mt_stack_def_t *defs = NULL; /* by id */
    unsigned *def_lib = NULL;    /* by id: bit 0, a frame in library A; bit 1, in B (when defined) */
    size_t ndefs = 0;
    uint64_t last_gen = UINT64_MAX;
    char buf[512];
    for (size_t i = 0; i < l->n; i++) {
        const mt_record_t *r = &l->v[i];
        if (r->op == MT_EV_MODULE) {
            mt_module_def_t m;
            ck_assert_msg(mt_decode_module(r, &m) == 0, "%s: MODULE event %zu does not decode", what, i);
            if (m.generation != last_gen) { /* a new snapshot */
                ck_assert_msg(last_gen == UINT64_MAX || m.generation > last_gen,
                              "%s: generation %" PRIu64 " after %" PRIu64, what, m.generation, last_gen);
                last_gen = m.generation;
                generations++;
                cur.n = 0;
            }
            cur.m = realloc(cur.m, (cur.n + 1) * sizeof *cur.m);
            /* the name points into the record's payload, which the list owns */
            cur.m[cur.n++] = m;
            snap_with_a += module_named(&m, "fp_dl_a");
            snap_with_b += module_named(&m, "fp_dl_b");
        } else if (r->op == MT_EV_STACK) {
            mt_stack_def_t s;
            ck_assert_msg(mt_decode_stack(r, &s) == 0, "%s: STACK event %zu does not decode", what, i);
            ck_assert_msg(cur.n > 0, "%s: stack %u defined before any MODULE snapshot", what, s.id);
            for (uint32_t f = 0; f < s.nframes; f++) {
                if (f + 1 == s.nframes && s.frames[f] == 0)
                    break; /* the cut marker: the stack went on past the frame limit (spec: "Callsites") */
                ck_assert_msg(module_of(&cur, s.frames[f] - 1) != NULL,
                              "%s: stack %u frame %u (%#" PRIx64 ") lies in no object of snapshot %" PRIu64, what, s.id,
                              f, s.frames[f], last_gen);
            }
            if (s.id >= ndefs) {
                defs = realloc(defs, (s.id + 1) * sizeof *defs);
                def_lib = realloc(def_lib, (s.id + 1) * sizeof *def_lib);
                memset(defs + ndefs, 0, (s.id + 1 - ndefs) * sizeof *defs);
                memset(def_lib + ndefs, 0, (s.id + 1 - ndefs) * sizeof *def_lib);
                ndefs = s.id + 1;
            }
            defs[s.id] = s;
            for (uint32_t f = 0; f < s.nframes; f++) {
                const mt_module_def_t *m = module_of(&cur, s.frames[f] - 1);
                def_lib[s.id] |= (module_named(m, "fp_dl_a") ? 1u : 0u) | (module_named(m, "fp_dl_b") ? 2u : 0u);
            }
            stacks++;
        } else if (r->op <= MT_OP_LAST_CALL) {
            ck_assert_msg(r->flags & MT_FLAG_STACK, "%s: call without a stack id: %s", what,
                          record_str(r, buf, sizeof buf));
            ck_assert_msg(r->stack < ndefs && defs[r->stack].id == r->stack, "%s: stack id %u not defined before use",
                          what, r->stack);
            /* A call made inside library A or B (fp_lib_alloc's malloc): its stack, read against the
             * objects loaded when the stack was defined (doc/trace-format.md, "Callsites"), goes
             * through that library and not the other. B is loaded where A was a moment ago: a stack
             * id handed out for A's code must not stand for B's. */
            unsigned tag = 0;
            for (unsigned x = 1; x <= 2; x++)
                if (r->op == MT_OP_MALLOC && r->size >= 9000 + x * 100 && r->size < 9000 + x * 100 + rounds)
                    tag = x;
            lib_calls += tag != 0;
            if (tag && attribution) {
                ck_assert_msg(def_lib[r->stack] == tag,
                              "%s: %s: its stack %u was defined with frames in %s, the call was made in %s", what,
                              record_str(r, buf, sizeof buf), r->stack,
                              def_lib[r->stack] == 1   ? "fp_dl_a"
                              : def_lib[r->stack] == 2 ? "fp_dl_b"
                              : def_lib[r->stack]      ? "both"
                                                       : "neither library",
                              tag == 1 ? "fp_dl_a" : "fp_dl_b");
            }
        }
    }
    if (exact)
        ck_assert_uint_eq(lib_calls, rounds + (rounds + 2) / 3);
    free(defs);
    free(def_lib);
    free(cur.m);
    free_trace(&tr);
    return generations;
}

START_TEST(dlopen_dlclose)
{
    char *prog = fp_path("fp_dl");
    char *trace = in_dir("dl.mtr");
    run_result_t r;
    const job_t j = {
        .argv = { prog, FP_DL_A, FP_DL_B, "30", "plain" }, .env = { "MTRACE_STACKS=8" }, .preload = 1, .trace = trace
    };
    run_pair(&j, 0, 0, &r);
    ck_assert_str_eq(r.out, "dl: 30 rounds, 40 loads\n");
    check_dl_trace(trace, 30, 1, 0, "dlopen");
    run_result_free(&r);

    /* RTLD_DEEPBIND: the library looks up malloc in its own scope first, which holds libc and not
     * the preloaded shim, so its calls bypass the recorder (as they bypass any LD_PRELOAD allocator);
     * the frees of its blocks by the program are recorded. The trace must still read back whole and
     * the MODULE snapshots follow the loads. */
    char *trace2 = in_dir("dldeep.mtr");
    const job_t j2 = { .argv = { prog, FP_DL_A, FP_DL_B, "30", "deepbind" },
                       .env = { "MTRACE_STACKS=8" },
                       .preload = 1,
                       .trace = trace2 };
    run_pair(&j2, 0, 0, &r);
    ck_assert_str_eq(r.out, "dl: 30 rounds, 40 loads\n");
    check_dl_trace(trace2, 30, 0, 0, "dlopen RTLD_DEEPBIND");
    trace_recs_t tr;
    load_trace(trace2, &tr);
    rec_list_t calls = { 0 };
    calls_of(&tr.thr[0], &calls, 1);
    size_t lib_calls = 0;
    for (size_t i = 0; i < calls.n; i++)
        lib_calls += calls.v[i].op == MT_OP_MALLOC && calls.v[i].size >= 4100 && calls.v[i].size < 9300;
    ck_assert_msg(lib_calls == 0, "%zu of the DEEPBIND library's mallocs recorded: expected none", lib_calls);
    rec_list_free(&calls);
    free_trace(&tr);
    run_result_free(&r);
    free(trace2);
    free(trace);
    free(prog);
}
END_TEST

/* Library B loaded where library A was (same layout, same call site): B's calls must get stacks of
 * their own, defined against a MODULE snapshot that names B (once a known bug: stack ids were keyed
 * by return addresses only and B's allocations were attributed to A). */
START_TEST(dlopen_stack_ids)
{
    char *prog = fp_path("fp_dl");
    char *trace = in_dir("dlids.mtr");
    run_result_t r;
    const job_t j = {
        .argv = { prog, FP_DL_A, FP_DL_B, "30", "plain" }, .env = { "MTRACE_STACKS=8" }, .preload = 1, .trace = trace
    };
    run_pair(&j, 0, 0, &r);
    check_dl_trace(trace, 30, 1, 1, "dlopen, same address");
    run_result_free(&r);
    free(trace);
    free(prog);
}
END_TEST

/* ---- the stack table: many stacks, several threads ---------------------------------------------- */

typedef struct frames_ref {
    uint32_t n;
    uint64_t *f; /* owned: the frames of one STACK event */
} frames_ref_t;

static int frames_cmp(const void *a, const void *b)
{
    const frames_ref_t *x = *(frames_ref_t *const *)a, *y = *(frames_ref_t *const *)b;
    if (x->n != y->n)
        return x->n < y->n ? -1 : 1;
    return memcmp(x->f, y->f, x->n * sizeof *x->f);
}

/* Every decoded record of every thread of `trace`, one at a time, to `fn`. */
static void for_each_record(const mt_trace_t *t, void (*fn)(const mt_record_t *, void *), void *arg)
{
    mt_error_t err = { "" };
    for (size_t i = 0; i < mt_trace_thread_count(t); i++) {
        mt_thread_cursor_t tc;
        ck_assert_int_eq(mt_thread_cursor_init(&tc, t, i), 0);
        mt_record_t r;
        int rc;
        while ((rc = mt_thread_cursor_next(&tc, &r, &err)) > 0)
            fn(&r, arg);
        mt_thread_cursor_fini(&tc);
        ck_assert_msg(rc == 0, "thread %zu: record does not decode: %s", i, err.msg);
    }
}

typedef struct stack_check {
    frames_ref_t *def; /* by id */
    size_t ndef, events;
    frames_ref_t *canon[2][1u << 16]; /* by phase (few, many) and pattern: the first call's stack */
    uint64_t calls[2];
    uint8_t *few_ids; /* ids used by the few-stacks phase */
    size_t few_distinct;
} stack_check_t;

/* Keeps the frames of STACK event r in defs[id], growing defs (*ndef entries) as ids need. */
static void keep_stack(const mt_record_t *r, frames_ref_t **defs, size_t *ndef)
{
    mt_stack_def_t s;
    ck_assert_int_eq(mt_decode_stack(r, &s), 0);
    ck_assert_msg(s.id >= 1 && s.id <= MT_STACK_ID_MAX, "stack id %u", s.id);
    if (s.id >= *ndef) {
        const size_t n = (size_t)s.id * 2;
        *defs = realloc(*defs, n * sizeof **defs);
        memset(*defs + *ndef, 0, (n - *ndef) * sizeof **defs);
        *ndef = n;
    }
    frames_ref_t *d = &(*defs)[s.id];
    ck_assert_msg(d->f == NULL, "stack id %u defined twice", s.id);
    d->n = s.nframes;
    d->f = malloc(s.nframes * sizeof *s.frames + 1);
    memcpy(d->f, s.frames, s.nframes * sizeof *s.frames);
}

static void collect_stack(const mt_record_t *r, void *arg)
{
    stack_check_t *c = arg;
    if (r->op != MT_EV_STACK)
        return;
    keep_stack(r, &c->def, &c->ndef);
    c->events++;
}

/* A call of fp_stacks: its stack must be the one every other call of its pattern has. */
static void check_call_stack(const mt_record_t *r, void *arg)
{
    stack_check_t *c = arg;
    int phase;
    uint64_t p;
    if (r->op == MT_OP_MALLOC && r->size >= 1 && r->size <= 1u << 13)
        phase = 0, p = r->size - 1;
    else if (r->op == MT_OP_CALLOC && r->size == 0 && r->count >= 1 && r->count <= 1u << 16)
        phase = 1, p = r->count - 1;
    else
        return;
    char buf[512];
    ck_assert_msg(r->flags & MT_FLAG_STACK, "call without a stack id: %s", record_str(r, buf, sizeof buf));
    ck_assert_msg(r->stack < c->ndef && c->def[r->stack].f, "%s: stack id %u is defined nowhere",
                  record_str(r, buf, sizeof buf), r->stack);
    frames_ref_t *d = &c->def[r->stack];
    frames_ref_t **canon = &c->canon[phase][p];
    if (!*canon)
        *canon = d;
    else
        ck_assert_msg(frames_cmp(canon, &d) == 0,
                      "%s: stack id %u has other frames than pattern %" PRIu64 "'s first call",
                      record_str(r, buf, sizeof buf), r->stack, p);
    c->calls[phase]++;
    if (phase == 0) {
        c->few_distinct += !c->few_ids[r->stack];
        c->few_ids[r->stack] = 1;
    }
}

/* Patterns have stacks of their own: no two patterns' stacks are the same frames. */
static void assert_patterns_apart(frames_ref_t **canon, size_t n, const char *what)
{
    frames_ref_t **v = malloc(n * sizeof *v);
    memcpy(v, canon, n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(v[i], "%s: pattern %zu was never called", what, i);
    qsort(v, n, sizeof *v, frames_cmp);
    for (size_t i = 1; i < n; i++)
        ck_assert_msg(frames_cmp(&v[i - 1], &v[i]) != 0, "%s: two patterns have the same stack", what);
    free(v);
}

/* ---- the frame walker: the frames unw_backtrace gives --------------------------------------------- */

typedef struct walk_check {
    frames_ref_t *def; /* by stack id */
    size_t ndef;
    uint32_t *probe_stack; /* by probe: the stack id of its malloc, 0 before it is met */
    size_t nprobes;
} walk_check_t;

#define WALK_PROBE_BASE 70000 /* tests/faults/fp_stackwalk.c */

static void walk_collect(const mt_record_t *r, void *arg)
{
    walk_check_t *c = arg;
    if (r->op == MT_EV_STACK) {
        keep_stack(r, &c->def, &c->ndef);
    } else if (r->op == MT_OP_MALLOC && r->size >= WALK_PROBE_BASE && r->size < WALK_PROBE_BASE + c->nprobes) {
        char buf[512];
        ck_assert_msg(r->flags & MT_FLAG_STACK, "probe without a stack id: %s", record_str(r, buf, sizeof buf));
        c->probe_stack[r->size - WALK_PROBE_BASE] = r->stack;
    }
}

/* fp_stackwalk under MTRACE_STACKS=limit: every probe's malloc has the frames unw_backtrace gave the
 * probe past its first, cut as doc/trace-format.md ("Callsites") says. */
static void check_stack_walk(unsigned limit)
{
    char *prog = fp_path("fp_stackwalk");
    char *info = in_dir("walk%u.info", limit);
    char *trace = in_dir("walk%u.mtr", limit);
    char env[32];
    snprintf(env, sizeof env, "MTRACE_STACKS=%u", limit);
    run_result_t r;
    const job_t j = { .argv = { prog, info }, .env = { env }, .preload = 1, .trace = trace };
    run_pair(&j, 1, 0, &r);
    walk_check_t c = { 0 };
    ck_assert_int_eq(sscanf(r.out, "stackwalk: %zu probes", &c.nprobes), 1);
    ck_assert_uint_gt(c.nprobes, 100);
    c.probe_stack = calloc(c.nprobes, sizeof *c.probe_stack);
    trace_recs_t tr = { 0 };
    mt_error_t err = { "" };
    ck_assert_msg(mt_trace_open(&tr.t, trace, &err) == 0, "%s: %s", trace, err.msg);
    for_each_record(tr.t, walk_collect, &c);
    const unsigned kept = limit < 64 ? limit : 63;
    char *text = read_text_or_empty(info);
    size_t checked = 0, cut = 0;
    for (const char *line = strstr(text, "probe "); line; line = strstr(line, "\nprobe ")) {
        line += *line == '\n';
        char *s;
        const uint64_t size = strtoull(line + 6, &s, 10);
        const unsigned m = (unsigned)strtoul(s, &s, 10);
        ck_assert_msg(size >= WALK_PROBE_BASE && size < WALK_PROBE_BASE + c.nprobes && m >= 2, "info line: %.80s",
                      line);
        const uint32_t id = c.probe_stack[size - WALK_PROBE_BASE];
        ck_assert_msg(id && id < c.ndef && c.def[id].f, "probe %" PRIu64 ": no stack defined", size);
        const frames_ref_t *d = &c.def[id];
        /* unw_backtrace's frames past the probe's, and the record's: the same, or the record's cut */
        const unsigned want = m > limit ? kept + 1 : m;
        ck_assert_msg(d->n == want, "probe %" PRIu64 ": %u frames recorded, %u expected (%u from unw_backtrace)", size,
                      d->n, want, m);
        ck_assert_msg(d->f[0] != 0, "probe %" PRIu64 ": frame 0 is 0", size);
        for (unsigned i = 1; i < m && i < (m > limit ? kept : m); i++) {
            const uint64_t f = strtoull(s, &s, 16);
            ck_assert_msg(d->f[i] == f, "probe %" PRIu64 ": frame %u is %#" PRIx64 ", unw_backtrace gave %#" PRIx64,
                          size, i, d->f[i], f);
        }
        if (m > limit) {
            ck_assert_msg(d->f[kept] == 0, "probe %" PRIu64 ": no cut marker", size);
            cut++;
        }
        checked++;
    }
    ck_assert_uint_eq(checked, c.nprobes);
    ck_assert_uint_gt(cut, 0);
    for (size_t i = 0; i < c.ndef; i++)
        free(c.def[i].f);
    free(c.def);
    free(c.probe_stack);
    free(text);
    mt_trace_close(tr.t);
    run_result_free(&r);
    free(trace);
    free(info);
    free(prog);
}

START_TEST(stack_walk)
{
    check_stack_walk(8);
    check_stack_walk(64);
}
END_TEST

/* fp_stacks: 2^13 stacks met three times by each thread, then 2^16, more than the shim's stack table
 * holds at once (libmtrace/shim_stack_table.c), twice. Every call has a stack id defined in the file,
 * the calls of one pattern all have its frames, the patterns' stacks differ, and a stack met again
 * while the table still holds it is not numbered again. */
START_TEST(stack_table)
{
    char *prog = fp_path("fp_stacks");
    char *trace = in_dir("stacks.mtr");
    run_result_t r;
    const unsigned threads = 3;
    const job_t j = { .argv = { prog, "3" }, .env = { "MTRACE_STACKS=24" }, .preload = 1, .trace = trace };
    run_pair(&j, 0, 0, &r);
    ck_assert_str_eq(r.out, "stacks: 3 threads, 8192 and 65536 patterns\n");
    trace_recs_t tr = { 0 };
    mt_error_t err = { "" };
    ck_assert_msg(mt_trace_open(&tr.t, trace, &err) == 0, "%s: %s", trace, err.msg);
    stack_check_t *c = calloc(1, sizeof *c);
    for_each_record(tr.t, collect_stack, c);
    c->few_ids = calloc(c->ndef, 1);
    for_each_record(tr.t, check_call_stack, c);
    ck_assert_uint_eq(c->calls[0], threads * 3u << 13);
    ck_assert_uint_eq(c->calls[1], threads * 2u << 16);
    assert_patterns_apart(c->canon[0], 1u << 13, "2^13 patterns");
    assert_patterns_apart(c->canon[1], 1u << 16, "2^16 patterns");
    ck_assert_msg(c->few_distinct <= 2u << 13, "%zu stack ids for the 8192 stacks of the first phase", c->few_distinct);
    for (size_t i = 0; i < c->ndef; i++)
        free(c->def[i].f);
    free(c->def);
    free(c->few_ids);
    free(c);
    mt_trace_close(tr.t);
    run_result_free(&r);
    free(trace);
    free(prog);
}
END_TEST

/* ==== 6. programs linked against another allocator ============================================== */

static void check_linked(const char *name, const char *lib)
{
    char *prog = fp_path(name);
    char *info = in_dir("%s.info", name);
    char *trace = in_dir("%s.mtr", name);
    run_result_t r;
    const job_t j = { .argv = { prog, info }, .preload = 1, .trace = trace };
    run_pair(&j, 1, 0, &r);
    ck_assert_str_eq(r.out, "linked: 6 blocks\n");
    char *text = read_text_or_empty(info);
    trace_recs_t tr;
    load_trace(trace, &tr);
    assert_clean(&tr, name);
    ck_assert_msg(string_has(tr.t, MT_STR_ALLOCATOR, lib), "%s: the ALLOCATOR string does not name %s", name, lib);
    ck_assert_msg(!(hdr(&tr)->flags & MT_HDR_GLIBC_FLAGS), "%s: glibc flags with %s", name, lib);
    ck_assert_uint_eq(tr.n, 1);
    rec_list_t all = { 0 }, calls = { 0 };
    calls_of(&tr.thr[0], &all, 1);
    /* jemalloc and tcmalloc need libstdc++, whose initializer runs before the shim's constructor and
     * allocates its emergency exception pool (72704 bytes with GCC 12), never freed: recorded, as
     * the call that starts the shim. Then the program's calls, exactly. */
    size_t first = 0;
    if (all.n > 0 && all.v[0].op == MT_OP_MALLOC && all.v[0].size >= 65536 && all.v[0].size != 100)
        first = 1;
    for (size_t i = first; i < all.n; i++)
        rec_list_push(&calls, &all.v[i]);
    rec_list_free(&all);
    const uint64_t a = info1(text, "a"), c = info1(text, "c"), rr = info1(text, "r"), pm = info1(text, "pm"),
                   al = info1(text, "al"), me = info1(text, "me");
    const want_t w[] = {
        { .op = MT_OP_MALLOC, .size = 100, .result = a },
        { .op = MT_OP_CALLOC, .count = 10, .size = 24, .result = c },
        { .op = MT_OP_REALLOC, .ptr = a, .size = 5000, .result = rr },
        { .op = MT_OP_POSIX_MEMALIGN, .align = 64, .size = 200, .result = pm },
        { .op = MT_OP_ALIGNED_ALLOC, .align = 128, .size = 256, .result = al },
        { .op = MT_OP_MEMALIGN, .align = 32, .size = 100, .result = me },
        { .op = MT_OP_USABLE_SIZE, .ptr = c, .size = info1(text, "u_c") },
        { .op = MT_OP_FREE, .ptr = c },
        { .op = MT_OP_FREE, .ptr = rr },
        { .op = MT_OP_FREE, .ptr = pm },
        { .op = MT_OP_FREE, .ptr = al },
        { .op = MT_OP_FREE, .ptr = me },
        { .op = MT_OP_FREE },
    };
    assert_calls(&calls, w, sizeof w / sizeof w[0], name);
    /* the usable sizes are the allocator's own */
    ck_assert_uint_eq(calls.v[1].usable, info1(text, "u_c"));
    for (size_t i = 0; i < 6; i++)
        ck_assert_uint_ge(calls.v[i].usable, calls.v[i].size * (calls.v[i].count ? calls.v[i].count : 1));
    rec_list_free(&calls);
    free_trace(&tr);
    free(text);
    run_result_free(&r);
    free(trace);
    free(info);
    free(prog);
}

START_TEST(linked_allocators)
{
    int tested = 0;
#ifdef FP_HAVE_JEMALLOC
    check_linked("fp_linked_jemalloc", "libjemalloc");
    tested++;
#endif
#ifdef FP_HAVE_TCMALLOC
    check_linked("fp_linked_tcmalloc", "libtcmalloc");
    tested++;
#endif
    if (!tested)
        fprintf(stderr, "linked_allocators: neither jemalloc nor tcmalloc to link against\n");
}
END_TEST

/* ==== 7. allocation before the shim has started ================================================= */

START_TEST(allocation_before_startup)
{
    /* A library constructor runs before the shim's own: its first malloc starts the shim, and is
     * recorded with everything after it. */
    char *prog = fp_path("fp_early");
    char *info = in_dir("early.info");
    char *trace = in_dir("early.mtr");
    char *cwd = in_dir("cwd");
    ck_assert_int_eq(mkdir(cwd, 0755), 0);
    run_result_t r;
    job_t j = { .argv = { prog, info }, .preload = 1, .trace = trace, .cwd = cwd };
    run_pair(&j, 1, 0, &r);
    ck_assert_str_eq(r.out, "early: ok\n");
    char *text = read_text_or_empty(info);
    trace_recs_t tr;
    load_trace(trace, &tr);
    assert_clean(&tr, "fp_early");
    rec_list_t calls = { 0 };
    calls_of(&tr.thr[0], &calls, 1);
    const uint64_t eb = info1(text, "early_block"), ef = info1(text, "early_freed"), mb = info1(text, "main_block");
    const want_t w[] = {
        { .op = MT_OP_MALLOC, .size = 5151, .result = eb },
        { .op = MT_OP_MALLOC, .size = 5152, .result = ef },
        { .op = MT_OP_FREE, .ptr = ef },
        { .op = MT_OP_FREE, .ptr = eb },
        { .op = MT_OP_MALLOC, .size = 7171, .result = mb },
        { .op = MT_OP_FREE, .ptr = mb },
    };
    assert_calls(&calls, w, 6, "fp_early");
    rec_list_free(&calls);
    free_trace(&tr);
    run_result_free(&r);
    free(text);
    free(prog);

    /* A preinit_array function runs before libc's initializer has set environ: the shim cannot read
     * its options yet, so it does not start there (it would trace into ./mtrace.PID.mtr whatever
     * MTRACE_OUT says). Those calls are not recorded (main's free of the preinit block is, as the
     * free of a block allocated before tracing); from the library constructor on, all are. */
    prog = fp_path("fp_preinit");
    char *info2 = in_dir("preinit.info");
    char *trace2 = in_dir("preinit.mtr");
    j = (job_t){ .argv = { prog, info2 }, .preload = 1, .trace = trace2, .cwd = cwd };
    run_pair(&j, 1, 0, &r);
    char **names;
    size_t n = list_files(cwd, "", &names);
    ck_assert_msg(n == 0, "a file in the working directory: %s (MTRACE_OUT is %s)", n ? names[0] : "", trace2);
    free_names(names, n);
    text = read_text_or_empty(info2);
    load_trace(trace2, &tr);
    assert_clean(&tr, "fp_preinit");
    calls_of(&tr.thr[0], &calls, 1);
    const uint64_t pb = info1(text, "pre_block");
    const uint64_t eb2 = info1(text, "early_block"), ef2 = info1(text, "early_freed"), mb2 = info1(text, "main_block");
    const want_t w2[] = {
        { .op = MT_OP_MALLOC, .size = 5151, .result = eb2 },
        { .op = MT_OP_MALLOC, .size = 5152, .result = ef2 },
        { .op = MT_OP_FREE, .ptr = ef2 },
        { .op = MT_OP_FREE, .ptr = pb },
        { .op = MT_OP_FREE, .ptr = eb2 },
        { .op = MT_OP_MALLOC, .size = 7171, .result = mb2 },
        { .op = MT_OP_FREE, .ptr = mb2 },
    };
    assert_calls(&calls, w2, 7, "fp_preinit");
    rec_list_free(&calls);
    free_trace(&tr);
    run_result_free(&r);
    free(text);
    free(trace2);
    free(info2);
    free(cwd);
    free(trace);
    free(info);
    free(prog);
}
END_TEST

/* ==== 8. secure-execution mode ================================================================== */

/* Why AT_SECURE cannot be had here, or NULL. Sets up nothing. */
static const char *secure_unavailable(void)
{
    static char why[256];
    if (geteuid() != 0)
        return "not root: cannot make a setuid-root copy";
    if (access("/usr/bin/setpriv", X_OK) != 0)
        return "no /usr/bin/setpriv";
    char *dir = strdup("/tmp/mtrace-secure-probe-XXXXXX");
    if (!mkdtemp(dir))
        return "mkdtemp failed";
    chmod(dir, 0755);
    /* outside a test: no ck_assert here (path_in would use one) */
    char *copy = NULL, *cmd = NULL;
    if (asprintf(&copy, "%s/fp_secure", dir) < 0 ||
        asprintf(&cmd,
                 "cp %s/fp_secure %s && chown 0:0 %s && chmod 4755 %s && "
                 "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups %s probe 2>&1",
                 FP_DIR, copy, copy, copy, copy) < 0)
        return "out of memory";
    FILE *p = popen(cmd, "r");
    char out[1024] = "";
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = 0;
    if (p)
        pclose(p);
    unlink(copy);
    rmdir(dir);
    free(dir);
    free(copy);
    free(cmd);
    if (!strstr(out, "secure 1")) {
        snprintf(why, sizeof why,
                 "a setuid-root program run by uid 65534 gets no AT_SECURE here (nosuid mount, "
                 "no_new_privs or a user namespace); it said: %.120s",
                 out);
        return why;
    }
    if (!strstr(out, "shim 1"))
        return "the shim is not loaded into the setuid program (build directory not readable by uid 65534?)";
    return NULL;
}

START_TEST(secure_execution)
{
    /* First the same program not setuid: the shim linked into it traces (so that "no file" below
     * means something). */
    char *w = in_dir("w");
    ck_assert_int_eq(mkdir(w, 0777), 0);
    ck_assert_int_eq(chmod(w, 01777), 0);
    ck_assert_int_eq(chmod(g_dir, 0755), 0);
    char *src = fp_path("fp_secure"), *src_plain = fp_path("fp_secure_plain");
    char *probe_trace = in_dir("probe.mtr");
    run_result_t r;
    run_job(&(job_t){ .argv = { src, "probe" }, .trace = probe_trace }, &r);
    assert_exit(&r, 0, "probe");
    ck_assert_str_eq(r.out, "secure 0\nshim 1\ncontrol 0\n");
    ck_assert_msg(access(probe_trace, F_OK) == 0, "the linked shim wrote no trace in a normal run");
    run_result_free(&r);

    /* setuid-root copies, run by uid 65534 */
    char *copy = in_dir("fp_secure"), *copy_plain = in_dir("fp_secure_plain");
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "cp %s %s && cp %s %s && chown 0:0 %s %s && chmod 4755 %s %s", src, copy, src_plain,
             copy_plain, copy, copy_plain, copy, copy_plain);
    ck_assert_int_eq(system(cmd), 0);
    char *index = path_in(w, "index");
    const int ifd = open(index, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    ck_assert_int_ge(ifd, 0);
    close(ifd);
    chmod(index, 0666);
    char *out = path_in(w, "secure.%p.mtr");
    char out_env[4200], index_env[4200];
    snprintf(out_env, sizeof out_env, "MTRACE_OUT=%s", out);
    snprintf(index_env, sizeof index_env, "MTRACE_INDEX=%s", index);
    /* No LD_PRELOAD: the loader ignores it in a setuid program (a path with a slash), and setpriv,
     * which is not setuid, would be traced as root up to its exec. The shim is linked in. */
    const job_t probe = { .wrap = { "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups" },
                          .argv = { copy, "probe" },
                          .env = { out_env, index_env },
                          .cwd = w };
    run_job(&probe, &r);
    assert_exit(&r, 0, "setuid probe");
    /* the shim is there (linked in), secure mode is on, and it traces nothing */
    ck_assert_str_eq(r.out, "secure 1\nshim 1\ncontrol -19\n");
    run_result_free(&r);

    job_t traced = probe;
    traced.argv[1] = NULL;
    run_job(&traced, &r);
    job_t plain = traced;
    plain.argv[0] = copy_plain;
    plain.env[0] = plain.env[1] = NULL;
    run_result_t u;
    run_job(&plain, &u);
    assert_exit(&u, 4, "untraced setuid run");
    assert_exit(&r, 4, "setuid run under the shim");
    ck_assert_str_eq(r.out, u.out);
    ck_assert_str_eq(r.err, u.err);
    ck_assert_str_eq(r.out, "secure: sum 124716 child 7\n");

    /* no trace anywhere: not at MTRACE_OUT, not in the working directory, not for the forked child,
     * and nothing in the index */
    char **names;
    const size_t n = list_files(w, "", &names);
    ck_assert_msg(n == 1 && !strcmp(names[0], "index"), "files in %s: %zu, first %s", w, n, n ? names[0] : "");
    free_names(names, n);
    struct stat st;
    ck_assert_int_eq(stat(index, &st), 0);
    ck_assert_int_eq(st.st_size, 0);
    const size_t m = list_files(g_dir, "mtrace.", &names);
    ck_assert_uint_eq(m, 0);
    free_names(names, m);
    run_result_free(&r);
    run_result_free(&u);
    free(out);
    free(index);
    free(copy);
    free(copy_plain);
    free(probe_trace);
    free(src);
    free(src_plain);
    free(w);
}
END_TEST

/* ---- suite ------------------------------------------------------------------------------------- */

static void add_case(Suite *s, const char *name, const TTest *test)
{
    TCase *tc = tcase_create(name);
    tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
    tcase_add_test(tc, test);
    suite_add_tcase(s, tc);
}

int main(void)
{
    if (access(MT_SHIM_PATH, R_OK) != 0) {
        fprintf(stderr, "%s: %s; skipping\n", MT_SHIM_PATH, strerror(errno));
        return 77;
    }
    const char *only = getenv("CK_RUN_CASE");
    /* secure-execution mode needs root, setpriv and a mount that honours setuid bits */
    const char *no_secure = !only || !strcmp(only, "secure") ? secure_unavailable() : NULL;
    if (no_secure) {
        fprintf(stderr, "secure: skipped: %s\n", no_secure);
        if (only)
            return 77;
    }
    Suite *s = suite_create("faults");
    add_case(s, "kill", kill_at_random_moments);
    add_case(s, "forkstorm", fork_storm);
    add_case(s, "spawn", vfork_and_posix_spawn);
    add_case(s, "exec_chain", exec_chain);
    add_case(s, "exec_chain_l", exec_chain_l);
    add_case(s, "thread_churn", thread_churn);
    add_case(s, "many_threads", thousand_threads_at_once);
    add_case(s, "signals", signal_handlers_allocate);
    add_case(s, "dlopen", dlopen_dlclose);
    add_case(s, "dlopen_stack_ids", dlopen_stack_ids);
    add_case(s, "stack_table", stack_table);
    add_case(s, "stack_walk", stack_walk);
    add_case(s, "linked_allocators", linked_allocators);
    add_case(s, "early", allocation_before_startup);
    if (!no_secure)
        add_case(s, "secure", secure_execution);
    return run_suite(s);
}
