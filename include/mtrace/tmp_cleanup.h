/* Temporaries that do not outlive a stopped command: files and directories registered while they
 * exist, and the one child a command waits on, removed or ended when SIGINT, SIGTERM or SIGHUP ends
 * the process. Outputs (file_io.h) register their PATH.partial.XXXXXX themselves. */
#ifndef MTRACE_TMP_CLEANUP_H
#define MTRACE_TMP_CLEANUP_H

#include <sys/types.h>

/* Installs the handlers, once, from main: for each of the three signals not ignored at start, the
 * handler ends the registered child (SIGKILL, then waits for it, so that it writes nothing more),
 * removes the registered temporaries, newest first, then ends the process by the same signal. */
void mt_cleanup_on_signals(void);
/* Registers a temporary (the path is copied). 0, or -1 when the table is full: it then stays behind
 * if a signal comes. */
int mt_cleanup_add(const char *path, int is_dir);
/* Forgets a temporary (removed, or renamed into place, by the caller). */
void mt_cleanup_del(const char *path);
/* The child to end first (0: none). */
void mt_cleanup_child(pid_t pid);

#endif
