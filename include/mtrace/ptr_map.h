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
    uint64_t limit;  /* the table grows before n passes this */
    unsigned shift;  /* 64 - log2(cap): see mt_ptr_map_home */
} mt_ptr_map_t;

int mt_ptr_map_init(mt_ptr_map_t *m);
void mt_ptr_map_fini(mt_ptr_map_t *m);
/* Inserts a key that is not present (inline, below). 0, or -ENOMEM. */
static inline int mt_ptr_map_put(mt_ptr_map_t *m, uint64_t key, uint64_t value);
/* Removes an entry returned by mt_ptr_map_find (backward shift: no tombstones). */
void mt_ptr_map_del(mt_ptr_map_t *m, mt_ptr_entry_t *e);
/* Doubles the table (mt_ptr_map_put's slow path). 0, or -ENOMEM. */
int mt_ptr_map_grow(mt_ptr_map_t *m);

/* A full 64-bit finalizer, for tables indexed by an address's low bits (the converter's memory of
 * recent frees): addresses share their high bits and their low 4 bits, so every input bit must
 * reach the low ones. */
static inline uint64_t mt_ptr_hash(uint64_t p)
{
    p ^= p >> 33;
    p *= 0xff51afd7ed558ccdull;
    p ^= p >> 33;
    p *= 0xc4ceb9fe1a85ec53ull;
    p ^= p >> 33;
    return p;
}

/* A key's home index: the top log2(cap) bits of key * (2^64 / golden ratio), Fibonacci hashing. The
 * top bits of a product depend on every bit of the key, and keys in arithmetic progression (blocks
 * of one size class, one after another) land evenly spread. One multiply and a shift, where
 * mt_ptr_hash takes two multiplies and three shift-xors, on the critical path of every lookup,
 * insertion and deletion (and of the deletion's rehash of the entries after the hole). */
static inline uint64_t mt_ptr_map_home(const mt_ptr_map_t *m, uint64_t key)
{
    return (key * 0x9e3779b97f4a7c15ull) >> m->shift;
}

/* NULL when absent; key 0 (an empty entry's key) is never present. */
static inline mt_ptr_entry_t *mt_ptr_map_find(const mt_ptr_map_t *m, uint64_t key)
{
    if (__builtin_expect(key == 0, 0))
        return (mt_ptr_entry_t *)0;
    for (uint64_t i = mt_ptr_map_home(m, key);; i = (i + 1) & (m->cap - 1)) {
        if (m->v[i].key == key)
            return &m->v[i];
        if (!m->v[i].key)
            return (mt_ptr_entry_t *)0;
    }
}

static inline int mt_ptr_map_put(mt_ptr_map_t *m, uint64_t key, uint64_t value)
{
    if (__builtin_expect(m->n >= m->limit, 0)) {
        const int rc = mt_ptr_map_grow(m);
        if (rc < 0)
            return rc;
    }
    uint64_t i = mt_ptr_map_home(m, key);
    while (m->v[i].key)
        i = (i + 1) & (m->cap - 1);
    m->v[i].key = key;
    m->v[i].value = value;
    m->n++;
    return 0;
}

/* always_inline: GCC finds a function whose only effect is a prefetch "pure" and deletes its calls. */
static inline __attribute__((always_inline)) void mt_ptr_map_prefetch(const mt_ptr_map_t *m, uint64_t key)
{
    __builtin_prefetch(&m->v[mt_ptr_map_home(m, key)]);
}

#ifdef __cplusplus
}
#endif
#endif
