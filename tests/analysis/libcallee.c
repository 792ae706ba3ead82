/* See libcallee.h. Each call shares its line with the store of __LINE__, so the line reported is
 * the call's. */
#include <stdlib.h>

#include "libcallee.h"

void *callee_alloc(size_t n, unsigned *line)
{
    /* clang-format off */
    void *p = malloc(n); *line = __LINE__;
    /* clang-format on */
    return p;
}

void callee_call(void (*fn)(void), unsigned *line)
{
    /* clang-format off */
    fn(); *line = __LINE__;
    /* clang-format on */
}

/* A function with no symbol once the library is stripped (test_symbolize): static and not inlined. */
static __attribute__((noinline)) void *hidden_alloc(size_t n)
{
    void *p = malloc(n);
    return p;
}

void *(*callee_hidden(void))(size_t)
{
    return hidden_alloc;
}

/* Functions under Rust's two manglings, legacy and v0 (test_symbolize: demangled names). */
void callee_rust_legacy(void) __asm__("_ZN4core3fmt5write17h0123456789abcdefE");
void callee_rust_legacy(void)
{
}
void callee_rust_v0(void) __asm__("_RNvNtCs1234_7mycrate3bar3baz");
void callee_rust_v0(void)
{
}
