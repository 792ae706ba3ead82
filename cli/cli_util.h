/* Helpers shared by the mtrace front end's commands. */
#ifndef MTRACE_CLI_UTIL_H
#define MTRACE_CLI_UTIL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli_options.h"
#include "mtrace/json_writer.h"
#include "mtrace/trace_reader.h"

/* Prints the error as the one line a user sees and returns the exit status for bad input. */
static inline int mt_fail(const mt_error_t *err)
{
    fprintf(stderr, "mtrace: %s\n", err->msg);
    return 1;
}

#endif
