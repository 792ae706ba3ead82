/* Run under `mtrace record --stacks 16` by wrappers.sh: allocations through two wrappers from three
 * callers, as a program with xmalloc/xcalloc does:
 *   parse_input:  10 x my_xmalloc(100) and 2 x my_xcalloc(1, 8)
 *   build_index:  20 x my_xmalloc(50)  and 5 x my_xcalloc(4, 8)
 *   emit_output:   3 x my_xmalloc(10)  and 7 x my_xcalloc(2, 16)
 * and one malloc(999) in main, never freed. Everything else is freed before the end.
 * PROG_WRAPPERS_EMIT=N (0 to 24) makes emit_output's my_xcalloc count N: one changed callsite, for
 * mtrace diff.
 * Built with -g -O0 -fno-builtin: every call is a real call and a real frame. */
#include <stdlib.h>

__attribute__((noinline)) static void *my_xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    return p;
}

__attribute__((noinline)) static void *my_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p)
        abort();
    return p;
}

static void *keep[64]; /* 12 + 25 + 3 + at most 24 */
static unsigned nkeep;

__attribute__((noinline)) static void parse_input(void)
{
    for (int i = 0; i < 10; i++)
        keep[nkeep++] = my_xmalloc(100);
    for (int i = 0; i < 2; i++)
        keep[nkeep++] = my_xcalloc(1, 8);
}

__attribute__((noinline)) static void build_index(void)
{
    for (int i = 0; i < 20; i++)
        keep[nkeep++] = my_xmalloc(50);
    for (int i = 0; i < 5; i++)
        keep[nkeep++] = my_xcalloc(4, 8);
}

__attribute__((noinline)) static void emit_output(void)
{
    const char *env = getenv("PROG_WRAPPERS_EMIT");
    const int n = env && atoi(env) >= 0 && atoi(env) < 25 ? atoi(env) : 7;
    for (int i = 0; i < 3; i++)
        keep[nkeep++] = my_xmalloc(10);
    for (int i = 0; i < n; i++)
        keep[nkeep++] = my_xcalloc(2, 16);
}

int main(void)
{
    void *leak = malloc(999);
    parse_input();
    build_index();
    emit_output();
    for (unsigned i = 0; i < nkeep; i++)
        free(keep[i]);
    return leak ? 0 : 1;
}
