/* For the secure-execution test: built twice, once linked against libmtrace.so with an absolute
 * run path (in secure-execution mode the loader ignores LD_PRELOAD paths with a slash and $ORIGIN, so
 * linking is how the shim gets into a setuid program) and once plain. Allocates, forks a child that
 * allocates, and prints a summary that does not depend on the run.
 *   fp_secure probe: prints "secure N" (AT_SECURE), "shim N" (1 if mtrace_control is defined) and
 *   "control N" (what mtrace_sync() returns) instead. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mtrace.h"
#include "fp_util.h"

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "probe")) {
        fp_say("secure %lu\nshim %d\ncontrol %d\n", getauxval(AT_SECURE), dlsym(RTLD_DEFAULT, "mtrace_control") != NULL,
               mtrace_sync());
        return 0;
    }
    unsigned long sum = 0;
    for (int i = 0; i < 1000; i++) {
        char *p = malloc(16 + (size_t)i);
        if (!p)
            return 3;
        p[0] = (char)i;
        sum += (unsigned char)p[0];
        free(p);
    }
    const pid_t pid = fork();
    if (pid == 0) {
        free(malloc(99));
        _exit(7);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    fp_say("secure: sum %lu child %d\n", sum, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 4;
}
