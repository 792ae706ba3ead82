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
 *     wrote. Where the recorder printed its pages at its making and end (every page resident both
 *     times), the share of them whose print changed, of those that can tell (not zero both times;
 *     at least PRINTS_MIN_TELLING of them), within its bounds;
 *   - otherwise (not counted, past the recorder's budget; still live at the end without a count;
 *     prints that cannot tell):
 *     like the blocks seen so far whose pages written are known, of the same making (fresh or
 *     reused; estimate), within its bounds.
 * With no such block seen yet, the upper bound is taken: the replay writes what may have been
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
    free(t->later);
    *t = (mt_touch_t){ 0 };
}

/* A block's size class: floor(log2(whole pages)). */
static unsigned size_class(uint64_t pages)
{
    return 63u - (unsigned)__builtin_clzll(pages | 1);
}

/* Counted into the pool of blocks whose pages written are known (MT_TOUCH_FRESH, MT_TOUCH_PRINTED). */
static void pool_add(mt_touch_t *t, int pool, uint64_t pages, uint64_t written)
{
    const unsigned k = size_class(pages);
    t->pool_pages[pool] += pages;
    t->pool_written[pool] += written;
    t->class_pages[pool][k] += pages;
    t->class_written[pool][k] += written;
}

/* The pages written of a block of `pages` whole pages whose counts say no more than lo .. hi, made
 * of memory `made` (MADE_*): its pages times the written share of the blocks whose pages written
 * are known and were made alike, of its size class once CLASS_MIN_BLOCKS blocks' worth of pages of
 * that class are known (else of all sizes), rounded, within lo .. hi. A block of reused memory takes
 * the share of those decided by their prints, one of fresh memory that of the fresh ones (git's
 * 64 KiB zlib buffers, reused heap blocks, were given the 47.8 % of the fresh ones, mostly 128 KiB
 * and up, and the replay with a 64 KiB mmap threshold held 55 MB against 45-48 native;
 * bench/RESULTS.md), one whose making was not counted that of both. By size class: git recorded
 * with every block counted, its prints dropped from 60 % of them, predicted 3-5 MB below what all
 * the prints said with the share of all sizes, within 0.9 MB of it by class (its 64 KiB zlib
 * buffers and its 80-128 KiB delta buffers are written very differently). The mean, not a share
 * drawn per block: drawn, the shares of the few large blocks that make a peak swing it above the
 * mean (prog_partial with mmap_threshold=4096: 22.4-22.7 MB predicted against 21.2 from the mean
 * and 19.4 native); nor a mean by lifetime class, which on git put 0.2-3 MB more on each
 * prediction, further from the native peaks (bench/RESULTS.md). With no block known, the upper
 * bound. */
enum { MADE_UNKNOWN, MADE_FRESH, MADE_REUSED, CLASS_MIN_BLOCKS = 4 };

/* The pages of a block's prints that must tell (not zero at both ends) for the prints to decide its
 * pages written. A page zero at both ends tells nothing: it was written with zeros, or not at all.
 * A program that writes zeros over memory that held zeros leaves one page of 32 that tells, often
 * the one under a chunk header or a small block's old bytes, and never written: prog_partial's
 * blocks, a quarter written each, were decided 0 % written by that one page, their share then stood
 * for every reused block, and the replay with mmap_threshold=4096 predicted 16.8-17.3 MB against
 * 19.5 native (bench/RESULTS.md). With fewer telling pages the block is estimated. */
#define PRINTS_MIN_TELLING 4u

static uint64_t estimate(const mt_touch_t *t, int made, uint64_t pages, uint64_t lo, uint64_t hi)
{
    const unsigned k = size_class(pages);
    const int first = made == MADE_REUSED ? MT_TOUCH_PRINTED : MT_TOUCH_FRESH,
              last = made == MADE_FRESH ? MT_TOUCH_FRESH : MT_TOUCH_PRINTED;
    uint64_t n = 0, w = 0, cn = 0, cw = 0;
    for (int pool = first; pool <= last; pool++) {
        n += t->pool_pages[pool], w += t->pool_written[pool];
        cn += t->class_pages[pool][k], cw += t->class_written[pool][k];
    }
    if (cn >= CLASS_MIN_BLOCKS * pages)
        n = cn, w = cw;
    else if (!n) /* none made alike: all */
        for (int pool = MT_TOUCH_FRESH; pool <= MT_TOUCH_PRINTED; pool++)
            n += t->pool_pages[pool], w += t->pool_written[pool];
    const uint64_t v = n ? (uint64_t)((long double)pages * w / n + 0.5L) : hi;
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

static int put_entry(mt_touch_t *t, mt_wl_touch_entry_t e)
{
    if (t->nout == t->cap_out && grow((void **)&t->out, &t->cap_out, sizeof *t->out, 1024) < 0)
        return -ENOMEM;
    t->out[t->nout++] = e;
    return 0;
}

/* The replay writes a share of the whole pages of a block's requested bytes (the size its op asks
 * for), where the recorder counts those of its usable bytes: w of them as that share. They differ
 * where glibc hands out more than was asked: ffmpeg's 5 074 368-byte memalign blocks came with 5.1
 * to 7.1 MB usable, 1 198 of their 1 250 to 1 742 pages written; as a share of those, the replay
 * wrote 800 to 1 000 of its 1 238, 44 MB less than the program held at its peak (bench/RESULTS.md,
 * "A fourth survey"). MT_WL_TOUCH_ONE: every page. */
static uint32_t share_of(const mt_touch_block_t *b, uint64_t w)
{
    return !b->req || w >= b->req ? MT_WL_TOUCH_ONE : (uint32_t)((w << 16) / b->req);
}

/* A watched block of fresh memory that the program wrote `written` pages of, counted again as other
 * large blocks came and went, at RSS samples and at its end: the replay writes none of its pages as
 * it is made, then at each count's op (in the counting thread) what was resident then. So at every
 * moment the recorder looked, the replay holds what the program held; in between, what it held at the
 * moment before. A block the recorder never counted during its life (it lived less than a sampling
 * period, or the counting budget was spent), or whose counts fall short of `written`, is written as
 * it is made, as any other. 1: entries made; 0: none, the caller writes the usual one; -ENOMEM. */
static int decide_later(mt_touch_t *t, const mt_touch_block_t *b, const mt_touch_later_t *l, uint64_t written)
{
    if (!l->samples || !l->n || l->resident[l->n - 1] < written || !written)
        return 0;
    if (put_entry(t, (mt_wl_touch_entry_t){ .op = b->op, .thread = b->thread, .frac = 0 }) < 0)
        return -ENOMEM;
    uint64_t done = 0;
    for (uint32_t k = 0; k < l->n && done < written; k++) {
        if (k + 1 < l->n && l->thread[k + 1] == l->thread[k] && l->op[k + 1] == l->op[k])
            continue; /* the same op as the next count: that one says it */
        const uint64_t w = l->resident[k] < written ? l->resident[k] : written;
        if (w <= done)
            continue;
        if (put_entry(t, (mt_wl_touch_entry_t){ .op = l->op[k],
                                                .thread = l->thread[k],
                                                .frac = share_of(b, w),
                                                .size = b->size,
                                                .slot = b->slot }) < 0)
            return -ENOMEM;
        t->later_entries++;
        done = w;
    }
    t->written_later++;
    return 1;
}

static int decide(mt_touch_t *t, const mt_touch_block_t *b)
{
    if (!b->pages)
        return 0;
    const int made_known = !(b->uncounted & MT_TOUCH_MADE_UNCOUNTED);
    const int ended_known = b->ended != UINT64_MAX && !(b->uncounted & MT_TOUCH_ENDED_UNCOUNTED);
    const uint64_t held = b->held < b->pages ? b->held : b->pages;
    uint64_t written;
    int later = 0;
    if (made_known && b->made == 0 && ended_known) {
        written = b->ended < b->pages ? b->ended : b->pages;
        if (written < held)
            written = held;
        t->exact++;
        pool_add(t, MT_TOUCH_FRESH, b->pages, written);
        if (b->later && (later = decide_later(t, b, &t->later[b->later - 1], written)) < 0)
            return -ENOMEM;
    } else {
        if (b->later && made_known && ended_known && t->later[b->later - 1].samples) {
            /* mostly fresh and counted as it lived: its counts (under an eighth resident before it) */
            written = b->ended < b->pages ? b->ended : b->pages;
            if (written < held)
                written = held;
            if ((later = decide_later(t, b, &t->later[b->later - 1], written)) < 0)
                return -ENOMEM;
        }
        if (!later) {
            uint64_t hi = ended_known && b->ended < b->pages ? b->ended : b->pages;
            uint64_t lo = ended_known && made_known && b->ended > b->made ? b->ended - b->made : 0;
            if (lo < held)
                lo = held;
            if (hi < lo)
                hi = lo;
            if (b->sampled >= b->zero + PRINTS_MIN_TELLING && made_known && ended_known) {
                /* its own pages' prints: the share of those that could tell which changed */
                written = (uint64_t)((long double)b->pages * b->changed / (b->sampled - b->zero) + 0.5L);
                written = written < lo ? lo : written > hi ? hi : written;
                t->printed++;
                pool_add(t, MT_TOUCH_PRINTED, b->pages, written);
            } else {
                const int made = !made_known ? MADE_UNKNOWN : b->made ? MADE_REUSED : MADE_FRESH;
                written = estimate(t, made, b->pages, lo, hi);
            }
        }
        t->estimated++;
    }
    t->blocks++;
    t->pages += b->pages;
    t->written += written;
    const uint32_t frac = share_of(b, written);
    if (later || frac == MT_WL_TOUCH_ONE)
        return 0;
    return put_entry(t, (mt_wl_touch_entry_t){ .op = b->op, .thread = b->thread, .frac = frac });
}

/* Stops watching block b (its making was not counted: not of fresh memory for certain). */
static void unwatch(mt_touch_t *t, mt_touch_block_t *b)
{
    if (b->later) {
        t->later[b->later - 1].key = 0;
        t->nlater--;
        b->later = 0;
    }
}

/* Removes the block at map entry e, returning its array entry to the free list. */
static void drop(mt_touch_t *t, mt_ptr_entry_t *e)
{
    const uint32_t k = (uint32_t)e->value;
    unwatch(t, &t->blk[k]);
    t->blk[k].next_free = t->free_head;
    t->free_head = k + 1;
    mt_ptr_map_del(&t->map, e);
}

/* Watches the block at array entry k if it is large, mostly of fresh memory (under an eighth of its
 * pages resident when made: a chunk glibc mapped, or the heap grown for it) and a cell is free. 0 or
 * -ENOMEM. */
static int watch(mt_touch_t *t, uint32_t k, uint64_t p)
{
    mt_touch_block_t *b = &t->blk[k];
    if (!b->slot || b->made * 8 >= b->pages || b->pages < MT_TOUCH_LATER_MIN_PAGES || t->nlater == MT_TOUCH_LATER_MAX)
        return 0;
    if (!t->later && !(t->later = calloc(MT_TOUCH_LATER_MAX, sizeof *t->later)))
        return -ENOMEM;
    uint32_t c = 0;
    while (t->later[c].key)
        c++;
    t->later[c].key = p;
    t->later[c].n = 0;
    t->later[c].samples = 0;
    t->nlater++;
    b->later = c + 1;
    return 0;
}

int mt_touch_made(mt_touch_t *t, uint64_t p, uint32_t thread, uint64_t op, uint64_t pages, uint64_t resident,
                  uint64_t slot, uint64_t size)
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
    uint64_t first, req = pages;
    if (t->page && size) {
        req = mt_whole_pages(p, size, t->page, &first);
        if (req > pages)
            req = pages;
    }
    t->blk[k] = (mt_touch_block_t){ .op = op,
                                    .pages = pages,
                                    .req = req,
                                    .made = resident,
                                    .ended = UINT64_MAX,
                                    .size = size,
                                    .slot = slot,
                                    .thread = thread };
    const int rc = mt_ptr_map_put(&t->map, p, k);
    return rc < 0 ? rc : watch(t, k, p);
}

int mt_touch_watched(const mt_touch_t *t, uint64_t p, uint64_t resident)
{
    if (!t->nlater)
        return 0;
    const mt_ptr_entry_t *e = mt_ptr_map_find(&t->map, p);
    if (!e || !t->blk[e->value].later)
        return 0;
    const mt_touch_later_t *l = &t->later[t->blk[e->value].later - 1];
    return !l->n || resident > l->resident[l->n - 1];
}

int mt_touch_sampled(mt_touch_t *t, uint64_t p, uint32_t thread, uint64_t op, uint64_t resident, int sample)
{
    if (!mt_touch_watched(t, p, resident))
        return 0;
    mt_touch_later_t *l = &t->later[t->blk[mt_ptr_map_find(&t->map, p)->value].later - 1];
    l->samples += sample != 0;
    if (l->n == MT_TOUCH_LATER_POINTS) { /* every other count goes: coarser, as long as it lives */
        for (uint32_t k = 1; k < MT_TOUCH_LATER_POINTS / 2; k++) {
            l->thread[k] = l->thread[2 * k];
            l->op[k] = l->op[2 * k];
            l->resident[k] = l->resident[2 * k];
        }
        l->n = MT_TOUCH_LATER_POINTS / 2;
    }
    l->thread[l->n] = thread;
    l->op[l->n] = op;
    l->resident[l->n++] = resident;
    return 0;
}

int mt_touch_edge(mt_touch_t *t, uint32_t thread, uint64_t op, uint64_t written_bytes)
{
    t->seen = 1;
    t->edge_blocks++;
    if (!written_bytes)
        return 0;
    t->edge_unwritten++;
    return put_entry(
        t, (mt_wl_touch_entry_t){ .op = op, .thread = thread, .frac = MT_WL_TOUCH_ONE, .size = written_bytes });
}

void mt_touch_ending(mt_touch_t *t, uint64_t p, uint64_t resident, const mt_pages_prints_t *pr)
{
    t->seen = 1;
    mt_ptr_entry_t *e = mt_ptr_map_find(&t->map, p);
    if (e) {
        mt_touch_block_t *b = &t->blk[e->value];
        b->ended = resident;
        b->uncounted &= ~MT_TOUCH_ENDED_UNCOUNTED;    /* a new count, until said otherwise */
        const int prints = pr->sampled <= UINT32_MAX; /* mt_pages_prints checked the rest */
        b->sampled = prints ? (uint32_t)pr->sampled : 0;
        b->changed = prints ? (uint32_t)pr->changed : 0;
        b->zero = prints ? (uint32_t)pr->zero : 0;
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
    if (!e)
        return;
    t->blk[e->value].uncounted |= which;
    if (which & MT_TOUCH_MADE_UNCOUNTED)
        unwatch(t, &t->blk[e->value]);
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

static int by_thread_op_slot(const void *a, const void *b)
{
    const mt_wl_touch_entry_t *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    if (x->op != y->op)
        return x->op < y->op ? -1 : 1;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
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
    qsort(t->out, t->nout, sizeof *t->out, by_thread_op_slot);
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
        qsort(t->out, t->nout, sizeof *t->out, by_thread_op_slot);
    return 0;
}
