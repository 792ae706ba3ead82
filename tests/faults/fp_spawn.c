/* Starts fp_target three ways: vfork + execve (dynamic target), posix_spawn (dynamic target), and
 * posix_spawn of a statically linked target (which LD_PRELOAD cannot reach). Allocates malloc(123)
 * before and frees it after. The info file gets "vfork PID", "spawn PID", "static PID".
 *   usage: fp_spawn INFO TARGET STATIC_TARGET|- */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fp_util.h"

extern char **environ;

static int wait_for(pid_t pid)
{
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    fp_info_path = argv[1];
    const char *target = argv[2], *static_target = argv[3];
    void *keep = malloc(123);

    char *vargv[] = { (char *)target, (char *)"1", NULL };
    const pid_t v = vfork();
    if (v < 0)
        return 1;
    if (v == 0) {
        execve(target, vargv, environ);
        _exit(127);
    }
    fp_info("vfork %d", (int)v);
    fp_say("vfork exit %d\n", wait_for(v));

    pid_t s;
    char *sargv[] = { (char *)target, (char *)"2", NULL };
    int rc = posix_spawn(&s, target, NULL, NULL, sargv, environ);
    if (rc != 0)
        return 1;
    fp_info("spawn %d", (int)s);
    fp_say("spawn exit %d\n", wait_for(s));

    if (strcmp(static_target, "-") != 0) {
        char *targv[] = { (char *)static_target, (char *)"3", NULL };
        rc = posix_spawn(&s, static_target, NULL, NULL, targv, environ);
        if (rc != 0)
            return 1;
        fp_info("static %d", (int)s);
        fp_say("static exit %d\n", wait_for(s));
    }
    free(keep);
    return 0;
}
