/* The stack table: from a stack's 64-bit hash to its id, lock-free, in bounded memory.
 *
 * Two tables of 8-byte slots, each slot a stack's hash tag (the upper 32 bits of the hash, whose
 * lower bits pick the slot) and its id: the current table, where stacks are numbered, and the
 * previous one, only read. A stack missing from the current table but found in the previous one is
 * copied into the current one with its id. When half of the current table is taken, the previous
 * table is emptied (its pages given back) and becomes the current one, twice as large as the last
 * up to 2^LAST_BITS slots. So a stack keeps its id while it is met at least once a generation (the
 * time the current table takes to fill), and one not met for a whole generation is numbered again
 * when next met: a second STACK event with the same frames, which readers add up as one stack
 * (doc/trace-format.md, "Callsites"). The memory is 2 x 2^LAST_BITS slots at most, whatever the
 * program, touched as stacks are met: levels kept side by side took cc1 1.9 MiB and a whole-table
 * hash python3 16 MiB (bench/RESULTS.md, "Stack depth and the stack table").
 *
 * Every slot holds a tag and an id that define each other (or a tag whose id is being numbered), in
 * whichever table, under whichever generation: a thread that acts on a table that has moved on
 * since it looked puts there a slot that is still true. That is what lets tables be emptied while
 * other threads read them. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <sys/mman.h>

#include "shim.h"

#define FIRST_BITS 12 /* 4 096 slots, 32 KiB */
#define LAST_BITS 15  /* 32 768 slots, 256 KiB: both tables 512 KiB at most */
#define TABLE_SLOTS (1u << LAST_BITS)
#define PROBES_MAX 64
#define SLOT_TAG(s) ((uint32_t)((s) >> 32))
#define SLOT_ID(s) ((uint32_t)(s))

static _Atomic uint64_t *region; /* table 0, then table 1: tag << 32 | id; 0 empty; id 0 while numbered */
/* Which table is current and the sizes of both, one word so that a thread reads a consistent set:
 * bit 0 the current table, bits 8-15 its bits, bits 16-23 the previous table's (0: none yet). */
static _Atomic uint32_t layout;
static _Atomic uint32_t slots_taken; /* in the current table */
static _Atomic int moving;           /* a thread is starting the next generation */

#define LAYOUT(cur, bits, prev_bits) ((uint32_t)(cur) | (uint32_t)(bits) << 8 | (uint32_t)(prev_bits) << 16)
#define LAYOUT_CUR(l) ((l)&1u)
#define LAYOUT_BITS(l) ((l) >> 8 & 0xffu)
#define LAYOUT_PREV_BITS(l) ((l) >> 16 & 0xffu)

static _Atomic uint64_t *table_at(unsigned which)
{
    return region + (size_t)which * TABLE_SLOTS;
}

int mt_stack_table_init(void)
{
    void *m = mmap(NULL, 2 * sizeof(uint64_t) * TABLE_SLOTS, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    region = m;
    atomic_store(&layout, LAYOUT(0, FIRST_BITS, 0));
    return 0;
}

void mt_stack_table_clear(void)
{
    if (!region)
        return;
    madvise(region, 2 * sizeof(uint64_t) * TABLE_SLOTS, MADV_DONTNEED);
    atomic_store(&slots_taken, 0);
    atomic_store(&moving, 0);
    atomic_store(&layout, LAYOUT(0, FIRST_BITS, 0));
}

/* The current table `seen` is half taken (or a run of PROBES_MAX taken slots was met): the previous
 * table, emptied, becomes the current one. One thread does it; the others go on meanwhile. */
static void next_generation(uint32_t seen, uint32_t taken_at_least)
{
    int idle = 0;
    if (atomic_load(&slots_taken) < taken_at_least || !atomic_compare_exchange_strong(&moving, &idle, 1))
        return;
    if (atomic_load(&layout) == seen) {
        const unsigned cur = LAYOUT_CUR(seen), bits = LAYOUT_BITS(seen);
        madvise(table_at(!cur), sizeof(uint64_t) * TABLE_SLOTS, MADV_DONTNEED);
        atomic_store(&slots_taken, 0);
        atomic_store(&layout, LAYOUT(!cur, bits < LAST_BITS ? bits + 1 : LAST_BITS, bits));
    }
    atomic_store(&moving, 0);
}

static void count_taken(uint32_t seen)
{
    const uint32_t half = (1u << LAYOUT_BITS(seen)) / 2;
    if (atomic_fetch_add(&slots_taken, 1) + 1 >= half)
        next_generation(seen, half);
}

/* The id of a slot another thread is numbering; 0 if its table was emptied meanwhile. */
static uint32_t wait_numbered(_Atomic uint64_t *slot, uint32_t tag)
{
    for (;;) {
        const uint64_t v = atomic_load_explicit(slot, memory_order_acquire);
        if (SLOT_TAG(v) != tag)
            return 0;
        if (SLOT_ID(v))
            return SLOT_ID(v);
    }
}

/* Looks for `tag` in the table of 2^bits slots from the slot its hash picks: 1 found (*id), 0 not
 * there (*empty: the empty slot that ends its run, NULL after PROBES_MAX taken slots), -1 the slot
 * found was emptied while its id was being numbered. */
static int probe(_Atomic uint64_t *t, unsigned bits, uint64_t h, uint32_t tag, uint32_t *id, _Atomic uint64_t **empty)
{
    const uint32_t mask = (1u << bits) - 1;
    uint32_t i = (uint32_t)h & mask;
    for (unsigned n = 0; n < PROBES_MAX; n++, i = (i + 1) & mask) {
        const uint64_t v = atomic_load_explicit(&t[i], memory_order_acquire);
        if (v == 0) {
            *empty = &t[i];
            return 0;
        }
        if (SLOT_TAG(v) != tag)
            continue;
        *id = SLOT_ID(v) ? SLOT_ID(v) : wait_numbered(&t[i], tag);
        return *id ? 1 : -1;
    }
    *empty = NULL;
    return 0;
}

/* Everything but a stack found in its own slot: probe runs, the previous table, numbering. */
static __attribute__((noinline)) uint32_t find_or_number(uint64_t hash, uint32_t tag, uint32_t (*number)(void *),
                                                         void *arg)
{
    for (;;) {
        const uint32_t seen = atomic_load_explicit(&layout, memory_order_acquire);
        uint32_t id = 0;
        _Atomic uint64_t *slot, *unused;
        const int found = probe(table_at(LAYOUT_CUR(seen)), LAYOUT_BITS(seen), hash, tag, &id, &slot);
        if (found > 0)
            return id;
        if (found < 0)
            continue;
        if (!slot) {
            next_generation(seen, 0);
            continue;
        }
        uint64_t v = 0;
        if (LAYOUT_PREV_BITS(seen) &&
            probe(table_at(!LAYOUT_CUR(seen)), LAYOUT_PREV_BITS(seen), hash, tag, &id, &unused) > 0) {
            /* Met in the last generation: it keeps its id (left out if another thread took the slot). */
            if (atomic_compare_exchange_strong(slot, &v, (uint64_t)tag << 32 | id))
                count_taken(seen);
            return id;
        }
        if (!atomic_compare_exchange_strong(slot, &v, (uint64_t)tag << 32))
            continue; /* another thread took the slot: look again */
        id = number(arg);
        /* A failed exchange: the table was emptied meanwhile, and the id stays good for this call. */
        uint64_t claimed = (uint64_t)tag << 32;
        atomic_compare_exchange_strong(slot, &claimed, id ? claimed | id : 0);
        if (id)
            count_taken(seen);
        return id;
    }
}

uint32_t mt_stack_table_id(uint64_t hash, uint32_t (*number)(void *), void *arg)
{
    if (MT_UNLIKELY(!region))
        return 0;
    const uint32_t tag = SLOT_TAG(hash) ? SLOT_TAG(hash) : 1;
    /* On every call with stacks: with at most half of the slots taken, most stacks are found in the
     * slot their hash picks, for a load and a compare. */
    const uint32_t seen = atomic_load_explicit(&layout, memory_order_acquire);
    const uint64_t v = atomic_load_explicit(
        &table_at(LAYOUT_CUR(seen))[(uint32_t)hash & ((1u << LAYOUT_BITS(seen)) - 1)], memory_order_acquire);
    if (MT_LIKELY(SLOT_TAG(v) == tag && SLOT_ID(v)))
        return SLOT_ID(v);
    return find_or_number(hash, tag, number, arg);
}
