/* The resident pages of large blocks (MT_EV_PAGES): the evidence that lets a replay write the pages
 * a program wrote and no others.
 *
 * A replay that writes every page of every block overstates a program that allocates big buffers
 * and fills a part of each (measured with bench/partial: native glibc 75.7 MB, replayed 94 MB; with
 * mmap_threshold=4096 native 20 MB); one that writes only the ends understates a program that fills
 * them. Which pages a program wrote is visible only inside the traced process: mincore(2) on the
 * block, with /proc/self/pagemap to tell the pages written from those only read (mt_resident_pages),
 * taken when the block is made and again before it is freed or reallocated. A block whose
 * whole pages were none of them resident when it was made (a fresh mapping: every mmapped chunk,
 * and heap memory never used before) shows at its end exactly the pages the program touched; a
 * block made of memory that earlier blocks had touched shows bounds only, and its pages are printed
 * at its making and end to tell those written (see "prints of reused blocks" below).
 *
 * Counting has a budget per thread (may_count). Only blocks of MT_PAGES_MIN usable bytes or more, and only under
 * glibc's allocator, whose chunk header gives the usable size in the load that free() makes anyway: for smaller blocks
 * the syscall would cost more than the call (about 0.3 us plus 1 ns per page here), and the pages a replay writes in
 * excess are few.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mtrace/clock.h"
#include "shim.h"

/* Pages per mincore() call: the vector lives on the caller's stack. */
#define PAGES_PER_CALL 1024u
/* /proc/self/pagemap entries per read, on the caller's stack too. */
#define PAGEMAP_PER_READ 256u

/* Set before the process's first fork, in the parent, so that the child has it too: pages may be
 * shared with another process from then on (shim_start.c's fork_prepare). */
atomic_int mt_pages_forked;

/* mincore() calls resident a page of a private mapping that was read and never written: the shared
 * zero page, which the RSS does not count. gnuplot reads the whole of each 12 MB image it calloc'd
 * to encode it: mincore said 2 929 pages where the program had written 567, and the replay, which
 * wrote them all, held 9 MB the program did not (bench/RESULTS.md, "Pages read, not written"). So
 * a count that mincore finds nonzero is narrowed by /proc/self/pagemap: PAGEMAP_SCAN (Linux 6.7)
 * gives the ranges of zero pages at about mincore's cost; where the kernel has no PAGEMAP_SCAN, the
 * pages present and mapped by this process alone (bits 63 and 56 of each 8-byte entry, about 45 ns
 * a page here against mincore's 5: within the counting budget), except in a process that has forked
 * or was forked, where a page shared with the other process is in the RSS without being this one's
 * alone; where pagemap cannot be read at all, mincore's count stands. */

/* PAGEMAP_SCAN's ABI (linux/fs.h from 6.7; older systems' headers lack it). */
struct mt_pm_scan_arg {
    uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
    uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
struct mt_page_region {
    uint64_t start, end, categories;
};
#define MT_PAGEMAP_SCAN _IOWR('f', 16, struct mt_pm_scan_arg)
#define MT_PAGE_IS_PFNZERO (1u << 5)
#define SCAN_REGIONS 16u

static atomic_int scan_missing; /* the kernel has no PAGEMAP_SCAN */

/* Of the n pages at lo, those mapped to the zero page; UINT64_MAX if PAGEMAP_SCAN fails. */
static uint64_t zero_pages(int fd, uintptr_t lo, uint64_t n)
{
    struct mt_page_region v[SCAN_REGIONS];
    const uintptr_t end = lo + n * mt_g.page_size;
    uint64_t bytes = 0;
    for (uintptr_t s = lo; s < end;) {
        struct mt_pm_scan_arg a = { .size = sizeof a,
                                    .start = s,
                                    .end = end,
                                    .vec = (uintptr_t)v,
                                    .vec_len = SCAN_REGIONS,
                                    .category_mask = MT_PAGE_IS_PFNZERO,
                                    .return_mask = MT_PAGE_IS_PFNZERO };
        const int r = ioctl(fd, MT_PAGEMAP_SCAN, &a);
        if (r < 0)
            return UINT64_MAX;
        for (int i = 0; i < r && i < (int)SCAN_REGIONS; i++)
            bytes += v[i].end - v[i].start;
        if (a.walk_end <= s) /* no progress: what was found stands */
            break;
        s = a.walk_end;
    }
    return bytes / mt_g.page_size;
}

/* Of the n pages at lo, those present and this process's alone by their pagemap entries;
 * UINT64_MAX if the entries cannot be read. */
static uint64_t pagemap_pages(int fd, uintptr_t lo, uint64_t n)
{
    uint64_t e[PAGEMAP_PER_READ], count = 0;
    const uint64_t first = lo / mt_g.page_size;
    for (uint64_t i = 0; i < n;) {
        const uint64_t want = n - i < PAGEMAP_PER_READ ? n - i : PAGEMAP_PER_READ;
        const ssize_t got = pread(fd, e, want * sizeof e[0], (off_t)((first + i) * sizeof e[0]));
        if (got != (ssize_t)(want * sizeof e[0]))
            return UINT64_MAX;
        for (uint64_t k = 0; k < want; k++)
            count += (e[k] >> 63) & (e[k] >> 56) & 1;
        i += want;
    }
    return count;
}

uint64_t mt_copied_pages(uintptr_t lo, uint64_t n_pages)
{
    const int saved = errno;
    const int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        errno = saved;
        return UINT64_MAX;
    }
    uint64_t e[PAGEMAP_PER_READ], count = 0;
    const uint64_t first = lo / mt_g.page_size;
    for (uint64_t i = 0; i < n_pages;) {
        const uint64_t want = n_pages - i < PAGEMAP_PER_READ ? n_pages - i : PAGEMAP_PER_READ;
        const ssize_t got = pread(fd, e, want * sizeof e[0], (off_t)((first + i) * sizeof e[0]));
        if (got != (ssize_t)(want * sizeof e[0])) {
            count = UINT64_MAX;
            break;
        }
        for (uint64_t k = 0; k < want; k++) /* bit 63: present; bit 61: a file's page or shared */
            count += (e[k] >> 63) & ~(e[k] >> 61) & 1;
        i += want;
    }
    close(fd);
    errno = saved;
    return count;
}

/* Of `step` pages at a that mincore calls resident, those in the RSS (see above). */
static uint64_t written_pages(int fd, uintptr_t a, uint64_t np, uint64_t step)
{
    if (!atomic_load_explicit(&scan_missing, memory_order_relaxed)) {
        const uint64_t zero = zero_pages(fd, a, np);
        if (zero != UINT64_MAX)
            return zero < step ? step - zero : 0;
        if (errno == ENOTTY) /* a kernel before 6.7: no such ioctl on pagemap */
            atomic_store_explicit(&scan_missing, 1, memory_order_relaxed);
    }
    if (atomic_load_explicit(&mt_pages_forked, memory_order_relaxed))
        return step;
    const uint64_t own = pagemap_pages(fd, a, np); /* an unmapped page is not present there */
    return own < step ? own : step;
}

uint64_t mt_resident_pages(uintptr_t lo, uint64_t n_pages, int holes, int narrow)
{
    const int saved = errno; /* the program's: a free or a malloc that succeeds leaves it as it was */
    const uintptr_t pg = mt_g.page_size, hi = lo + n_pages * pg;
    unsigned char vec[PAGES_PER_CALL];
    uint64_t n = 0;
    int fd = -2; /* -2: not opened yet; -1: not to be read */
    for (uintptr_t a = lo; a < hi;) {
        size_t np = (size_t)((hi - a) / pg);
        if (np > PAGES_PER_CALL)
            np = PAGES_PER_CALL;
        uint64_t step = 0;
        if (mincore((void *)a, np * pg, vec) == 0) {
            for (size_t i = 0; i < np; i++)
                step += vec[i] & 1;
        } else if (!holes) {
            if (fd >= 0)
                close(fd);
            errno = saved;
            return UINT64_MAX;
        } else { /* a hole in this step: page by page, the mapped ones */
            for (size_t i = 0; i < np; i++)
                if (mincore((void *)(a + i * pg), pg, vec) == 0)
                    step += vec[0] & 1;
        }
        if (step && narrow && fd == -2)
            fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
        if (step && fd >= 0)
            step = written_pages(fd, a, np, step);
        n += step;
        a += np * pg;
    }
    if (fd >= 0)
        close(fd);
    errno = saved;
    return n;
}

/* What counting may cost a thread: its first PAGES_FREE_COUNTS counts, then no more than 1 /
 * PAGES_TIME_SHARE of its time since its first. A program that allocates and frees large heap
 * blocks without writing them paid two mincore() calls over every page per pair: 35 -> 1 800 ns a
 * pair for 64 KiB, 16 000 to 23 000 ns for 4 MiB (bench/RESULTS.md). Past the budget the event
 * says "not counted", and trace2wl estimates the block from those counted. */
#define PAGES_FREE_COUNTS 256u
#define PAGES_TIME_SHARE 50u

static int may_count(mt_thread_t *t, uint64_t now)
{
    if (!t->pages_epoch)
        t->pages_epoch = now;
    return t->pages_counted < PAGES_FREE_COUNTS || t->pages_spent * PAGES_TIME_SHARE <= now - t->pages_epoch;
}

/* What a count over `pages` pages that took `took` (recorded units: 1 to 2 ns) is charged to the
 * budget: at most COUNT_MOST plus COUNT_MOST_PAGE a page, several times what counting costs when
 * the thread keeps its CPU (0.3 us plus 20-45 ns a page, prints included). A count that took longer
 * was descheduled, and the wait is not the recorder's cost: on a loaded machine (6 runnable tasks
 * on 2 CPUs) a few such waits charged milliseconds each, spent the budget of a whole run, and a
 * program's 128 reused blocks went without prints (tests/e2e/reused_pages.sh run six at once). */
#define COUNT_MOST 20000u
#define COUNT_MOST_PAGE 64u

static uint64_t charged(uint64_t took, uint64_t pages)
{
    const uint64_t most = COUNT_MOST + COUNT_MOST_PAGE * pages;
    return took < most ? took : most;
}

/* ---- large blocks still live at exit ---------------------------------------------------------------
 * A block that is never freed has no count at its end: trace2wl took it as written whole (a server's
 * buffers made at start and kept to exit: memcached's per-thread 128 KiB buffers, 48 KiB of each
 * written, bench/RESULTS.md). So the large blocks live now are kept in a set, address -> usable
 * bytes, and counted at exit (MT_PAGES_AT_EXIT). An open-addressing table in memory of its own
 * (the shim allocates nothing), linear probing with deletion by back-shift, under a spin lock
 * taken once per large block made or ended: those calls make a system call already (mincore, or
 * glibc's mmap). It grows by doubling up to LIVE_MAX entries (48 MiB, for at least 64 GiB of
 * live large blocks); past that, blocks made are not kept, and keep the estimate. */
/* ---- prints of reused blocks ------------------------------------------------------------------
 * A large block made of memory that earlier blocks touched (glibc's heap after a warm-up) shows every
 * page resident when it is made and when it ends, whatever the program wrote: its counts bound its
 * pages written, no more. The share that fresh blocks show stands for other blocks: git's 64 KiB
 * buffers, reused heap blocks on glibc's defaults, were given the 47.8 % of the fresh ones (mostly
 * 128 KiB and up), while counted exactly (recorded with a 64 KiB mmap threshold) the long-lived
 * ones, which make the peak, hold 0-1 page in 73 % of cases (bench/RESULTS.md). So such a block's
 * pages are printed when it is made and again when it ends: for up to PRINT_PAGES of its whole
 * pages, spread evenly over it, a byte hashed from four words of the page, at 0, 1/4, 1/2 and 3/4
 * of it (a fill from the start of the page, or of any quarter of it, changes one). A page whose
 * byte changed was written. The recorder only reads: the program's memory is never written, and
 * only pages that mincore() has just called resident (every whole page of the block) are read, so
 * no page is mapped by reading it. A page written with the words it held (zeros over zeros), or
 * whose byte comes out the same (1 in 256), is missed. */
#define PRINT_PAGES 32u

typedef struct live_block {
    uintptr_t p;     /* 0: a free entry */
    uint64_t usable; /* bits 0 to 2 (sizes are multiples of 8): LIVE_FLAGS; of an edge block, its chunk's size */
    uint8_t print[PRINT_PAGES];
} live_block_t;

/* The block was made of fresh memory (a chunk glibc mapped for it, or under an eighth of its pages
 * resident when made). Only the counts of such blocks of WATCH_MIN_PAGES whole pages or more are
 * narrowed by pagemap (mt_resident_pages' `narrow`), as the watched ones are: a large buffer read
 * whole and written in part (an image encoded) is where the zero page weighs, and such a block's
 * own counts decide its pages. Narrowing every count doubled the cost of counting on a heap of
 * reused blocks (the budget then counted half as many of git pack-objects' 12 880), and the smaller
 * fresh blocks' shares, from which trace2wl estimates the reused ones, then stood for pages written
 * where pages touched had predicted git's peak better: 0.90-0.96 of the traced run against
 * 0.98-1.00 (bench/RESULTS.md, "Pages read, not written"). */
#define LIVE_FRESH 1u
/* Its pages were printed when it was made (every whole page resident then). */
#define LIVE_PRINTED 2u
/* An edge block (trace_format.h, MT_PAGES_EDGE): `print` holds the bytes of its edge when it was made. */
#define LIVE_EDGE 4u
#define LIVE_FLAGS (LIVE_FRESH | LIVE_PRINTED | LIVE_EDGE)

#define LIVE_FIRST 1024u
#define LIVE_MAX (1u << 20)

static live_block_t *live_tab;
static uint64_t live_cap, live_n;
static atomic_int live_lock;

/* ---- large blocks of fresh memory, counted again at each RSS sample ------------------------------
 * A program often writes a large block over a while (an image rendered into it, a file read into
 * it) while it frees another. The replay writes a block as it is made unless told when the program
 * did: so the blocks of WATCH_MIN_PAGES whole pages or more made mostly of fresh memory (a chunk glibc
 * mapped for them, or the heap grown for them: under an eighth resident), up to WATCH_MAX at once, are counted again
 * right after each RSS sample and as any other block of that size is made or ended (the moments their overlap decides
 * the RSS), and each first count, or count that changed, is an MT_PAGES_AT_SAMPLE event; within the thread's counting
 * budget, under live_lock. */
#define WATCH_MIN_PAGES 256u
#define WATCH_MAX 64u

typedef struct watched {
    uintptr_t p; /* 0: a free entry */
    uint64_t usable, last;
} watched_t;

static watched_t watched[WATCH_MAX];
static unsigned watched_n;

/* Lock held. */
static void watch_add(uintptr_t p, uint64_t usable)
{
    if (watched_n == WATCH_MAX)
        return;
    unsigned k = 0;
    while (watched[k].p)
        k++;
    watched[k] = (watched_t){ p, usable, UINT64_MAX };
    watched_n++;
}

/* Lock held. */
static void watch_del(uintptr_t p)
{
    for (unsigned k = 0; k < WATCH_MAX && watched_n; k++)
        if (watched[k].p == p) {
            watched[k].p = 0;
            watched_n--;
            return;
        }
}

static uint64_t live_home(uintptr_t p, uint64_t cap)
{
    return (uint64_t)((p >> 4) * 0x9e3779b97f4a7c15ull >> 32) & (cap - 1);
}

static void live_put_in(live_block_t *tab, uint64_t cap, const live_block_t *e)
{
    uint64_t i = live_home(e->p, cap);
    while (tab[i].p && tab[i].p != e->p)
        i = (i + 1) & (cap - 1);
    tab[i] = *e;
}

/* Doubles the table (the first: LIVE_FIRST entries); 0, or -1 when it cannot. Lock held. */
static int live_grow(void)
{
    const uint64_t cap = live_cap ? 2 * live_cap : LIVE_FIRST;
    if (cap > LIVE_MAX)
        return -1;
    live_block_t *tab = mmap(NULL, cap * sizeof *tab, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (tab == MAP_FAILED)
        return -1;
    for (uint64_t i = 0; i < live_cap; i++)
        if (live_tab[i].p)
            live_put_in(tab, cap, &live_tab[i]);
    if (live_tab)
        munmap(live_tab, live_cap * sizeof *live_tab);
    live_tab = tab;
    live_cap = cap;
    return 0;
}

/* Keeps block p: `print` its pages' print (PRINT_PAGES bytes), or NULL. */
static void live_add(uintptr_t p, uint64_t usable, int fresh, int watch, const uint8_t *print)
{
    live_block_t e = { .p = p, .usable = usable | (fresh ? LIVE_FRESH : 0) | (print ? LIVE_PRINTED : 0) };
    if (print)
        memcpy(e.print, print, sizeof e.print);
    mt_spin_take(&live_lock);
    if (watch)
        watch_add(p, usable);
    if (2 * (live_n + 1) <= live_cap || live_grow() == 0) {
        uint64_t i = live_home(p, live_cap);
        while (live_tab[i].p && live_tab[i].p != p)
            i = (i + 1) & (live_cap - 1);
        live_n += !live_tab[i].p;
        live_tab[i] = e;
    }
    mt_spin_give(&live_lock);
}

/* Takes live block p out of the set (and of the watched ones), its entry into *out: 1, or 0 when it
 * was not in the set (*out then says nothing: no flag). */
static int live_take(uintptr_t p, live_block_t *out)
{
    int found = 0;
    out->usable = 0;
    mt_spin_take(&live_lock);
    if (watched_n)
        watch_del(p);
    if (live_n) {
        const uint64_t mask = live_cap - 1;
        uint64_t i = live_home(p, live_cap);
        while (live_tab[i].p && live_tab[i].p != p)
            i = (i + 1) & mask;
        if (live_tab[i].p) {
            *out = live_tab[i];
            found = 1;
            /* back-shift: an entry after the hole moves into it unless its home lies between */
            for (uint64_t j = (i + 1) & mask; live_tab[j].p; j = (j + 1) & mask) {
                const uint64_t h = live_home(live_tab[j].p, live_cap);
                if (((j - h) & mask) >= ((j - i) & mask)) {
                    live_tab[i] = live_tab[j];
                    i = j;
                }
            }
            live_tab[i].p = 0;
            live_n--;
        }
    }
    mt_spin_give(&live_lock);
    return found;
}

/* The print of the `whole` pages at lo, all resident: PRINT_PAGES bytes or fewer into out. Returns
 * how many. */
static unsigned print_pages(uintptr_t lo, uint64_t whole, uint8_t *out)
{
    const unsigned n = whole < PRINT_PAGES ? (unsigned)whole : PRINT_PAGES;
    const uintptr_t pg = mt_g.page_size, quarter = pg / 4;
    for (unsigned k = 0; k < n; k++) {
        const uintptr_t a = lo + (uintptr_t)((uint64_t)k * whole / n) * pg;
        uint64_t h = 0;
        for (unsigned q = 0; q < 4; q++) {
            uint64_t w;
            memcpy(&w, (const void *)(a + q * quarter), sizeof w);
            h = (h + w) * 0x9e3779b97f4a7c15ull; /* odd: a change of any one word changes h */
        }
        /* 0 stands for four zero words alone */
        out[k] = h ? ((uint8_t)(h >> 56) ? (uint8_t)(h >> 56) : 1) : 0;
    }
    return n;
}

/* What a block's prints at its making and end say (see "prints of reused blocks" above). */
typedef struct prints {
    uint64_t sampled; /* pages compared; 0: none */
    uint64_t changed; /* of which printed differently: written */
    uint64_t zero;    /* of which four zero words at both ends: written with zeros, or not written */
} prints_t;

/* The pages printed in `was` when the block of `whole` pages at lo was made, all resident now,
 * compared with their prints now. */
static prints_t pages_changed(uintptr_t lo, uint64_t whole, const uint8_t *was)
{
    uint8_t now[PRINT_PAGES];
    prints_t c = { .sampled = print_pages(lo, whole, now) };
    for (unsigned k = 0; k < c.sampled; k++) {
        c.changed += now[k] != was[k];
        c.zero += !now[k] && !was[k];
    }
    return c;
}

/* The payload of a PAGES event: address, whole pages, resident, when, and for a block printed at
 * its making and all resident at its end, what the prints say. Returns its end. */
static uint8_t *pages_payload(uint8_t *q, uintptr_t p, uint64_t whole, uint64_t resident, unsigned when,
                              const prints_t *c)
{
    q = mt_put_uvarint(q, (uint64_t)p);
    q = mt_put_uvarint(q, whole);
    q = mt_put_uvarint(q, resident);
    q = mt_put_uvarint(q, when);
    if (c && c->sampled) {
        q = mt_put_uvarint(q, c->sampled);
        q = mt_put_uvarint(q, c->changed);
        q = mt_put_uvarint(q, c->zero);
    }
    return q;
}

/* ---- edge blocks ---------------------------------------------------------------------------------
 * A glibc chunk of 4 KiB to 64 KiB whose size is a multiple of 4096, or 16 more (mt_edge_wanted): its
 * edge is the block's bytes from offset (the chunk's size rounded down to 4096) - 16 up to that
 * multiple, or to its usable end, 16 or 8 bytes, those a chunk mapped for the block would hold alone
 * on its last page. They are read when the block is made and kept in the live set, and read again
 * when it ends, or at exit if it is still live; an MT_PAGES_EDGE event says whether they changed.
 * Reading only, a word or two of the block, no system call but at exit, where mincore() first says the
 * edge's page is still there (a block freed unseen may be gone). Bytes written with what they held
 * count as not written. */

/* The edge of the block at p with chunk header word h: its offset in the block, and its length. */
static size_t edge_of(size_t h, size_t *off)
{
    const size_t c = h & ~(size_t)7, b = c & ~(size_t)(MT_PAGES_EDGE_PAGE - 1), u = mt_glibc_usable(h);
    *off = b - MT_PAGES_EDGE_BYTES;
    return (b < u ? b : u) - *off;
}

/* An edge event for live entry e (LIVE_EDGE), when AT_END or AT_EXIT, in t's stream (t busy). */
static void edge_event(mt_thread_t *t, uint64_t now, const live_block_t *e, unsigned when)
{
    size_t off;
    const size_t len = edge_of(e->usable & ~(uint64_t)LIVE_FLAGS, &off);
    const uintptr_t a = e->p + off;
    if (when == MT_PAGES_AT_EXIT) {
        const uintptr_t pg = mt_g.page_size, lo = a & ~(pg - 1);
        unsigned char vec[2] = { 0, 0 };
        if (mincore((void *)lo, (a + len - 1) / pg * pg + pg - lo, vec) != 0 || !(vec[0] & 1) ||
            (((a + len - 1) & ~(pg - 1)) != lo && !(vec[1] & 1)))
            return; /* gone, or never written since it was made (its print was read from it then) */
    }
    uint8_t now_bytes[MT_PAGES_EDGE_BYTES] = { 0 };
    memcpy(now_bytes, (const void *)a, len);
    uint8_t payload[40], *q = pages_payload(payload, e->p, 0, 0, when | MT_PAGES_EDGE, NULL);
    q = mt_put_uvarint(q, memcmp(now_bytes, e->print, len) != 0);
    mt_emit_event_at(t, MT_EV_PAGES, now, payload, (size_t)(q - payload));
}

void mt_edge_made(const void *p, size_t h)
{
    mt_thread_t *t = &mt_self;
    if (t->busy | atomic_load_explicit(&mt_g.off, memory_order_relaxed))
        return;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    size_t off;
    const size_t len = edge_of(h, &off);
    uint8_t print[PRINT_PAGES] = { 0 };
    memcpy(print, (const uint8_t *)p + off, len);
    live_add((uintptr_t)p, (h & ~(size_t)7) | LIVE_EDGE, 0, 0, print);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
}

void mt_edge_ended(uint64_t now, const void *p)
{
    mt_thread_t *t = &mt_self;
    if (t->busy | atomic_load_explicit(&mt_g.off, memory_order_relaxed))
        return;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    live_block_t e;
    if (live_take((uintptr_t)p, &e) && (e.usable & LIVE_EDGE))
        edge_event(t, now, &e, MT_PAGES_AT_END);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
}

/* Counts the large blocks live now, each an MT_EV_PAGES event AT_EXIT in this thread's stream: at the
 * process's end (destructor, _exit), before the trace is finished. Takes the lock only if it is free:
 * _exit may come from a signal handler that interrupted its holder. */
void mt_pages_at_exit(void)
{
    mt_thread_t *t = &mt_self;
    if (t->busy | atomic_load_explicit(&mt_g.off, memory_order_relaxed) || !mt_g.glibc)
        return;
    if (!mt_spin_try(&live_lock))
        return;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    const uint64_t now = mt_now();
    for (uint64_t k = 0; k < live_cap; k++) {
        if (!live_tab[k].p)
            continue;
        const live_block_t *e = &live_tab[k];
        if (e->usable & LIVE_EDGE) {
            edge_event(t, now, e, MT_PAGES_AT_EXIT);
            continue;
        }
        uint64_t lo;
        const uint64_t whole = mt_whole_pages(e->p, e->usable & ~(uint64_t)LIVE_FLAGS, mt_g.page_size, &lo);
        /* a block freed unseen may be unmapped: mincore fails, and nothing is said of it */
        const uint64_t resident =
            whole ? mt_resident_pages((uintptr_t)lo, whole, 0, whole >= WATCH_MIN_PAGES && (e->usable & LIVE_FRESH))
                  : 0;
        if (resident == UINT64_MAX)
            continue;
        prints_t c = { 0 };
        if ((e->usable & LIVE_PRINTED) && resident == whole)
            c = pages_changed((uintptr_t)lo, whole, e->print);
        uint8_t payload[80];
        const uint8_t *q = pages_payload(payload, e->p, whole, resident, MT_PAGES_AT_EXIT, &c);
        mt_emit_event_at(t, MT_EV_PAGES, now, payload, (size_t)(q - payload));
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
    mt_spin_give(&live_lock);
}

/* The watched blocks other than `except` whose count is new or changed, each an MT_PAGES_AT_SAMPLE
 * event in t's stream (t busy), on their own counting budget. Lock held. */
static void count_watched(mt_thread_t *t, uint64_t now, uintptr_t except)
{
    if (!t->pages_epoch)
        t->pages_epoch = now;
    if (t->watch_counted >= PAGES_FREE_COUNTS && t->watch_spent * PAGES_TIME_SHARE > now - t->pages_epoch)
        return; /* its own budget: the blocks' counts at their making and end keep theirs */
    const uint64_t t0 = mt_now();
    uint64_t pages = 0;
    for (unsigned k = 0; k < WATCH_MAX; k++) {
        watched_t *w = &watched[k];
        if (!w->p || w->p == except)
            continue;
        uint64_t lo;
        const uint64_t whole = mt_whole_pages(w->p, w->usable, mt_g.page_size, &lo);
        const uint64_t resident = mt_resident_pages((uintptr_t)lo, whole, 0, 1); /* fresh, by being watched */
        pages += whole;
        if (resident == UINT64_MAX || resident == w->last)
            continue;
        w->last = resident;
        uint8_t payload[80];
        const uint8_t *q = pages_payload(payload, w->p, whole, resident, MT_PAGES_AT_SAMPLE, NULL);
        mt_emit_event_at(t, MT_EV_PAGES, now, payload, (size_t)(q - payload));
    }
    t->watch_spent += charged(mt_now() - t0, pages);
    t->watch_counted++;
}

void mt_pages_sample(mt_thread_t *t, uint64_t now)
{
    if (!watched_n || !mt_spin_try(&live_lock))
        return;
    count_watched(t, now, 0);
    mt_spin_give(&live_lock);
}

void mt_pages_after_fork_child(void)
{
    /* the child's live blocks are the parent's at the fork: the set stays; a holder is gone */
    atomic_store(&live_lock, 0);
}

void mt_pages_event(uint64_t now, const void *p, size_t usable, unsigned when, int fresh)
{
    mt_thread_t *t = &mt_self;
    if (t->busy | atomic_load_explicit(&mt_g.off, memory_order_relaxed))
        return;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint64_t lo;
    prints_t c = { 0 };
    const uint64_t whole = mt_whole_pages((uintptr_t)p, usable, mt_g.page_size, &lo);
    uint64_t resident = 0;
    const int at_alloc = (when & ~(unsigned)MT_PAGES_UNCOUNTED) == MT_PAGES_AT_ALLOC;
    live_block_t e = { 0 };
    const int kept = !at_alloc && live_take((uintptr_t)p, &e);
    uint8_t print[PRINT_PAGES];
    int printed = 0;
    if (!fresh && whole) {
        if (may_count(t, now)) {
            const uint64_t t0 = mt_now();
            /* at its making no page of a block can be the zero page yet but those read before it */
            resident =
                mt_resident_pages((uintptr_t)lo, whole, 0, kept && whole >= WATCH_MIN_PAGES && (e.usable & LIVE_FRESH));
            if (resident == whole && at_alloc)
                printed = print_pages((uintptr_t)lo, whole, print) > 0;
            else if (resident == whole && (e.usable & LIVE_PRINTED))
                c = pages_changed((uintptr_t)lo, whole, e.print);
            t->pages_spent += charged(mt_now() - t0, whole);
            t->pages_counted++;
        } else {
            when |= MT_PAGES_UNCOUNTED;
        }
    }
    if (whole >= WATCH_MIN_PAGES && watched_n) { /* the others, as this one comes or goes */
        mt_spin_take(&live_lock);
        count_watched(t, now, (uintptr_t)p);
        mt_spin_give(&live_lock);
    }
    if (resident != UINT64_MAX) {
        uint8_t payload[80];
        const uint8_t *q = pages_payload(payload, (uintptr_t)p, whole, resident, when, &c);
        mt_emit_event_at(t, MT_EV_PAGES, now, payload, (size_t)(q - payload));
    }
    if (at_alloc) {
        const int made_fresh = fresh || (!(when & MT_PAGES_UNCOUNTED) && resident * 8 < whole);
        live_add((uintptr_t)p, usable, made_fresh, whole >= WATCH_MIN_PAGES && made_fresh, printed ? print : NULL);
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
}
