/* The program's own mappings during a replay (MT_WL_MMAP, MT_WL_MUNMAP, MT_WL_MADVISE): slot ->
 * address and length, in a table the simulator maps itself, and the pages of them resident. The
 * length is what makes an unmap safe: a damaged workload's munmap of a part past the mapping, or of
 * a slot holding a malloc block, would unmap the replay's own memory. Mappings are made and
 * unmapped at the pace of system calls, so one lock serves all threads. Their resident pages are
 * counted (mincore) around every op that changes them, so that the replay can say which share of
 * its RSS is the program's own memory and which the allocator's. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>

#include "sim.h"

int sim_maps_init(sim_t *s, uint64_t most)
{
    uint64_t cap = 16;
    while (cap < 2 * most + 2)
        cap *= 2;
    s->maps_tab = sim_map(s, cap * sizeof *s->maps_tab);
    if (!s->maps_tab)
        return -ENOMEM;
    s->maps_cap = cap;
    pthread_mutex_init(&s->maps_lock, NULL);
    return 0;
}

static uint64_t home(const sim_t *s, uint64_t slot)
{
    return (slot * 0x9e3779b97f4a7c15ull) >> 40 & (s->maps_cap - 1);
}

/* The resident pages of the program's mappings went up by `delta` (or down). */
static void resident_add(sim_t *s, int64_t delta)
{
    const int64_t now = atomic_fetch_add_explicit(&s->maps_resident, delta, memory_order_relaxed) + delta;
    int64_t peak = atomic_load_explicit(&s->maps_resident_peak, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak_explicit(&s->maps_resident_peak, &peak, now,
                                                                memory_order_relaxed, memory_order_relaxed))
        ;
}

void sim_maps_writing(sim_t *s, int64_t pages)
{
    atomic_fetch_add_explicit(&s->maps_writing, pages, memory_order_relaxed);
}

static int64_t pages_in(const sim_t *s, const void *p, uint64_t len)
{
    return p && len ? sim_mincore_pages(p, len, s->page) : 0;
}

int sim_maps_put(sim_t *s, uint64_t slot, void *p, uint64_t len)
{
    resident_add(s, pages_in(s, p, len));
    int rc = -ENOSPC;
    pthread_mutex_lock(&s->maps_lock);
    if (s->maps_n + 1 < s->maps_cap) {
        uint64_t i = home(s, slot);
        while (s->maps_tab[i].slot && s->maps_tab[i].slot != slot)
            i = (i + 1) & (s->maps_cap - 1);
        if (!s->maps_tab[i].slot)
            s->maps_n++;
        s->maps_tab[i] = (sim_mapping_t){ slot, p, len };
        rc = 0;
    }
    pthread_mutex_unlock(&s->maps_lock);
    return rc;
}

int sim_maps_unmap(sim_t *s, uint64_t slot, uint64_t off, uint64_t len, int last)
{
    pthread_mutex_lock(&s->maps_lock);
    uint64_t i = home(s, slot);
    while (s->maps_tab[i].slot && s->maps_tab[i].slot != slot)
        i = (i + 1) & (s->maps_cap - 1);
    sim_mapping_t *m = &s->maps_tab[i];
    int rc = 0;
    if (!m->slot) {
        rc = -ENOENT;
    } else if (off > m->len || len > m->len - off) {
        rc = -ERANGE;
    } else {
        if (m->p && len) {
            /* counted before, taken off after: the sampler never sees them in the RSS uncounted */
            const int64_t gone = pages_in(s, (uint8_t *)m->p + off, len);
            munmap((uint8_t *)m->p + off, len);
            resident_add(s, -gone);
        }
        if (last) { /* backward-shift deletion: no tombstones */
            s->maps_n--;
            uint64_t hole = i;
            for (uint64_t j = (i + 1) & (s->maps_cap - 1); s->maps_tab[j].slot; j = (j + 1) & (s->maps_cap - 1)) {
                const uint64_t h = home(s, s->maps_tab[j].slot);
                if (((j - h) & (s->maps_cap - 1)) >= ((j - hole) & (s->maps_cap - 1))) {
                    s->maps_tab[hole] = s->maps_tab[j];
                    hole = j;
                }
            }
            s->maps_tab[hole] = (sim_mapping_t){ 0 };
        }
    }
    pthread_mutex_unlock(&s->maps_lock);
    return rc;
}

/* Finds the slot's mapping; its address and length to *p and *len. -ENOENT when the slot holds none. */
static int find(sim_t *s, uint64_t slot, uint8_t **p, uint64_t *len)
{
    pthread_mutex_lock(&s->maps_lock);
    uint64_t i = home(s, slot);
    while (s->maps_tab[i].slot && s->maps_tab[i].slot != slot)
        i = (i + 1) & (s->maps_cap - 1);
    const int rc = s->maps_tab[i].slot ? 0 : -ENOENT;
    *p = s->maps_tab[i].p;
    *len = s->maps_tab[i].len;
    pthread_mutex_unlock(&s->maps_lock);
    return rc;
}

int sim_maps_advise(sim_t *s, uint64_t slot, uint64_t off, uint64_t len, int advice, uint64_t pages)
{
    uint8_t *p;
    uint64_t mlen;
    if (find(s, slot, &p, &mlen) < 0)
        return -ENOENT;
    if (off > mlen || len > mlen - off)
        return -ERANGE;
    if (!p || !len) /* the replay could not map it: nothing to advise */
        return 0;
    /* The workload's ops order every use of this part after the op that made it and before the
     * munmap that ends it: no lock is needed to write it. */
    uint8_t *const b = p + off;
    const int64_t before = pages_in(s, b, len);
    uint64_t lo;
    const uint64_t whole = mt_whole_pages((uintptr_t)b, len, s->page, &lo);
    const uint64_t n = pages < whole ? pages : whole;
    sim_maps_writing(s, (int64_t)n);
    for (uint64_t k = 0; k < n; k++)
        *(volatile uint8_t *)(uintptr_t)(lo + k * s->page) = 1;
    resident_add(s, pages_in(s, b, len) - before); /* the pages the program had written again */
    sim_maps_writing(s, -(int64_t)n);
    const int64_t written = pages_in(s, b, len);
    if (madvise(b, len, advice) == 0)
        resident_add(s, pages_in(s, b, len) - written);
    return 0;
}
