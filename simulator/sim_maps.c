/* The program's own mappings during a replay (MT_WL_MMAP, MT_WL_MUNMAP): slot -> address and
 * length, in a table the simulator maps itself. The length is what makes an unmap safe: a damaged
 * workload's munmap of a part past the mapping, or of a slot holding a malloc block, would unmap
 * the replay's own memory. Mappings are made and unmapped at the pace of system calls, so one lock
 * serves all threads. */
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

int sim_maps_put(sim_t *s, uint64_t slot, void *p, uint64_t len)
{
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
        if (m->p && len)
            munmap((uint8_t *)m->p + off, len);
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
