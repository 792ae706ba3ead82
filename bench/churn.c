/* churn: a malloc-heavy benchmark for measuring tracing overhead.
 *
 * Each worker thread keeps LIVE slots of live blocks. A step picks a random slot, frees the block
 * there and allocates a new one of a log-uniformly distributed size; one step in 16 uses calloc and
 * one in 16 reallocs the slot's block in place of free + malloc. The first byte of every block is
 * written (every byte with -w). Every malloc, calloc, realloc and free counts as one call; a thread stops after
 * CALLS_PER_THREAD calls. Workers always run on their own threads (also with -t 1), so that the
 * allocator setup (a non-main arena per thread) is the same at every thread count; with -m (and -t 1)
 * the one worker runs on the main thread, so that the process has one thread, as most programs do.
 *
 * Output, one line:
 *   threads=T calls=C elapsed_ns=E ns_per_call=N cpu_ns_per_call=U
 * C is the total over all threads, E the wall time from the start barrier to the last thread's end,
 * N the mean over threads of (that thread's wall time / its calls), U the same with the thread's CPU
 * time (user + system, CLOCK_THREAD_CPUTIME_ID): on a busy machine it leaves out the time a thread
 * waited for a CPU. With -p, worker i runs only on the i-th CPU the process may use (modulo their
 * number), and a line per worker follows:
 *   thread=I cpu=K ns_per_call=N cpu_ns_per_call=U
 * so that a figure can be compared with one taken on the same CPU: the CPUs of a virtual machine
 * need not be equally fast (bench/cpu_scaling.sh). Worker i draws random sequence i, unless -q
 * gives every worker the same one, so that each compares with a 1-thread run of that sequence:
 * sequences differ by a few ns per call, natively and in what tracing adds.
 *
 * With -x the workers share one table of THREADS x LIVE slots, as larson's threads hand blocks to
 * one another: a step takes a random slot's block with an atomic exchange, frees or reallocates it
 * and puts the new block back the same way, so that at T threads (T-1)/T of the frees are of blocks
 * another thread allocated (glibc sends those back to the allocating thread's arena, under its
 * lock). The exchanges cost the same natively and traced.
 *
 * With -A K (one worker) the recorder is measured inside one process: the calls run in phases of K,
 * recording paused (mtrace_pause) and resumed in turn, in pairs ordered ABBA, and a second line
 *   phases=P paused_cpu_ns_per_call=X recording_cpu_ns_per_call=Y added_median=D added_q1=L added_q3=H
 * gives the medians of the phases' CPU ns per call and of each pair's difference (the first pair,
 * which fills the slots, left out). Both phases run on the same heap, the same physical pages and the
 * same CPU, which two processes do not: on a large working set, runs of one build differ by a
 * hundred ns per call from the pages they get. A paused call still enters the recorder (about two
 * loads and a branch), so D is what recording adds over that. Without the recorder both phases are
 * alike and D shows the method's noise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <mcheck.h>
#include "mtrace.h"
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <unistd.h>

#define SIZE_TABLE 4096u /* log-uniform size draws per thread, indexed by random bits */

typedef struct worker {
    pthread_t th;
    unsigned index;
    int cpu;           /* the CPU it is pinned to (-p), else -1 */
    uint64_t calls;    /* calls made */
    uint64_t ns;       /* this thread's wall time */
    uint64_t cpu_ns;   /* this thread's CPU time */
    uint64_t checksum; /* keeps the touches observable */
} worker_t;

static uint64_t opt_calls = 10000000;
static unsigned opt_threads = 1;
static size_t opt_min = 16, opt_max = 65536;
static size_t opt_live = 1024;
static int opt_write_all;    /* -w: write every byte of each block, as a program that uses it */
static int opt_pin;          /* -p: pin worker i to the i-th allowed CPU */
static int64_t opt_seq = -1; /* -q: the random sequence every worker draws; -1: worker i draws i */
static int opt_cross;        /* -x: one slot table shared by all workers */
static int opt_main;         /* -m: the one worker runs on the main thread */
static uint64_t opt_ab;      /* -A: calls per phase, recording paused and resumed in turn; 0: off */
#define AB_MAX_PHASES 4096
static uint64_t ab_cpu[AB_MAX_PHASES], ab_calls[AB_MAX_PHASES]; /* -A: each phase's CPU ns, calls */
static unsigned ab_phases;
static void **shared_slot; /* -x: opt_threads * opt_live slots */

static pthread_barrier_t start_barrier;
static uint64_t start_ns;

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

/* xorshift64*: fast, good enough for picking slots and sizes. */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static uint64_t seed_for(unsigned index)
{
    /* splitmix64 of the thread index: distinct, nonzero seeds */
    uint64_t z = 0x9E3779B97F4A7C15ULL * (index + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z ? z : 1;
}

static void *work(void *arg)
{
    worker_t *w = arg;
    if (w->cpu >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(w->cpu, &one);
        const int rc = pthread_setaffinity_np(pthread_self(), sizeof one, &one);
        if (rc) {
            fprintf(stderr, "churn: cannot pin worker %u to CPU %d: %s\n", w->index, w->cpu, strerror(rc));
            exit(1);
        }
    }
    uint64_t s = seed_for(opt_seq >= 0 ? (unsigned)opt_seq : w->index);
    /* Set-up allocations happen before the barrier, so they are not timed. */
    void **slot = opt_cross ? shared_slot : calloc(opt_live, sizeof *slot);
    uint32_t *sizes = malloc(SIZE_TABLE * sizeof *sizes);
    if (!slot || !sizes) {
        fprintf(stderr, "churn: out of memory\n");
        exit(1);
    }
    const double lmin = log((double)opt_min), lspan = log((double)opt_max) - lmin;
    for (unsigned i = 0; i < SIZE_TABLE; i++) {
        const double u = (double)(rng_next(&s) >> 11) * (1.0 / 9007199254740992.0);
        double v = exp(lmin + u * lspan);
        if (v < (double)opt_min)
            v = (double)opt_min;
        if (v > (double)opt_max)
            v = (double)opt_max;
        sizes[i] = (uint32_t)v;
    }
    const uint64_t live = opt_cross ? opt_live * opt_threads : opt_live, n = opt_calls;
    uint64_t calls = 0, sum = 0;

    pthread_barrier_wait(&start_barrier);
    const uint64_t t0 = now_ns(), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t phase_end = opt_ab ? opt_ab : n, phase_c0 = c0, phase_calls0 = 0;
    if (opt_ab)
        mtrace_pause(); /* phase 0: paused (ABBA: pair k is paused-recording for even k) */
    while (calls < n) {
        if (opt_ab && calls >= phase_end) {
            const uint64_t c = clock_ns(CLOCK_THREAD_CPUTIME_ID);
            if (ab_phases < AB_MAX_PHASES) {
                ab_cpu[ab_phases] = c - phase_c0;
                ab_calls[ab_phases] = calls - phase_calls0;
                ab_phases++;
            }
            /* the next phase records when it is the second of an even pair or the first of an odd one */
            const unsigned k = ab_phases;
            if (((k & 1) != 0) == (((k >> 1) & 1) == 0))
                mtrace_resume();
            else
                mtrace_pause();
            phase_end = calls + opt_ab;
            phase_calls0 = calls;
            phase_c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        }
        const uint64_t r = rng_next(&s);
        void **sp = &slot[(r >> 32) % live];
        const size_t size = sizes[(r >> 8) & (SIZE_TABLE - 1)];
        const unsigned kind = (unsigned)r & 15u;
        /* -x: the block is this thread's between the two exchanges (a slot another worker holds
         * reads NULL here); otherwise plain loads and stores, as before */
        void *old = opt_cross ? __atomic_exchange_n(sp, NULL, __ATOMIC_ACQUIRE) : *sp;
        char *p;
        if (kind == 0 || (old && n - calls == 1)) { /* (the last call of the budget: no pair fits) */
            p = realloc(old, size);                 /* NULL slot: acts as malloc */
            calls++;
        } else {
            if (old) {
                free(old);
                calls++;
            }
            p = kind == 1 ? calloc(1, size) : malloc(size);
            calls++;
        }
        if (!p) {
            fprintf(stderr, "churn: allocation of %zu bytes failed\n", size);
            exit(1);
        }
        if (opt_write_all)
            memset(p, (int)(r & 0xff), size);
        else
            p[0] = (char)r;
        sum += (unsigned char)p[0];
        if (!opt_cross) {
            *sp = p;
            continue;
        }
        /* another worker may have filled the slot meanwhile: that block is freed (a call too; the
         * budget may end one call over, and calls counts it) */
        void *other = __atomic_exchange_n(sp, p, __ATOMIC_ACQ_REL);
        if (other) {
            free(other);
            calls++;
        }
    }
    w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    if (opt_ab)
        mtrace_resume();
    w->ns = now_ns() - t0;
    w->calls = calls;
    w->checksum = sum;
    /* Tear-down is not timed and not counted. */
    free(sizes);
    if (opt_cross) /* the main thread frees the shared table after the join */
        return NULL;
    for (uint64_t i = 0; i < live; i++)
        free(slot[i]);
    free(slot);
    return NULL;
}

static void print_results(const worker_t *w, uint64_t elapsed)
{
    uint64_t calls = 0;
    double per_call = 0, cpu_per_call = 0;
    for (unsigned i = 0; i < opt_threads; i++) {
        calls += w[i].calls;
        per_call += (double)w[i].ns / (double)w[i].calls;
        cpu_per_call += (double)w[i].cpu_ns / (double)w[i].calls;
    }
    per_call /= opt_threads;
    cpu_per_call /= opt_threads;
    printf("threads=%u calls=%" PRIu64 " elapsed_ns=%" PRIu64 " ns_per_call=%.2f cpu_ns_per_call=%.2f\n", opt_threads,
           calls, elapsed, per_call, cpu_per_call);
    for (unsigned i = 0; opt_pin && i < opt_threads; i++)
        printf("thread=%u cpu=%d ns_per_call=%.2f cpu_ns_per_call=%.2f\n", i, w[i].cpu,
               (double)w[i].ns / (double)w[i].calls, (double)w[i].cpu_ns / (double)w[i].calls);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(double *v, unsigned n, unsigned num, unsigned den)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n ? v[(size_t)n * num / den] : 0;
}

/* -A: the phases' medians and the median and quartiles of the pairs' differences. */
static void print_ab(void)
{
    static double paused[AB_MAX_PHASES / 2], rec[AB_MAX_PHASES / 2], diff[AB_MAX_PHASES / 2];
    unsigned np = 0;
    for (unsigned k = 1; 2 * k + 1 < ab_phases; k++) { /* pair 0 fills the slots */
        const unsigned a = 2 * k, b = 2 * k + 1;       /* even pair: a paused; odd: a recording */
        const double x = (double)ab_cpu[a] / (double)ab_calls[a], y = (double)ab_cpu[b] / (double)ab_calls[b];
        paused[np] = k & 1 ? y : x;
        rec[np] = k & 1 ? x : y;
        diff[np] = rec[np] - paused[np];
        np++;
    }
    if (!np) {
        fprintf(stderr, "churn: -A: fewer than two pairs of phases; raise -n or lower -A\n");
        return;
    }
    const double q1 = quantile(diff, np, 1, 4), q3 = quantile(diff, np, 3, 4), med = quantile(diff, np, 1, 2);
    printf("phases=%u paused_cpu_ns_per_call=%.2f recording_cpu_ns_per_call=%.2f added_median=%.2f added_q1=%.2f "
           "added_q3=%.2f\n",
           2 * np, quantile(paused, np, 1, 2), quantile(rec, np, 1, 2), med, q1, q3);
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: churn [-t THREADS] [-n CALLS_PER_THREAD] [-s MIN] [-S MAX] [-l LIVE] [-w] [-p] [-q SEQ] [-x] [-m] [-A K] [-g]\n"
        "  -t  worker threads (default 1)\n"
        "  -n  malloc-family calls per thread, free included (default 10000000)\n"
        "  -s  smallest block size (default 16)\n"
        "  -S  largest block size (default 65536); sizes are log-uniform in [MIN, MAX]\n"
        "  -l  live block slots per thread (default 1024)\n"
        "  -w  write every byte of each block (default: its first byte only)\n"
        "  -p  pin worker i to the i-th CPU the process may use; print a line per worker\n"
        "  -q  every worker makes the calls of random sequence SEQ (default: worker i those of i)\n"
        "  -x  the workers share one table of THREADS x LIVE slots: blocks freed by another\n"
        "      thread than the one that allocated them, as in larson\n"
        "  -A  measure the recorder in-process: phases of K calls with recording paused and\n"
        "      resumed in turn (one worker; a second line gives the medians)\n"
        "  -g  call glibc's mtrace() first (needs LD_PRELOAD=libc_malloc_debug.so.0 and "
        "MALLOC_TRACE)\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    const unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

/* Parses the options into the opt_ globals; -1 on a bad one. */
static int parse_args(int argc, char **argv, int *glibc_mtrace)
{
    int c;
    uint64_t v;
    while ((c = getopt(argc, argv, "t:n:s:S:l:wpq:xmA:gh")) != -1) {
        switch (c) {
        case 't':
            if (parse_u64(optarg, &v) || v < 1 || v > 1024)
                return -1;
            opt_threads = (unsigned)v;
            break;
        case 'n':
            if (parse_u64(optarg, &v) || v < 1)
                return -1;
            opt_calls = v;
            break;
        case 's':
            if (parse_u64(optarg, &v) || v < 1 || v > UINT32_MAX)
                return -1;
            opt_min = (size_t)v;
            break;
        case 'S':
            if (parse_u64(optarg, &v) || v < 1 || v > UINT32_MAX)
                return -1;
            opt_max = (size_t)v;
            break;
        case 'l':
            if (parse_u64(optarg, &v) || v < 1 || v > (1u << 26))
                return -1;
            opt_live = (size_t)v;
            break;
        case 'w':
            opt_write_all = 1;
            break;
        case 'p':
            opt_pin = 1;
            break;
        case 'q':
            if (parse_u64(optarg, &v) || v > UINT32_MAX)
                return -1;
            opt_seq = (int64_t)v;
            break;
        case 'x':
            opt_cross = 1;
            break;
        case 'm':
            opt_main = 1;
            break;
        case 'A':
            if (parse_u64(optarg, &v) || v < 1)
                return -1;
            opt_ab = v;
            break;
        case 'g':
            *glibc_mtrace = 1;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            return -1;
        }
    }
    if (optind != argc || opt_min > opt_max || (opt_main && opt_threads != 1) || (opt_ab && opt_threads != 1))
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    int glibc_mtrace = 0;
    if (parse_args(argc, argv, &glibc_mtrace) < 0)
        goto bad;
    if (glibc_mtrace)
        mtrace();

    worker_t *w = calloc(opt_threads, sizeof *w);
    if (opt_main) { /* no barrier to wait at: the timed loop starts right away */
        w[0].cpu = -1;
        if (opt_pin) {
            cpu_set_t allowed;
            if (sched_getaffinity(0, sizeof allowed, &allowed))
                return 1;
            for (int k = 0; k < CPU_SETSIZE; k++)
                if (CPU_ISSET(k, &allowed)) {
                    w[0].cpu = k;
                    break;
                }
        }
        if (pthread_barrier_init(&start_barrier, NULL, 1))
            return 1;
        work(&w[0]);
        print_results(w, w[0].ns);
        if (opt_ab)
            print_ab();
        free(w);
        if (glibc_mtrace)
            muntrace();
        return 0;
    }
    if (opt_cross)
        shared_slot = calloc((size_t)opt_live * opt_threads, sizeof *shared_slot);
    if (!w || (opt_cross && !shared_slot) || pthread_barrier_init(&start_barrier, NULL, opt_threads + 1)) {
        fprintf(stderr, "churn: set-up failed\n");
        return 1;
    }
    int cpus[CPU_SETSIZE], ncpus = 0;
    if (opt_pin) {
        cpu_set_t allowed;
        if (sched_getaffinity(0, sizeof allowed, &allowed)) {
            perror("churn: sched_getaffinity");
            return 1;
        }
        for (int k = 0; k < CPU_SETSIZE; k++)
            if (CPU_ISSET(k, &allowed))
                cpus[ncpus++] = k;
    }
    for (unsigned i = 0; i < opt_threads; i++) {
        w[i].index = i;
        w[i].cpu = ncpus ? cpus[i % (unsigned)ncpus] : -1;
        const int rc = pthread_create(&w[i].th, NULL, work, &w[i]);
        if (rc) {
            fprintf(stderr, "churn: pthread_create: %s\n", strerror(rc));
            return 1;
        }
    }
    pthread_barrier_wait(&start_barrier);
    start_ns = now_ns();
    for (unsigned i = 0; i < opt_threads; i++)
        pthread_join(w[i].th, NULL);
    print_results(w, now_ns() - start_ns);
    if (opt_ab)
        print_ab();
    pthread_barrier_destroy(&start_barrier);
    for (size_t i = 0; opt_cross && i < (size_t)opt_live * opt_threads; i++)
        free(shared_slot[i]);
    free(shared_slot);
    free(w);
    if (glibc_mtrace)
        muntrace();
    return 0;

bad:
    usage(stderr);
    return 2;
}
