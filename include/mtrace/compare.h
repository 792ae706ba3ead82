/* The allocator comparison table: replay results side by side, with the change against the first. */
#ifndef MTRACE_COMPARE_H
#define MTRACE_COMPARE_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MT_TABLE_TEXT, MT_TABLE_CSV, MT_TABLE_JSON } mt_table_fmt_t;

/* Loads the result files (mtrace-sim --json) and prints the table. 0, or 1 on bad input (message
 * on stderr naming the file and offset). */
int mt_compare_print(FILE *f, const char *const *results, int n, mt_table_fmt_t fmt);

#ifdef __cplusplus
}
#endif
#endif
