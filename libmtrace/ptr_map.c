/* The address map (include/mtrace/ptr_map.h): set-up, growth and deletion; lookups and insertions
 * are inline there. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "mtrace/ptr_map.h"

/* Large tables in huge pages: a lookup then costs a cache miss but no TLB miss. */
static void *table_alloc(size_t bytes)
{
    const size_t align = 2u << 20;
    if (bytes < align)
        return calloc(1, bytes);
    void *p = aligned_alloc(align, (bytes + align - 1) / align * align);
    if (!p)
        return NULL;
    madvise(p, bytes, MADV_HUGEPAGE);
    memset(p, 0, bytes);
    return p;
}

/* A table larger than this lives mostly outside the cache. */
#define LARGE_TABLE_ENTRIES (1u << 16)

/* Small tables grow at half full: there a lookup costs its probes, whose lengths vary and whose
 * loop is mispredicted (3/4 made the converter 15 % slower on a 1 000-block live set). Large tables
 * grow at 3/4: there a lookup costs a cache miss whatever its length (4 entries to a line), and
 * the table is most of the memory per live block (-33 % peak RSS on a 1.5 M-block set). */
static void set_cap(mt_ptr_map_t *m, uint64_t cap)
{
    m->cap = cap;
    m->limit = cap < LARGE_TABLE_ENTRIES ? cap / 2 : cap / 4 * 3;
    m->shift = (unsigned)__builtin_clzll(cap) + 1; /* 64 - log2(cap) */
}

int mt_ptr_map_init(mt_ptr_map_t *m)
{
    set_cap(m, 1024);
    m->n = 0;
    m->v = table_alloc(m->cap * sizeof *m->v);
    return m->v ? 0 : -ENOMEM;
}

void mt_ptr_map_fini(mt_ptr_map_t *m)
{
    free(m->v);
    m->v = NULL;
    m->cap = m->n = m->limit = 0;
}

int mt_ptr_map_grow(mt_ptr_map_t *m)
{
    mt_ptr_map_t n = { .v = table_alloc(m->cap * 2 * sizeof *m->v) };
    if (!n.v)
        return -ENOMEM;
    set_cap(&n, m->cap * 2);
    for (uint64_t i = 0; i < m->cap; i++) {
        if (!m->v[i].key)
            continue;
        uint64_t j = mt_ptr_map_home(&n, m->v[i].key);
        while (n.v[j].key)
            j = (j + 1) & (n.cap - 1);
        n.v[j] = m->v[i];
        n.n++;
    }
    free(m->v);
    *m = n;
    return 0;
}

void mt_ptr_map_del(mt_ptr_map_t *m, mt_ptr_entry_t *e)
{
    uint64_t i = (uint64_t)(e - m->v);
    for (uint64_t j = (i + 1) & (m->cap - 1); m->v[j].key; j = (j + 1) & (m->cap - 1)) {
        const uint64_t home = mt_ptr_map_home(m, m->v[j].key);
        /* Move j into the hole at i if its home does not lie cyclically in (i, j]. */
        if (((j - home) & (m->cap - 1)) >= ((j - i) & (m->cap - 1))) {
            m->v[i] = m->v[j];
            i = j;
        }
    }
    m->v[i].key = 0;
    m->n--;
}
