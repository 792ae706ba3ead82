/* The resident pages of large blocks (MT_EV_PAGES): the evidence that lets a replay write the pages
 * a program wrote and no others.
 *
 * A replay that writes every page of every block overstates a program that allocates big buffers
 * and fills a part of each (measured with bench/partial: native glibc 75.7 MB, replayed 94 MB; with
 * mmap_threshold=4096 native 20 MB); one that writes only the ends understates a program that fills
 * them. Which pages a program wrote is visible only inside the traced process: mincore(2) on the
 * block, taken when the block is made and again before it is freed or reallocated. A block whose
 * whole pages were none of them resident when it was made (a fresh mapping: every mmapped chunk,
 * and heap memory never used before) shows at its end exactly the pages the program touched; a
 * block made of memory that earlier blocks had touched shows bounds only, which trace2wl narrows
 * with what the exact blocks say.
 *
 * Counting has a budget per thread (may_count). Only blocks of MT_PAGES_MIN usable bytes or more, and only under glibc's allocator, whose chunk
 * header gives the usable size in the load that free() makes anyway: for smaller blocks the
 * syscall would cost more than the call (about 0.3 us plus 1 ns per page here), and the pages
 * a replay writes in excess are few.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>

#include "shim.h"

/* Pages per mincore() call: the vector lives on the caller's stack. */
#define PAGES_PER_CALL 1024u

/* How many of the n pages from lo are resident; UINT64_MAX: unknown. */
static uint64_t resident_pages(uintptr_t lo, uint64_t n_pages)
{
    const uintptr_t pg = mt_g.page_size, hi = lo + n_pages * pg;
    unsigned char vec[PAGES_PER_CALL];
    uint64_t n = 0;
    for (uintptr_t a = lo; a < hi;) {
        size_t np = (size_t)((hi - a) / pg);
        if (np > PAGES_PER_CALL)
            np = PAGES_PER_CALL;
        if (mincore((void *)a, np * pg, vec) != 0)
            return UINT64_MAX;
        for (size_t i = 0; i < np; i++)
            n += vec[i] & 1;
        a += np * pg;
    }
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

void mt_pages_event(uint64_t now, const void *p, size_t usable, unsigned when, int fresh)
{
    mt_thread_t *t = &mt_self;
    if (t->busy | atomic_load_explicit(&mt_g.off, memory_order_relaxed))
        return;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint64_t lo;
    const uint64_t whole = mt_whole_pages((uintptr_t)p, usable, mt_g.page_size, &lo);
    uint64_t resident = 0;
    if (!fresh && whole) {
        if (may_count(t, now)) {
            const uint64_t t0 = mt_now();
            resident = resident_pages((uintptr_t)lo, whole);
            t->pages_spent += mt_now() - t0;
            t->pages_counted++;
        } else {
            when |= MT_PAGES_UNCOUNTED;
        }
    }
    if (resident != UINT64_MAX) {
        uint8_t payload[40], *q = payload;
        q = mt_put_uvarint(q, (uint64_t)(uintptr_t)p);
        q = mt_put_uvarint(q, whole);
        q = mt_put_uvarint(q, resident);
        q = mt_put_uvarint(q, when);
        mt_emit_event_at(t, MT_EV_PAGES, now, payload, (size_t)(q - payload));
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
}
