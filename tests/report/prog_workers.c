/* A process tree for mtrace report's totals across traces: the parent starts N workers (argv[1],
 * default 4), each a fresh image (fork, then exec of this program with "worker I"), so that ASLR
 * loads every worker's code and libraries at addresses of their own. Worker I:
 *   - mallocs 100 * (I + 1) bytes at one line of this file and never frees them;
 *   - mallocs 48 bytes in libworkers_stripped.so, a library without symbols for the allocating
 *     function (its callsite is the module and an offset in it), never freed;
 *   - mallocs and frees 64 bytes at another line;
 * and prints "leak_line L" and "temp_line L" (with write(2): stdio's buffer would be a leak of its
 * own). The parent allocates nothing and exits 0 when every worker did. Built with -g -O0
 * -fno-builtin: every call is a real call on its own line. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libworkers_stripped.h"
#include "prog_util.h"

static void *volatile kept[2]; /* the leaks, out of the optimizer's reach */

static int worker(unsigned i)
{
    /* clang-format off */
    kept[0] = malloc(100 * (size_t)(i + 1)); const unsigned leak_line = __LINE__;
    void *temp = malloc(64); const unsigned temp_line = __LINE__;
    /* clang-format on */
    free(temp);
    kept[1] = workers_stripped_alloc(48);
    put("leak_line", leak_line);
    put("temp_line", temp_line);
    flush_out();
    return kept[0] && kept[1] ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "worker"))
        return worker((unsigned)atoi(argv[2]));
    const int n = argc > 1 ? atoi(argv[1]) : 4;
    for (int i = 0; i < n; i++) {
        const pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            char arg[16];
            snprintf(arg, sizeof arg, "%d", i);
            execl("/proc/self/exe", argv[0], "worker", arg, (char *)NULL);
            _exit(127);
        }
    }
    int failed = 0, status;
    for (int i = 0; i < n; i++)
        if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed = 1;
    return failed;
}
