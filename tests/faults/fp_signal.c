/* Signal handlers that allocate. The main thread spins in a loop of allocator calls; NSIG signals
 * interrupt it, sent by a second thread with pthread_kill (usr1) or by an interval timer (alrm).
 * The handler calls malloc(777) and frees the block, but only when the main loop is outside glibc's
 * malloc and free (a flag says so): glibc's allocator is not reentrant, and the point is the shim.
 * Outside those calls the loop still calls free(NULL) and malloc_usable_size(NULL), which the shim
 * records and glibc answers without a lock, so signals do land while the shim writes a record.
 *
 * A signal sent to a thread that runs on another CPU without making system calls may wait for that
 * CPU's next timer tick (no IPI in some VMs): a few hundred per second. The loop stops after NSIG
 * signals or MAX_ITER iterations, whichever comes first, which bounds the trace (7 bytes a call).
 *
 * Info: "handled N", "handler_calls N" (calls the handlers made), "skipped N", "loop_calls N",
 * "tid TID". stdout: a summary that does not depend on the run.
 *   usage: fp_signal INFO usr1|alrm NSIG MAX_ITER */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "fp_util.h"

static volatile sig_atomic_t in_malloc;
static volatile long handled, handler_calls, skipped;
static long nsig;
static volatile int loop_done;
static pthread_t main_thread;

static void handler(int sig)
{
    (void)sig;
    if (!in_malloc) {
        char *p = malloc(777);
        if (p)
            p[0] = 1;
        free(p);
        handler_calls += 2;
    } else {
        skipped++;
    }
    handled++;
}

static void *sender(void *arg)
{
    (void)arg;
    for (long n = 0; n < nsig && !loop_done; n++) {
        pthread_kill(main_thread, SIGUSR1);
        while (handled <= n && !loop_done) /* one at a time: a pending signal is not lost */
            sched_yield();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    fp_info_path = argv[1];
    const int timer = !strcmp(argv[2], "alrm");
    nsig = atol(argv[3]);
    const uint64_t max_iter = strtoull(argv[4], NULL, 10);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(timer ? SIGALRM : SIGUSR1, &sa, NULL);
    main_thread = pthread_self();
    fp_info("tid %d", (int)gettid());

    pthread_t th;
    if (timer) {
        struct itimerval it = { { 0, 200 }, { 0, 200 } };
        setitimer(ITIMER_REAL, &it, NULL);
    } else if (pthread_create(&th, NULL, sender, NULL) != 0) {
        return 1;
    }
    long loop_calls = 0;
    for (uint64_t i = 0; handled < nsig && i < max_iter; i++) {
        in_malloc = 1;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        char *p = malloc(1 + i % 512);
        if (!p)
            abort();
        p[0] = 1;
        free(p);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        in_malloc = 0;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        free(NULL);
        (void)malloc_usable_size(NULL);
        loop_calls += 4;
    }
    loop_done = 1;
    if (timer) {
        struct itimerval off = { { 0, 0 }, { 0, 0 } };
        setitimer(ITIMER_REAL, &off, NULL);
        signal(SIGALRM, SIG_IGN);
    } else {
        pthread_join(th, NULL);
    }
    fp_info("handled %ld", (long)handled);
    fp_info("handler_calls %ld", (long)handler_calls);
    fp_info("skipped %ld", (long)skipped);
    fp_info("loop_calls %ld", loop_calls);
    fp_say("signals: no deadlock\n");
    return 0;
}
