/* include/mtrace/merge_heap.h */
#include "mtrace/merge_heap.h"

void mt_merge_push(mt_merge_heap_t *h, uint32_t x)
{
    uint32_t i = h->n++;
    h->v[i] = x;
    while (i && mt_merge_less(h, h->v[i], h->v[(i - 1) / 2])) {
        const uint32_t up = (i - 1) / 2, tmp = h->v[up];
        h->v[up] = h->v[i];
        h->v[i] = tmp;
        i = up;
    }
}

static void sift_down(mt_merge_heap_t *h)
{
    for (uint32_t i = 0;;) {
        const uint32_t l = 2 * i + 1, r = l + 1;
        uint32_t m = i;
        if (l < h->n && mt_merge_less(h, h->v[l], h->v[m]))
            m = l;
        if (r < h->n && mt_merge_less(h, h->v[r], h->v[m]))
            m = r;
        if (m == i)
            break;
        const uint32_t tmp = h->v[m];
        h->v[m] = h->v[i];
        h->v[i] = tmp;
        i = m;
    }
}

uint32_t mt_merge_pop(mt_merge_heap_t *h)
{
    const uint32_t top = h->v[0];
    h->v[0] = h->v[--h->n];
    sift_down(h);
    return top;
}

void mt_merge_top_changed(mt_merge_heap_t *h)
{
    sift_down(h);
}
