/* mtrace control API: trace one phase of a program.
 *
 * Header-only. Each call looks up the shim (libmtrace.so, loaded with LD_PRELOAD or `mtrace record`)
 * at run time and does nothing, returning -ENODEV, when it is absent, so a program built with these
 * calls runs unchanged without the tracer. Start a program with MTRACE_PAUSED=1 and call
 * mtrace_start() where the phase of interest begins.
 *
 *   mtrace_start()    begin recording (after MTRACE_PAUSED=1)   mtrace_pause()  stop recording for now
 *   mtrace_resume()   record again                              mtrace_stop()   end the trace for good
 *   mtrace_sync()     flush the trace to disk (msync)           mtrace_mark(s)  put a labelled mark
 *
 * Every function returns 0 on success or a negative errno.
 */
#ifndef MTRACE_H
#define MTRACE_H

#include <dlfcn.h>
#include <errno.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { MTRACE_CTL_START = 1, MTRACE_CTL_STOP, MTRACE_CTL_PAUSE, MTRACE_CTL_RESUME, MTRACE_CTL_SYNC, MTRACE_CTL_MARK };

/* Implemented by libmtrace.so. */
int mtrace_control(int cmd, const char *label);

static inline int mtrace__call(int cmd, const char *label)
{
    typedef int (*ctl_fn)(int, const char *);
    /* Through a union: ISO C has no cast from dlsym's object pointer to a function pointer, and
     * a program built with -Wpedantic -Werror must still build with this header. */
    static union {
        void *obj;
        ctl_fn fn;
    } ctl;
    static int looked;
    if (!looked) {
        ctl.obj = dlsym(RTLD_DEFAULT, "mtrace_control");
        looked = 1;
    }
    return ctl.fn ? ctl.fn(cmd, label) : -ENODEV;
}

static inline int mtrace_start(void)
{
    return mtrace__call(MTRACE_CTL_START, 0);
}
static inline int mtrace_stop(void)
{
    return mtrace__call(MTRACE_CTL_STOP, 0);
}
static inline int mtrace_pause(void)
{
    return mtrace__call(MTRACE_CTL_PAUSE, 0);
}
static inline int mtrace_resume(void)
{
    return mtrace__call(MTRACE_CTL_RESUME, 0);
}
static inline int mtrace_sync(void)
{
    return mtrace__call(MTRACE_CTL_SYNC, 0);
}
static inline int mtrace_mark(const char *label)
{
    return mtrace__call(MTRACE_CTL_MARK, label);
}

#ifdef __cplusplus
}
#endif
#endif
