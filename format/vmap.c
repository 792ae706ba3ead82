/* The program's own mappings as a trace makes them: a sorted array of pieces (mapped ranges) over a
 * free-listed array of mappings. A program has few mappings of its own at once (Python: one per
 * 1 MiB arena; a compiler: its collector's chunks), and maps or unmaps at the pace of system
 * calls, so an insertion that moves the array's tail costs nothing next to the records between. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/vmap.h"

void mt_vmap_fini(mt_vmap_t *v)
{
    free(v->piece);
    free(v->map);
    memset(v, 0, sizeof *v);
}

static int grow(void **p, uint64_t *cap, size_t elem, uint64_t need)
{
    if (need <= *cap)
        return 0;
    uint64_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

/* The index of the first piece that ends after `a`. */
static uint64_t first_after(const mt_vmap_t *v, uint64_t a)
{
    uint64_t lo = 0, hi = v->npiece;
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        if (v->piece[mid].hi <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int insert_piece(mt_vmap_t *v, uint64_t at, mt_vmap_piece_t p)
{
    if (grow((void **)&v->piece, &v->cap_piece, sizeof *v->piece, v->npiece + 1) < 0)
        return -ENOMEM;
    memmove(&v->piece[at + 1], &v->piece[at], (v->npiece - at) * sizeof *v->piece);
    v->piece[at] = p;
    v->npiece++;
    return 0;
}

int64_t mt_vmap_add(mt_vmap_t *v, uint64_t base, uint64_t len, uint32_t slot, uint32_t thread, uint64_t op, int brk)
{
    uint32_t k;
    if (v->free_head) {
        k = v->free_head - 1;
        v->free_head = v->map[k].next_free;
    } else {
        if (grow((void **)&v->map, &v->cap_map, sizeof *v->map, v->nmap + 1) < 0)
            return -ENOMEM;
        k = (uint32_t)v->nmap++;
    }
    v->map[k] = (mt_vmap_map_t){ .base = base,
                                 .len = len,
                                 .left = len,
                                 .op = op,
                                 .key = ++v->next_key,
                                 .slot = slot,
                                 .thread = thread,
                                 .brk = brk };
    if (insert_piece(v, first_after(v, base), (mt_vmap_piece_t){ base, base + len, k }) < 0)
        return -ENOMEM;
    v->made++;
    v->mapped += len;
    if (v->mapped > v->peak_mapped)
        v->peak_mapped = v->mapped;
    if (brk && (v->brk_mapped += len) > v->peak_brk)
        v->peak_brk = v->brk_mapped;
    return k;
}

/* Appends a part to *cuts. */
static int push_cut(mt_vmap_cut_t **cuts, size_t *ncuts, size_t *cap, mt_vmap_cut_t part)
{
    uint64_t c = *cap;
    if (grow((void **)cuts, &c, sizeof **cuts, *ncuts + 1) < 0)
        return -ENOMEM;
    *cap = (size_t)c;
    (*cuts)[(*ncuts)++] = part;
    return 0;
}

int mt_vmap_parts(const mt_vmap_t *v, uint64_t lo, uint64_t hi, mt_vmap_cut_t **cuts, size_t *ncuts, size_t *cap)
{
    *ncuts = 0;
    for (uint64_t i = first_after(v, lo); i < v->npiece && v->piece[i].lo < hi; i++) {
        const mt_vmap_piece_t *p = &v->piece[i];
        const mt_vmap_cut_t part = { p->map, p->lo > lo ? p->lo : lo, p->hi < hi ? p->hi : hi };
        if (push_cut(cuts, ncuts, cap, part) < 0)
            return -ENOMEM;
    }
    return 0;
}

int mt_vmap_cut(mt_vmap_t *v, uint64_t lo, uint64_t hi, mt_vmap_cut_t **cuts, size_t *ncuts, size_t *cap)
{
    *ncuts = 0;
    uint64_t i = first_after(v, lo);
    while (i < v->npiece && v->piece[i].lo < hi) {
        mt_vmap_piece_t *p = &v->piece[i];
        const uint64_t a = p->lo > lo ? p->lo : lo, b = p->hi < hi ? p->hi : hi;
        if (push_cut(cuts, ncuts, cap, (mt_vmap_cut_t){ p->map, a, b }) < 0)
            return -ENOMEM;
        v->map[p->map].left -= b - a;
        v->mapped -= b - a;
        if (v->map[p->map].brk)
            v->brk_mapped -= b - a;
        if (a == p->lo && b == p->hi) { /* the whole piece */
            memmove(p, p + 1, (v->npiece - i - 1) * sizeof *p);
            v->npiece--;
        } else if (a == p->lo) {
            p->lo = b;
            i++;
        } else if (b == p->hi) {
            p->hi = a;
            i++;
        } else { /* a hole in the middle: two pieces */
            const mt_vmap_piece_t tail = { b, p->hi, p->map };
            p->hi = a;
            if (insert_piece(v, i + 1, tail) < 0)
                return -ENOMEM;
            i += 2;
        }
    }
    return 0;
}

void mt_vmap_release(mt_vmap_t *v, uint32_t map)
{
    v->map[map].next_free = v->free_head;
    v->free_head = map + 1;
}
