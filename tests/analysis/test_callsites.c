/* Callsites end to end: stacks symbolized back to the source lines of the calls.
 *
 *  - recorded: prog_callsites (a PIE, -g -O0) runs under `mtrace record --stacks 8`; it mallocs 100
 *    bytes in main and 200 bytes in the shared library libcallee, and prints the lines of those
 *    calls. The trace's STACK and MODULE events go through the symbolizer: the first frame outside
 *    the allocator must be main at prog_callsites.c:<its line> for the first block, callee_alloc at
 *    libcallee.c:<its line> (called from main at its line) for the second. Not under a sanitizer:
 *    the recorder is an LD_PRELOAD shim, which cannot run in an ASan process (tests/meson.build).
 *  - stored: this process writes a trace itself, with MODULE events for its own loaded objects
 *    (from dl_iterate_phdr, as the shim does) and a STACK event of return addresses it captured in
 *    libcallee and in this file; the trace read back symbolizes to those lines. Runs in every build,
 *    sanitized ones included.
 */
#define _GNU_SOURCE
#include <check.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libcallee.h"
#include "mtrace/symbolize.h"
#include "mtrace/trace_reader.h"
#include "mtrace/trace_writer.h"
#include "mtrace/module_event.h"
#include "test_output.h"
#include "test_util.h"

#ifndef MT_CAN_RECORD
#error "MT_CAN_RECORD comes from tests/analysis/meson.build"
#endif
#if MT_CAN_RECORD
#if !defined(MT_MTRACE_EXE) || !defined(MT_SHIM_PATH) || !defined(MT_PROG_CALLSITES)
#error "MT_MTRACE_EXE, MT_SHIM_PATH and MT_PROG_CALLSITES come from tests/analysis/meson.build"
#endif
#endif

static char *g_dir;
TEST_DIR_FIXTURE(g_dir, "callsites", NULL)

/* ---- a trace's stacks, symbolized -------------------------------------------------------------- */

typedef struct trace_stacks {
    rec_list_t recs;
    mt_stack_def_t *stacks;
    size_t nstacks;
    size_t nmodules;
    uint64_t exe_base; /* load bias of the main program (its MODULE has no name) */
    int have_exe;
    char *exe;
    mt_symbolizer_t *sym;
} trace_stacks_t;

static void load_trace(const char *path, trace_stacks_t *ts)
{
    memset(ts, 0, sizeof *ts);
    mt_error_t err;
    mt_trace_t *t;
    ck_assert_msg(mt_trace_open(&t, path, &err) == 0, "%s", err.msg);
    size_t len = 0;
    const char *exe = mt_trace_string(t, MT_STR_EXE, 0, &len);
    ck_assert_msg(exe != NULL, "%s has no EXE string", path);
    ts->exe = strndup(exe, len);
    mt_trace_close(t);

    ck_assert_msg(read_file_order(path, &ts->recs, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(mt_symbolizer_open(&ts->sym, ts->exe, &err), 0);
    ts->stacks = calloc(ts->recs.n ? ts->recs.n : 1, sizeof *ts->stacks);
    ck_assert_ptr_nonnull(ts->stacks);
    for (size_t i = 0; i < ts->recs.n; i++) {
        const mt_record_t *r = &ts->recs.v[i];
        if (r->op == MT_EV_STACK) {
            ck_assert_int_eq(mt_decode_stack(r, &ts->stacks[ts->nstacks]), 0);
            ts->nstacks++;
        } else if (r->op == MT_EV_MODULE) {
            mt_module_def_t m;
            ck_assert_int_eq(mt_decode_module(r, &m), 0);
            ck_assert_int_eq(mt_symbolizer_add_module(ts->sym, &m), 0);
            if (m.name_len == 0) {
                ts->exe_base = m.base;
                ts->have_exe = 1;
            }
            ts->nmodules++;
        }
    }
}

static void free_trace(trace_stacks_t *ts)
{
    mt_symbolizer_close(ts->sym);
    free(ts->stacks);
    free(ts->exe);
    rec_list_free(&ts->recs);
}

static const mt_stack_def_t *find_stack(const trace_stacks_t *ts, uint32_t id)
{
    for (size_t i = 0; i < ts->nstacks; i++)
        if (ts->stacks[i].id == id)
            return &ts->stacks[i];
    return NULL;
}

/* The stack as text, one frame a line (for failure messages). */
static char *stack_str(trace_stacks_t *ts, const mt_stack_def_t *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    for (uint32_t i = 0; i < s->nframes; i++) {
        mt_symbol_t sym;
        mt_symbolize(ts->sym, s->frames[i], &sym);
        fprintf(f, "  #%u 0x%llx %s %s+0x%llx %s:%u%s\n", i, (unsigned long long)s->frames[i], sym.function, sym.module,
                (unsigned long long)sym.offset, sym.file ? sym.file : "-", sym.line,
                mt_symbol_is_allocator_frame(&sym) ? " (allocator)" : "");
    }
    fclose(f);
    return buf;
}

/* The index of the first frame outside the allocator (its symbol in *out), or -1. */
static int callsite(trace_stacks_t *ts, const mt_stack_def_t *s, mt_symbol_t *out)
{
    for (uint32_t i = 0; i < s->nframes; i++) {
        ck_assert_int_eq(mt_symbolize(ts->sym, s->frames[i], out), 0);
        if (!mt_symbol_is_allocator_frame(out))
            return (int)i;
    }
    return -1;
}

static const char *base_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : path;
}

static void assert_symbol(const mt_symbol_t *sym, const char *function, const char *file, unsigned line,
                          const char *module, const char *stack)
{
    ck_assert_msg(!strcmp(sym->function, function) && sym->file && !strcmp(base_name(sym->file), file) &&
                      sym->line == line && !strcmp(sym->module, module),
                  "expected %s at %s:%u in %s, got %s at %s:%u in %s; stack:\n%s", function, file, line, module,
                  sym->function, sym->file ? sym->file : "(no file)", sym->line, sym->module, stack);
}

/* ---- recorded ---------------------------------------------------------------------------------- */

#if MT_CAN_RECORD
static unsigned value(const char *out, const char *key)
{
    const size_t n = strlen(key);
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, key, n) && p[n] == ' ')
            return (unsigned)strtoul(p + n + 1, NULL, 10);
    ck_abort_msg("no \"%s\" in the program's output: %s", key, out);
    return 0;
}

/* mtrace record --stacks 8 -o TRACE -- prog_callsites; returns its stdout. */
static char *record(const char *trace)
{
    char *argv[] = { "mtrace", "record", "--stacks", "8", "-o", (char *)trace, "--", MT_PROG_CALLSITES, NULL };
    char *envp[] = { "MTRACE_SHIM=" MT_SHIM_PATH, NULL };
    capture_t c;
    capture_open(&c, g_dir);
    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(c.out_fd, STDOUT_FILENO);
        dup2(c.err_fd, STDERR_FILENO);
        execve(MT_MTRACE_EXE, argv, envp);
        _exit(127);
    }
    capture_started(&c);
    run_result_t r;
    ck_assert_int_eq(waitpid(pid, &r.status, 0), pid);
    capture_finish(&c, &r);
    ck_assert_msg(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "mtrace record failed (status %d): %s", r.status,
                  r.err);
    free(r.err);
    return r.out;
}

/* The stack of the first malloc of `size` that has one. */
static const mt_stack_def_t *malloc_stack(const trace_stacks_t *ts, uint64_t size)
{
    for (size_t i = 0; i < ts->recs.n; i++) {
        const mt_record_t *r = &ts->recs.v[i];
        if (r->op == MT_OP_MALLOC && r->size == size) {
            ck_assert_msg(r->flags & MT_FLAG_STACK, "malloc(%llu) has no stack id", (unsigned long long)size);
            const mt_stack_def_t *s = find_stack(ts, r->stack);
            ck_assert_msg(s != NULL, "stack %u of malloc(%llu) is not defined", r->stack, (unsigned long long)size);
            return s;
        }
    }
    ck_abort_msg("no malloc(%llu) in the trace", (unsigned long long)size);
    return NULL;
}

START_TEST(recorded_callsites)
{
    char *trace = path_in(g_dir, "cs.mtr");
    char *out = record(trace);
    const unsigned main_line = value(out, "main_line"), callee_line = value(out, "callee_line"),
                   call_line = value(out, "call_line");

    trace_stacks_t ts;
    load_trace(trace, &ts);
    ck_assert_msg(ts.nmodules >= 3, "only %zu MODULE events", ts.nmodules);
    ck_assert_msg(ts.have_exe, "no MODULE event for the main program");
    /* the case to test: a position-independent executable, loaded at a nonzero bias */
    ck_assert_msg(ts.exe_base != 0, "prog_callsites is not a PIE");
    ck_assert_str_eq(base_name(ts.exe), "prog_callsites");

    /* malloc(100) in main */
    const mt_stack_def_t *s = malloc_stack(&ts, 100);
    char *text = stack_str(&ts, s);
    mt_symbol_t sym;
    int at = callsite(&ts, s, &sym);
    ck_assert_msg(at >= 0, "no frame outside the allocator:\n%s", text);
    assert_symbol(&sym, "main", "prog_callsites.c", main_line, "prog_callsites", text);
    ck_assert_uint_gt(sym.offset, 0);
    free(text);

    /* malloc(200) in libcallee's callee_alloc, called from main */
    s = malloc_stack(&ts, 200);
    text = stack_str(&ts, s);
    at = callsite(&ts, s, &sym);
    ck_assert_msg(at >= 0, "no frame outside the allocator:\n%s", text);
    assert_symbol(&sym, "callee_alloc", "libcallee.c", callee_line, "libcallee.so", text);
    ck_assert_msg((uint32_t)at + 1 < s->nframes, "no caller of callee_alloc:\n%s", text);
    ck_assert_int_eq(mt_symbolize(ts.sym, s->frames[at + 1], &sym), 0);
    assert_symbol(&sym, "main", "prog_callsites.c", call_line, "prog_callsites", text);
    free(text);

    /* every frame of every stack symbolizes, and a second lookup gives the cached result */
    for (size_t i = 0; i < ts.nstacks; i++) {
        for (uint32_t k = 0; k < ts.stacks[i].nframes; k++) {
            mt_symbol_t a, b;
            ck_assert_int_eq(mt_symbolize(ts.sym, ts.stacks[i].frames[k], &a), 0);
            ck_assert_int_eq(mt_symbolize(ts.sym, ts.stacks[i].frames[k], &b), 0);
            ck_assert_ptr_nonnull(a.function);
            ck_assert_ptr_nonnull(a.module);
            ck_assert_ptr_eq(a.function, b.function);
            ck_assert_ptr_eq(a.module, b.module);
        }
    }
    free_trace(&ts);
    free(out);
    free(trace);
}
END_TEST
#endif

/* ---- stored by this process -------------------------------------------------------------------- */

static uint64_t g_ra;

static __attribute__((noinline)) void capture(void)
{
    g_ra = (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static __attribute__((noinline)) void call_here(void (*fn)(void), unsigned *line)
{
    /* clang-format off */
    fn(); *line = __LINE__;
    /* clang-format on */
}

static int write_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    mt_writer_t *w = arg;
    uint8_t payload[4096];
    const size_t len = mt_module_payload(info, 7, info->dlpi_name ? info->dlpi_name : "", payload, sizeof payload);
    ck_assert_int_eq(mt_writer_event(w, 1, (uint32_t)getpid(), MT_EV_MODULE, 10, payload, len), 0);
    return 0;
}

START_TEST(stored_trace_of_this_process)
{
    unsigned lib_line = 0, here_line = 0;
    callee_call(capture, &lib_line);
    const uint64_t lib_ra = g_ra;
    call_here(capture, &here_line);
    const uint64_t here_ra = g_ra;
    ck_assert_uint_gt(lib_line, 0);
    ck_assert_uint_gt(here_line, 0);

    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ck_assert_int_gt(n, 0);
    exe[n] = 0;

    char *trace = path_in(g_dir, "self.mtr");
    mt_file_header_t h;
    mt_writer_default_header(&h);
    h.flags |= MT_HDR_STACKS;
    mt_writer_t *w;
    mt_error_t err;
    ck_assert_msg(mt_writer_open(&w, trace, &h, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(mt_writer_header_string(w, MT_STR_EXE, exe, strlen(exe)), 0);
    dl_iterate_phdr(write_module, w);
    uint8_t payload[64], *q = payload;
    q = mt_put_uvarint(q, 1);
    q = mt_put_uvarint(q, 2);
    q = mt_put_svarint(q, (int64_t)lib_ra);
    q = mt_put_svarint(q, (int64_t)(here_ra - lib_ra));
    ck_assert_int_eq(mt_writer_event(w, 1, (uint32_t)getpid(), MT_EV_STACK, 20, payload, (size_t)(q - payload)), 0);
    ck_assert_msg(mt_writer_close(w, 1, &err) == 0, "%s", err.msg);

    trace_stacks_t ts;
    load_trace(trace, &ts);
    ck_assert_str_eq(ts.exe, exe);
    ck_assert(ts.have_exe);
    const mt_stack_def_t *s = find_stack(&ts, 1);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(s->nframes, 2);
    char *text = stack_str(&ts, s);
    mt_symbol_t sym;
    ck_assert_int_eq(mt_symbolize(ts.sym, s->frames[0], &sym), 0);
    assert_symbol(&sym, "callee_call", "libcallee.c", lib_line, "libcallee.so", text);
    ck_assert_int_eq(callsite(&ts, s, &sym), 0); /* not an allocator frame */
    ck_assert_int_eq(mt_symbolize(ts.sym, s->frames[1], &sym), 0);
    assert_symbol(&sym, "call_here", "test_callsites.c", here_line, base_name(exe), text);
    ck_assert_uint_eq(sym.offset, here_ra - ts.exe_base);
    free(text);
    free_trace(&ts);
    free(trace);
}
END_TEST

static Suite *callsites_suite(void)
{
    Suite *s = suite_create("callsites");
    TCase *tc = tcase_create("stored");
    tcase_add_checked_fixture(tc, dir_setup, dir_teardown);
    tcase_add_test(tc, stored_trace_of_this_process);
    suite_add_tcase(s, tc);
#if MT_CAN_RECORD
    tc = tcase_create("recorded");
    tcase_add_checked_fixture(tc, dir_setup, dir_teardown);
    tcase_add_test(tc, recorded_callsites);
    suite_add_tcase(s, tc);
#else
    fprintf(stderr, "callsites: recorded_callsites skipped: this is a sanitizer build, and the recorder "
                    "(an LD_PRELOAD shim) cannot run in a process with the ASan runtime\n");
#endif
    return s;
}

int main(void)
{
    return run_suite(callsites_suite());
}
