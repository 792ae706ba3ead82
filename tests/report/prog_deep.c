/* A stack deeper than the recorder's limit and one shallower: descend(40) mallocs 40 calls down
 * (then frees), shallow() mallocs from main's own frame. With the argument "many": 8192 distinct
 * stacks, branch() taking one of two call sites at each of 13 levels, and it prints how much its
 * anonymous memory (RssAnon) grew meanwhile: the recorder's stack table is anonymous memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* RssAnon of /proc/self/status, KiB; -1 if unreadable. */
static long rss_anon_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "RssAnon: %ld", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

__attribute__((noinline)) static void *descend(int n)
{
    if (n == 0)
        return malloc(48);
    void *p = descend(n - 1);
    __asm__ volatile("" ::: "memory"); /* no tail call: every level is a frame */
    return p;
}

__attribute__((noinline)) static void *shallow(void)
{
    return malloc(24);
}

__attribute__((noinline)) static void branch(int level, unsigned path)
{
    if (level == 13) {
        free(malloc(16 + path % 7));
        return;
    }
    if ((path >> level) & 1)
        branch(level + 1, path);
    else
        branch(level + 1, path);
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "many")) {
        const long before = rss_anon_kib();
        for (unsigned path = 0; path < 8192; path++)
            branch(0, path);
        printf("rss_anon_growth_kib %ld\n", rss_anon_kib() - before);
        return before < 0;
    }
    free(descend(40));
    free(shallow());
    return 0;
}
