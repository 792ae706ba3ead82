/* mtrace record: the program run with the shim preloaded, its traces named. */
#define _GNU_SOURCE
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "help_text.h"
#include "mtrace/file_io.h" /* mt_put_safe: strings from files are shown as \xNN, never sent to the terminal */
#include "mtrace/tmp_cleanup.h"
#include "mtrace/trace_format.h"
#include "trace_list.h"

/* ---- mtrace record ----------------------------------------------------------------------------- */

/* The shim next to this executable in a build tree, else where the install puts it relative to this
 * executable (an installed tree copied elsewhere, or installed with --destdir, uses its own shim),
 * else at the installed path. */
static int find_shim(char *out, size_t cap)
{
    const char *env = getenv("MTRACE_SHIM");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return access(out, R_OK) == 0 ? 0 : -1;
    }
    char exe[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            static const char *const rel[] = { "../libmtrace/libmtrace.so", MT_SHIM_FROM_BINDIR };
            for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
                if (!rel[i][0])
                    continue; /* an absolute bindir or libdir: only the installed path below */
                const int w = snprintf(out, cap, "%s/%s", exe, rel[i]);
                if (w > 0 && (size_t)w < cap && access(out, R_OK) == 0)
                    return 0;
            }
        }
    }
    snprintf(out, cap, "%s", MT_SHIM_INSTALL_PATH);
    return access(out, R_OK) == 0 ? 0 : -1;
}

/* The recorder, finding its output directory unwritable, lets the program run untraced (it must
 * never stop its host); asked through mtrace record, that would be a run with no trace that exits 0.
 * So the directory is tried first, by creating a file in it: access() would answer yes to root on a
 * read-only file system. A directory named with %p is made per process: not checked. */
static int check_record_dir(const char *out)
{
    const char *slash = strrchr(out, '/');
    if (!slash || memchr(out, '%', (size_t)(slash - out)))
        return 0;
    char probe[PATH_MAX];
    if (snprintf(probe, sizeof probe, "%.*s/.mtrace-probe.XXXXXX", (int)(slash - out), out) >= (int)sizeof probe) {
        fprintf(stderr, "mtrace: %s: the output path is too long\n", out);
        return -1;
    }
    const int fd = mkostemp(probe, O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "mtrace: cannot write the trace into %.*s: %s\n", (int)(slash - out), out, strerror(errno));
        return -1;
    }
    close(fd);
    unlink(probe);
    return 0;
}

/* The loader ignores LD_PRELOAD for a program that gains privileges as it starts (set-user-ID or
 * set-group-ID to another user or group, or file capabilities, on a file system that honours them):
 * it runs untraced. Says so, once, for the command itself; returns whether it did. */
static int warn_if_privileged(const char *cmd)
{
    char path[PATH_MAX];
    struct stat st;
    int found = 0;
    if (strchr(cmd, '/')) {
        found = snprintf(path, sizeof path, "%s", cmd) < (int)sizeof path && stat(path, &st) == 0;
    } else { /* as execvp looks: the first executable file of that name along PATH */
        const char *dirs = getenv("PATH");
        if (!dirs || !*dirs)
            dirs = "/usr/local/bin:/usr/bin:/bin";
        for (const char *d = dirs; !found && *d;) {
            const size_t len = strcspn(d, ":");
            found = snprintf(path, sizeof path, "%.*s%s%s", (int)len, len ? d : ".", "/", cmd) < (int)sizeof path &&
                    stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
            d += len + (d[len] == ':');
        }
    }
    struct statvfs fs;
    if (!found || !S_ISREG(st.st_mode) || (statvfs(path, &fs) == 0 && (fs.f_flag & ST_NOSUID)))
        return 0;
    const char *how = NULL;
    if ((st.st_mode & S_ISUID) && st.st_uid != geteuid())
        how = "set-user-ID";
    else if ((st.st_mode & S_ISGID) && st.st_gid != getegid())
        how = "set-group-ID";
    else if (geteuid() != 0 && getxattr(path, "security.capability", NULL, 0) > 0)
        how = "given file capabilities";
    if (!how)
        return 0;
    char shown[1024];
    fprintf(stderr, "mtrace: %s is %s: the loader ignores LD_PRELOAD for it, so it runs untraced\n",
            mt_safe_str(shown, sizeof shown, path), how);
    return 1;
}

/* The name each process's trace takes inside a directory given to -o: the default's. */
#define RECORD_DIR_TRACE_NAME "mtrace.%p.mtr"

/* The traces of an earlier recording in dir (files with a trace's magic, as mtrace report DIR reads
 * them) would be read with this one's: without force, refused, naming one; with force, removed.
 * 0, or -1 said. */
static int clear_earlier_traces(const char *dir, int force)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "mtrace: cannot read the directory %s: %s\n", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path ||
            !mt_file_has_magic(path, MT_TRACE_MAGIC, MT_TRACE_MAGIC_LEN))
            continue;
        if (!force) {
            fprintf(stderr, "mtrace: %s holds traces of an earlier recording (%s); remove them or pass --force\n", dir,
                    e->d_name);
            rc = -1;
        } else if (unlink(path) != 0) {
            fprintf(stderr, "mtrace: cannot remove %s: %s\n", path, strerror(errno));
            rc = -1;
        }
    }
    closedir(d);
    return rc;
}

/* -o DIR/, or -o naming a directory: one trace per process inside it (as `cp FILE DIR` puts the copy
 * in DIR), which mtrace report DIR and mtrace export DIR then read whole. DIR/ is made if missing,
 * as mtrace export -o makes its own; not its parents. The pattern in out, or NULL said. */
static const char *record_dir_pattern(const char *dir, char out[PATH_MAX], int force)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') /* "d/" and "d//" are d; "/" stays the root */
        len--;
    snprintf(out, PATH_MAX, "%.*s", (int)len, dir); /* no longer than dir, itself under PATH_MAX */
    if (mkdir(out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "mtrace: cannot make the directory %s: %s\n", out, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (stat(out, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "mtrace: %s is not a directory\n", out);
        return NULL;
    }
    if (clear_earlier_traces(out, force) < 0)
        return NULL;
    const char *sep = len > 1 ? "/" : "";
    if (snprintf(out + len, PATH_MAX - len, "%s%s", sep, RECORD_DIR_TRACE_NAME) >= (int)(PATH_MAX - len)) {
        fprintf(stderr, "mtrace: output path %s is too long\n", dir);
        return NULL;
    }
    return out;
}

/* The trace's output path, absolute: a process of the command that changes directory must still
 * write next to the others (a shell script that cds, then runs a program, would otherwise leave its
 * trace there); its directory writable; an existing file replaced only with --force; a directory
 * given (DIR/, or an existing one) holds one trace per process. NULL, said. */
static const char *record_output(const char *out, char abs_out[PATH_MAX], char dir_out[PATH_MAX], int force)
{
    if (out[0] != '/') {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) {
            fprintf(stderr, "mtrace: cannot get the current directory for %s: %s\n", out, strerror(errno));
            return NULL;
        }
        if (snprintf(abs_out, PATH_MAX, "%s/%s", cwd, out) >= PATH_MAX) {
            fprintf(stderr, "mtrace: output path %s/%s is too long\n", cwd, out);
            return NULL;
        }
        out = abs_out;
    }
    struct stat st;
    if (out[strlen(out) - 1] == '/' || (stat(out, &st) == 0 && S_ISDIR(st.st_mode))) {
        if (!(out = record_dir_pattern(out, dir_out, force)))
            return NULL;
    }
    if (check_record_dir(out) < 0)
        return NULL;
    if (!strstr(out, "%p") && access(out, F_OK) == 0) {
        if (!force) {
            fprintf(stderr, "mtrace: %s exists; remove it or pass --force\n", out);
            return NULL;
        }
        unlink(out);
    }
    return out;
}

/* Says the traces the recorder wrote (their paths, from the index file), or that none was. */
static void say_written(const char *index, int status, int said_untraced, const char *prog)
{
    FILE *f = fopen(index, "r");
    char line[PATH_MAX + 2];
    int wrote = 0;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        fprintf(stderr, "mtrace: wrote %s\n", line);
        wrote++;
    }
    if (f)
        fclose(f);
    /* Nothing loaded the recorder: not silently (said once: not again after warn_if_privileged's). */
    if (f && !wrote && !said_untraced && !(WIFEXITED(status) && WEXITSTATUS(status) == 127))
        fprintf(stderr,
                "mtrace: no trace was written: %s did not load the recorder (a statically linked "
                "program, or one that is set-user-ID, set-group-ID or has file capabilities, runs "
                "without LD_PRELOAD)\n",
                prog);
}

int cmd_record(int argc, char **argv)
{
    static const struct option opts[] = {
        { "output", required_argument, 0, 'o' },
        { "stacks", required_argument, 0, 's' },
        { "paused", no_argument, 0, 'p' },
        { "rss-ms", required_argument, 0, 'r' },
        { "force", no_argument, 0, 'f' },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    const char *out = "mtrace.%p.mtr", *stacks = NULL, *rss = NULL;
    int paused = 0, force = 0, c;
    optind = 0; /* afresh: see mt_getopt */
    while ((c = mt_getopt("mtrace record", argc, argv, "+o:s:pr:fh", opts)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 's':
            stacks = optarg;
            break;
        case 'p':
            paused = 1;
            break;
        case 'r':
            rss = optarg;
            break;
        case 'f':
            force = 1;
            break;
        case 'h':
            return mt_help_print("record");
        default:
            return mt_help_usage_error("record");
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "mtrace record: no command given to run\n");
        return mt_help_usage_error("record");
    }
    if ((stacks && mt_uint_option("mtrace record", "--stacks", stacks, 0, 64, NULL) < 0) ||
        (rss && mt_uint_option("mtrace record", "--rss-ms", rss, 0, 1000000000ul, NULL) < 0))
        return MT_EXIT_USAGE;
    char shim[PATH_MAX];
    if (find_shim(shim, sizeof shim) < 0) {
        fprintf(stderr, "mtrace: cannot find libmtrace.so (looked next to this program and at %s); set MTRACE_SHIM\n",
                MT_SHIM_INSTALL_PATH);
        return 2;
    }
    char abs_out[PATH_MAX], dir_out[PATH_MAX];
    assert(out); /* -o takes a required argument: getopt_long never gives it NULL */
    if (!*out) {
        fprintf(stderr, "mtrace record: -o: an empty path\n");
        return mt_help_usage_error("record");
    }
    if (!(out = record_output(out, abs_out, dir_out, force)))
        return 2;
    char index[PATH_MAX];
    mt_tmp_template(index, sizeof index, "index", "");
    const int ifd = mkstemp(index);
    if (ifd < 0) {
        fprintf(stderr, "mtrace: cannot create %s: %s\n", index, strerror(errno));
        return 2;
    }
    close(ifd);
    mt_cleanup_add(index, 0); /* SIGTERM to mtrace record removes it (SIGINT is the program's) */

    char preload[PATH_MAX * 2];
    const char *old = getenv("LD_PRELOAD");
    snprintf(preload, sizeof preload, "%s%s%s", shim, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_PRELOAD", preload, 1);
    setenv("MTRACE_OUT", out, 1);
    setenv("MTRACE_INDEX", index, 1);
    if (stacks)
        setenv("MTRACE_STACKS", stacks, 1);
    if (rss)
        setenv("MTRACE_RSS_MS", rss, 1);
    if (paused)
        setenv("MTRACE_PAUSED", "1", 1);

    const int said_untraced = warn_if_privileged(argv[optind]);

    /* Like time(1): the terminal's signals are for the traced program, we wait for it. */
    struct sigaction ign = { .sa_handler = SIG_IGN }, old_int, old_quit;
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    const pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "mtrace: fork: %s\n", strerror(errno));
        unlink(index);
        mt_cleanup_del(index);
        return 2;
    }
    if (pid == 0) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        execvp(argv[optind], argv + optind);
        fprintf(stderr, "mtrace: cannot run %s: %s\n", argv[optind], strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    say_written(index, status, said_untraced, argv[optind]);
    unlink(index);
    mt_cleanup_del(index);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
