/* t2w-model-check: the trace2wl model check (t2w_model.h) on one model of the developer's choosing,
 * or the replay checker (t2w_util.h) on a workload file, a real program's say. A developer's tool,
 * not a test: the model tests run fixed configurations (test_model.c), and trace2wl-real-programs
 * runs this on the workloads of the programs it records.
 *
 * The checks are ck_asserts, so they run as the one test of a Check suite, in this process
 * (CK_NOFORK: no time limit, and a debugger sees the failing assertion); the exit status is 0 when
 * the check passed, 1 when it failed, 2 for a bad command line. */
#define _GNU_SOURCE
#include <check.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli_options.h"
#include "t2w_model.h"
#include "t2w_util.h"
#include "test_util.h"

static const char usage[] = "usage: t2w-model-check --calls N --seed S [--jitter NS] [--level L] [--keep]\n"
                            "       t2w-model-check --workload FILE [--level L]\n";

static const char help[] =
    "Checks trace2wl on one random model, or a workload file with the replay checker.\n"
    "\n"
    "A model: 1 + 3 threads, one of which exits halfway and another takes its tid, as the\n"
    "model tests' first configuration; its trace and workload are written to a temporary directory.\n"
    "  --calls N      calls the generator makes (1 and more)\n"
    "  --seed S       the generator's seed\n"
    "  --jitter NS    most nanoseconds a call's entry precedes its effect (default 200; 0: no\n"
    "                 inversions to repair)\n"
    "  --level L      0 counts, 1 and replays, 2 and race checks (default 2)\n"
    "  --keep         keep the trace and the workload, and say where (a failed model's are kept)\n"
    "\n"
    "A workload file (ops after a thread's exit are let through: a known converter bug):\n"
    "  --workload FILE\n"
    "  --level L      1 replays it in the careful order (default), 2 also in a random order with\n"
    "                 races checked\n"
    "\n"
    "Exit status: 0 the check passed, 1 it failed (Check's message says where), 2 a bad command line.\n";

/* What to check: the options, read before the suite runs its one test. */
typedef struct request {
    const char *workload; /* a workload file, else a model */
    gparams_t model;
    int level;
    int keep;
    char *dir; /* a model's trace and workload (the test makes it: make_temp_dir ck_asserts) */
} request_t;

static request_t g_req;

/* The directory is main's to remove or keep: a failed check leaves this function at the assertion. */
START_TEST(model_run)
{
    g_req.dir = make_temp_dir("t2w-model-check");
    check_model(g_req.dir, &g_req.model, g_req.level);
}
END_TEST

START_TEST(workload_replay)
{
    const char *path = g_req.workload;
    replay_allow_after_exit = 1;
    wl_mem_t m;
    wl_load(&m, path);
    replay_result_t res;
    replay_ok(&m, SCHED_CAREFUL, 0, 0, &res);
    fprintf(stderr,
            "%s: careful replay ok: %" PRIu64 " ops, %" PRIu64 " live at the end, at most %" PRIu64 " live, %" PRIu64
            " slots\n",
            path, res.ops, res.live_end, res.max_live, m.h.slots);
    if (g_req.level >= LEVEL_STRICT) {
        replay_ok(&m, SCHED_RANDOM, 1, 1, &res);
        fprintf(stderr, "%s: race-free\n", path);
    }
    wl_free(&m);
}
END_TEST

static int usage_error(const char *msg)
{
    fprintf(stderr, "t2w-model-check: %s\n%s", msg, usage);
    return MT_EXIT_USAGE;
}

/* Reads the command line into *r. Returns -1 when the check is to run, else the exit status to end
 * with: 0 after --help, MT_EXIT_USAGE after a usage error. */
static int parse(int argc, char **argv, request_t *r)
{
    static const struct option opts[] = {
        { "calls", required_argument, NULL, 'c' },  { "seed", required_argument, NULL, 's' },
        { "jitter", required_argument, NULL, 'j' }, { "level", required_argument, NULL, 'l' },
        { "keep", no_argument, NULL, 'k' },         { "workload", required_argument, NULL, 'w' },
        { "help", no_argument, NULL, 'h' },         { NULL, 0, NULL, 0 },
    };
    const char *me = "t2w-model-check";
    /* The model tests' first configuration, less its calls and seed. */
    r->model = (gparams_t){ .threads = 3, .jitter = 200, .exits = 1 };
    unsigned long v, level = ULONG_MAX;
    int have_calls = 0, have_seed = 0, c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            if (mt_uint_option(me, "--calls", optarg, 1, ULONG_MAX, &v) != 0)
                return MT_EXIT_USAGE;
            r->model.calls = v;
            have_calls = 1;
            break;
        case 's':
            if (mt_uint_option(me, "--seed", optarg, 0, ULONG_MAX, &v) != 0)
                return MT_EXIT_USAGE;
            r->model.seed = v;
            have_seed = 1;
            break;
        case 'j':
            if (mt_uint_option(me, "--jitter", optarg, 0, 1000000000, &v) != 0)
                return MT_EXIT_USAGE;
            r->model.jitter = v;
            break;
        case 'l':
            if (mt_uint_option(me, "--level", optarg, LEVEL_COUNTS, LEVEL_STRICT, &level) != 0)
                return MT_EXIT_USAGE;
            break;
        case 'k':
            r->keep = 1;
            break;
        case 'w':
            r->workload = optarg;
            break;
        case 'h':
            printf("%s\n%s", usage, help);
            return 0;
        default:
            fprintf(stderr, "%s", usage);
            return MT_EXIT_USAGE;
        }
    }
    if (optind < argc)
        return usage_error("no operands are taken");
    if (r->workload) {
        if (have_calls || have_seed || r->keep)
            return usage_error("--workload goes with --level only");
        if (level == LEVEL_COUNTS)
            return usage_error("--level 0 is a model's: a workload is at least replayed");
        r->level = level == ULONG_MAX ? LEVEL_REPLAY : (int)level;
        return -1;
    }
    if (!have_calls || !have_seed)
        return usage_error("a model needs --calls and --seed (or --workload FILE)");
    r->level = level == ULONG_MAX ? LEVEL_STRICT : (int)level;
    return -1;
}

int main(int argc, char **argv)
{
    const int end = parse(argc, argv, &g_req);
    if (end >= 0)
        return end;
    Suite *s = suite_create("t2w-model-check");
    TCase *tc = tcase_create(g_req.workload ? "workload" : "model");
    tcase_add_test(tc, g_req.workload ? workload_replay : model_run);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    /* A failed model's trace and workload are what the developer looks at next: kept, and named. */
    if (g_req.dir && (failed || g_req.keep)) {
        fprintf(stderr, "t2w-model-check: kept %s\n", g_req.dir);
    } else if (g_req.dir) {
        remove_tree(g_req.dir);
    }
    free(g_req.dir);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
