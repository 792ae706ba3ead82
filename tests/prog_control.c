/* Uses the control API of include/mtrace.h around known calls. Under the shim with MTRACE_PAUSED=1
 * only the calls between start and pause and between resume and stop are recorded; without the
 * shim every function returns -ENODEV and the program runs the same. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>

#include "mtrace.h"
#include "prog_util.h"

static void *alloc_free(const char *key, size_t size)
{
    void *p = malloc(size);
    put_ptr(key, p);
    free(p);
    return p;
}

int main(void)
{
    alloc_free("before_start", 1001);
    put("rc_start", (uint64_t)(int64_t)mtrace_start());
    alloc_free("recorded1", 1002);
    put("rc_mark", (uint64_t)(int64_t)mtrace_mark("x"));
    put("rc_pause", (uint64_t)(int64_t)mtrace_pause());
    alloc_free("paused", 1003);
    put("rc_resume", (uint64_t)(int64_t)mtrace_resume());
    alloc_free("recorded2", 1004);
    put("rc_sync", (uint64_t)(int64_t)mtrace_sync());
    put("rc_stop", (uint64_t)(int64_t)mtrace_stop());
    alloc_free("stopped", 1005);
    put("rc_after_stop", (uint64_t)(int64_t)mtrace_mark("late"));
    flush_out();
    return 0;
}
