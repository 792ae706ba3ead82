/* The file-backed pages an allocator brings into a program: its own library and the libraries it
 * needs that the program would not load otherwise. Debian's libjemalloc2 needs libstdc++ and
 * libgcc_s, its libtcmalloc_minimal4 too: a C program preloaded with either holds 1.5 to 2 MB more of
 * file pages than on glibc (`grep RssFile /proc/self/status`: 1776 kB plain, 3756 kB with jemalloc,
 * 3276 kB with tcmalloc, 2228 kB with mimalloc). The traced program ran on glibc, so its file pages
 * leave them out, and a predicted peak on jemalloc was 2 MB short of the program's.
 *
 * In this process the libraries loaded for the allocator alone are those its DT_NEEDED entries reach
 * (the allocator's library included) that mtrace-sim's own do not; their resident file pages are
 * summed from /proc/self/smaps. A program traced on this very allocator has them all among its
 * file pages: sim_main.c then adds none (the trace names the program's allocator). A program that
 * loads one of them itself (libstdc++ in a C++ program on glibc) already has its pages among the
 * traced file pages: they are then counted twice, which this file cannot tell (the trace does not
 * list the program's libraries unless it has stacks). */
#define _GNU_SOURCE
#include <elf.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define MAX_OBJECTS 256

typedef struct object {
    const char *name;      /* DT_SONAME, else the path's last part */
    uintptr_t lo, hi;      /* from the first PT_LOAD's start to the last's end */
    const char *strtab;    /* NULL: no dynamic section */
    const ElfW(Dyn) * dyn; /* NULL: none */
    int sim, alloc;        /* reached from mtrace-sim, from the allocator */
} object_t;

typedef struct objects {
    object_t o[MAX_OBJECTS];
    int n;
    int overflow;
} objects_t;

/* A dynamic entry's address: relocated by the loader in a library's writable dynamic section, not
 * in a read-only one (the vDSO's). */
static uintptr_t dyn_ptr(uintptr_t bias, uintptr_t v)
{
    return v < bias ? bias + v : v;
}

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    objects_t *os = arg;
    if (os->n == MAX_OBJECTS) {
        os->overflow = 1;
        return 1;
    }
    object_t *o = &os->o[os->n];
    *o = (object_t){ .lo = UINTPTR_MAX };
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            const uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
            if (lo < o->lo)
                o->lo = lo;
            if (hi > o->hi)
                o->hi = hi;
        } else if (ph->p_type == PT_DYNAMIC) {
            o->dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
        }
    }
    const char *soname = NULL;
    for (const ElfW(Dyn) *d = o->dyn; d && d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_STRTAB)
            o->strtab = (const char *)dyn_ptr(info->dlpi_addr, d->d_un.d_ptr);
    for (const ElfW(Dyn) *d = o->dyn; d && o->strtab && d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_SONAME)
            soname = o->strtab + d->d_un.d_val;
    const char *path = info->dlpi_name ? info->dlpi_name : "";
    const char *slash = strrchr(path, '/');
    o->name = soname ? soname : slash ? slash + 1 : path;
    os->n++;
    return 0;
}

/* Marks object i and what its DT_NEEDED entries reach, by name: as the allocator's if `alloc`, else
 * as mtrace-sim's. */
static void reach(objects_t *os, int i, int alloc)
{
    int *mark = alloc ? &os->o[i].alloc : &os->o[i].sim;
    if (*mark)
        return;
    *mark = 1;
    const object_t *o = &os->o[i];
    for (const ElfW(Dyn) *d = o->dyn; d && o->strtab && d->d_tag != DT_NULL; d++) {
        if (d->d_tag != DT_NEEDED)
            continue;
        const char *need = o->strtab + d->d_un.d_val;
        for (int k = 0; k < os->n; k++)
            if (!strcmp(os->o[k].name, need))
                reach(os, k, alloc);
    }
}

typedef struct find_range {
    uintptr_t addr, lo, hi;
    int found;
} find_range_t;

static int range_of(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    find_range_t *f = arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        const uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        lo = a < lo ? a : lo;
        hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
    }
    if (f->addr >= lo && f->addr < hi) {
        f->lo = lo, f->hi = hi, f->found = 1;
        return 1;
    }
    return 0;
}

int sim_object_range(const void *addr, uintptr_t *lo, uintptr_t *hi)
{
    find_range_t f = { .addr = (uintptr_t)addr };
    dl_iterate_phdr(range_of, &f);
    *lo = f.lo, *hi = f.hi;
    return f.found ? 0 : -1;
}

/* The object of os holding address a: its index, or -1. */
static int object_at(const objects_t *os, uintptr_t a)
{
    for (int i = 0; i < os->n; i++)
        if (a >= os->o[i].lo && a < os->o[i].hi)
            return i;
    return -1;
}

sim_lib_pages_t sim_lib_pages(const void *malloc_fn)
{
    sim_lib_pages_t r = { 0 };
    static objects_t os; /* 10 KiB: not on a replay thread's stack */
    memset(&os, 0, sizeof os);
    dl_iterate_phdr(collect, &os);
    if (os.overflow || os.n == 0)
        return r;
    const int alloc = object_at(&os, (uintptr_t)malloc_fn);
    reach(&os, 0, 0); /* the first object is the executable */
    if (alloc >= 0)
        reach(&os, alloc, 1);
    FILE *f = fopen("/proc/self/smaps", "re");
    if (!f)
        return r;
    char *line = NULL;
    size_t cap = 0;
    /* the mapping whose fields follow: file pages of the allocator's alone; mtrace-sim's own */
    int alloc_file = 0, own = 0;
    while (getline(&line, &cap, f) > 0) {
        uintptr_t lo, hi;
        unsigned long long inode;
        int at = 0;
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %*s %*s %*s %llu %n", &lo, &hi, &inode, &at) == 3 && at) {
            /* a segment's .bss past its file is a mapping of no file inside the object's range */
            const int k = object_at(&os, lo);
            alloc_file = inode && k >= 0 && os.o[k].alloc && !os.o[k].sim;
            own = (k >= 0 && os.o[k].sim) || !strncmp(line + at, "[stack]", 7);
            continue;
        }
        unsigned long long v;
        if (alloc_file && sscanf(line, "Rss: %llu kB", &v) == 1)
            r.allocator_file_kb += v;
        else if (own && sscanf(line, "Anonymous: %llu kB", &v) == 1)
            r.own_static_kb += v;
    }
    free(line);
    fclose(f);
    return r;
}
