/* The address map (include/mtrace/ptr_map.h): growth, insertion, deletion. */
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

int mt_ptr_map_init(mt_ptr_map_t *m)
{
    m->cap = 1024;
    m->n = 0;
    m->v = table_alloc(m->cap * sizeof *m->v);
    return m->v ? 0 : -ENOMEM;
}

void mt_ptr_map_fini(mt_ptr_map_t *m)
{
    free(m->v);
    m->v = NULL;
    m->cap = m->n = 0;
}

static int grow(mt_ptr_map_t *m)
{
    mt_ptr_map_t n = { table_alloc(m->cap * 2 * sizeof *m->v), m->cap * 2, 0 };
    if (!n.v)
        return -ENOMEM;
    for (uint64_t i = 0; i < m->cap; i++) {
        if (!m->v[i].key)
            continue;
        uint64_t j = mt_ptr_hash(m->v[i].key) & (n.cap - 1);
        while (n.v[j].key)
            j = (j + 1) & (n.cap - 1);
        n.v[j] = m->v[i];
        n.n++;
    }
    free(m->v);
    *m = n;
    return 0;
}

/* A table larger than this lives mostly outside the cache. */
#define LARGE_TABLE_ENTRIES (1u << 16)

/* Small tables grow at half full: there a lookup costs its probes, whose lengths vary and whose
 * loop is mispredicted (3/4 made the converter 15 % slower on a 1 000-block live set). Large tables
 * grow at 3/4: there a lookup costs a cache miss whatever its length (4 entries to a line), and
 * the table is most of the memory per live block (-33 % peak RSS on a 1.5 M-block set). */
int mt_ptr_map_put(mt_ptr_map_t *m, uint64_t key, uint64_t value)
{
    const uint64_t limit = m->cap < LARGE_TABLE_ENTRIES ? m->cap / 2 : m->cap / 4 * 3;
    if (m->n + 1 > limit && grow(m) < 0)
        return -ENOMEM;
    uint64_t i = mt_ptr_hash(key) & (m->cap - 1);
    while (m->v[i].key)
        i = (i + 1) & (m->cap - 1);
    m->v[i].key = key;
    m->v[i].value = value;
    m->n++;
    return 0;
}

void mt_ptr_map_del(mt_ptr_map_t *m, mt_ptr_entry_t *e)
{
    uint64_t i = (uint64_t)(e - m->v);
    for (uint64_t j = (i + 1) & (m->cap - 1); m->v[j].key; j = (j + 1) & (m->cap - 1)) {
        const uint64_t home = mt_ptr_hash(m->v[j].key) & (m->cap - 1);
        /* Move j into the hole at i if its home does not lie cyclically in (i, j]. */
        if (((j - home) & (m->cap - 1)) >= ((j - i) & (m->cap - 1))) {
            m->v[i] = m->v[j];
            i = j;
        }
    }
    m->v[i].key = 0;
    m->n--;
}
