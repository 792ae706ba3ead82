/* An open-addressing map from addresses (nonzero) to 64-bit values, sized by what it holds: the
 * converter and the report keep their live blocks in it, so their memory follows the live set and
 * never the trace's length. Entries are 16 bytes, so a lookup touches one cache line; large tables
 * use huge pages, and callers that know their next keys can prefetch them. */
#ifndef MTRACE_PTR_MAP_H
#define MTRACE_PTR_MAP_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_ptr_entry {
    uint64_t key; /* 0: empty */
    uint64_t value;
} mt_ptr_entry_t;

typedef struct mt_ptr_map {
    mt_ptr_entry_t *v;
    uint64_t cap, n; /* cap is a power of two */
} mt_ptr_map_t;

int mt_ptr_map_init(mt_ptr_map_t *m);
void mt_ptr_map_fini(mt_ptr_map_t *m);
/* Inserts a key that is not present. 0, or -ENOMEM. */
int mt_ptr_map_put(mt_ptr_map_t *m, uint64_t key, uint64_t value);
/* Removes an entry returned by mt_ptr_map_find (backward shift: no tombstones). */
void mt_ptr_map_del(mt_ptr_map_t *m, mt_ptr_entry_t *e);

/* A full 64-bit finalizer: addresses share their high bits and their low 4 bits, and the index
 * takes the low bits, so every input bit must reach them. */
static inline uint64_t mt_ptr_hash(uint64_t p)
{
    p ^= p >> 33;
    p *= 0xff51afd7ed558ccdull;
    p ^= p >> 33;
    p *= 0xc4ceb9fe1a85ec53ull;
    p ^= p >> 33;
    return p;
}

/* NULL when absent; key 0 (an empty entry's key) is never present. */
static inline mt_ptr_entry_t *mt_ptr_map_find(const mt_ptr_map_t *m, uint64_t key)
{
    if (__builtin_expect(key == 0, 0))
        return (mt_ptr_entry_t *)0;
    for (uint64_t i = mt_ptr_hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->v[i].key == key)
            return &m->v[i];
        if (!m->v[i].key)
            return (mt_ptr_entry_t *)0;
    }
}

/* always_inline: GCC finds a function whose only effect is a prefetch "pure" and deletes its calls. */
static inline __attribute__((always_inline)) void mt_ptr_map_prefetch(const mt_ptr_map_t *m, uint64_t key)
{
    __builtin_prefetch(&m->v[mt_ptr_hash(key) & (m->cap - 1)]);
}

#ifdef __cplusplus
}
#endif
#endif
