/* Where and when the replay creates its threads: the creation plan (each thread at the op of its
 * creator where the traced program created it) and the creation itself. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sim.h"

void sim_spawn(sim_t *s, uint32_t child)
{
    sim_thread_t *t = &s->th[child];
    if (atomic_load(&t->created))
        return;
    /* Detached: a replay thread's stack goes back to glibc's cache when it ends, for the next thread
     * to reuse, as it does in a program that joins its threads. Joined only at the end of the
     * replay, 2000 short threads kept 2000 stacks: a max RSS of 19.5 MB where the traced program's
     * was 2 MB. The main thread waits for threads_running to drop to 0 instead. */
    pthread_attr_t attr;
    pthread_t th;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    atomic_fetch_add(&s->threads_running, 1);
    const int rc = pthread_create(&th, &attr, sim_thread_main, t);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        atomic_fetch_sub(&s->threads_running, 1);
        char msg[PATH_MAX + 100];
        snprintf(msg, sizeof msg, "%s: cannot create a thread: %s", mt_wl_path(s->wl), strerror(rc));
        sim_set_error(s, t, msg);
        atomic_store(&t->created, 2);
        sim_stop_all(s);
    } else {
        atomic_store(&t->created, 1);
    }
    syscall(SYS_futex, (uint32_t *)&t->created, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

static int spawn_order(const void *a, const void *b)
{
    const sim_spawn_t *x = a, *y = b;
    if (x->creator != y->creator)
        return x->creator < y->creator ? -1 : 1;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->child < y->child ? -1 : x->child > y->child;
}

/* Where each thread is created: its stream starts with THREAD_START, then WAIT(creator, n) if the
 * trace knew its creator; it is created once the creator has completed n ops. One table for all
 * creators, ordered by creator and count: each creator's children are a run of it. */
int sim_plan_spawns(sim_t *s, mt_error_t *err)
{
    uint32_t n = 0;
    /* Thread 0 runs on the main thread, whatever the index says of its creator. */
    for (uint32_t k = 1; k < s->nthreads; k++) {
        const mt_wl_thread_entry_t *e = mt_wl_thread(s->wl, k);
        if (!e->creator || e->creator - 1 >= s->nthreads || e->creator - 1 == k)
            continue;
        mt_wl_cursor_t *c;
        if (mt_wl_cursor_open(&c, s->wl, k) < 0) {
            snprintf(err->msg, sizeof err->msg, "out of memory");
            return -ENOMEM;
        }
        mt_wl_rec_t r;
        uint64_t at = 0;
        if (mt_wl_cursor_next(c, &r, err) > 0 && r.op == MT_WL_THREAD_START && mt_wl_cursor_next(c, &r, err) > 0 &&
            r.op == MT_WL_WAIT && r.thread == e->creator - 1)
            at = r.n;
        mt_wl_cursor_close(c);
        if (!at)
            continue;
        s->spawns[n++] = (sim_spawn_t){ .at = at, .creator = e->creator - 1, .child = k };
        s->th[k].spawned = 1;
    }
    qsort(s->spawns, n, sizeof *s->spawns, spawn_order);
    for (uint32_t i = 0; i < n; i++) {
        sim_thread_t *p = &s->th[s->spawns[i].creator];
        if (!p->nspawn++)
            p->spawn_first = i;
    }
    return 0;
}
