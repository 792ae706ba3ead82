/* mtrace report's live blocks (live_set.h): slots found by address through a table of slot numbers. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "live_set.h"

/* Everything is mapped, so that growth moves no bytes (mremap) or frees the old table at once
 * (munmap): malloc'd, these arrays became heap blocks once glibc's mmap threshold had risen, and
 * their pages stayed with the process. Zeroed by the kernel. */
static void *map_zeroed(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static int grow_array(void **p, size_t old_bytes, size_t new_bytes)
{
    void *n = *p ? mremap(*p, old_bytes, new_bytes, MREMAP_MAYMOVE) : map_zeroed(new_bytes);
    if (!n || n == MAP_FAILED)
        return -ENOMEM;
    *p = n;
    return 0;
}

/* Small tables grow at half full, large ones at 3/4 (where a lookup costs its cache miss whatever
 * its probes), as mtrace/ptr_map.h's. */
static void set_cap(mt_live_set_t *s, uint64_t cap)
{
    s->cap = cap;
    s->limit = cap < (1u << 16) ? cap / 2 : cap / 4 * 3;
    s->shift = (unsigned)__builtin_clzll(cap) + 1;
}

/* Fibonacci hashing: the top bits of addr * 2^64 / golden ratio. */
static uint64_t home(const mt_live_set_t *s, uint64_t addr)
{
    return (addr * 0x9e3779b97f4a7c15ull) >> s->shift;
}

int mt_live_init(mt_live_set_t *s)
{
    memset(s, 0, sizeof *s);
    set_cap(s, 1024);
    s->table = map_zeroed(s->cap * sizeof *s->table);
    return s->table ? 0 : -ENOMEM;
}

void mt_live_fini(mt_live_set_t *s)
{
    if (s->table)
        munmap(s->table, s->cap * sizeof *s->table);
    if (s->slot)
        munmap(s->slot, s->cap_slots * sizeof *s->slot);
    if (s->stack)
        munmap(s->stack, s->cap_slots * sizeof *s->stack);
    memset(s, 0, sizeof *s);
}

static void table_put(mt_live_set_t *s, uint64_t addr, uint64_t slot)
{
    uint64_t i = home(s, addr);
    while (s->table[i])
        i = (i + 1) & (s->cap - 1);
    s->table[i] = (uint32_t)(slot + 1);
}

/* Doubles the table and puts every live slot in it again, reading the slots in order. */
static int table_grow(mt_live_set_t *s)
{
    mt_live_set_t n = *s;
    set_cap(&n, s->cap * 2);
    n.table = map_zeroed(n.cap * sizeof *n.table);
    if (!n.table)
        return -ENOMEM;
    for (uint64_t i = 0; i < s->nslots; i++)
        if (s->slot[i].addr)
            table_put(&n, s->slot[i].addr, i);
    munmap(s->table, s->cap * sizeof *s->table);
    *s = n;
    return 0;
}

int mt_live_add(mt_live_set_t *s, const mt_live_block_t *b)
{
    if (s->n >= s->limit && table_grow(s) < 0)
        return -ENOMEM;
    uint64_t i;
    if (s->free_head) {
        i = s->free_head - 1;
        s->free_head = s->slot[i].size;
    } else {
        if (s->nslots == s->cap_slots) {
            const uint64_t cap = s->cap_slots ? s->cap_slots * 2 : 4096;
            if (cap >= UINT32_MAX ||
                grow_array((void **)&s->slot, s->cap_slots * sizeof *s->slot, cap * sizeof *s->slot) < 0 ||
                grow_array((void **)&s->stack, s->cap_slots * sizeof *s->stack, cap * sizeof *s->stack) < 0)
                return -ENOMEM; /* a stack array that failed to grow is still the old one: cap stays */
            s->cap_slots = cap;
        }
        i = s->nslots++;
    }
    s->slot[i] = (mt_live_slot_t){ b->addr, b->size, b->time };
    s->stack[i] = b->stack;
    table_put(s, b->addr, i);
    s->n++;
    s->bytes += b->size;
    return 0;
}

/* Backward-shift deletion of table entry i: no tombstones. */
static void table_del(mt_live_set_t *s, uint64_t i)
{
    for (uint64_t j = (i + 1) & (s->cap - 1); s->table[j]; j = (j + 1) & (s->cap - 1)) {
        const uint64_t h = home(s, s->slot[s->table[j] - 1].addr);
        /* Move j into the hole at i if its home does not lie cyclically in (i, j]. */
        if (((j - h) & (s->cap - 1)) >= ((j - i) & (s->cap - 1))) {
            s->table[i] = s->table[j];
            i = j;
        }
    }
    s->table[i] = 0;
}

int mt_live_remove(mt_live_set_t *s, uint64_t addr, mt_live_block_t *out)
{
    if (!addr)
        return 0;
    for (uint64_t i = home(s, addr); s->table[i]; i = (i + 1) & (s->cap - 1)) {
        const uint64_t k = s->table[i] - 1;
        if (s->slot[k].addr != addr)
            continue;
        mt_live_slot(s, k, out);
        table_del(s, i);
        s->slot[k] = (mt_live_slot_t){ .addr = 0, .size = s->free_head };
        s->free_head = k + 1;
        s->n--;
        s->bytes -= out->size;
        return 1;
    }
    return 0;
}

int mt_live_has(const mt_live_set_t *s, uint64_t addr)
{
    for (uint64_t i = home(s, addr); addr && s->table[i]; i = (i + 1) & (s->cap - 1))
        if (s->slot[s->table[i] - 1].addr == addr)
            return 1;
    return 0;
}

int mt_live_slot(const mt_live_set_t *s, uint64_t i, mt_live_block_t *out)
{
    const mt_live_slot_t *x = &s->slot[i];
    *out = (mt_live_block_t){ x->addr, x->size, x->time, s->stack[i] };
    return x->addr != 0;
}
