/* Who allocates, and who calls them: the recorded stacks folded into a bottom-up tree (allocating
 * functions, then their callers) and a top-down tree (the outermost callers down to the allocating
 * functions), after the frames of the allocation machinery and of allocation wrappers are skipped.
 *
 * A stack's allocating function is its first frame, counted from the allocation call, that is
 *   - no allocator frame (mt_symbol_is_allocator_frame: libc, operator new ...),
 *   - no wrapper: not matched by a --skip-frames pattern (fnmatch(3)) and not detected as one,
 *   - and no code of a system header (out-of-line template code such as std::vector's) unless every
 *     later frame is one too.
 * A wrapper is detected when a function is the allocating function of every stack it appears in,
 * no stack through it records anything but allocation calls (no free), it is called from at least
 * MT_WRAPPER_MIN_CALLERS distinct functions, and it has a symbol (a frame without one is named by
 * its address, which tells nothing of its function). Detection repeats with the wrappers found so far
 * skipped (xcalloc that calls xmalloc is found in the second round), at most MT_WRAPPER_ROUNDS times.
 */
#ifndef MTRACE_CALLERS_H
#define MTRACE_CALLERS_H

#include <stdint.h>
#include <stdio.h>

#include "mtrace/json_writer.h"
#include "mtrace/symbolize.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MT_WRAPPER_MIN_CALLERS 3
#define MT_WRAPPER_ROUNDS 4

/* One distinct frame. `sym.function` is its label (mt_symbol_label) and every string is interned:
 * frames compare by pointer. */
typedef struct mt_frame_in {
    mt_symbol_t sym;
    int allocator; /* mt_symbol_is_allocator_frame */
    int unnamed;   /* no symbol: the label is module+0xOFFSET */
    int cut;       /* no frame: the marker that ends a stack cut at the recorder's frame limit */
} mt_frame_in_t;

typedef struct mt_figures {
    uint64_t calls, bytes, peak_bytes, leaked_blocks, leaked_bytes;
} mt_figures_t;

/* One recorded stack: indices into the frames, innermost first, and what its records did. */
typedef struct mt_stack_in {
    const uint32_t *frame;
    uint32_t nframes;
    mt_figures_t fig;
    uint64_t others; /* records that are no allocation (free ...) with this stack */
} mt_stack_in_t;

typedef struct mt_caller_node {
    const mt_symbol_t *sym; /* the first frame seen at this place; NULL for the root */
    mt_figures_t fig;
    uint32_t parent, first_child, next_sibling; /* 0: none (node 0 is the root) */
} mt_caller_node_t;

typedef struct mt_caller_tree {
    mt_caller_node_t *node; /* node[0]: the root, holding the totals */
    uint32_t n, cap;
    uint32_t *slot; /* child lookup by (parent, function): open addressing, 0 empty */
    uint32_t cap_slot;
} mt_caller_tree_t;

typedef struct mt_skipped_frame {
    const char *function;
    const char *pattern; /* the --skip-frames pattern that matched it; NULL: detected */
    uint64_t calls;      /* allocation calls through it */
    uint32_t callers;    /* distinct calling functions, counted up to MT_WRAPPER_MIN_CALLERS */
} mt_skipped_frame_t;

#define MT_ENTRY_CUT_MAX 16

typedef struct mt_callers {
    mt_caller_tree_t bottom_up, top_down;
    mt_skipped_frame_t *skipped;
    size_t nskipped;
    /* The top-down tree starts at main, or a thread's start routine, where a stack goes through the C
     * runtime's or the thread library's entry (mt_symbol_is_entry_frame): the frames above are left
     * out. Their functions, outermost first (those without a symbol and the marker of a stack cut at
     * the frame limit not named), and the stacks cut. A stack cut at the frame limit inside that
     * entry starts at main or the start routine too: it lost only frames that are left out. */
    const char *entry_cut[MT_ENTRY_CUT_MAX];
    size_t nentry_cut;
    uint64_t entry_cut_stacks;
    uint32_t *leaf; /* per input stack: index into its frames of the allocating function (nframes: none) */
    uint32_t *top;  /* per input stack: index of the outermost frame shown (main, a start routine) */
} mt_callers_t;

typedef struct mt_callers_opts {
    const char *const *skip; /* fnmatch patterns, matched against the function's label */
    size_t nskip;
    int no_auto; /* no detection of wrappers */
} mt_callers_opts_t;

/* Builds both trees. 0 or -ENOMEM. */
int mt_callers_build(mt_callers_t *c, const mt_frame_in_t *frames, const mt_stack_in_t *stacks, size_t nstacks,
                     const mt_callers_opts_t *o);
void mt_callers_free(mt_callers_t *c);

/* The children of a node sorted by calls, then bytes, descending, into a new array (free it);
 * NULL with *n = 0 when it has none or memory ran out. */
uint32_t *mt_caller_children(const mt_caller_tree_t *t, uint32_t node, uint32_t *n);

/* Text: the tree's first `roots` top nodes and, below each, at most `width` children per node down
 * to `depth` levels; `arrow` marks a child ("<-" for callers, "->" for callees). */
void mt_caller_tree_print(const mt_caller_tree_t *t, FILE *f, const char *arrow, unsigned roots, unsigned width,
                          unsigned depth);
/* JSON: an array of nodes under `key`, each with its children under `child_key`; width 0: all. */
void mt_caller_tree_json(const mt_caller_tree_t *t, mt_json_t *j, const char *key, const char *child_key,
                         unsigned width, unsigned depth);
/* The skipped wrappers: text lines, and a JSON array under "skipped_frames". */
void mt_callers_print_skipped(const mt_callers_t *c, FILE *f);
void mt_callers_json_skipped(const mt_callers_t *c, mt_json_t *j);
/* Where the top-down tree starts: a text line (none when no stack was cut), and "top_down_left_out"
 * in JSON (the functions left out above main and the threads' start routines, and the stacks cut). */
void mt_callers_print_entry_cut(const mt_callers_t *c, FILE *f);
void mt_callers_json_entry_cut(const mt_callers_t *c, mt_json_t *j);

/* A byte count as people read it ("512 B", "1.5 KiB" ...), in buf; returns buf. */
const char *mt_human_bytes(char *buf, size_t cap, double v);

/* Where a frame is, as people read it: file:line, else its module. */
void mt_frame_where(const mt_symbol_t *sym, char *buf, size_t cap);
/* A frame's "function", "file" (null without one), "line" and "module", into the open JSON object. */
void mt_symbol_json(mt_json_t *j, const mt_symbol_t *sym);

#ifdef __cplusplus
}
#endif
#endif
