/* Leaks people can act on: the blocks still live when the trace ended, grouped by their full stack,
 * told apart by when they were made, less the stacks a suppression file names.
 *
 * Kinds (doc/report.md, "Leaks"), per stack, from the times its leaked blocks were allocated, in
 * quarters of the run (first to last call):
 *   - growing: blocks of it still live at the end were made in at least MT_LEAK_GROWING_QUARTERS of
 *     the four quarters, the last one included: the stack kept adding memory that stayed, up to the
 *     end; a longer run would have leaked more;
 *   - at exit: the other stacks of a trace that ended normally (an exit, or an exec that replaced the
 *     image): memory made once (at startup, or in the last phase) and still held at the end;
 *   - at stop: every stack when the trace did not end (killed, crashed): what was live then, not a
 *     leak the trace can judge.
 */
#ifndef MTRACE_LEAKS_H
#define MTRACE_LEAKS_H

#include <stdint.h>
#include <stdio.h>

#include "mtrace/callers.h"
#include "mtrace/json_writer.h"
#include "mtrace/suppress.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MT_LEAK_GROWING_QUARTERS 3

typedef enum mt_leak_kind { MT_LEAK_AT_EXIT, MT_LEAK_GROWING, MT_LEAK_AT_STOP, MT_LEAK_KINDS } mt_leak_kind_t;

/* The kind's name in the outputs: "at exit", "growing", "at stop"; and what it means, in a phrase. */
const char *mt_leak_kind_name(mt_leak_kind_t k);
const char *mt_leak_kind_why(mt_leak_kind_t k);
/* The kind of a stack whose leaked blocks were made in the quarters of `mask` (bit q: quarter q). */
mt_leak_kind_t mt_leak_kind(unsigned mask, int complete);
/* The quarter (0-3) of the run from `first` to `last` that time `t` falls in. */
unsigned mt_leak_quarter(uint64_t t, uint64_t first, uint64_t last);

/* One entry per stack as it reads (function, file and line of each frame): recorded stacks that
 * differ only in return addresses of the same lines are one entry. */
typedef struct mt_leak {
    const uint32_t *frame; /* indices into the frames, innermost first, allocator frames left out */
    uint32_t nframes;
    uint64_t blocks, bytes;
    unsigned quarters; /* bit q: a leaked block of it was made in quarter q of the run */
    mt_leak_kind_t kind;
} mt_leak_t;

typedef struct mt_leaks {
    mt_leak_t *v; /* the stacks not suppressed, by bytes, descending */
    size_t n;
    const mt_frame_in_t *frames;
    uint64_t kind_blocks[MT_LEAK_KINDS], kind_bytes[MT_LEAK_KINDS]; /* of the stacks not suppressed */
    uint64_t suppressed_blocks, suppressed_bytes, suppressed_stacks;
    const char *suppress_file; /* NULL: none given */
    size_t npatterns;
} mt_leaks_t;

/* The stacks with leaked blocks among `in` (quarters[i]: stack i's mask). 0 or -ENOMEM. */
int mt_leaks_collect(mt_leaks_t *l, const mt_frame_in_t *frames, const mt_stack_in_t *in, const uint8_t *quarters,
                     size_t n, const mt_suppressions_t *s, int complete);
void mt_leaks_free(mt_leaks_t *l);
/* Text: a line per kind and one for the suppressed; then the first `top` stacks with every frame. */
void mt_leaks_print_kinds(const mt_leaks_t *l, FILE *f);
void mt_leaks_print_stacks(const mt_leaks_t *l, FILE *f, unsigned top);
/* JSON: "leak_kinds", "suppressed_leaks" and "leaks" (the first `top`, 0: all). */
void mt_leaks_json(const mt_leaks_t *l, mt_json_t *j, unsigned top);

#ifdef __cplusplus
}
#endif
#endif
