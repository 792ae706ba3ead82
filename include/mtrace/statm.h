/* /proc/self/statm's first three fields (the process's size, resident and file-backed resident
 * pages), read and parsed without malloc or stdio: the recorder samples it from inside the
 * allocator's calls, the simulator from its sampler thread. */
#ifndef MTRACE_STATM_H
#define MTRACE_STATM_H

#include <stdint.h>
#include <unistd.h>

/* Reads statm through fd (open on /proc/self/statm) into v[0..2]; 0, or -1 if it cannot. */
static inline int mt_statm_read(int fd, uint64_t v[3])
{
    char buf[128];
    const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    const char *s = buf;
    for (int i = 0; i < 3; i++) {
        uint64_t x = 0;
        while (*s == ' ')
            s++;
        if (*s < '0' || *s > '9')
            return -1;
        while (*s >= '0' && *s <= '9')
            x = x * 10 + (uint64_t)(*s++ - '0');
        v[i] = x;
    }
    return 0;
}

#endif
