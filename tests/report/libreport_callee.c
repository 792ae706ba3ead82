/* See libreport_callee.h. The call shares its line with the store of __LINE__. */
#include <stdlib.h>

#include "libreport_callee.h"

void *report_callee_alloc(size_t n, unsigned *line)
{
    /* clang-format off */
    void *p = malloc(n); *line = __LINE__;
    /* clang-format on */
    return p;
}
