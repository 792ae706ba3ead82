/* Folded stacks and flame graphs, written by mtrace itself (no external scripts). */
#ifndef MTRACE_FLAMEGRAPH_H
#define MTRACE_FLAMEGRAPH_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One stack with its weight; frames are names, outermost (main) first. */
typedef struct mt_folded {
    const char *const *frames;
    uint32_t nframes;
    uint64_t weight;
} mt_folded_t;

/* Brendan Gregg's folded format: "main;f;g WEIGHT" per line, frames joined with ';' (a ';' inside a
 * name is written as ':'). */
int mt_folded_write(FILE *f, const mt_folded_t *stacks, size_t n);

/* A self-contained SVG flame graph (inline style and a little script for hover details), widths
 * proportional to weight; `unit` names the weight ("bytes", "calls"). */
int mt_flamegraph_svg(FILE *f, const char *title, const char *unit, const mt_folded_t *stacks, size_t n);

#ifdef __cplusplus
}
#endif
#endif
