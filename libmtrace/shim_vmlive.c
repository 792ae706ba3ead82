/* The program's own mappings still live, so that their resident pages can be counted at exit
 * (MT_VM_AT_EXIT). A mapping kept to the end has no count at an unmap: trace2wl took its written
 * share from the mappings unmapped before, which are not alike in a program whose garbage collector
 * frees its full pages and keeps the rest (ruby: its heap's pages freed were written whole, those
 * kept at exit 4 in 10; the replay wrote all of them, 22 % too much at the peak).
 *
 * Two open-addressing tables in memory of their own (the shim allocates nothing), start -> length
 * and end -> start, with linear probing and deletion by back-shift, under a spin lock: an unmap
 * of a whole mapping, of its head (from its start) or of its tail (to its end) finds it in one
 * look-up, the three ways programs give mappings back (Ruby and V8 map more than they need and
 * trim a head and a tail to align the rest). An unmap of a middle part, or of several mappings at
 * once from the middle of one, is not followed: the mapping stays listed, and its count at exit
 * takes only the pages still mapped in its range. Each table grows by doubling up to VL_MAX
 * entries (4 MiB); past that, mappings made are not listed, and keep trace2wl's estimate.
 *
 * Each entry has a kind beside its length (mt_vl_kind_t): the program's anonymous mappings, counted
 * at exit by their resident pages; memory whose pages are the program's only where it wrote them
 * (a private file mapping opened for writing, a loaded library's writable segments: MT_VL_COPIED),
 * counted by its anonymous pages, those copied on write; and the program's other mappings (files,
 * shared memory), never counted, listed so that a mremap() of one is known as such (shim_vm.c). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>

#include "mtrace/clock.h"
#include "shim.h"

typedef struct vl_entry {
    uintptr_t key; /* 0: a free entry */
    uint64_t value;
} vl_entry_t;

typedef struct vl_table {
    vl_entry_t *v;
    uint64_t cap, n;
} vl_table_t;

/* An entry's value: the length, and the kind in the top two bits. */
#define VL_KIND_SHIFT 62
#define VL_LEN(v) ((v) & ((1ull << VL_KIND_SHIFT) - 1))
#define VL_KIND(v) ((mt_vl_kind_t)((v) >> VL_KIND_SHIFT))
#define VL_WITH_KIND(len, kind) ((len) | ((uint64_t)(kind) << VL_KIND_SHIFT))

#define VL_FIRST 256u
#define VL_MAX (1u << 18)

static vl_table_t by_start, by_end; /* start -> length, end -> start */
static atomic_int vl_lock;

static uint64_t vl_home(uintptr_t key, uint64_t cap)
{
    return (uint64_t)((key >> 12) * 0x9e3779b97f4a7c15ull >> 32) & (cap - 1);
}

/* The index of key's entry, or of the free entry where it would go. */
static uint64_t vl_slot(const vl_table_t *t, uintptr_t key)
{
    uint64_t i = vl_home(key, t->cap);
    while (t->v[i].key && t->v[i].key != key)
        i = (i + 1) & (t->cap - 1);
    return i;
}

/* Doubles the table; 0, or -1 when it cannot. */
static int vl_grow(vl_table_t *t)
{
    const uint64_t cap = t->cap ? 2 * t->cap : VL_FIRST;
    if (cap > VL_MAX)
        return -1;
    vl_entry_t *v = mmap(NULL, cap * sizeof *v, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (v == MAP_FAILED)
        return -1;
    vl_table_t n = { v, cap, t->n };
    for (uint64_t i = 0; i < t->cap; i++)
        if (t->v[i].key)
            v[vl_slot(&n, t->v[i].key)] = t->v[i];
    if (t->v)
        munmap(t->v, t->cap * sizeof *t->v);
    *t = n;
    return 0;
}

static int vl_put(vl_table_t *t, uintptr_t key, uint64_t value)
{
    if (2 * (t->n + 1) > t->cap && vl_grow(t) < 0)
        return -1;
    const uint64_t i = vl_slot(t, key);
    t->n += !t->v[i].key;
    t->v[i] = (vl_entry_t){ key, value };
    return 0;
}

/* key's value in *value and 1, or 0 if it is not listed. */
static int vl_get(const vl_table_t *t, uintptr_t key, uint64_t *value)
{
    if (!t->n || !key)
        return 0;
    const uint64_t i = vl_slot(t, key);
    *value = t->v[i].value;
    return t->v[i].key != 0;
}

static void vl_del(vl_table_t *t, uintptr_t key)
{
    if (!t->n || !key)
        return;
    const uint64_t mask = t->cap - 1;
    uint64_t i = vl_slot(t, key);
    if (!t->v[i].key)
        return;
    /* back-shift: an entry after the hole moves into it unless its home lies between */
    for (uint64_t j = (i + 1) & mask; t->v[j].key; j = (j + 1) & mask) {
        const uint64_t h = vl_home(t->v[j].key, t->cap);
        if (((j - h) & mask) >= ((j - i) & mask)) {
            t->v[i] = t->v[j];
            i = j;
        }
    }
    t->v[i].key = 0;
    t->n--;
}

static void unlist(uintptr_t a, uint64_t len)
{
    vl_del(&by_start, a);
    vl_del(&by_end, a + len);
}

/* A mapping listed at a already is one whose unmap was not followed: it goes first. `len` carries
 * the kind (VL_WITH_KIND). */
static void list(uintptr_t a, uint64_t len)
{
    uint64_t old;
    if (vl_get(&by_start, a, &old))
        unlist(a, VL_LEN(old));
    if (vl_put(&by_start, a, len) == 0 && vl_put(&by_end, a + VL_LEN(len), a) < 0)
        vl_del(&by_start, a);
}

void mt_vmlive_mapped(uintptr_t a, uint64_t len, mt_vl_kind_t kind)
{
    if (!len || a + len < a || VL_LEN(len) != len)
        return;
    mt_spin_take(&vl_lock);
    list(a, VL_WITH_KIND(len, kind));
    mt_spin_give(&vl_lock);
}

void mt_vmlive_unmapped(uintptr_t a, uint64_t len)
{
    if (!len || a + len < a)
        return;
    mt_spin_take(&vl_lock);
    uint64_t have, start;
    /* whole mappings from a on, then what is left of the last one */
    while (len && vl_get(&by_start, a, &have)) {
        const uint64_t n = VL_LEN(have);
        unlist(a, n);
        if (len < n) {
            list(a + len, VL_WITH_KIND(n - len, VL_KIND(have))); /* its head */
            break;
        }
        a += n;
        len -= n;
    }
    if (len && vl_get(&by_end, a + len, &start) && start < a && vl_get(&by_start, start, &have) &&
        start + VL_LEN(have) == a + len) { /* its tail */
        unlist(start, a + len - start);
        list(start, VL_WITH_KIND(a - start, VL_KIND(have)));
    }
    mt_spin_give(&vl_lock);
}

int mt_vmlive_kind(uintptr_t a)
{
    uint64_t have;
    mt_spin_take(&vl_lock);
    const int kind = vl_get(&by_start, a, &have) ? (int)VL_KIND(have) : -1;
    mt_spin_give(&vl_lock);
    return kind;
}

/* In a forked child: the lock may have been held by a thread that the child does not have. */
void mt_vmlive_after_fork_child(void)
{
    atomic_store(&vl_lock, 0);
}

void mt_vm_at_exit(void)
{
    mt_thread_t *t = &mt_self;
    if (t->busy | atomic_load_explicit(&mt_g.off, memory_order_relaxed))
        return;
    /* only if free: _exit may come from a signal handler that interrupted its holder */
    if (!mt_spin_try(&vl_lock))
        return;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    const uint64_t now = mt_now();
    for (uint64_t k = 0; k < by_start.cap; k++) {
        const vl_entry_t *e = &by_start.v[k];
        if (!e->key || VL_KIND(e->value) == MT_VL_OTHER)
            continue;
        const uint64_t len = VL_LEN(e->value);
        uint64_t lo;
        const uint64_t whole = mt_whole_pages(e->key, len, mt_g.page_size, &lo);
        uint64_t resident = 0;
        if (whole && VL_KIND(e->value) == MT_VL_COPIED)
            resident = mt_copied_pages((uintptr_t)lo, whole);
        else if (whole)
            resident = mt_resident_pages((uintptr_t)lo, whole, 1, 1);
        if (resident == UINT64_MAX)
            continue; /* not counted: trace2wl estimates it */
        uint8_t payload[40], *q = payload;
        q = mt_put_uvarint(q, MT_VM_AT_EXIT);
        q = mt_put_uvarint(q, e->key);
        q = mt_put_uvarint(q, len);
        q = mt_put_uvarint(q, resident);
        mt_emit_event_at(t, MT_EV_VM, now, payload, (size_t)(q - payload));
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
    mt_spin_give(&vl_lock);
}
