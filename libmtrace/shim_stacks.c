/* Call stacks (MTRACE_STACKS=N): captured with libunwind, deduplicated in a process-wide lock-free
 * table so that a record carries only a stack id. A stack's definition (MT_EV_STACK) is written once,
 * by the thread that saw it first, before that thread's first record using it. The loaded objects,
 * with their build-ids, are written as MT_EV_MODULE events before the first stack and again when the
 * set of loaded objects changes, so that traces symbolize later on another machine. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <elf.h>
#include <libunwind.h>
#include <link.h>
#include <string.h>

#include "mtrace/module_event.h"
#include "shim.h"

#define STACK_FRAMES_MAX 64 /* frames of a STACK event, the cut marker included */
static _Atomic uint32_t next_id;
static uintptr_t self_lo, self_hi;                      /* our own code: its frames are not the caller's */
static _Atomic unsigned long long modules_seen = ~0ull; /* dlpi_adds + dlpi_subs at the last MODULE */
static _Atomic int modules_lock;

/* A library loaded where an unloaded one was has frames at the same addresses: the stack table must
 * not answer with the old library's stack ids. Every dlclose made through the dynamic symbol (the
 * program's and its libraries') starts a new unload generation, mixed into the stack hash; while a
 * dlclose is under way every stack gets a fresh id, since the old and the new code can both be met. */
static _Atomic unsigned dlclose_in_flight;
static _Atomic uint64_t unload_generation;

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const uintptr_t here = (uintptr_t)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        const uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (here >= lo && here < hi) {
            self_lo = lo;
            self_hi = hi;
            return 1;
        }
    }
    return 0;
}

int mt_stacks_init(void)
{
    if (mt_stack_table_init() < 0)
        return -1;
    dl_iterate_phdr(find_self, (void *)(uintptr_t)mt_stacks_init);
    return 0;
}

void mt_stacks_after_fork_child(void)
{
    /* Ids are per trace file: the child's file starts its own table. */
    mt_stack_table_clear();
    atomic_store(&next_id, 0);
    atomic_store(&modules_seen, ~0ull);
    atomic_store(&modules_lock, 0);
}

typedef struct module_walk {
    mt_thread_t *t;
    unsigned long long generation;
} module_walk_t;

static int emit_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    module_walk_t *w = arg;
    uint8_t payload[4096];
    /* The main program has an empty name here; the header's exe string names it. */
    const size_t len =
        mt_module_payload(info, w->generation, info->dlpi_name ? info->dlpi_name : "", payload, sizeof payload);
    mt_emit_event(w->t, MT_EV_MODULE, payload, len);
    return 0;
}

static int count_modules(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(unsigned long long *)arg = info->dlpi_adds + info->dlpi_subs;
    return 1;
}

/* Writes the module list when objects were loaded or unloaded since the last one. */
static void note_modules(mt_thread_t *t)
{
    unsigned long long now = 0;
    dl_iterate_phdr(count_modules, &now);
    if (now == atomic_load(&modules_seen))
        return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&modules_lock, &expected, 1))
        return; /* another thread is writing it; our stacks resolve against that list */
    if (now != atomic_load(&modules_seen)) {
        module_walk_t w = { t, now };
        dl_iterate_phdr(emit_module, &w);
        atomic_store(&modules_seen, now);
    }
    atomic_store(&modules_lock, 0);
}

MT_EXPORT int dlclose(void *handle)
{
    mt_init();
    int (*real_dlclose)(void *) = mt_g.real.dlclose;
    if (!real_dlclose) /* called from inside dlsym, while the table is being filled */
        real_dlclose = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
    atomic_fetch_add(&dlclose_in_flight, 1);
    const int rc = real_dlclose(handle);
    /* generation first: a thread that sees no dlclose in flight sees the new generation */
    atomic_fetch_add(&unload_generation, 1);
    atomic_fetch_sub(&dlclose_in_flight, 1);
    return rc;
}

static uint64_t hash_frames(void *const *f, int n, uint64_t generation)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n ^ (generation << 8);
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)(uintptr_t)f[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h ? h : 1;
}

static void define_stack(mt_thread_t *t, uint32_t id, void *const *f, int n)
{
    uint8_t payload[16 + 64 * 10], *q = payload;
    q = mt_put_uvarint(q, id);
    q = mt_put_uvarint(q, (uint64_t)n);
    uint64_t prev = 0;
    for (int i = 0; i < n; i++) {
        const uint64_t a = (uint64_t)(uintptr_t)f[i];
        q = mt_put_svarint(q, (int64_t)(a - prev));
        prev = a;
    }
    mt_emit_event(t, MT_EV_STACK, payload, (size_t)(q - payload));
}

/* Numbers a stack and writes its definition, after the module list it resolves against; 0 once the
 * ids readers accept are spent (MT_STACK_ID_MAX). */
static uint32_t new_stack(mt_thread_t *t, void *const *f, int n)
{
    if (atomic_load_explicit(&next_id, memory_order_relaxed) >= MT_STACK_ID_MAX)
        return 0;
    const uint32_t id = atomic_fetch_add(&next_id, 1) + 1;
    if (id > MT_STACK_ID_MAX)
        return 0;
    note_modules(t);
    define_stack(t, id, f, n);
    return id;
}

typedef struct stack_seen {
    mt_thread_t *t;
    void *const *f;
    int n;
} stack_seen_t;

static uint32_t number_seen(void *arg)
{
    const stack_seen_t *s = arg;
    return new_stack(s->t, s->f, s->n);
}

uint32_t mt_stack_id(mt_thread_t *t)
{
    void *frames[64 + 8];
    int n = unw_backtrace(frames, (int)mt_g.opt.stacks + 8);
    int skip = 0;
    while (skip < n && (uintptr_t)frames[skip] >= self_lo && (uintptr_t)frames[skip] < self_hi)
        skip++;
    n -= skip;
    void **f = frames + skip;
    if (n > (int)mt_g.opt.stacks) {
        /* Cut at the limit: the stack ends with a frame 0, so that readers know it went on
         * (doc/trace-format.md, "Callsites"); the unwind asked for 8 frames more, so f[n] exists. */
        n = (int)mt_g.opt.stacks < STACK_FRAMES_MAX ? (int)mt_g.opt.stacks : STACK_FRAMES_MAX - 1;
        f[n++] = NULL;
    }
    if (n <= 0)
        return 0;
    /* Read after the unwind: frames in a library that replaced an unloaded one were captured after
     * that dlclose began, so either it is still in flight or its new generation is visible. */
    if (atomic_load(&dlclose_in_flight))
        return new_stack(t, f, n);
    stack_seen_t seen = { t, f, n };
    return mt_stack_table_id(hash_frames(f, n, atomic_load(&unload_generation)), number_seen, &seen);
}
