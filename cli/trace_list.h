/* The traces a command is given (mtrace report, mtrace export): trace files, and directories (a
 * process tree's traces) whose trace files join in name order, each file once. */
#ifndef MTRACE_CLI_TRACE_LIST_H
#define MTRACE_CLI_TRACE_LIST_H

#include <stddef.h>

typedef struct mt_trace_list {
    char **v;
    size_t n, cap;
} mt_trace_list_t;

/* The operands from *optind on that are traces or directories go to `more`; the first one that is
 * neither stops the list and, with the rest, is left to the caller (report's replay results). -1
 * with a message on stderr that starts with `cmd`. */
int mt_collect_traces(const char *cmd, int argc, char **argv, int *optind_, mt_trace_list_t *more);
void mt_trace_list_free(mt_trace_list_t *l);
/* Whether the regular file at path starts with the len bytes of magic (at most 16). */
int mt_file_has_magic(const char *path, const char *magic, size_t len);

#endif
