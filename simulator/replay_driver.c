/* mtrace replay: runs mtrace-sim once per allocator, each in a child with that allocator preloaded,
 * so that the simulator's own start-up allocations and the allocator under test are the same as for
 * any program started with LD_PRELOAD. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mtrace/file_io.h"
#include "mtrace/replay.h"

static const struct {
    const char *name;
    const char *files[3];
    const char *package;
} known[] = {
    { "jemalloc", { "libjemalloc.so.2", NULL }, "libjemalloc2" },
    { "tcmalloc", { "libtcmalloc_minimal.so.4", "libtcmalloc.so.4", NULL }, "libtcmalloc-minimal4" },
    { "mimalloc", { "libmimalloc.so.2", NULL }, "libmimalloc2.0" },
};

static const char *const libdirs[] = {
#ifdef MT_MULTIARCH_LIBDIR
    MT_MULTIARCH_LIBDIR,
#endif
    "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib",
};

int mt_allocator_path(const char *name, char *buf, size_t cap, mt_error_t *err)
{
    buf[0] = 0; /* "" on every return, a failed one too: what glibc's is (nothing to preload) */
    if (!strcmp(name, "glibc"))
        return 0;
    if (strchr(name, '/')) {
        if (access(name, R_OK) != 0) {
            const int e = errno;
            return mt_error_setf(err, -e, "%s: %s", name, strerror(e));
        }
        snprintf(buf, cap, "%s", name);
        return 0;
    }
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
        if (strcmp(name, known[k].name))
            continue;
        for (size_t f = 0; known[k].files[f]; f++)
            for (size_t d = 0; d < sizeof libdirs / sizeof libdirs[0]; d++) {
                snprintf(buf, cap, "%s/%s", libdirs[d], known[k].files[f]);
                if (access(buf, R_OK) == 0)
                    return 0;
            }
        return mt_error_setf(err, -ENOENT, "allocator %s is not installed: apt-get install %s", name, known[k].package);
    }
    return mt_error_setf(err, -EINVAL,
                         "unknown allocator '%s': use glibc, jemalloc, tcmalloc, mimalloc or a path to a .so", name);
}

/* The start of an ELF header: identification, type, machine (the same in 32- and 64-bit files). */
typedef struct elf_start {
    unsigned char ident[EI_NIDENT];
    uint16_t type, machine;
} elf_start_t;

/* The file's first sizeof *e bytes in *e: 0, -ENOEXEC for a shorter file, or a negative errno.
 * What was not read is zero, which is no ELF magic. */
static int read_elf_start(const char *path, elf_start_t *e)
{
    memset(e, 0, sizeof *e);
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    const ssize_t n = read(fd, e, sizeof *e);
    const int saved = errno;
    close(fd);
    if (n < 0)
        return -saved;
    return n == (ssize_t)sizeof *e ? 0 : -ENOEXEC;
}

/* A library to preload must be an ELF shared object for this machine: the dynamic loader ignores
 * anything else with a warning and the replay would run on glibc under the file's name. (Whether it
 * defines malloc, mtrace-sim checks once it is loaded: --allocator-lib.) */
static int check_loadable(const char *lib, mt_error_t *err)
{
    elf_start_t e, self;
    const int rc = read_elf_start(lib, &e);
    const char *why = NULL;
    if (rc < 0 && rc != -ENOEXEC)
        return mt_error_setf(err, rc, "%s cannot be loaded as an allocator: %s", lib, strerror(-rc));
    if (rc < 0 || memcmp(e.ident, ELFMAG, SELFMAG) != 0)
        why = "not an ELF file";
    else if (read_elf_start("/proc/self/exe", &self) < 0)
        return 0; /* nothing to compare with: the loader and mtrace-sim say the rest */
    else if (e.ident[EI_CLASS] != self.ident[EI_CLASS] || e.ident[EI_DATA] != self.ident[EI_DATA] ||
             e.machine != self.machine)
        why = "built for another machine";
    else if (e.type != ET_DYN)
        why = "not a shared library";
    return why ? mt_error_setf(err, -ENOEXEC, "%s cannot be loaded as an allocator: %s", lib, why) : 0;
}

static int find_sim(char *out, size_t cap)
{
    char exe[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = 0;
    static const char *const rel[] = { "/../simulator/mtrace-sim", "/mtrace-sim" };
    for (size_t i = 0; i < 2; i++) {
        const int w = snprintf(out, cap, "%.*s%s", (int)(cap - 40), exe, rel[i]);
        if (w > 0 && (size_t)w < cap && access(out, X_OK) == 0)
            return 0;
    }
    return -1;
}

/* PATH with ".TAG" before its extension: result.json -> result.jemalloc.json; an empty TAG: PATH */
static void with_tag(char *out, size_t cap, const char *path, const char *tag)
{
    if (!tag[0]) {
        snprintf(out, cap, "%s", path);
        return;
    }
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash))
        snprintf(out, cap, "%s.%s", path, tag);
    else
        snprintf(out, cap, "%.*s.%s%s", (int)(dot - path), path, tag, dot);
}

/* A short name for file names and tables: "jemalloc", or the .so's base name. */
static void short_name(char *out, size_t cap, const char *name)
{
    const char *base = strrchr(name, '/');
    snprintf(out, cap, "%s", base ? base + 1 : name);
    char *so = strstr(out, ".so");
    if (so && so != out)
        *so = 0;
    for (char *p = out; *p; p++)
        if (*p == '/' || *p == ' ')
            *p = '_';
}

/* The replay child running now, and the stop signal that came (SIGINT, SIGTERM, SIGHUP): the front
 * end passes the signal on and waits, so that no replay outlives the command that failed. */
static volatile sig_atomic_t running_child, stop_signal;

static void pass_on_signal(int sig)
{
    stop_signal = sig;
    if (running_child > 0)
        kill((pid_t)running_child, sig);
}

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };
enum { NSTOP = sizeof stop_signals / sizeof stop_signals[0] };

/* An output as it was before a run: absent, or this file (a replay writes a new one and renames it). */
typedef struct out_before {
    int existed;
    dev_t dev;
    ino_t ino;
} out_before_t;

static void note_before(const char *path, out_before_t *b)
{
    struct stat st;
    b->existed = stat(path, &st) == 0;
    b->dev = b->existed ? st.st_dev : 0;
    b->ino = b->existed ? st.st_ino : 0;
}

/* After an interrupted run: removes what the run wrote at `path` (a file that was not there before)
 * and its temporaries (PATH.partial.*, file_io.h), so that a failed command leaves no result. */
static void remove_run_output(const char *path, const out_before_t *b)
{
    struct stat st;
    if (stat(path, &st) == 0 && (!b->existed || st.st_dev != b->dev || st.st_ino != b->ino))
        unlink(path);
    char pattern[PATH_MAX + 16];
    glob_t g;
    if (snprintf(pattern, sizeof pattern, "%s.partial.*", path) < (int)sizeof pattern &&
        glob(pattern, GLOB_NOSORT | GLOB_NOESCAPE, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            unlink(g.gl_pathv[i]);
        globfree(&g);
    }
}

/* Forks and runs mtrace-sim (argv) with the allocator `lib` preloaded, and waits for it. A stop
 * signal to this process is passed on to the child; the child also dies with this process
 * (PR_SET_PDEATHSIG) if this one is killed outright. Returns the wait status, or a negative errno
 * with the message in err when no child could be started. A child that cannot run `sim` sends its
 * errno back through a pipe closed on exec, into *exec_errno (else 0): this process says why, not
 * the child. Its stderr is stderr_fd when that is above 2. */
static int run_child(const char *sim, const char *const argv[], const char *lib, const char *tunables, int stderr_fd,
                     int *exec_errno, mt_error_t *err)
{
    *exec_errno = 0;
    int report[2];
    if (pipe2(report, O_CLOEXEC) < 0) {
        const int e = errno;
        return mt_error_setf(err, -e, "cannot run %s: %s", sim, strerror(e));
    }
    sigset_t stops, old_mask;
    sigemptyset(&stops);
    for (int k = 0; k < NSTOP; k++)
        sigaddset(&stops, stop_signals[k]);
    /* Blocked across fork, so a signal is either passed on to a known child or arrives before it. */
    sigprocmask(SIG_BLOCK, &stops, &old_mask);
    struct sigaction pass = { .sa_handler = pass_on_signal }, old_act[NSTOP];
    sigemptyset(&pass.sa_mask);
    /* A signal ignored when we started (nohup, a background job of a script) stays ignored. */
    for (int k = 0; k < NSTOP; k++)
        if (sigaction(stop_signals[k], NULL, &old_act[k]) == 0 && old_act[k].sa_handler != SIG_IGN)
            sigaction(stop_signals[k], &pass, NULL);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
        for (int k = 0; k < NSTOP; k++)
            sigaction(stop_signals[k], &old_act[k], NULL);
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        /* If the parent died between fork and prctl, no signal would come: check once set. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(1);
        if (lib[0])
            setenv("LD_PRELOAD", lib, 1);
        else
            unsetenv("LD_PRELOAD");
        if (tunables)
            setenv("GLIBC_TUNABLES", tunables, 1);
        if (stderr_fd > STDERR_FILENO && dup2(stderr_fd, STDERR_FILENO) < 0)
            _exit(2);
        execv(sim, (char *const *)argv);
        const int e = errno;
        while (write(report[1], &e, sizeof e) < 0 && errno == EINTR) {
        }
        _exit(2); /* mtrace-sim's status for a usage error, should the errno not reach the parent */
    }
    const int fork_errno = errno;
    close(report[1]);
    int status = -1;
    if (pid > 0) {
        running_child = pid;
        if (stop_signal) /* came before the fork: the child has it too */
            kill(pid, stop_signal);
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        int e = 0;
        ssize_t n;
        while ((n = read(report[0], &e, sizeof e)) < 0 && errno == EINTR) {
        }
        *exec_errno = n == (ssize_t)sizeof e ? e : 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        sigprocmask(SIG_BLOCK, &stops, NULL);
        running_child = 0;
    }
    close(report[0]);
    for (int k = 0; k < NSTOP; k++)
        sigaction(stop_signals[k], &old_act[k], NULL);
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    if (pid < 0)
        return mt_error_setf(err, -fork_errno, "fork: %s", strerror(fork_errno));
    return status;
}

/* One run of allocator i (run `run` of `rounds`): its result's path into `result`. 0 (out->failed_calls
 * set if calls failed in it), or a negative errno with the message in err (mt_replay_run). */
static int replay_one(const mt_replay_opts_t *o, const char *sim, int i, int run, int rounds, char *result,
                      mt_replay_outcome_t *out, mt_error_t *err)
{
    char lib[PATH_MAX], name[128];
    int rc = mt_allocator_path(o->allocators[i], lib, sizeof lib, err);
    if (rc < 0)
        return rc;
    short_name(name, sizeof name, o->allocators[i]);
    /* The same allocator given again (to see run-to-run spread) gets files of its own: NAME-2 ... */
    int again = 1;
    for (int k = 0; k < i; k++) {
        char other[128];
        short_name(other, sizeof other, o->allocators[k]);
        again += !strcmp(other, name);
    }
    if (again > 1) {
        const size_t len = strlen(name);
        snprintf(name + len, sizeof name - len, "-%d", again);
    }
    /* The files' tag: the allocator's name when there are several, the run's number when repeated. */
    char tag[160];
    const int several = o->nallocators > 1;
    if (rounds > 1)
        snprintf(tag, sizeof tag, "%s%s%d", several ? name : "", several ? "." : "", run);
    else
        snprintf(tag, sizeof tag, "%s", several ? name : "");
    char json[4096], series[4096];
    if (o->json)
        with_tag(json, sizeof json, o->json, tag);
    else
        snprintf(json, sizeof json, "%s/mtrace-replay-%d-%s-%d.json", mt_tmp_dir(), (int)getpid(), name, run);
    if (o->series)
        with_tag(series, sizeof series, o->series, tag);
    const char *argv[16 + 2 * MT_REPLAY_MAX];
    int argc = 0;
    argv[argc++] = sim;
    argv[argc++] = o->workload;
    argv[argc++] = "--label";
    argv[argc++] = name;
    argv[argc++] = "--json";
    argv[argc++] = json;
    if (o->series) {
        argv[argc++] = "--rss-series";
        argv[argc++] = series;
    }
    if (o->timing) {
        argv[argc++] = "--timing";
        argv[argc++] = o->timing;
    }
    if (o->touch) {
        argv[argc++] = "--touch";
        argv[argc++] = o->touch;
    }
    if (lib[0]) { /* it must be the allocator that answers malloc in the child */
        argv[argc++] = "--allocator-lib";
        argv[argc++] = lib;
    }
    if (o->quiet)
        argv[argc++] = "--quiet";
    for (int k = 0; k < o->nmallopts && k < MT_REPLAY_MAX; k++) {
        argv[argc++] = "--mallopt";
        argv[argc++] = o->mallopts[k];
    }
    argv[argc] = NULL;
    if (!o->quiet) {
        printf("== %s%s%s%s", name, lib[0] ? " (" : "", lib[0] ? lib : "", lib[0] ? ")" : "");
        if (rounds > 1)
            printf(", run %d of %d", run, rounds);
        printf("\n");
    }
    fflush(stdout);
    out_before_t json_before, series_before;
    note_before(json, &json_before);
    if (o->series)
        note_before(series, &series_before);
    int exec_errno;
    const int status = run_child(sim, argv, lib, o->tunables, o->stderr_fd, &exec_errno, err);
    if (status < 0)
        return status;
    if (stop_signal) {
        /* The command fails: what the interrupted run may have written goes. */
        remove_run_output(json, &json_before);
        if (o->series)
            remove_run_output(series, &series_before);
        out->stop_signal = stop_signal;
        return mt_error_setf(err, -EINTR, "the replay on %s was interrupted (signal %d); no result written", name,
                             (int)stop_signal);
    }
    if (exec_errno)
        return mt_error_setf(err, -exec_errno, "cannot run %s: %s", sim, strerror(exec_errno));
    const int failed_calls = WIFEXITED(status) && WEXITSTATUS(status) == MT_EXIT_FAILED_CALLS;
    if (WIFSIGNALED(status)) {
        out->child_signal = WTERMSIG(status);
        return mt_error_setf(err, -ECHILD, "the replay on %s died of signal %d", name, WTERMSIG(status));
    }
    if (!failed_calls && WEXITSTATUS(status) != 0) {
        out->child_status = WEXITSTATUS(status);
        return mt_error_setf(err, -ECHILD, "the replay on %s failed: %s exited with status %d", name, sim,
                             WEXITSTATUS(status));
    }
    out->failed_calls |= failed_calls;
    snprintf(result, 4096, "%s", json);
    if (!o->quiet && o->json)
        printf("wrote %s\n", json);
    if (!o->quiet && o->series)
        printf("wrote %s\n", series);
    return 0;
}

int mt_replay_run(const mt_replay_opts_t *o, char results[][4096], int *nresults, mt_replay_outcome_t *out,
                  mt_error_t *err)
{
    char sim[PATH_MAX];
    *nresults = 0;
    memset(out, 0, sizeof *out);
    stop_signal = 0;
    if (o->sim)
        snprintf(sim, sizeof sim, "%s", o->sim);
    else if (find_sim(sim, sizeof sim) < 0)
        return mt_error_setf(err, -ENOENT, "cannot find mtrace-sim next to this program");
    /* Every allocator is looked for before the first replay starts: a misspelt name or a file that
     * is not a library is refused at once, not after the replays before it. */
    for (int i = 0; i < o->nallocators; i++) {
        char lib[PATH_MAX];
        int rc = mt_allocator_path(o->allocators[i], lib, sizeof lib, err);
        if (rc == 0 && lib[0])
            rc = check_loadable(lib, err);
        if (rc < 0)
            return rc;
    }
    const int rounds = o->repeat > 1 ? o->repeat : 1;
    for (int run = 1; run <= rounds; run++) {
        for (int i = 0; i < o->nallocators; i++) {
            const int rc = replay_one(o, sim, i, run, rounds, results[*nresults], out, err);
            if (rc < 0)
                return rc;
            (*nresults)++;
        }
    }
    return 0;
}
