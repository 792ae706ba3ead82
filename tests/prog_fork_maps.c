/* Forks while another thread maps and unmaps memory: the recorder lists the program's mappings under
 * a lock (libmtrace/shim_vmlive.c), and a fork made while the other thread holds it gives a child
 * whose only thread would wait for it for ever at its first mmap. The parent forks N children (argv[1]),
 * one after another, while its second thread maps and unmaps 64 KiB without pause; each child maps and
 * unmaps a few times, with an alarm of 3 s, and exits 0. Prints "children N failed F" (F: children
 * that did not exit 0: killed by the alarm, stuck). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_int stop;

static void *mapper(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        void *m = mmap(NULL, 64 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED)
            munmap(m, 64 << 10);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const int n = argc > 1 ? atoi(argv[1]) : 200;
    pthread_t t;
    if (pthread_create(&t, NULL, mapper, NULL) != 0)
        return 1;
    int failed = 0;
    for (int i = 0; i < n; i++) {
        const pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            alarm(3);
            for (int k = 0; k < 4; k++) {
                void *m = mmap(NULL, 64 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (m == MAP_FAILED || munmap(m, 64 << 10) != 0)
                    _exit(3);
            }
            _exit(0);
        }
        int st;
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failed++;
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    printf("children %d failed %d\n", n, failed);
    return 0;
}
