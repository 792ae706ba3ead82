/* The converter's page evidence (the trace's MT_EV_PAGES events) turned into the workload's touch
 * table: which share of each large block's pages the replay writes. */
#ifndef MTRACE_TOUCH_H
#define MTRACE_TOUCH_H

#include <stdint.h>

#include "mtrace/ptr_map.h"
#include "mtrace/trace_reader.h"
#include "mtrace/workload_format.h"

typedef struct mt_touch_block {
    uint64_t op;    /* the allocation op's number in its thread's stream */
    uint64_t pages; /* whole pages (of its usable bytes: what the recorder counts) */
    uint64_t req;   /* whole pages of its requested bytes (what the replay writes a share of) */
    uint64_t made;  /* resident when it was made */
    uint64_t ended; /* resident before the call that ended it; UINT64_MAX: not seen */
    uint64_t held;  /* the most of its pages seen resident at once while it lived (mt_touch_held) */
    uint64_t size;  /* requested bytes */
    uint64_t slot;  /* its slot in the workload; 0: not a block's (a mapping) */
    uint32_t thread;
    uint32_t next_free; /* free list of the array, index + 1 */
    uint32_t later;     /* index + 1 of its mt_touch_later_t; 0: none */
    uint32_t sampled;   /* pages printed at its making and end (mt_touch_ending); 0: none */
    uint32_t changed;   /* of which printed differently: written */
    uint32_t zero;      /* of which zero both times: written as the others were, it is taken */
    int uncounted;      /* MT_TOUCH_*_UNCOUNTED: evidence not counted (estimated, never exact) */
} mt_touch_block_t;

/* A large block of fresh memory watched for when the program wrote it. The replay writes a block's
 * pages as the block is made; a program often writes a large one over a while (an image rendered
 * into it, a file read into it) while it frees another: written at once, the two would be resident
 * together in the replay and never in the program. The recorder counts such a block's resident
 * pages again at each RSS sample and as other large blocks come and go (MT_PAGES_AT_SAMPLE), and at
 * its end: each count that rose is kept, with the op of the counting thread it follows. */
enum { MT_TOUCH_LATER_MIN_PAGES = 256, MT_TOUCH_LATER_MAX = 64, MT_TOUCH_LATER_POINTS = 32 };
typedef struct mt_touch_later {
    uint64_t key; /* the block's address; 0: a free cell */
    uint32_t n;
    uint32_t samples;                       /* counts of its life (not its end) */
    uint32_t thread[MT_TOUCH_LATER_POINTS]; /* the sampling thread of each point */
    uint64_t op[MT_TOUCH_LATER_POINTS];     /* its latest op then */
    uint64_t resident[MT_TOUCH_LATER_POINTS];
} mt_touch_later_t;

enum { MT_TOUCH_FRESH = 0, MT_TOUCH_PRINTED = 1 };

typedef struct mt_touch {
    mt_ptr_map_t map; /* address of a live large block -> index into blk */
    mt_touch_block_t *blk;
    uint64_t nblk, cap_blk;
    uint32_t free_head; /* index + 1 of the first unused entry of blk; 0: none */
    mt_wl_touch_entry_t *out;
    uint64_t nout, cap_out;
    uint64_t printed; /* blocks decided by their prints */
    /* whole pages and pages written of the blocks made of fresh memory (MT_TOUCH_FRESH) and of
     * those decided by their prints (MT_TOUCH_PRINTED) */
    uint64_t pool_pages[2], pool_written[2];
    /* the same by size class: blocks of 2^k to 2^(k+1) - 1 whole pages in [k] */
    uint64_t class_pages[2][64], class_written[2][64];
    mt_touch_later_t *later;                           /* [MT_TOUCH_LATER_MAX]; NULL: none yet */
    uint32_t nlater;                                   /* cells in use */
    uint64_t written_later, later_entries;             /* blocks the replay writes over their life; entries */
    uint64_t blocks, exact, estimated, pages, written; /* the workload header's large_* */
    uint64_t edge_blocks, edge_unwritten;              /* edge blocks seen; of which last bytes unwritten */
    int seen;                                          /* the trace had any page evidence */
    uint64_t page;                                     /* bytes; 0: shares taken of `pages` */
} mt_touch_t;

int mt_touch_init(mt_touch_t *t);
void mt_touch_fini(mt_touch_t *t);
/* Evidence at the making of the live block at p, made by thread `thread`'s op number `op`, of `size`
 * requested bytes in workload slot `slot` (0 for a mapping). */
int mt_touch_made(mt_touch_t *t, uint64_t p, uint32_t thread, uint64_t op, uint64_t pages, uint64_t resident,
                  uint64_t slot, uint64_t size);
/* Whether a count of `resident` pages of the live block p at an RSS sample is a new point: p is
 * watched, and the count rose. */
int mt_touch_watched(const mt_touch_t *t, uint64_t p, uint64_t resident);
/* The count: `resident` pages of p by thread `thread`'s op `op`, during its life (`sample`) or at
 * its end. 0 (past MT_TOUCH_LATER_POINTS counts, every other one is dropped). */
int mt_touch_sampled(mt_touch_t *t, uint64_t p, uint32_t thread, uint64_t op, uint64_t resident, int sample);
/* Evidence before the call that ends (or tries to end) the block at p: `resident` pages, and what
 * the prints of its pages say (pr->sampled 0: nothing). */
void mt_touch_ending(mt_touch_t *t, uint64_t p, uint64_t resident, const mt_pages_prints_t *pr);
/* Evidence that `resident` more of its pages were resident in a part of block p that ends now (a
 * mapping unmapped piece by piece): added up. */
void mt_touch_ending_add(mt_touch_t *t, uint64_t p, uint64_t resident);
/* Evidence that at least `resident` of the live block p's pages were resident at one moment of its
 * life: a mapping's part counted before an madvise that dropped its pages. The block's written
 * pages are at least the most so seen, even when it ends with fewer. */
void mt_touch_held(mt_touch_t *t, uint64_t p, uint64_t resident);
/* Some of the live block at p's evidence was not counted (MT_PAGES_UNCOUNTED): its written pages
 * are estimated within what is known. */
enum { MT_TOUCH_MADE_UNCOUNTED = 1, MT_TOUCH_ENDED_UNCOUNTED = 2 };
void mt_touch_uncounted(mt_touch_t *t, uint64_t p, int which);
/* An edge block (trace_format.h, MT_PAGES_EDGE), made by thread `thread`'s op number `op`. One whose
 * last bytes the program left unwritten gets an entry (version 7) by which the replay writes its
 * first `written_bytes` bytes only, as it writes a whole block, and so not the page its last bytes
 * alone would take where it is mapped for itself; 0: they were written, no entry. 0 or -ENOMEM. */
int mt_touch_edge(mt_touch_t *t, uint32_t thread, uint64_t op, uint64_t written_bytes);
/* The block at p has ended: its entry is decided. 0 or -ENOMEM. */
int mt_touch_ended(mt_touch_t *t, uint64_t p);
/* The end of the trace: the blocks still live are decided, and the table sorted. 0 or -ENOMEM. */
int mt_touch_finish(mt_touch_t *t);
/* Adds the entries of another (finished) table, keeping the order. 0 or -ENOMEM. */
int mt_touch_absorb(mt_touch_t *t, const mt_touch_t *from);

#endif
