/* The MODULE event's payload for a loaded object, as dl_iterate_phdr describes it
 * (doc/trace-format.md, "Modules"): the recorder writes it, and tests write the same bytes to build
 * traces of their own process. Header-only and malloc-free: the recorder calls it inside malloc. */
#ifndef MTRACE_MODULE_EVENT_H
#define MTRACE_MODULE_EVENT_H

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "mtrace/trace_format.h"

/* The most PT_LOAD segments and build-id bytes a MODULE event carries. */
#define MT_MODULE_MAX_LOADS 32u
#define MT_MODULE_MAX_ID 64u

/* The GNU build-id note of a loaded object: its length (0: none) and *out pointing to it. */
static inline size_t mt_build_id(const struct dl_phdr_info *info, const uint8_t **out)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
            const uint8_t *name = p + sizeof *n;
            const uint8_t *desc = name + ((n->n_namesz + 3) & ~3u);
            if (desc + n->n_descsz > end)
                break;
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
                *out = desc;
                return n->n_descsz;
            }
            p = desc + ((n->n_descsz + 3) & ~3u);
        }
    }
    return 0;
}

/* Writes the payload for `info` into buf (cap bytes, at least 2048): the generation, the load
 * address, up to MT_MODULE_MAX_LOADS PT_LOAD segments (address, size, file offset), the build-id (up
 * to MT_MODULE_MAX_ID bytes) and `name`, cut to what fits. Returns its length. */
static inline size_t mt_module_payload(const struct dl_phdr_info *info, uint64_t generation, const char *name,
                                       uint8_t *buf, size_t cap)
{
    uint8_t *q = buf;
    q = mt_put_uvarint(q, generation);
    q = mt_put_uvarint(q, info->dlpi_addr);
    unsigned nload = 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        nload += info->dlpi_phdr[i].p_type == PT_LOAD;
    if (nload > MT_MODULE_MAX_LOADS)
        nload = MT_MODULE_MAX_LOADS;
    q = mt_put_uvarint(q, nload);
    for (int i = 0, k = 0; i < info->dlpi_phnum && k < (int)nload; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        q = mt_put_uvarint(q, ph->p_vaddr);
        q = mt_put_uvarint(q, ph->p_memsz);
        q = mt_put_uvarint(q, ph->p_offset);
        k++;
    }
    const uint8_t *id = NULL;
    size_t idlen = mt_build_id(info, &id);
    if (idlen > MT_MODULE_MAX_ID)
        idlen = MT_MODULE_MAX_ID;
    q = mt_put_uvarint(q, idlen);
    if (idlen)
        memcpy(q, id, idlen);
    q += idlen;
    const size_t nlen = strnlen(name, (size_t)(buf + cap - q) - 1);
    memcpy(q, name, nlen);
    q += nlen;
    return (size_t)(q - buf);
}

#endif
