/* The interposed process and thread functions of libmtrace.so: fork, the exec family, _exit and
 * _Exit, pthread_create. They write the events that tie traces and threads together (FORK, EXEC,
 * THREAD_CREATE) and finish the trace where destructors will not run. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim_record.h"

static void emit_u64_event(unsigned op, uint64_t now, uint64_t v)
{
    mt_thread_t *t = &mt_self;
    if (pass_through(t))
        return;
    t->busy = 2;
    uint8_t payload[16], *q = mt_put_uvarint(payload, v);
    mt_emit_event_at(t, op, now, payload, (size_t)(q - payload));
    t->busy = 0;
}

MT_EXPORT pid_t fork(void)
{
    mt_init();
    const uint64_t now = mt_now();
    const pid_t pid = mt_g.real.fork();
    if (pid > 0)
        emit_u64_event(MT_EV_FORK, now, (uint64_t)pid);
    return pid;
}

static void note_exec(const char *path)
{
    mt_thread_t *t = &mt_self;
    /* A vfork child runs on its parent's memory: the exec is its own, not the parent's. */
    if (pass_through(t) || getpid() != mt_g.pid)
        return;
    t->busy = 2;
    mt_file_note_exec(path);
    t->busy = 0;
}

MT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    mt_init();
    note_exec(path);
    return mt_g.real.execve(path, argv, envp);
}

MT_EXPORT int execv(const char *path, char *const argv[])
{
    mt_init();
    note_exec(path);
    return mt_g.real.execv(path, argv);
}

MT_EXPORT int execvp(const char *file, char *const argv[])
{
    mt_init();
    note_exec(file);
    return mt_g.real.execvp(file, argv);
}

MT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    mt_init();
    note_exec(file);
    return mt_g.real.execvpe(file, argv, envp);
}

MT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    mt_init();
    note_exec("");
    return mt_g.real.fexecve(fd, argv, envp);
}

MT_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
    mt_init();
    note_exec(path);
    if (!mt_g.real.execveat) { /* glibc before 2.34 */
        errno = ENOSYS;
        return -1;
    }
    return mt_g.real.execveat(dirfd, path, argv, envp, flags);
}

/* _exit and _Exit end the process without running destructors, ours included, which finish the
 * trace (end time, the clock rate, COMPLETE): a worker of Python's multiprocessing, a shell's
 * child or a forking server's would otherwise leave a trace that reads as "not finished", whose clock
 * rate rests on its RSS samples alone (none with MTRACE_RSS_MS=0: no rate, no time span). They are
 * finished here, with care for what _exit may be called from:
 * - a vfork child (or posix_spawn's) runs on its parent's memory, mt_g included: its pid is not
 *   the one that opened the trace, and it leaves everything alone;
 * - a signal handler (_exit is async-signal-safe) may have interrupted this thread inside the shim,
 *   with a record half written: then no THREAD_EXIT is written over it, and the record, whose
 *   first byte is stored last, stays unpublished. Finishing makes system calls only. */
static void finish_before_exit(void)
{
    mt_thread_t *t = &mt_self;
    if (!mt_g.base || getpid() != mt_g.pid)
        return;
    mt_sample_rss_at_exit(); /* neither when inside the shim: they check */
    mt_pages_at_exit();
    mt_vm_at_exit();
    if (t->busy)
        t->exited = 1;
    t->busy = 2;
    mt_file_finish();
}

MT_EXPORT void _exit(int status)
{
    finish_before_exit();
    if (mt_g.real.exit_)
        mt_g.real.exit_(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

MT_EXPORT void _Exit(int status)
{
    finish_before_exit();
    if (mt_g.real.Exit_)
        mt_g.real.Exit_(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

/* execl, execle and execlp call execve inside libc, past the wrappers above: they are wrapped
 * themselves. Their argument lists become arrays without malloc (which would be traced between the
 * EXEC event and the exec): on the stack, or in a private mapping for very long lists. */
typedef struct exec_args {
    char **v;
    size_t map_bytes; /* 0: v is the local array */
    char *local[64];
} exec_args_t;

/* Collects arg0 and the arguments after it up to and including the terminating NULL; NULL when
 * no memory is left (errno set). */
static char **exec_args_collect(exec_args_t *a, const char *arg0, va_list *ap)
{
    va_list c;
    va_copy(c, *ap);
    size_t n = 2; /* arg0 and the NULL */
    while (va_arg(c, char *))
        n++;
    va_end(c);
    a->v = a->local;
    a->map_bytes = 0;
    if (n > sizeof a->local / sizeof *a->local) {
        a->map_bytes = n * sizeof(char *);
        void *m = mmap(NULL, a->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            errno = E2BIG;
            return NULL;
        }
        a->v = m;
    }
    a->v[0] = (char *)arg0;
    for (size_t i = 1; i < n; i++)
        a->v[i] = va_arg(*ap, char *);
    return a->v;
}

/* After a failed exec: gives back the mapping, keeping the exec's errno. */
static int exec_args_done(exec_args_t *a, int rc)
{
    const int e = errno;
    if (a->map_bytes)
        munmap(a->v, a->map_bytes);
    errno = e;
    return rc;
}

MT_EXPORT int execl(const char *path, const char *arg0, ...)
{
    exec_args_t a;
    va_list ap;
    va_start(ap, arg0);
    char **argv = exec_args_collect(&a, arg0, &ap);
    va_end(ap);
    return argv ? exec_args_done(&a, execv(path, argv)) : -1;
}

MT_EXPORT int execlp(const char *file, const char *arg0, ...)
{
    exec_args_t a;
    va_list ap;
    va_start(ap, arg0);
    char **argv = exec_args_collect(&a, arg0, &ap);
    va_end(ap);
    return argv ? exec_args_done(&a, execvp(file, argv)) : -1;
}

MT_EXPORT int execle(const char *path, const char *arg0, ...)
{
    exec_args_t a;
    va_list ap;
    va_start(ap, arg0);
    char **argv = exec_args_collect(&a, arg0, &ap);
    char *const *envp = argv ? va_arg(ap, char *const *) : NULL; /* after the terminating NULL */
    va_end(ap);
    return argv ? exec_args_done(&a, execve(path, argv, envp)) : -1;
}

typedef struct thread_start {
    void *(*fn)(void *);
    void *arg;
    uint32_t thread_no;
    uint32_t creator;
} thread_start_t;

static void *thread_trampoline(void *arg)
{
    thread_start_t s = *(thread_start_t *)arg;
    mt_g.real.free(arg);
    mt_thread_t *t = &mt_self;
    t->thread_no = s.thread_no;
    t->creator = s.creator;
    /* Claim the chunk now, so the thread's start is on record even if it never allocates. */
    if (!pass_through(t)) {
        t->busy = 2;
        mt_thread_reserve(t, mt_now());
        t->busy = 0;
    }
    return s.fn(s.arg);
}

/* The real pthread_create; NULL if it was not found at start-up (before glibc 2.34 it lives in
 * libpthread, which a program may load later with dlopen): looked up again then. */
static mt_pthread_create_fn_t real_pthread_create_now(void)
{
    mt_pthread_create_fn_t f = __atomic_load_n(&mt_g.real.pthread_create, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (mt_pthread_create_fn_t)dlsym(RTLD_NEXT, "pthread_create");
        __atomic_store_n(&mt_g.real.pthread_create, f, __ATOMIC_RELEASE);
    }
    return f;
}

MT_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    mt_init();
    const mt_pthread_create_fn_t real = real_pthread_create_now();
    if (!real)
        return EAGAIN; /* no thread can be made: pthread_create's error for "not now" */
    mt_thread_t *t = &mt_self;
    if (pass_through(t))
        return real(th, attr, fn, arg);
    thread_start_t *s = mt_g.real.malloc(sizeof *s);
    if (!s)
        return real(th, attr, fn, arg);
    const uint64_t now = mt_now();
    if (!t->started) { /* the creator needs a number before it can be named as one */
        t->busy = 2;
        mt_thread_reserve(t, now);
        t->busy = 0;
    }
    const uint32_t thread_no = mt_next_thread_no();
    s->fn = fn;
    s->arg = arg;
    s->thread_no = thread_no;
    s->creator = t->thread_no;
    const int rc = real(th, attr, thread_trampoline, s);
    if (rc != 0) {
        mt_g.real.free(s);
        return rc;
    }
    /* Not s->thread_no: the new thread may have freed s already, and its memory been reused. */
    emit_u64_event(MT_EV_THREAD_CREATE, now, thread_no);
    return rc;
}
