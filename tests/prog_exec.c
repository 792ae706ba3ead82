/* First image: allocates, then execs itself (argv[0]) with "second". Second image: allocates and
 * exits. Both print their pid and pointer; the second also its argument count.
 * With "execl-long", the first image execs with execl and 100 arguments (argv[0] included): more than the shim's
 * execl wrapper keeps on its stack.
 * With "missing", the exec is of a program that does not exist: it fails, and the image goes on to
 * make MISSING_CALLS mallocs and as many frees (megabytes of records, past the trace file's end at
 * the exec), prints "after_exec_mallocs" and exits 0. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prog_util.h"

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "second") == 0) {
        void *p = malloc(444);
        put_ptr("second_p", p);
        put("second_pid", (uint64_t)getpid());
        put("second_argc", (uint64_t)argc);
        free(p);
        flush_out();
        return 0;
    }
    void *p = malloc(333);
    put_ptr("first_p", p);
    put("first_pid", (uint64_t)getpid());
    flush_out();
    if (argc > 1 && strcmp(argv[1], "missing") == 0) {
        char *none[] = { (char *)"/nonexistent/mtrace-no-such-program", NULL };
        execv(none[0], none);
        enum { MISSING_CALLS = 200000 };
        void **v = malloc(MISSING_CALLS * sizeof *v);
        for (unsigned i = 0; v && i < MISSING_CALLS; i++)
            v[i] = malloc(16 + i % 64);
        for (unsigned i = 0; v && i < MISSING_CALLS; i++)
            free(v[i]);
        free(v);
        free(p);
        put("after_exec_mallocs", v ? MISSING_CALLS : 0);
        flush_out();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "execl-long") == 0) {
#define TEN "x", "x", "x", "x", "x", "x", "x", "x", "x", "x"
        execl(argv[0], argv[0], "second", TEN, TEN, TEN, TEN, TEN, TEN, TEN, TEN, TEN, "x", "x", "x", "x", "x", "x",
              "x", "x", (char *)NULL);
        return 127;
    }
    char *args[] = { argv[0], (char *)"second", NULL };
    execv(argv[0], args);
    return 127;
}
