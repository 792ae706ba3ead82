/* A small shared library for prog_report (tests/report): built with -g -O0, so that its malloc is a
 * real call on its own line. */
#ifndef MTRACE_TESTS_REPORT_CALLEE_H
#define MTRACE_TESTS_REPORT_CALLEE_H

#include <stddef.h>

/* Returns malloc(n); *line: the line of that malloc call. */
void *report_callee_alloc(size_t n, unsigned *line);

#endif
