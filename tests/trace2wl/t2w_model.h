/* The trace2wl model check (t2w_model.c): a seeded generator writes a random multithreaded trace,
 * trace2wl converts it, and the workload is checked against the trace and a reference merge of its
 * records. Used by the model tests (test_model.c) and by t2w-model-check, which runs one model of the
 * developer's choosing (t2w_model_check.c). */
#ifndef MTRACE_T2W_MODEL_H
#define MTRACE_T2W_MODEL_H

#include <stdint.h>

/* The program the generator runs in its head. */
typedef struct gparams {
    uint64_t seed;
    uint32_t threads; /* workers besides thread 1, at once */
    uint64_t calls;
    uint64_t jitter;    /* most ns a call's entry precedes its effect */
    int readers_shared; /* malloc_usable_size and failed reallocs on blocks other threads may free,
                         * else on the thread's own */
    int exits;          /* a worker exits halfway and a new one takes its tid */
    int one_producer;   /* only thread 1 allocates, the workers free and realloc its blocks */
} gparams_t;

/* What check_model checks: each level adds to the one before it (t2w_model.c says what in full). */
enum {
    LEVEL_COUNTS, /* the counts, the header and the live slots step by step against the reference */
    LEVEL_REPLAY, /* and the WAITs: met in the reference order, and a replay that does not deadlock */
    LEVEL_STRICT, /* and race checks: every interleaving */
};

/* Generates the trace of `p` into dir, converts it there and checks the workload at `level` (a
 * LEVEL_*): every check is a ck_assert, so a failure ends the Check test that called it. */
void check_model(const char *dir, const gparams_t *p, int level);

#endif
