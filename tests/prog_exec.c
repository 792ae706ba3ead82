/* First image: allocates, then execs itself (argv[0]) with "second". Second image: allocates and
 * exits. Both print their pid and pointer; the second also its argument count.
 * With "execl-long", the first image execs with execl and 100 arguments (argv[0] included): more than the shim's
 * execl wrapper keeps on its stack. */
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
