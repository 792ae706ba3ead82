/* Preloaded beside the recorder by bench/stack_depth.sh: at exit, appends the process's memory to the
 * file named by MT_RSS_AT_EXIT, one line "COMM VmHWM RssAnon RssFile" in KiB, so that what recording
 * adds can be told apart: anonymous pages (the recorder's tables, libunwind's caches) from pages of
 * files (the program's unwind tables read by the unwinder, the trace's own chunk). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long status_kib(const char *status, const char *key)
{
    const char *p = strstr(status, key);
    return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

__attribute__((destructor)) static void rss_at_exit(void)
{
    const char *out = getenv("MT_RSS_AT_EXIT");
    if (!out || !*out)
        return;
    char status[8192], comm[64] = "?";
    const int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    const ssize_t n = read(fd, status, sizeof status - 1);
    close(fd);
    if (n <= 0)
        return;
    status[n] = 0;
    sscanf(status, "Name:\t%63s", comm);
    char line[256];
    const int len = snprintf(line, sizeof line, "%s %ld %ld %ld\n", comm, status_kib(status, "VmHWM:"),
                             status_kib(status, "RssAnon:"), status_kib(status, "RssFile:"));
    const int o = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (o < 0)
        return;
    if (write(o, line, (size_t)len) < 0) {
    }
    close(o);
}
