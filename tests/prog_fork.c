/* A parent that allocates, forks a child that allocates, waits for it and allocates again. Prints
 * the pointers of both and the child's pid. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prog_util.h"

int main(void)
{
    void *p = malloc(111);
    put_ptr("parent_p", p);
    put("parent_pid", (uint64_t)getpid());
    flush_out(); /* before the fork, or the child would print it again */
    const pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        void *c1 = malloc(222);
        void *c2 = malloc(333);
        free(c1);
        put_ptr("child_c1", c1);
        put_ptr("child_c2", c2);
        put("child_pid", (uint64_t)getpid());
        flush_out();
        exit(0); /* through the destructors: the child's trace is finished */
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 2;
    void *q = malloc(444);
    put("forked", (uint64_t)pid);
    put_ptr("parent_q", q);
    free(q);
    free(p);
    flush_out();
    return 0;
}
