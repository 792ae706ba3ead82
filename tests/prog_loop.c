/* Allocates and frees forever (or argv[1] times), size i % 1000 + 1 for the i-th malloc; prints the
 * count of finished iterations every 10000. With argv[2], prints a checksum at the end and exits with
 * that status, for comparisons of traced and untraced runs. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>

#include "prog_util.h"

int main(int argc, char **argv)
{
    const long n = argc > 1 ? atol(argv[1]) : -1;
    const int quiet = argc > 2;
    uint64_t sum = 0;
    for (long i = 0; n < 0 || i < n; i++) {
        char *p = malloc((size_t)(i % 1000) + 1);
        p[0] = (char)i;
        sum += (uint64_t)(unsigned char)p[0] + (uint64_t)(i % 1000);
        free(p);
        if (!quiet && i % 10000 == 9999) {
            put("done", (uint64_t)i + 1);
            flush_out();
        }
    }
    put("sum", sum);
    flush_out();
    return quiet ? atoi(argv[2]) : 0;
}
