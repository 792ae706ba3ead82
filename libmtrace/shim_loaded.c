/* Libraries loaded while tracing (dlopen): the pages of their writable segments that the loader's
 * relocations and the library's own code write are anonymous memory (copied from the file on write,
 * or its .bss), in the program's RSS, and in no malloc call and no mapping the program made itself.
 * binutils' nm loads LLVM's gold plugin, whose relocated data is 7.6 MB of such pages: the replay
 * held none of them, and predicted 0.87 of nm's peak. The libraries loaded before the trace's first
 * RSS sample have theirs in the traced program's RSS at start, which the prediction takes
 * (source_start_anon_kb).
 *
 * So at each RSS sample, when the loader's count of objects loaded and unloaded (dl_iterate_phdr's
 * dlpi_adds + dlpi_subs) has moved since the last look, each writable PT_LOAD segment not seen
 * before is written as a mapping made (MT_VM_MAP) with no page resident, and listed (shim_vmlive.c,
 * MT_VL_COPIED) so that its pages copied on write are counted at exit; trace2wl and the replay take
 * it as any mapping of the program's own whose pages are counted at its end. The segments of a
 * library that a dlclose unloads are written as unmapped, with their pages counted before the call
 * (dlclose is interposed in shim_stacks.c): after it they are gone. The loader maps them with its
 * own calls, which the mmap hook does not see. The first look happens at the first sample, whose
 * segments are only remembered. Segments are remembered up to LOADED_MAX; past that, new ones are
 * not written. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>

#include "shim.h"

#define LOADED_MAX 4096u

typedef struct segment {
    uintptr_t start;
    uint64_t len;
    uint64_t counted; /* pages copied, counted before a dlclose */
    uint8_t written;  /* written as a mapping (loaded after the first look) */
    uint8_t seen;     /* met by the current look */
} segment_t;

static segment_t segs[LOADED_MAX];
static uint32_t nsegs;
static unsigned long long loaded_seen; /* dlpi_adds + dlpi_subs at the last look */
static int looked;                     /* the first look is done */
static atomic_int loaded_lock;

static int count_objects(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(unsigned long long *)arg = info->dlpi_adds + info->dlpi_subs;
    return 1;
}

static segment_t *find(uintptr_t start, uint64_t len)
{
    for (uint32_t i = 0; i < nsegs; i++)
        if (segs[i].start == start && segs[i].len == len)
            return &segs[i];
    return NULL;
}

/* Marks each writable segment of the object seen; a new one is remembered, and written as a mapping
 * made after the first look. */
static int look_at(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    mt_thread_t *t = arg;
    const uintptr_t pg = mt_g.page_size;
    for (unsigned k = 0; k < info->dlpi_phnum; k++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) || !ph->p_memsz)
            continue;
        const uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(pg - 1);
        const uintptr_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + pg - 1) & ~(pg - 1);
        segment_t *s = find(lo, hi - lo);
        if (!s && nsegs < LOADED_MAX) {
            s = &segs[nsegs++];
            *s = (segment_t){ .start = lo, .len = hi - lo, .written = looked };
            if (looked)
                mt_vm_loaded(t, lo, hi - lo, 1, 0);
        }
        if (s)
            s->seen = 1;
    }
    return 0;
}

/* Looks at the loaded objects: new segments written as mapped, those gone as unmapped with the
 * count taken before (0 where none was). Called with t->busy held and loaded_lock taken. */
static void look(mt_thread_t *t, unsigned long long now)
{
    for (uint32_t i = 0; i < nsegs; i++)
        segs[i].seen = 0;
    dl_iterate_phdr(look_at, t);
    for (uint32_t i = 0; i < nsegs;) {
        if (segs[i].seen) {
            i++;
            continue;
        }
        if (segs[i].written)
            mt_vm_loaded(t, segs[i].start, segs[i].len, 0, segs[i].counted);
        segs[i] = segs[--nsegs];
    }
    looked = 1;
    loaded_seen = now;
}

void mt_loaded_check(mt_thread_t *t)
{
    unsigned long long now = 0;
    dl_iterate_phdr(count_objects, &now);
    if (looked && now == loaded_seen)
        return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&loaded_lock, &expected, 1))
        return; /* another thread looks; the next sample looks again if need be */
    look(t, now);
    atomic_store(&loaded_lock, 0);
}

/* In a forked child: the lock may have been held by a thread that the child does not have. */
void mt_loaded_after_fork_child(void)
{
    atomic_store(&loaded_lock, 0);
}

/* Whether this thread may write events now: tracing on, and not inside the shim. */
static int may_write(const mt_thread_t *t)
{
    return !t->busy && !atomic_load_explicit(&mt_g.off, memory_order_relaxed) && mt_g.real.malloc;
}

int mt_loaded_before_dlclose(void)
{
    mt_thread_t *t = &mt_self;
    if (!may_write(t))
        return 0;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&loaded_lock, &expected, 1))
        return 0;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    for (uint32_t i = 0; i < nsegs; i++) {
        if (!segs[i].written)
            continue;
        const uint64_t n = mt_copied_pages(segs[i].start, segs[i].len / mt_g.page_size);
        segs[i].counted = n == UINT64_MAX ? 0 : n;
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
    atomic_store(&loaded_lock, 0);
    return 1;
}

void mt_loaded_after_dlclose(int counted)
{
    mt_thread_t *t = &mt_self;
    if (!counted || !may_write(t))
        return;
    const int saved = errno;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    mt_loaded_check(t);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
    errno = saved;
}
