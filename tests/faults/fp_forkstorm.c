/* A fork storm: the parent forks NCHILD children at once; child i allocates a little
 * (malloc(1000 + i), calloc(2, 500 + i), frees both) and exits; every tenth child forks a grandchild
 * first, which allocates malloc(3000 + i), frees it and exits. The info file gets "child I PID"
 * (from the parent) and "grand I PID" (from the child). stdout: a summary that does not depend on
 * the run.
 *   usage: fp_forkstorm INFO NCHILD */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fp_util.h"

static void child(int i)
{
    void *a = malloc(1000 + (size_t)i);
    void *b = calloc(2, 500 + (size_t)i);
    if (!a || !b)
        _exit(3);
    free(a);
    if (i % 10 == 0) {
        const pid_t g = fork();
        if (g < 0)
            _exit(4);
        if (g == 0) {
            void *c = malloc(3000 + (size_t)i);
            if (!c)
                _exit(3);
            free(c);
            exit(0);
        }
        int st;
        if (waitpid(g, &st, 0) != g || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            _exit(5);
        fp_info("grand %d %d", i, (int)g);
    }
    free(b);
    exit(0); /* through the destructors: the trace is finished */
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    fp_info_path = argv[1];
    const int n = atoi(argv[2]);
    static pid_t pids[4096];
    if (n < 1 || n > 4096)
        return 2;
    fp_info("parent %d", (int)getpid());
    void *keep = malloc(100);
    for (int i = 0; i < n; i++) {
        const pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0)
            child(i);
        pids[i] = pid;
    }
    int failed = 0;
    for (int i = 0; i < n; i++) {
        int st;
        if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failed++;
        fp_info("child %d %d", i, (int)pids[i]);
    }
    free(keep);
    fp_say("children %d grandchildren %d failed %d\n", n, (n + 9) / 10, failed);
    return failed ? 1 : 0;
}
