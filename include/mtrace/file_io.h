/* File I/O, error messages, outputs written whole and text made safe for a terminal: shared by the
 * format library's readers and writers and by the tools (not installed). */
#ifndef MTRACE_FILE_IO_H
#define MTRACE_FILE_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "mtrace/trace_reader.h"

/* Fills err (if any) with "PATH: offset N: " and the message; returns code. */
int mt_errorf(mt_error_t *err, int code, const char *path, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Fills err (if any) with the message alone; returns code. For a fault at no offset of a file: out
 * of memory, a helper program that cannot start, an output name refused before anything is read
 * (the message names the file itself where there is one). */
int mt_error_setf(mt_error_t *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Opens an input file to read: a regular file, else an error naming it (err may be NULL). Opened
 * with O_NONBLOCK, which regular files ignore, so that a FIFO or a device waiting for a writer is
 * refused instead of blocking the open forever. The descriptor (st filled), or a negative errno. */
int mt_open_input(const char *path, struct stat *st, mt_error_t *err);

/* The directory for temporaries: $TMPDIR when it is an absolute path, else /tmp (the Unix
 * convention; a test can then see exactly what a command left behind). */
const char *mt_tmp_dir(void);

/* A template for mkstemp and its kin there: "DIR/mtrace-STEM.XXXXXX" then `suffix` (may be "").
 * 0, or -1 if it does not fit cap (then /tmp is used, which fits a buffer of 64 bytes or more). */
int mt_tmp_template(char *buf, size_t cap, const char *stem, const char *suffix);

/* Whether the two paths name one existing file (after links): an output that would replace its own
 * input is refused by the tools that write one from the other. */
int mt_same_file(const char *a, const char *b);

/* Reads up to len bytes at off, retrying short reads and EINTR; *got is what the file held (on an
 * error, what was read before it). 0 (also at the end of the file) or a negative errno. */
int mt_pread_some(int fd, void *buf, size_t len, uint64_t off, size_t *got);
/* All len bytes at off, or -EIO if the file ends first. */
int mt_pread_full(int fd, void *buf, size_t len, uint64_t off);
/* All len bytes written at off (or at the file position when off is UINT64_MAX). */
int mt_write_full(int fd, const void *buf, size_t len, uint64_t off);

/* The end of a tool's run: flushes the standard output and returns status, or, where what the tool
 * printed did not all reach it (a full disk, an I/O error), says so on stderr as "PROG: cannot write
 * the standard output: REASON" and returns status or 1: a report cut short must not exit 0. A pipe
 * whose reader stopped reading (EPIPE, where SIGPIPE is ignored) is not an error: the reader chose. */
int mt_stdout_finish(const char *prog, int status);

/* ---- outputs: complete or absent ----
 * An output is written under a fresh name beside its target (PATH.partial.XXXXXX, made with
 * O_CREAT|O_EXCL by mkostemp: never a name planted beforehand, a symlink included) and renamed over
 * the target only when every byte was written: rename replaces a symlink at the target instead of
 * following it, and a failure or a command stopped midway leaves the target as it was. */
typedef struct mt_out {
    FILE *f;          /* write here between mt_out_open and mt_out_commit / mt_out_abort */
    const char *path; /* the target, as given */
    char tmp[4096];   /* the temporary; "" when there is none */
    int in_place;     /* the target is a device, a FIFO or a socket: written as it is (mt_out_special) */
} mt_out_t;

/* Whether path names (after links) a file that exists and is neither a regular file nor a directory:
 * /dev/null, /dev/stdout, a terminal, a named pipe. Such a target cannot be replaced whole: a rename
 * over it would put a regular file where the device or the link was. mt_out_open writes into it as
 * it is; outputs that must be seekable (a workload, a packed trace) refuse it. */
int mt_out_special(const char *path);

/* Creates the temporary with the mode a new file gets (0666 & ~umask; an existing regular target's
 * permissions are kept, as fopen "w" would); a special target (mt_out_special) is opened to be
 * written in place instead, and its commit only flushes and closes it. A folder is refused
 * (-EISDIR). 0, or a negative errno with "PATH: cannot write: why" in err (if any); nothing is left
 * behind then. */
int mt_out_open(mt_out_t *o, const char *path, mt_error_t *err);
/* Flushes, syncs and closes the temporary and renames it over the target. 0, or a negative errno
 * with the message in err; on failure the temporary is removed and the target is untouched. */
int mt_out_commit(mt_out_t *o, mt_error_t *err);
/* Closes and removes the temporary; the target is untouched. Safe to call twice or after a failed
 * open or a commit. */
void mt_out_abort(mt_out_t *o);
/* Whether the output at path can be made, tried before a long piece of work whose result it is to
 * hold: a temporary made beside it and removed at once, so that a missing folder or one without
 * write permission is said before the work, not after it. A special target (mt_out_special) is not
 * tried: opening a FIFO waits for its reader, and closing it would end the reader's input. 0, or a
 * negative errno with mt_out_open's message in err. A write that fails later (a full disk) is still
 * said by the commit. */
int mt_out_try(const char *path, mt_error_t *err);

/* ---- text from files, for a terminal ----
 * C0 control bytes (ESC included), DEL, the backslash, C1 controls (U+0080-U+009F, as UTF-8) and
 * bytes that are not well-formed UTF-8 (a lone 0x9b is CSI to some terminals) are shown as \xNN: a
 * hostile file must not send escape sequences to the analyst's terminal, and \xNN stays
 * unambiguous. Well-formed UTF-8 text passes as it is. */
/* The length of the well-formed UTF-8 sequence at s, within its len bytes: 1 for an ASCII byte (a
 * control or NUL included: what to do with those is the caller's rule), 2 to 4 for a multibyte
 * character, 0 when the bytes start none: a continuation byte, an overlong form, a surrogate
 * (U+D800-U+DFFF), a code point past U+10FFFF, or a sequence cut short by len (or len 0). The one
 * UTF-8 rule of mtrace: the terminal escaping below and the XML escaping of the pictures and pages
 * (analysis/xml_escape.c, which refuses U+FFFE and U+FFFF on top of it) both use it. */
size_t mt_utf8_len(const char *s, size_t len);
/* Escapes up to len bytes of s into buf (always terminated). Returns how many bytes of s fit. */
size_t mt_escape_text(char *buf, size_t cap, const char *s, size_t len);
/* The whole of s (len bytes) escaped, to f. */
void mt_put_safe(FILE *f, const char *s, size_t len);
/* A C string escaped into buf, cut to fit. Returns buf. */
const char *mt_safe_str(char *buf, size_t cap, const char *s);
/* A CSV field: s escaped as above, between double quotes, its quotes doubled. */
void mt_put_csv_field(FILE *f, const char *s);

#endif
