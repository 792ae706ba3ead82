/* mtrace report's live blocks: what each block still live keeps while the report walks a trace,
 * 28 bytes (address, size and time in a 24-byte slot, the stack id beside it) and a 4-byte entry of
 * an address table at most 3/4 full. The address map of the converter (mtrace/ptr_map.h) keeps 16
 * bytes per table entry and left the block's figures to a second array: on a python trace with
 * 3.8 M live blocks, 64 + 128 MiB of tables while growing, besides the blocks (bench/RESULTS.md,
 * "mtrace report's memory"). Internal to analysis/. */
#ifndef MTRACE_LIVE_SET_H
#define MTRACE_LIVE_SET_H

#include <stdint.h>

typedef struct mt_live_block {
    uint64_t addr, size, time;
    uint32_t stack;
} mt_live_block_t;

typedef struct mt_live_slot {
    uint64_t addr; /* 0: a free slot, whose size is the next free slot + 1 */
    uint64_t size, time;
} mt_live_slot_t;

typedef struct mt_live_set {
    mt_live_slot_t *slot;
    uint32_t *stack; /* per slot */
    uint64_t nslots, cap_slots;
    uint64_t free_head;     /* the first free slot + 1; 0: none */
    uint32_t *table;        /* slot + 1 per entry; 0: empty */
    uint64_t cap, n, limit; /* cap is a power of two; n blocks live */
    unsigned shift;         /* 64 - log2(cap) */
    uint64_t bytes;         /* the live blocks' sizes, added up */
} mt_live_set_t;

int mt_live_init(mt_live_set_t *s);
void mt_live_fini(mt_live_set_t *s);
/* Adds a block whose address (not 0) is not live. 0, or -ENOMEM (also past 2^32 - 2 slots). */
int mt_live_add(mt_live_set_t *s, const mt_live_block_t *b);
/* Removes the block at addr into *out: 1, or 0 when none is live there. */
int mt_live_remove(mt_live_set_t *s, uint64_t addr, mt_live_block_t *out);
/* 1 if a block is live at addr, else 0. */
int mt_live_has(const mt_live_set_t *s, uint64_t addr);
/* Slot i (below nslots) into *out: 1 if it holds a live block, else 0. */
int mt_live_slot(const mt_live_set_t *s, uint64_t i, mt_live_block_t *out);

#endif
