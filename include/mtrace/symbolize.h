/* Offline symbolization of recorded return addresses with elfutils' libdw: the trace's MODULE events
 * say which object was loaded where (load bias, segments, build-id); the object files are found by
 * path (or in /usr/lib/debug/.build-id by build-id) on the machine that reads the trace. */
#ifndef MTRACE_SYMBOLIZE_H
#define MTRACE_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "mtrace/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_symbolizer mt_symbolizer_t;

typedef struct mt_symbol {
    const char *function; /* demangled where possible; "??" when unknown */
    const char *file;     /* source file, or NULL without debug info; for code inlined from a system
                           * header, the user's file that called it (see mt_source_is_system) */
    unsigned line;        /* 0 without debug info */
    const char *module;   /* base name of the object, or "??" */
    uint64_t offset;      /* address relative to the module's load bias */
    uint64_t start;       /* without a symbol: its function's start relative to the bias, from the
                           * module's .eh_frame_hdr; 0 when unknown */
} mt_symbol_t;

/* `exe` names the main program (the trace's MT_STR_EXE string), whose MODULE events have no name. */
int mt_symbolizer_open(mt_symbolizer_t **s, const char *exe, mt_error_t *err);
/* Adds a module as recorded. Modules of a later generation replace those of earlier ones at the
 * same addresses. A module whose file is missing or whose build-id differs is kept by name only:
 * its addresses symbolize to module+offset. */
int mt_symbolizer_add_module(mt_symbolizer_t *s, const mt_module_def_t *m);
/* Symbolizes a return address (the lookup uses address - 1: the call, not the instruction after
 * it). Strings belong to the symbolizer and live until it is closed. Results are cached. */
int mt_symbolize(mt_symbolizer_t *s, uint64_t return_address, mt_symbol_t *out);
void mt_symbolizer_close(mt_symbolizer_t *s);

/* True for frames inside the allocation machinery (libc's and libstdc++'s allocation wrappers such
 * as operator new, strdup): a callsite is the first frame outside them. */
int mt_symbol_is_allocator_frame(const mt_symbol_t *sym);

/* True for the functions where every stack begins before the program's own code: the C runtime's
 * process entry (_start, __libc_start_main, __libc_start_call_main) and glibc's thread entry
 * (start_thread, clone, clone3), by name. */
int mt_symbol_is_entry_frame(const mt_symbol_t *sym);
/* Of those, the C runtime's process entry alone (_start, __libc_start_main, __libc_start_call_main):
 * the frame under them is main. */
int mt_symbol_is_process_entry_frame(const mt_symbol_t *sym);

/* True for a source file of the system rather than the program: under /usr/include,
 * /usr/local/include, /usr/lib/gcc or /usr/lib/llvm-* (the C++ library's headers among them). */
int mt_source_is_system(const char *file);

/* The frame's name as people read it: the function, whole (sym->function itself: a C++ name runs to
 * kilobytes); where there is no symbol, module+0xSTART, its function's start (so that the frames of
 * one stripped function are one, and it can be symbolized later), or module+0xOFFSET where the
 * unwind tables do not tell the function; "?? 0xADDRESS" outside every module. Those are written in
 * buf (MT_SYMBOL_LABEL_MAX bytes hold any: a file's base name is at most 255 bytes), which is
 * returned. */
#define MT_SYMBOL_LABEL_MAX 300
const char *mt_symbol_label(const mt_symbol_t *sym, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
