/* The program's own anonymous mappings as a trace's MT_EV_VM events make and unmap them: which
 * address ranges are mapped, by which mapping, so that an unmap or an madvise of any range, parts of
 * mappings or several at once included, names the right ones (trace2wl: ops on their slots;
 * mtrace report: how much the program held outside malloc). */
#ifndef MTRACE_VMAP_H
#define MTRACE_VMAP_H

#include <stddef.h>
#include <stdint.h>

#include "mtrace/trace_reader.h"

typedef struct mt_vmap_map {
    uint64_t base, len;    /* as mapped */
    uint64_t left;         /* bytes of it still mapped */
    uint64_t op;           /* its last toucher's op number (the mmap, then madvise and munmap ops) */
    uint64_t key;          /* its page evidence's key (mt_touch_t), unique */
    uint32_t slot, thread; /* thread: its last toucher, whose op a later use waits for */
    uint32_t next_free;    /* free list of the array, index + 1 */
    int brk;               /* pages the program's brk/sbrk added to the break, not an mmap */
} mt_vmap_map_t;

/* A mapped range [lo, hi) of mapping `map`; the pieces are sorted and never overlap. */
typedef struct mt_vmap_piece {
    uint64_t lo, hi;
    uint32_t map;
} mt_vmap_piece_t;

/* A part of a mapping that an unmap removed (or an madvise names). */
typedef struct mt_vmap_cut {
    uint32_t map;
    uint64_t lo, hi;
} mt_vmap_cut_t;

typedef struct mt_vmap {
    mt_vmap_piece_t *piece;
    uint64_t npiece, cap_piece;
    mt_vmap_map_t *map;
    uint64_t nmap, cap_map;
    uint32_t free_head;
    uint64_t next_key;
    uint64_t mapped, peak_mapped;  /* bytes */
    uint64_t brk_mapped, peak_brk; /* bytes of them the break holds */
    uint64_t made;                 /* mappings made */
} mt_vmap_t;

void mt_vmap_fini(mt_vmap_t *v);
/* A new mapping of [base, base + len), which must not overlap a mapped range (`brk`: pages of the
 * break): its index, or -ENOMEM. */
int64_t mt_vmap_add(mt_vmap_t *v, uint64_t base, uint64_t len, uint32_t slot, uint32_t thread, uint64_t op, int brk);
/* The mapped parts of [lo, hi), in address order, to *cuts as mt_vmap_cut does, removing nothing. */
int mt_vmap_parts(const mt_vmap_t *v, uint64_t lo, uint64_t hi, mt_vmap_cut_t **cuts, size_t *ncuts, size_t *cap);
/* Removes [lo, hi) from the mapped ranges; the parts removed, in address order, go to *cuts
 * (realloc'ed by the call, *ncuts of them). 0 or -ENOMEM. A mapping whose `left` reaches 0 stays in
 * the array until mt_vmap_release. */
int mt_vmap_cut(mt_vmap_t *v, uint64_t lo, uint64_t hi, mt_vmap_cut_t **cuts, size_t *ncuts, size_t *cap);
void mt_vmap_release(mt_vmap_t *v, uint32_t map);

/* A VM event's fifth field (the reader decodes four into arg[]): 1 and *v, or 0 when the payload
 * has none (MT_VM_MAP and MT_VM_UNMAP of mmap, from a shim before revision 2026-11-25). */
static inline int mt_vmap_event_fifth(const mt_record_t *r, uint64_t *v)
{
    const uint8_t *p = r->data, *end = r->data + r->len;
    for (int k = 0; k < 5; k++)
        if (mt_get_uvarint(&p, end, v) < 0)
            return 0;
    return 1;
}

#endif
