/* The shim's trace file: made, its header written, mapped as it grows, finished; after a fork, made
 * again for the child. The threads' chunks in it are shim_chunks.c's; the RSS samples shim_rss.c's.
 *
 * Nothing here is on the per-call hot path except through mt_thread_reserve(), which runs once per
 * chunk (tens of thousands of records). Code here may make syscalls but never calls malloc: the
 * callers hold mt_self.busy, so any allocation made by libc on our behalf passes through untraced.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

extern char **environ;

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* A reservation this large costs nothing until chunks are mapped into it; it bounds one trace. */
#define RESERVE_BYTES (64ull << 30)
#define FIRST_SEGMENT (1ull << 20)
#define MAX_SEGMENT (64ull << 20)

static mt_file_header_t *header(void)
{
    return (mt_file_header_t *)mt_g.base;
}

void mt_say(const char *fmt, ...)
{
    if (mt_g.opt.quiet)
        return;
    /* strerror and vsnprintf may allocate: those calls are ours, not the program's (busy 2). */
    const uint8_t busy = mt_self.busy;
    mt_self.busy = 2;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0) {
        mt_self.busy = busy;
        return;
    }
    if ((size_t)n > sizeof line - 2)
        n = sizeof line - 2;
    line[n++] = '\n';
    const int saved = errno;
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
    errno = saved;
    mt_self.busy = busy;
}

static void lock_grow(void)
{
    int expected = 0;
    while (!atomic_compare_exchange_weak(&mt_g.grow_lock, &expected, 1)) {
        expected = 0;
        sched_yield();
    }
}

static void unlock_grow(void)
{
    atomic_store(&mt_g.grow_lock, 0);
}

/* Expands '%p' to the pid; a literal '%%' is '%'. */
static void expand_path(char *dst, size_t cap, const char *pattern, pid_t pid)
{
    size_t n = 0;
    for (const char *s = pattern; *s && n + 1 < cap; s++) {
        if (s[0] == '%' && s[1] == 'p') {
            n += (size_t)snprintf(dst + n, cap - n, "%d", (int)pid);
            s++;
        } else if (s[0] == '%' && s[1] == '%') {
            dst[n++] = '%';
            s++;
        } else {
            dst[n++] = *s;
        }
        if (n >= cap)
            n = cap - 1;
    }
    dst[n] = 0;
}

/* O_EXCL|O_NOFOLLOW: a file or a symlink planted at the path is never opened or followed. When the
 * path is taken (a forked child or an exec'd image inheriting MTRACE_OUT), the pid is appended. */
static int create_file(char *path, size_t cap)
{
    char base[sizeof mt_g.path - 32]; /* room for the ".PID.N" suffix */
    expand_path(base, sizeof base, mt_g.opt.out, mt_g.pid);
    const int flags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    for (int attempt = 0; attempt < 100; attempt++) {
        if (attempt == 0)
            snprintf(path, cap, "%s", base);
        else if (attempt == 1)
            snprintf(path, cap, "%s.%d", base, (int)mt_g.pid);
        else
            snprintf(path, cap, "%s.%d.%d", base, (int)mt_g.pid, attempt - 1);
        const int fd = open(path, flags, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd;
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
            return -1; /* errno stays EEXIST: refuse a planted symlink instead of going around it */
    }
    return -1;
}

/* The lock that tells readers the file is still being written: held on the file's open description
 * from its creation until the process finishes (the kernel drops it at exit, at exec through
 * O_CLOEXEC, at a kill), taken again when the program closed our descriptor and we reopen the file.
 * Never waited for: a reader testing it at that moment only makes this attempt fail. A forked child
 * closes its copy of the descriptor, which leaves the parent's lock as it is (format/trace_reader.c,
 * mt_trace_check_whole, tests it). */
static void lock_trace(int fd)
{
    (void)flock(fd, LOCK_EX | LOCK_NB);
}

static int same_file(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_dev == mt_g.file_dev && st.st_ino == mt_g.file_ino;
}

/* The program may close our descriptor (daemons close every fd at start-up) and get the number
 * again for a file of its own: every write through the descriptor first checks that it is still
 * the trace file, so the program's file is never written. When it is not, the trace file is opened
 * again by its path (the same file, checked) and tracing goes on. 0, or -EBADF. */
int mt_file_fd_ours(void)
{
    if (same_file(mt_g.fd))
        return 0;
    const int fd = open(mt_g.path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -EBADF;
    if (!same_file(fd)) {
        close(fd);
        return -EBADF;
    }
    mt_g.fd = fd; /* the old number is the program's now: never closed here */
    lock_trace(fd);
    return 0;
}

/* Maps more of the file into the reservation so that chunk `want` exists. Caller holds grow_lock. */
static int grow(uint64_t want)
{
    if (mt_file_fd_ours() < 0)
        return -EBADF;
    uint64_t mapped = atomic_load(&mt_g.mapped_chunks);
    while (want >= mapped) {
        uint64_t bytes = mapped * MT_CHUNK_SIZE;
        uint64_t step = bytes < FIRST_SEGMENT ? FIRST_SEGMENT : bytes;
        if (step > MAX_SEGMENT)
            step = MAX_SEGMENT;
        if (bytes + step > mt_g.reserved_chunks * MT_CHUNK_SIZE)
            step = mt_g.reserved_chunks * MT_CHUNK_SIZE - bytes;
        if (step < MT_CHUNK_SIZE || bytes + step > mt_g.opt.max_bytes)
            return -EFBIG;
        /* Growing past RLIMIT_FSIZE would raise SIGXFSZ in the host; check instead of trying. */
        struct rlimit rl;
        if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
            if (rl.rlim_cur < bytes + MT_CHUNK_SIZE)
                return -EFBIG;
            if (bytes + step > rl.rlim_cur)
                step = (rl.rlim_cur - bytes) / MT_CHUNK_SIZE * MT_CHUNK_SIZE;
        }
        /* Real blocks, not a sparse hole: a full disk must show up here, not as SIGBUS later. */
        const int rc = posix_fallocate(mt_g.fd, (off_t)bytes, (off_t)step);
        if (rc != 0)
            return -rc;
        void *at = mmap(mt_g.base + bytes, step, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, mt_g.fd, (off_t)bytes);
        if (at == MAP_FAILED)
            return -errno;
        madvise(at, step, MADV_RANDOM);
        mapped += step / MT_CHUNK_SIZE;
        atomic_store(&mt_g.mapped_chunks, mapped);
    }
    return 0;
}

int mt_file_map_chunk(uint64_t idx)
{
    lock_grow();
    const int rc = grow(idx);
    unlock_grow();
    return rc;
}

/* A string that does not fit is left out; the list stays whole. */
static uint8_t *put_str(uint8_t *p, uint8_t *end, unsigned tag, const char *s, size_t len)
{
    uint8_t *const q = mt_str_put(p, end, tag, s, len);
    return q ? q : p;
}

static size_t read_small_file(const char *path, char *buf, size_t cap)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t n = 0;
    while (n < cap) {
        const ssize_t r = read(fd, buf + n, cap - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    return n;
}

/* Whether address a lies in the program's own executable: the first object dl_iterate_phdr reports. */
static int in_executable(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t *a = arg; /* the address in; 1 or 0 out */
    const uintptr_t addr = *a;
    *a = 0;
    for (unsigned k = 0; k < info->dlpi_phnum; k++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
        if (ph->p_type == PT_LOAD && addr - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz)
            *a = 1;
    }
    return 1;
}

/* An object before the shim in the lookup order (LD_PRELOAD="libtcmalloc_minimal.so.4 libmtrace.so",
 * or a program with its own malloc) answers the program's malloc: no call reaches the recorder and
 * the trace would hold none, silently. Found by calling the malloc the program calls (as dlsym finds
 * it) once: comparing addresses would not do, since a non-PIE program's own PLT entry stands for
 * malloc there. Said in the header (flag and string: the object's file, or for the executable
 * itself `exe`, the header's MT_STR_EXE) and once on stderr (a forked child, which inherits
 * `warned`, does not say it again). An allocator linked into the executable (rustc's jemalloc) is
 * not a matter of LD_PRELOAD's order, and the message does not say it is. */
static uint8_t *note_bypass(mt_file_header_t *h, uint8_t *p, uint8_t *end, const char *exe, size_t exe_len)
{
    static int warned;
    mt_thread_t *const t = &mt_self;
    const uint8_t busy = t->busy;
    t->busy = 2; /* dlsym may allocate: ours, not the program's */
    void *(*const bound_malloc)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "malloc");
    void (*const bound_free)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "free");
    int bypassed = 0;
    if (bound_malloc && bound_free) {
        t->busy = MT_BUSY_PROBE;
        void *const probe = bound_malloc(1);
        bypassed = t->busy == MT_BUSY_PROBE;
        t->busy = 2;
        bound_free(probe);
    }
    Dl_info bound;
    const char *name = "the program";
    size_t name_len = strlen(name);
    uintptr_t own = (uintptr_t)bound_malloc;
    if (bypassed)
        dl_iterate_phdr(in_executable, &own);
    if (bypassed && own && exe_len) {
        name = exe;
        name_len = exe_len;
    } else if (bypassed && dladdr((void *)bound_malloc, &bound) && bound.dli_fname && bound.dli_fname[0]) {
        name = bound.dli_fname;
        name_len = strlen(name);
    }
    t->busy = busy;
    if (!bypassed)
        return p;
    h->flags |= MT_HDR_BYPASSED;
    p = put_str(p, end, MT_STR_BOUND_MALLOC, name, name_len);
    if (!warned) {
        warned = 1;
        if (own)
            mt_say("mtrace: this program's malloc is its own, linked into %.*s: no call will be recorded (its "
                   "trace holds its threads, memory samples and mappings)",
                   (int)name_len, name);
        else
            mt_say("mtrace: this program's malloc is %s's, found before libmtrace.so (LD_PRELOAD order): no call "
                   "will be recorded; put libmtrace.so first in LD_PRELOAD",
                   name);
    }
    return p;
}

static void write_header(void)
{
    mt_file_header_t *h = header();
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    h->version = MT_TRACE_VERSION;
    h->header_size = sizeof *h;
    h->chunk_size = MT_CHUNK_SIZE;
    h->ptr_size = sizeof(void *);
    h->little_endian = 1;
    h->time_shift = MT_TIME_SHIFT;
    h->max_frames = (uint8_t)mt_g.opt.stacks;
    h->page_size = mt_g.page_size;
    h->pid = (uint32_t)mt_g.pid;
    h->ppid = (uint32_t)getppid();
    h->start_realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    h->start_mono_ns = mt_mono_ns();
    h->start_time = mt_now();
    if (MT_CLOCK_IS_TSC)
        h->flags |= MT_HDR_TIME_TSC;
    else
        h->ticks_per_sec = 1000000000u;
    if (mt_g.glibc)
        h->flags |= MT_HDR_GLIBC_FLAGS;
    if (mt_g.opt.stacks)
        h->flags |= MT_HDR_STACKS;

    uint8_t *p = mt_g.base + MT_HEADER_STRINGS_OFFSET;
    uint8_t *const end = mt_g.base + MT_CHUNK_SIZE;
    static char buf[16384];
    size_t n = read_small_file("/proc/self/cmdline", buf, sizeof buf);
    p = put_str(p, end, MT_STR_CMDLINE, buf, n && !buf[n - 1] ? n - 1 : n);
    static char exe[4096];
    const ssize_t e = readlink("/proc/self/exe", exe, sizeof exe);
    if (e > 0)
        p = put_str(p, end, MT_STR_EXE, exe, (size_t)e);
    const char *v = gnu_get_libc_version();
    p = put_str(p, end, MT_STR_GLIBC, v, strlen(v));
    Dl_info info;
    if (dladdr((void *)mt_g.real.malloc, &info) && info.dli_fname)
        p = put_str(p, end, MT_STR_ALLOCATOR, info.dli_fname, strlen(info.dli_fname));
    p = note_bypass(h, p, end, exe, e > 0 ? (size_t)e : 0);
    for (char **env = environ; env && *env; env++) {
        if (!strncmp(*env, "MALLOC_", 7) || !strncmp(*env, "GLIBC_TUNABLES=", 15) || !strncmp(*env, "MTRACE_", 7))
            p = put_str(p, end, MT_STR_ENV, *env, strnlen(*env, 4000));
    }
    struct utsname u;
    if (uname(&u) == 0)
        p = put_str(p, end, MT_STR_HOST, u.nodename, strlen(u.nodename));
    p = put_str(p, end, MT_STR_PATH, mt_g.path, strlen(mt_g.path));
    char clock[128];
    p = put_str(p, end, MT_STR_CLOCK, clock, mt_clock_choose(clock, sizeof clock));
    memset(p, 0, 4);
    /* The magic goes last so that a reader never sees a half-written header as valid. */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memcpy(h->magic, MT_TRACE_MAGIC, MT_TRACE_MAGIC_LEN);
}

static void append_index(void)
{
    if (!mt_g.opt.index[0])
        return;
    const int fd = open(mt_g.opt.index, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    char line[sizeof mt_g.path + 2];
    const int n = snprintf(line, sizeof line, "%s\n", mt_g.path);
    ssize_t w = write(fd, line, (size_t)n); /* one write with O_APPEND: lines never interleave */
    (void)w;
    close(fd);
}

int mt_file_open(void)
{
    const int saved = errno;
    mt_g.pid = getpid();
    mt_g.page_size = (uint32_t)sysconf(_SC_PAGESIZE);
    mt_g.fd = create_file(mt_g.path, sizeof mt_g.path);
    if (mt_g.fd < 0) {
        mt_say("mtrace: cannot create trace file %s: %s; tracing is off", mt_g.path, strerror(errno));
        goto fail;
    }
    struct stat st;
    if (fstat(mt_g.fd, &st) != 0) {
        mt_say("mtrace: cannot stat trace file %s: %s; tracing is off", mt_g.path, strerror(errno));
        goto fail_unlink;
    }
    mt_g.file_dev = st.st_dev;
    mt_g.file_ino = st.st_ino;
    lock_trace(mt_g.fd);
    uint64_t reserve = RESERVE_BYTES;
    if (reserve > mt_g.opt.max_bytes)
        reserve = (mt_g.opt.max_bytes + MT_CHUNK_SIZE - 1) / MT_CHUNK_SIZE * MT_CHUNK_SIZE;
    void *base = MAP_FAILED;
    for (; reserve >= (2u * MT_CHUNK_SIZE); reserve /= 2) {
        base = mmap(NULL, reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (base != MAP_FAILED)
            break;
    }
    if (base == MAP_FAILED) {
        mt_say("mtrace: cannot reserve address space for %s: %s; tracing is off", mt_g.path, strerror(errno));
        goto fail_unlink;
    }
    mt_g.base = base;
    mt_g.reserved_chunks = reserve / MT_CHUNK_SIZE;
    atomic_store(&mt_g.next_chunk, 1);
    atomic_store(&mt_g.mapped_chunks, 0);
    const int rc = grow(1);
    if (rc < 0) {
        mt_say("mtrace: cannot write trace file %s: %s; tracing is off", mt_g.path, strerror(-rc));
        munmap(mt_g.base, reserve);
        mt_g.base = NULL;
        goto fail_unlink;
    }
    write_header();
    append_index();
    if (mt_g.opt.rss_ms) {
        const mt_file_header_t *h = header();
        /* The TSC rate is not known yet; 3 GHz is close enough to space the samples. */
        const uint64_t per_ms = (h->flags & MT_HDR_TIME_TSC) ? 3000000u >> MT_TIME_SHIFT : 1000000u;
        mt_g.rss_period = per_ms * mt_g.opt.rss_ms;
        atomic_store(&mt_g.next_rss_time, h->start_time);
    } else {
        atomic_store(&mt_g.next_rss_time, UINT64_MAX);
    }
    errno = saved;
    return 0;

fail_unlink:
    unlink(mt_g.path);
    close(mt_g.fd);
    mt_g.fd = -1;
fail:
    atomic_store(&mt_g.stopped, 1);
    atomic_store(&mt_g.off, 1);
    errno = saved;
    return -1;
}

void mt_stop_tracing(int err, const char *why)
{
    if (atomic_exchange(&mt_g.stopped, 1))
        return;
    atomic_store(&mt_g.off, 1);
    atomic_store_explicit(&mt_g.truncated, 1, memory_order_relaxed);
    mt_file_header_t *h = header();
    h->truncated_errno = err;
    __atomic_fetch_or(&h->flags, MT_HDR_TRUNCATED, __ATOMIC_RELAXED);
    mt_say("mtrace: %s %s: %s; tracing stopped, the program goes on", why, mt_g.path, strerror(err));
    mt_thread_t *t = &mt_self;
    uint8_t payload[16], *q = mt_put_uvarint(payload, (uint64_t)err);
    mt_emit_final(t, MT_EV_TRUNCATED, payload, (size_t)(q - payload));
}

static void write_end_fields(void)
{
    mt_file_header_t *h = header();
    h->end_time = mt_now();
    h->end_mono_ns = mt_mono_ns();
    if (h->flags & MT_HDR_TIME_TSC) {
        const uint64_t dns = h->end_mono_ns - h->start_mono_ns;
        if (dns > 0)
            h->ticks_per_sec = (uint64_t)((double)(h->end_time - h->start_time) * 1e9 / (double)dns);
    }
    h->threads = atomic_load(&mt_g.next_thread);
}

void mt_file_finish(void)
{
    if (!mt_g.base || mt_g.fd < 0 || (header()->flags & MT_HDR_COMPLETE)) /* once: mtrace_stop(), then exit */
        return;
    mt_thread_t *t = &mt_self;
    mt_thread_exit(t);
    const int was_stopped = atomic_exchange(&mt_g.stopped, 1);
    atomic_store(&mt_g.off, 1);
    /* No chunk can be claimed after this exchange, so none lies past the size we truncate to. */
    uint64_t used = atomic_exchange(&mt_g.next_chunk, UINT64_MAX / 2);
    if (used > atomic_load(&mt_g.mapped_chunks))
        used = atomic_load(&mt_g.mapped_chunks);
    write_end_fields();
    mt_file_header_t *h = header();
    h->chunks_used = used;
    h->lost_calls = atomic_load(&mt_g.lost);
    (void)was_stopped;
    __atomic_fetch_or(&h->flags, MT_HDR_COMPLETE, __ATOMIC_RELAXED);
    if (mt_file_fd_ours() < 0 || ftruncate(mt_g.fd, (off_t)(used * MT_CHUNK_SIZE)) != 0) {
        /* The preallocated tail stays; readers skip chunks that were never claimed. */
    }
}

/* Whether the process has no thread but the caller (the kernel's count: threads the shim never saw
 * included). No /proc: not known, so no. */
static int only_thread(void)
{
    char status[4096];
    const size_t n = read_small_file("/proc/self/status", status, sizeof status - 1);
    status[n] = 0;
    const char *const line = strstr(status, "\nThreads:");
    return line && strtoul(line + sizeof "\nThreads:" - 1, NULL, 10) == 1;
}

/* An exec that succeeds leaves the file as it stands, with the tail grow() preallocated past the
 * chunks used (1 MiB at first): 45 MB for 80 images of a shell script, each of two chunks. So the
 * file is cut to its chunks now, as mt_file_finish does. The exec may fail and the program record
 * on: mapped_chunks is set back to the new end, so the next chunk claimed (claim_index) goes
 * through grow(), which allocates the blocks again and maps them over the stale pages past the end
 * (never written in between: only home chunks are written through the mapping, and every one
 * claimed so far lies below the end). Only with no other thread: another one may have read
 * mapped_chunks (without grow_lock) for a chunk it claimed and be about to write it through the
 * mapping, past the new end (SIGBUS); then the tail stays. */
static void trim_before_exec(void)
{
    if (!only_thread())
        return;
    lock_grow();
    const uint64_t used = atomic_load(&mt_g.next_chunk);
    if (used < atomic_load(&mt_g.mapped_chunks) && mt_file_fd_ours() == 0 &&
        ftruncate(mt_g.fd, (off_t)(used * MT_CHUNK_SIZE)) == 0)
        atomic_store(&mt_g.mapped_chunks, used);
    unlock_grow();
}

/* Called on exec: the image is about to go, so record how far time got, and trim the file. Tracing
 * stays on in case the exec fails. */
void mt_file_note_exec(const char *path)
{
    if (!mt_g.base)
        return;
    mt_emit_event(&mt_self, MT_EV_EXEC, (const uint8_t *)path, strnlen(path, 4000));
    write_end_fields();
    header()->chunks_used = atomic_load(&mt_g.next_chunk);
    trim_before_exec();
}

void mt_file_after_fork_child(void)
{
    /* The mapping is shared with the parent's file: drop it, never write to it from here. */
    if (mt_g.base)
        munmap(mt_g.base, mt_g.reserved_chunks * MT_CHUNK_SIZE);
    if (mt_g.fd >= 0 && mt_file_fd_ours() == 0) /* never a descriptor the program reopened */
        close(mt_g.fd);
    mt_g.base = NULL;
    mt_g.fd = -1;
    atomic_store(&mt_g.grow_lock, 0);
    atomic_store(&mt_g.next_thread, 0);
    atomic_store(&mt_g.lost, 0);
    for (unsigned i = 0; i < MT_ENDED_MAX; i++) /* the parent's threads, in a mapping gone here */
        atomic_store(&mt_g.ended[i], 0);
    atomic_store(&mt_g.nended, 0);
    memset(&mt_self, 0, sizeof mt_self);
    mt_self.busy = 2; /* still the shim's own work (fork_child): the mmap of the new file is not the program's */
    if (!mt_g.opt.follow_fork || mt_g.opt.secure) {
        atomic_store(&mt_g.stopped, 1);
        atomic_store(&mt_g.off, 1);
        return;
    }
    atomic_store(&mt_g.stopped, 0);
    mt_file_open();
    if (!atomic_load(&mt_g.stopped))
        atomic_store(&mt_g.off, mt_g.paused);
}
