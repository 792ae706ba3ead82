/* The replay's own memory: the tables and buffers it maps for itself (sim_map), counted apart from
 * the allocator's heap as bookkeeping, by the pages of them resident at the end of the replay. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim.h"

void *sim_map(sim_t *s, size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    __atomic_fetch_add(&s->mapped_bytes, bytes, __ATOMIC_RELAXED);
    const uint32_t i = atomic_fetch_add(&s->nmaps, 1);
    if (i < sizeof s->maps / sizeof s->maps[0]) {
        s->maps[i].p = p;
        s->maps[i].len = bytes;
    }
    return p;
}

/* Pages of [p, p + len) in this process's RSS: present in /proc/self/pagemap (bit 63) and mapped
 * by this process alone (bit 56). A page of a private mapping that was read but never written is
 * the shared zero page, present but not in the RSS: mincore() called it resident, and a replay of
 * 2000 short threads, which read the statistics of every thread at the end, reported 151.6 MB of
 * bookkeeping for a max RSS of 108.6 MB. -1 if pagemap cannot be read. */
static int64_t pagemap_resident(int fd, const uint8_t *p, size_t len, size_t page)
{
    static uint64_t entry[4096];
    int64_t pages = 0;
    const uint64_t first = (uintptr_t)p / page, n = (len + page - 1) / page;
    for (uint64_t i = 0; i < n; i += sizeof entry / sizeof entry[0]) {
        size_t want = n - i < sizeof entry / sizeof entry[0] ? n - i : sizeof entry / sizeof entry[0];
        const ssize_t got = pread(fd, entry, want * sizeof entry[0], (off_t)((first + i) * sizeof entry[0]));
        if (got != (ssize_t)(want * sizeof entry[0]))
            return -1;
        for (size_t k = 0; k < want; k++)
            pages += (entry[k] >> 63 & 1) && (entry[k] >> 56 & 1);
    }
    return pages;
}

/* Resident pages of the pages that [p, p + len) lies on, by mincore() with a vector of `cap`. */
static int64_t mincore_pages_with(const void *p, size_t len, size_t page, unsigned char *vec, size_t cap)
{
    const uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(page - 1);
    len += (uintptr_t)p - lo;
    int64_t pages = 0;
    for (size_t off = 0; off < len; off += cap * page) {
        const size_t part = len - off < cap * page ? len - off : cap * page;
        if (mincore((void *)(lo + off), part, vec) < 0)
            continue;
        for (size_t k = 0; k < (part + page - 1) / page; k++)
            pages += vec[k] & 1;
    }
    return pages;
}

/* The same from mincore(), which counts zero pages too: where pagemap is hidden. */
static int64_t mincore_resident(const uint8_t *p, size_t len, size_t page)
{
    static unsigned char vec[1u << 16];
    return mincore_pages_with(p, len, page, vec, sizeof vec);
}

int64_t sim_mincore_pages(const void *p, size_t len, size_t page)
{
    unsigned char vec[1024]; /* on the calling replay thread's stack */
    return mincore_pages_with(p, len, page, vec, sizeof vec);
}

typedef struct resident_arg {
    int fd;
    size_t page;
} resident_arg_t;

static int64_t resident_bytes(const void *p, size_t len, void *arg)
{
    const resident_arg_t *a = arg;
    int64_t pages = a->fd >= 0 ? pagemap_resident(a->fd, p, len, a->page) : -1;
    if (pages < 0)
        pages = mincore_resident(p, len, a->page);
    return pages * (int64_t)a->page;
}

uint64_t sim_resident_bytes(const sim_t *s)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const uint32_t n = atomic_load(&s->nmaps);
    const int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    uint64_t total = 0;
    resident_arg_t arg = { fd, page };
    for (uint32_t i = 0; i < n && i < sizeof s->maps / sizeof s->maps[0]; i++)
        total += (uint64_t)resident_bytes(s->maps[i].p, s->maps[i].len, &arg);
    if (sim_heap_resident_bytes) /* the process's own heap (sim_heap.c) */
        total += sim_heap_resident_bytes(resident_bytes, &arg);
    if (fd >= 0)
        close(fd);
    return total;
}
