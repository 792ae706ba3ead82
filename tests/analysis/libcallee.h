/* A small shared library for the callsite tests (tests/analysis/libcallee.c): built with -g -O0, so
 * that each call is a real call on its own line. Each function stores in *line the line of its call. */
#ifndef MTRACE_TESTS_LIBCALLEE_H
#define MTRACE_TESTS_LIBCALLEE_H

#include <stddef.h>

/* Returns malloc(n); *line: the line of that malloc call. */
void *callee_alloc(size_t n, unsigned *line);
/* Calls fn(); *line: the line of that call (fn sees a return address inside this library). */
void callee_call(void (*fn)(void), unsigned *line);
/* A static function of the library (its symbol is in .symtab only, gone once stripped). */
void *(*callee_hidden(void))(size_t);

#endif
