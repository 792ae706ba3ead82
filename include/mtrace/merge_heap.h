/* A binary min-heap of thread indices ordered by a key per thread (the time of its next record, ties
 * by index): how the converter and the report merge a trace's threads in time order. The caller
 * owns the key array and updates a thread's key before pushing it. */
#ifndef MTRACE_MERGE_HEAP_H
#define MTRACE_MERGE_HEAP_H

#include <stdint.h>

typedef struct mt_merge_heap {
    uint32_t *v; /* capacity: one per thread */
    uint32_t n;
    const uint64_t *key; /* key[i]: thread i's next time */
} mt_merge_heap_t;

static inline int mt_merge_less(const mt_merge_heap_t *h, uint32_t a, uint32_t b)
{
    return h->key[a] < h->key[b] || (h->key[a] == h->key[b] && a < b);
}

void mt_merge_push(mt_merge_heap_t *h, uint32_t thread);
uint32_t mt_merge_pop(mt_merge_heap_t *h);
/* The top thread's key changed (its next record read): moves it to its place, as a pop and a push
 * of it would, at half their cost. */
void mt_merge_top_changed(mt_merge_heap_t *h);

#endif
