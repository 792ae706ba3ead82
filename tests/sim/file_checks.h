/* Checks on the files a command leaves behind and on the text it prints, shared by the tests of
 * output files and terminal escapes (tests/sim/test_sim_outputs.c, tests/report/test_report_outputs.c). */
#ifndef MTRACE_FILE_CHECKS_H
#define MTRACE_FILE_CHECKS_H

#include <stddef.h>

/* Writes text to path (created or truncated), ck_asserting that it worked. */
void write_text(const char *path, const char *text);
/* ck_asserts that dir holds only the names in `expected` (NULL-terminated): no other output and no
 * temporary file; `what` names the case. */
void assert_only_files(const char *dir, const char *what, const char *const *expected);
/* The file's text (NUL-terminated, malloc'd), after ck_asserting that it holds no byte a terminal
 * would act on: only newlines and printable bytes (no ESC, BEL, DEL ...). */
char *read_printable(const char *path, size_t *len);

#endif
