/* The names every tool prints for opcodes, a trace's and a workload's; JSON keys use the same
 * strings. */
#include "mtrace/trace_format.h"
#include "mtrace/workload.h"

static const char *const op_names[MT_OP_MAX + 1] = {
    [MT_OP_MALLOC] = "malloc",
    [MT_OP_FREE] = "free",
    [MT_OP_CALLOC] = "calloc",
    [MT_OP_REALLOC] = "realloc",
    [MT_OP_REALLOCARRAY] = "reallocarray",
    [MT_OP_MEMALIGN] = "memalign",
    [MT_OP_POSIX_MEMALIGN] = "posix_memalign",
    [MT_OP_ALIGNED_ALLOC] = "aligned_alloc",
    [MT_OP_VALLOC] = "valloc",
    [MT_OP_PVALLOC] = "pvalloc",
    [MT_OP_USABLE_SIZE] = "malloc_usable_size",
    [MT_OP_MALLOPT] = "mallopt",
    [MT_OP_MALLOC_TRIM] = "malloc_trim",
    [MT_EV_THREAD_START] = "thread_start",
    [MT_EV_THREAD_EXIT] = "thread_exit",
    [MT_EV_THREAD_CREATE] = "thread_create",
    [MT_EV_FORK] = "fork",
    [MT_EV_EXEC] = "exec",
    [MT_EV_RSS] = "rss",
    [MT_EV_MARK] = "mark",
    [MT_EV_TRUNCATED] = "truncated",
    [MT_EV_STACK] = "stack",
    [MT_EV_MODULE] = "module",
    [MT_EV_CONTROL] = "control",
    [MT_EV_LOST] = "lost",
    [MT_EV_PAGES] = "pages",
    [MT_EV_VM] = "vm",
};

const char *mt_op_name(unsigned op)
{
    return op <= MT_OP_MAX ? op_names[op] : NULL;
}

static const char *const wl_op_names[MT_WL_OP_MAX + 1] = {
    [MT_WL_MALLOC] = "malloc",
    [MT_WL_FREE] = "free",
    [MT_WL_CALLOC] = "calloc",
    [MT_WL_REALLOC] = "realloc",
    [MT_WL_REALLOCARRAY] = "reallocarray",
    [MT_WL_MEMALIGN] = "memalign",
    [MT_WL_POSIX_MEMALIGN] = "posix_memalign",
    [MT_WL_ALIGNED_ALLOC] = "aligned_alloc",
    [MT_WL_VALLOC] = "valloc",
    [MT_WL_PVALLOC] = "pvalloc",
    [MT_WL_USABLE_SIZE] = "malloc_usable_size",
    [MT_WL_MALLOPT] = "mallopt",
    [MT_WL_MALLOC_TRIM] = "malloc_trim",
    [MT_WL_THREAD_START] = "thread_start",
    [MT_WL_THREAD_EXIT] = "thread_exit",
    [MT_WL_WAIT] = "wait",
    [MT_WL_RSS] = "rss",
    [MT_WL_MARK] = "mark",
    [MT_WL_MMAP] = "mmap",
    [MT_WL_MUNMAP] = "munmap",
    [MT_WL_MADVISE] = "madvise",
};

const char *mt_wl_op_name(unsigned op)
{
    return op <= MT_WL_OP_MAX ? wl_op_names[op] : NULL;
}
