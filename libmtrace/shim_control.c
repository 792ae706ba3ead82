/* The control API of libmtrace.so (include/mtrace.h): start, pause, resume, stop, sync, mark. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "mtrace.h"
#include "shim.h"

MT_EXPORT int mtrace_control(int cmd, const char *label)
{
    mt_init();
    mt_thread_t *t = &mt_self;
    if (mt_g.fd < 0 || !mt_g.base || atomic_load(&mt_g.stopped))
        return -ENODEV;
    const int was_busy = t->busy;
    t->busy = 2;
    int rc = 0;
    uint8_t payload[8], *q = mt_put_uvarint(payload, (uint64_t)cmd);
    switch (cmd) {
    case MT_CTL_START:
    case MT_CTL_RESUME:
        mt_g.paused = 0;
        atomic_store(&mt_g.off, 0);
        mt_emit_event(t, MT_EV_CONTROL, payload, (size_t)(q - payload));
        break;
    case MT_CTL_PAUSE:
        mt_emit_event(t, MT_EV_CONTROL, payload, (size_t)(q - payload));
        mt_g.paused = 1;
        atomic_store(&mt_g.off, 1);
        break;
    case MT_CTL_STOP:
        mt_emit_event(t, MT_EV_CONTROL, payload, (size_t)(q - payload));
        mt_file_finish();
        break;
    case MT_CTL_SYNC:
        rc = msync(mt_g.base, atomic_load(&mt_g.mapped_chunks) * MT_CHUNK_SIZE, MS_SYNC) ? -errno : 0;
        break;
    case MT_CTL_MARK:
        mt_emit_event(t, MT_EV_MARK, (const uint8_t *)(label ? label : ""), label ? strnlen(label, 1024) : 0);
        break;
    default:
        rc = -EINVAL;
    }
    t->busy = (uint8_t)was_busy;
    return rc;
}
