/* Page evidence into the touch table.
 *
 * The recorder counts a large block's resident whole pages when the block is made (`made`) and
 * before the call that ends it (`ended`); doc/trace-format.md, MT_EV_PAGES. What the replay needs is
 * how many pages the program wrote while the block lived:
 *   - made == 0 (fresh memory: a chunk glibc mapped, heap never used before): exactly `ended`;
 *   - made > 0 (memory earlier blocks touched, whose pages stay resident): somewhere between
 *     ended - made and ended. Glibc's heap keeps freed pages, so after a warm-up nearly every heap
 *     block shows every page resident whatever the program wrote: taking `ended` would have a
 *     replay on another allocator, or with another mmap threshold, write pages the program never
 *     wrote. Such a block is taken to be written like the fresh blocks seen so far (the share of
 *     their pages written), within its bounds;
 *   - still live at the end, or ended without evidence: like the fresh blocks, within 0 .. pages.
 * With no fresh block seen yet, the upper bound is taken: the replay writes what may have been
 * written, as it did before evidence existed.
 * Only blocks written in part get an entry: the replay writes every page of the others. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "touch.h"

int mt_touch_init(mt_touch_t *t)
{
    *t = (mt_touch_t){ 0 };
    return mt_ptr_map_init(&t->map);
}

void mt_touch_fini(mt_touch_t *t)
{
    mt_ptr_map_fini(&t->map);
    free(t->blk);
    free(t->out);
    free(t->shares);
    *t = (mt_touch_t){ 0 };
}

static unsigned order(uint64_t pages)
{
    const unsigned o = 63u - (unsigned)__builtin_clzll(pages);
    return o < MT_TOUCH_ORDERS ? o : MT_TOUCH_ORDERS - 1;
}

/* Keeps a fresh block's written share among those of its order of size. 0 or -ENOMEM. */
static int keep_share(mt_touch_t *t, uint64_t pages, uint64_t written)
{
    if (!t->shares && !(t->shares = calloc(MT_TOUCH_ORDERS, sizeof *t->shares)))
        return -ENOMEM;
    mt_touch_shares_t *k = &t->shares[order(pages)];
    k->share[k->n++ % MT_TOUCH_KEPT] = (uint32_t)((written * MT_WL_TOUCH_ONE + pages / 2) / pages);
    return 0;
}

/* The written pages of an estimated block of `pages`, within lo .. hi: the share of one of the
 * fresh blocks of its order of size (the nearest order that has any), drawn in turn by a fixed
 * sequence; with no fresh block seen yet, hi (what may have been written).
 * A share drawn per block, not the mean: a heap block's pages are resident if any block that lay
 * there wrote them, so ten blocks written 10 % and one written whole leave the pages written whole
 * where all eleven reuse one place, which eleven blocks written 18 % each would not. */
static uint64_t estimate(mt_touch_t *t, uint64_t pages, uint64_t lo, uint64_t hi)
{
    uint64_t v = hi;
    const mt_touch_shares_t *k = NULL;
    if (t->shares) {
        const unsigned o = order(pages);
        for (unsigned d = 0; d < MT_TOUCH_ORDERS && !k; d++) {
            if (o >= d && t->shares[o - d].n)
                k = &t->shares[o - d];
            else if (o + d < MT_TOUCH_ORDERS && t->shares[o + d].n)
                k = &t->shares[o + d];
        }
    }
    if (k) {
        const uint64_t kept = k->n < MT_TOUCH_KEPT ? k->n : MT_TOUCH_KEPT;
        const uint64_t pick = ((t->draws++ + 1) * 0x9e3779b97f4a7c15ull >> 32) % kept;
        v = (pages * k->share[pick] + MT_WL_TOUCH_ONE / 2) / MT_WL_TOUCH_ONE;
    }
    return v < lo ? lo : v > hi ? hi : v;
}

/* Makes room for one more element in *v, of which *cap fit: doubles it from `first`. 0 or -ENOMEM. */
static int grow(void **v, uint64_t *cap, size_t elem, uint64_t first)
{
    const uint64_t n = *cap ? *cap * 2 : first;
    void *p = realloc(*v, n * elem);
    if (!p)
        return -ENOMEM;
    *v = p;
    *cap = n;
    return 0;
}

static int decide(mt_touch_t *t, const mt_touch_block_t *b)
{
    if (!b->pages)
        return 0;
    const int made_known = !(b->uncounted & MT_TOUCH_MADE_UNCOUNTED);
    const int ended_known = b->ended != UINT64_MAX && !(b->uncounted & MT_TOUCH_ENDED_UNCOUNTED);
    const uint64_t held = b->held < b->pages ? b->held : b->pages;
    uint64_t written;
    if (made_known && b->made == 0 && ended_known) {
        written = b->ended < b->pages ? b->ended : b->pages;
        if (written < held)
            written = held;
        t->exact++;
        t->exact_pages += b->pages;
        t->exact_written += written;
        if (keep_share(t, b->pages, written) < 0)
            return -ENOMEM;
    } else {
        uint64_t hi = ended_known && b->ended < b->pages ? b->ended : b->pages;
        uint64_t lo = ended_known && made_known && b->ended > b->made ? b->ended - b->made : 0;
        if (lo < held)
            lo = held;
        if (hi < lo)
            hi = lo;
        written = estimate(t, b->pages, lo, hi);
        t->estimated++;
    }
    t->blocks++;
    t->pages += b->pages;
    t->written += written;
    if (written >= b->pages)
        return 0;
    if (t->nout == t->cap_out && grow((void **)&t->out, &t->cap_out, sizeof *t->out, 1024) < 0)
        return -ENOMEM;
    t->out[t->nout++] = (mt_wl_touch_entry_t){
        .op = b->op,
        .thread = b->thread,
        .frac = (uint32_t)((written << 16) / b->pages),
    };
    return 0;
}

/* Removes the block at map entry e, returning its array entry to the free list. */
static void drop(mt_touch_t *t, mt_ptr_entry_t *e)
{
    const uint32_t k = (uint32_t)e->value;
    t->blk[k].next_free = t->free_head;
    t->free_head = k + 1;
    mt_ptr_map_del(&t->map, e);
}

int mt_touch_made(mt_touch_t *t, uint64_t p, uint32_t thread, uint64_t op, uint64_t pages, uint64_t resident)
{
    t->seen = 1;
    mt_ptr_entry_t *e = mt_ptr_map_find(&t->map, p);
    if (e) { /* a block that ended without the converter seeing it (a forced repair): undecided */
        drop(t, e);
    }
    uint32_t k;
    if (t->free_head) {
        k = t->free_head - 1;
        t->free_head = t->blk[k].next_free;
    } else {
        if (t->nblk == t->cap_blk && grow((void **)&t->blk, &t->cap_blk, sizeof *t->blk, 64) < 0)
            return -ENOMEM;
        k = (uint32_t)t->nblk++;
    }
    t->blk[k] = (mt_touch_block_t){ .op = op, .pages = pages, .made = resident, .ended = UINT64_MAX, .thread = thread };
    return mt_ptr_map_put(&t->map, p, k);
}

void mt_touch_ending(mt_touch_t *t, uint64_t p, uint64_t resident)
{
    t->seen = 1;
    mt_ptr_entry_t *e = mt_ptr_map_find(&t->map, p);
    if (e) {
        t->blk[e->value].ended = resident;
        t->blk[e->value].uncounted &= ~MT_TOUCH_ENDED_UNCOUNTED; /* a new count, until said otherwise */
    }
}

void mt_touch_ending_add(mt_touch_t *t, uint64_t p, uint64_t resident)
{
    t->seen = 1;
    mt_ptr_entry_t *e = mt_ptr_map_find(&t->map, p);
    if (!e)
        return;
    mt_touch_block_t *b = &t->blk[e->value];
    b->ended = (b->ended == UINT64_MAX ? 0 : b->ended) + resident;
}

void mt_touch_held(mt_touch_t *t, uint64_t p, uint64_t resident)
{
    t->seen = 1;
    mt_ptr_entry_t *e = mt_ptr_map_find(&t->map, p);
    if (e && t->blk[e->value].held < resident)
        t->blk[e->value].held = resident;
}

void mt_touch_uncounted(mt_touch_t *t, uint64_t p, int which)
{
    mt_ptr_entry_t *e = mt_ptr_map_find(&t->map, p);
    if (e)
        t->blk[e->value].uncounted |= which;
}

int mt_touch_ended(mt_touch_t *t, uint64_t p)
{
    mt_ptr_entry_t *e = mt_ptr_map_find(&t->map, p);
    if (!e)
        return 0;
    const int rc = decide(t, &t->blk[e->value]);
    drop(t, e);
    return rc;
}

static int by_thread_then_op(const void *a, const void *b)
{
    const mt_wl_touch_entry_t *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return x->op < y->op ? -1 : x->op > y->op;
}

int mt_touch_absorb(mt_touch_t *t, const mt_touch_t *from)
{
    if (!from->nout)
        return 0;
    if (t->nout + from->nout > t->cap_out) {
        mt_wl_touch_entry_t *n = realloc(t->out, (t->nout + from->nout) * sizeof *n);
        if (!n)
            return -ENOMEM;
        t->out = n;
        t->cap_out = t->nout + from->nout;
    }
    memcpy(t->out + t->nout, from->out, from->nout * sizeof *t->out);
    t->nout += from->nout;
    qsort(t->out, t->nout, sizeof *t->out, by_thread_then_op);
    return 0;
}

int mt_touch_finish(mt_touch_t *t)
{
    for (uint64_t i = 0; i < t->map.cap; i++) {
        const mt_ptr_entry_t *e = &t->map.v[i];
        if (e->key) {
            const int rc = decide(t, &t->blk[e->value]);
            if (rc < 0)
                return rc;
        }
    }
    if (t->nout)
        qsort(t->out, t->nout, sizeof *t->out, by_thread_then_op);
    return 0;
}
