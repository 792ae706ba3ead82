/* The RSS samples (MT_EV_RSS): the program's memory as the kernel counts it, every period and at
 * the end, in the stream of the thread whose call finds a sample due. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "mtrace/statm.h"
#include "shim.h"

/* statm is opened for each sample (a few microseconds every 10 ms): a descriptor kept open could be
 * closed by the program and its number reused for one of the program's files. */
static int read_statm(uint64_t v[3])
{
    const int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    const int rc = mt_statm_read(fd, v);
    close(fd);
    return rc;
}

/* Writes an RSS sample (MT_EV_RSS) into t's stream now. */
static void write_rss_sample(mt_thread_t *t)
{
    uint64_t v[3];
    const int saved = errno;
    if (read_statm(v) == 0) {
        /* The program's VmSize, not ours: the trace's address reservation is taken out. */
        const uint64_t ours = mt_g.reserved_chunks * MT_CHUNK_SIZE / mt_g.page_size;
        v[0] = v[0] > ours ? v[0] - ours : 0;
        uint8_t payload[48], *q = payload;
        q = mt_put_uvarint(q, v[0]);
        q = mt_put_uvarint(q, v[1]);
        q = mt_put_uvarint(q, v[2]);
        q = mt_put_uvarint(q, mt_mono_ns());
        mt_emit_event(t, MT_EV_RSS, payload, (size_t)(q - payload));
    }
    errno = saved;
}

void mt_sample_rss(mt_thread_t *t, uint64_t now)
{
    uint64_t due = atomic_load(&mt_g.next_rss_time);
    /* One thread wins each period; the others see the new due time and go on. */
    if (now < due || !atomic_compare_exchange_strong(&mt_g.next_rss_time, &due, now + mt_g.rss_period))
        return;
    mt_release_ended(); /* for ended threads when none starts or ends after them */
    mt_loaded_check(t); /* libraries loaded since: their segments are in the RSS sampled now */
    write_rss_sample(t);
    if (mt_g.glibc)
        mt_pages_sample(t, now);
}

void mt_sample_rss_now(mt_thread_t *t)
{
    if (mt_g.rss_period)
        write_rss_sample(t);
}

/* The last sample, at the process's end whenever the last one was: a program whose memory peaks at
 * its end, or that ran for less than a period, had its peak missed (prog_partial -n 0: 14 MB at
 * exit, the samples' peak 1.8 MB). Not when sampling is off, nor from inside the shim. */
void mt_sample_rss_at_exit(void)
{
    mt_thread_t *t = &mt_self;
    if (!mt_g.rss_period || t->busy || atomic_load_explicit(&mt_g.off, memory_order_relaxed))
        return;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    write_rss_sample(t);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
}
