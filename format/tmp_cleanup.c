/* Temporaries removed when a stop signal ends the process (tmp_cleanup.h). The handler only reads a
 * fixed table and calls async-signal-safe functions (kill, waitpid, unlink, rmdir, raise): an entry
 * is published by setting its `used` flag after its path is complete, and a handler that interrupts
 * mt_cleanup_add meanwhile skips it. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mtrace/tmp_cleanup.h"

#define MT_CLEANUP_SLOTS 32 /* a command holds a handful at once: outputs, a data file, a log */
#define MT_CLEANUP_PATH_MAX 4096

static struct {
    volatile sig_atomic_t used;
    int is_dir;
    char path[MT_CLEANUP_PATH_MAX];
} slots[MT_CLEANUP_SLOTS];
static volatile sig_atomic_t child;

static void on_stop_signal(int sig)
{
    const int saved = errno;
    const pid_t c = (pid_t)child;
    if (c > 0) {
        kill(c, SIGKILL);
        while (waitpid(c, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    for (int i = MT_CLEANUP_SLOTS; i-- > 0;) {
        if (!slots[i].used)
            continue;
        if (slots[i].is_dir)
            rmdir(slots[i].path);
        else
            unlink(slots[i].path);
    }
    errno = saved;
    raise(sig); /* SA_RESETHAND made it the default action again: the process ends by it */
}

void mt_cleanup_on_signals(void)
{
    static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
    struct sigaction sa = { .sa_handler = on_stop_signal, .sa_flags = SA_RESETHAND | SA_NODEFER };
    sigemptyset(&sa.sa_mask);
    for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++) {
        struct sigaction old;
        /* One ignored at start (nohup, a script's background job) stays ignored. */
        if (sigaction(sigs[k], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[k], &sa, NULL);
    }
}

int mt_cleanup_add(const char *path, int is_dir)
{
    const size_t len = strlen(path);
    if (len >= MT_CLEANUP_PATH_MAX)
        return -1;
    for (int i = 0; i < MT_CLEANUP_SLOTS; i++) {
        if (slots[i].used)
            continue;
        memcpy(slots[i].path, path, len + 1);
        slots[i].is_dir = is_dir;
        atomic_signal_fence(memory_order_seq_cst);
        slots[i].used = 1;
        return 0;
    }
    return -1;
}

void mt_cleanup_del(const char *path)
{
    for (int i = MT_CLEANUP_SLOTS; i-- > 0;) {
        if (slots[i].used && !strcmp(slots[i].path, path)) {
            slots[i].used = 0;
            return;
        }
    }
}

void mt_cleanup_child(pid_t pid)
{
    child = pid;
}
