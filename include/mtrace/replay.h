/* Running the simulator: one child process per allocator, the allocator preloaded into it. Errors
 * as the trace reader's: a negative errno and the message in err (its caller prints it). */
#ifndef MTRACE_REPLAY_H
#define MTRACE_REPLAY_H

#include <stddef.h>

#include "mtrace/trace_reader.h"

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
    int stderr_fd;        /* above 2: the children's stderr goes there (a caller that keeps a line
                           * of its own on a terminal shows it after); else they share this one's */
} mt_replay_opts_t;

/* The library file for an allocator name into buf, or the name itself if it is a path; "" for
 * glibc (nothing to preload). 0, or a negative errno with the message in err (naming the Debian
 * package to install) when it cannot be found: -ENOENT, -EINVAL for a name it does not know; buf
 * is "" then. */
int mt_allocator_path(const char *name, char *buf, size_t cap, mt_error_t *err);

/* Why mt_mallopt_parse refused a setting. */
enum {
    MT_MALLOPT_UNREADABLE = -1, /* not NAME=VALUE, or VALUE not a number */
    MT_MALLOPT_RANGE = -2,      /* a number that does not fit mallopt's int */
    MT_MALLOPT_UNKNOWN = -3,    /* NAME is neither a setting the replays know nor a number */
};

/* A setting NAME=VALUE into mallopt's param and value: NAME as mmap_threshold, M_MMAP_THRESHOLD (any
 * case) or a number, VALUE a number with an optional k or m suffix. 0, or an MT_MALLOPT_* code. */
int mt_mallopt_parse(const char *arg, int *param, int *value);

/* The setting names mt_mallopt_parse knows, ", " between them, into buf (cut to cap). Returns buf. */
char *mt_mallopt_names(char *buf, size_t cap);

/* How mt_replay_run's children ended, beyond its message: what a command needs to choose its exit
 * status. Each field is 0 unless that happened; at most one of the last three is set. */
typedef struct mt_replay_outcome {
    int failed_calls; /* every run ended, but calls failed in some: a child exited MT_EXIT_FAILED_CALLS */
    int child_status; /* a child exited with this other non-zero status (1 bad input, 2 usage) after
                       * saying why on stderr itself */
    int child_signal; /* a child died of this signal */
    int stop_signal;  /* this process got this signal (SIGINT, SIGTERM, SIGHUP) during a run */
} mt_replay_outcome_t;

/* Runs one replay per allocator in turn, `repeat` rounds of them: every allocator once, then again,
 * so that a disturbance of the machine falls on the runs of every allocator alike rather than on all
 * the runs of one. Every run of an allocator is labelled with the allocator's name (mtrace compare
 * takes them as runs of one row). Result files: FILE as given for one run of one allocator; with
 * several allocators, FILE.NAME.json; with repeat > 1 the run's number (1...) is inserted too:
 * FILE.1.json or FILE.NAME.1.json. Writes each result's JSON path into results[k], in the order run
 * (room for nallocators * repeat) and their number into *nresults. Returns 0 when every run ended and
 * wrote its result (out->failed_calls says whether calls failed in some). Else no further run
 * starts and it returns a negative errno with the message in err, out saying how the run ended:
 *  - a stop signal (SIGINT, SIGTERM, SIGHUP) came: -EINTR, out->stop_signal. It is passed on to the
 *    child, whose files of that run are removed;
 *  - a child died of a signal, or exited with a status other than 0 and MT_EXIT_FAILED_CALLS: -ECHILD,
 *    out->child_signal or out->child_status;
 *  - a run could not start (mtrace-sim not found or not runnable, an allocator not found or not a
 *    library for this machine, fork failing): its errno, none of out's last three fields set.
 * A child also dies with this process. */
int mt_replay_run(const mt_replay_opts_t *o, char results[][4096], int *nresults, mt_replay_outcome_t *out,
                  mt_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
