/* Running the simulator: one child process per allocator, the allocator preloaded into it. */
#ifndef MTRACE_REPLAY_H
#define MTRACE_REPLAY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MT_REPLAY_MAX 32
#define MT_REPLAY_MAX_REPEAT 100 /* runs of each allocator (--repeat) */
/* Exit status of mtrace-sim and mtrace replay: the replay ran to its end and wrote its result, but
 * calls failed in it (the allocator returned NULL where the traced call got a block). */
#define MT_EXIT_FAILED_CALLS 3

typedef struct mt_replay_opts {
    const char *workload;
    const char *allocators[MT_REPLAY_MAX]; /* names (glibc, jemalloc, tcmalloc, mimalloc) or .so paths */
    int nallocators;
    const char *mallopts[MT_REPLAY_MAX]; /* NAME=VALUE */
    int nmallopts;
    const char *tunables; /* GLIBC_TUNABLES for the child, or NULL */
    const char *timing;   /* asap | recorded, or NULL */
    const char *touch;    /* pages | ends | none, or NULL */
    const char *json;     /* result file (several allocators: NAME inserted) */
    const char *series;   /* RSS series file (likewise) */
    const char *sim;      /* the mtrace-sim program; NULL: found next to this one */
    int quiet;            /* the child's summary is not shown */
    int repeat;           /* runs of each allocator, 1 to MT_REPLAY_MAX_REPEAT (0: 1) */
} mt_replay_opts_t;

/* The library file for an allocator name, or the name itself if it is a path. Returns NULL and
 * fills `why` (naming the Debian package to install) when it cannot be found. */
const char *mt_allocator_path(const char *name, char *buf, size_t cap, char *why, size_t why_cap);

/* Runs one replay per allocator in turn, `repeat` rounds of them: every allocator once, then again,
 * so that a disturbance of the machine falls on the runs of every allocator alike rather than on all
 * the runs of one. Every run of an allocator is labelled with the allocator's name (mtrace compare
 * takes them as runs of one row). Result files: FILE as given for one run of one allocator; with
 * several allocators, FILE.NAME.json; with repeat > 1 the run's number (1...) is inserted too:
 * FILE.1.json or FILE.NAME.1.json. Writes each result's JSON path into results[k], in the order run
 * (room for nallocators * repeat). Returns 0, or the first child's failure as an exit status (1 bad
 * input, 2 usage), MT_EXIT_FAILED_CALLS when every run ended but calls failed in some, or 128 + N when signal N
 * (SIGINT, SIGTERM, SIGHUP) came: it is passed on to the child, whose files of that run are removed, and no further run
 * starts. A child also dies with this process. */
int mt_replay_run(const mt_replay_opts_t *o, char results[][4096], int *nresults);

#ifdef __cplusplus
}
#endif
#endif
