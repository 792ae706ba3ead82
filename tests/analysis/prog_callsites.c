/* Run under `mtrace record --stacks 8` by test_callsites: malloc(100) in main, malloc(200) in the
 * shared library libcallee (called from main). Prints the lines of those calls ("key value" lines)
 * for the test to compare with the symbolized stacks. Built with -g -O0 -fno-builtin. */
#include <stdio.h>
#include <stdlib.h>

#include "libcallee.h"

int main(void)
{
    unsigned callee_line = 0;
    /* clang-format off */
    void *a = malloc(100); const unsigned main_line = __LINE__;
    /* clang-format on */
    /* clang-format off */
    void *b = callee_alloc(200, &callee_line); const unsigned call_line = __LINE__;
    /* clang-format on */
    printf("main_line %u\ncallee_line %u\ncall_line %u\n", main_line, callee_line, call_line);
    free(b);
    free(a);
    return 0;
}
