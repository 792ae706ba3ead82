/* A library linked without its symbol table (prog_workers.c): the function that calls malloc has no
 * name, so its callsite in mtrace report is the module and an offset in it. */
#ifndef LIBWORKERS_STRIPPED_H
#define LIBWORKERS_STRIPPED_H

#include <stddef.h>

/* malloc(n), called from a function of the library without a name. */
void *workers_stripped_alloc(size_t n);

#endif
