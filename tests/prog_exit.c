/* Ends through _exit or _Exit, which run no destructors:
 *   prog_exit _exit N    N malloc/free pairs, then _exit(3)
 *   prog_exit _Exit N    the same, then _Exit(4)
 *   prog_exit vfork N    a vfork child calls _exit(0) at once (on the parent's memory); then the
 *                        parent makes N malloc/free pairs and returns 0
 *   prog_exit thread N   a second thread calls _exit(5) after N pairs of its own while the main
 *                        thread allocates and frees without pause
 *   prog_exit signal N   a timer signals every 37 us while the main thread allocates and frees
 *                        without pause; the handler's Nth call runs _exit(6), often while the
 *                        thread is inside the recorder, writing a record
 * Prints "pairs N" first. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "prog_util.h"

static long pairs;

static void churn(long n)
{
    for (long i = 0; i < n; i++) {
        char *p = malloc(16 + (size_t)(i % 200));
        p[0] = (char)i;
        free(p);
    }
}

static void *exiter(void *arg)
{
    (void)arg;
    churn(pairs);
    _exit(5);
}

static volatile sig_atomic_t ticks;

static void on_tick(int sig)
{
    (void)sig;
    if (++ticks >= pairs)
        _exit(6);
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    pairs = atol(argv[2]);
    put("pairs", (uint64_t)pairs);
    flush_out();
    if (!strcmp(argv[1], "_exit")) {
        churn(pairs);
        _exit(3);
    }
    if (!strcmp(argv[1], "_Exit")) {
        churn(pairs);
        _Exit(4);
    }
    if (!strcmp(argv[1], "vfork")) {
        const pid_t pid = vfork();
        if (pid == 0)
            _exit(0);
        int status;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
            return 1;
        churn(pairs);
        return 0;
    }
    if (!strcmp(argv[1], "thread")) {
        pthread_t th;
        if (pthread_create(&th, NULL, exiter, NULL))
            return 1;
        for (;;)
            churn(1000);
    }
    if (!strcmp(argv[1], "signal")) {
        struct sigaction sa = { .sa_handler = on_tick };
        sigemptyset(&sa.sa_mask);
        timer_t tm;
        struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };
        const struct itimerspec every = { .it_interval = { 0, 37000 }, .it_value = { 0, 37000 } };
        if (sigaction(SIGALRM, &sa, NULL) || timer_create(CLOCK_MONOTONIC, &ev, &tm) ||
            timer_settime(tm, 0, &every, NULL))
            return 1;
        for (;;)
            churn(1000);
    }
    return 2;
}
