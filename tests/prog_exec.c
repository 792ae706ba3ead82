/* First image: allocates, then execs itself (argv[0]) with "second". Second image: allocates and
 * exits. Both print their pid and pointer. */
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
        free(p);
        flush_out();
        return 0;
    }
    void *p = malloc(333);
    put_ptr("first_p", p);
    put("first_pid", (uint64_t)getpid());
    flush_out();
    char *args[] = { argv[0], (char *)"second", NULL };
    execv(argv[0], args);
    return 127;
}
