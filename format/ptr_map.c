/* The address map (include/mtrace/ptr_map.h): set-up, growth and deletion; lookups and insertions
 * are inline there. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "mtrace/ptr_map.h"

#define HUGE_PAGE (2u << 20)

/* Large tables in huge pages: a lookup then costs a cache miss but no TLB miss. They are mapped
 * (aligned to a huge page), not malloc'd: glibc raises its mmap threshold to the size of each mapped
 * block freed (up to 32 MiB), so a table freed once made its successors heap blocks whose pages
 * stayed with the process after their free; mtrace report's second pass over a python trace with
 * stacks peaked at 96 MiB where its first, alike, took 66 (bench/RESULTS.md). */
static void *table_alloc(size_t bytes)
{
    if (bytes < HUGE_PAGE)
        return calloc(1, bytes);
    uint8_t *p = mmap(NULL, bytes + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    const size_t head = (size_t)(-(uintptr_t)p & (HUGE_PAGE - 1));
    if (head)
        munmap(p, head);
    munmap(p + head + bytes, HUGE_PAGE - head);
    madvise(p + head, bytes, MADV_HUGEPAGE);
    return p + head;
}

static void table_free(void *p, size_t bytes)
{
    if (bytes < HUGE_PAGE)
        free(p);
    else if (p)
        munmap(p, bytes);
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
    table_free(m->v, m->cap * sizeof *m->v);
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
    table_free(m->v, m->cap * sizeof *m->v);
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
