/* The help of mtrace and each of its commands: one text each, printed by --help and turned into the
 * man pages (mtrace.1, mtrace-COMMAND.1) by mtrace-man at build time, so that the two never disagree. */
#ifndef MTRACE_HELP_TEXT_H
#define MTRACE_HELP_TEXT_H

#include <stddef.h>
#include <stdio.h>

#include "cli_options.h"

typedef struct mt_help {
    const char *name;    /* "mtrace", or a command: "record" */
    const char *summary; /* one line: the command list of mtrace --help, and the man page's NAME */
    const char *text;    /* what --help prints (the format: the comment in help_text.c) */
} mt_help_t;

extern const mt_help_t mt_help_pages[];
extern const size_t mt_help_count;

/* The page of mtrace (name "mtrace") or of one of its commands, or NULL. */
const mt_help_t *mt_help_find(const char *name);

/* The text of a page as --help prints it (mtrace's with its command list). */
void mt_help_write(FILE *f, const char *name);

/* --help: the text, whole, on stdout; 0, the exit status. */
int mt_help_print(const char *name);

/* The usage lines of the command's help on stderr, and where the rest is. */
void mt_help_usage_write(const char *name);

/* A usage error: mt_help_usage_write; MT_EXIT_USAGE. Inline, so that its callers' callers see the
 * status (clang's analyzer did not, and followed a failed parse as a good one: scripts/scan.sh). */
static inline int mt_help_usage_error(const char *name)
{
    mt_help_usage_write(name);
    return MT_EXIT_USAGE;
}

#endif
