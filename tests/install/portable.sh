#!/usr/bin/env bash
# The tools build on machines other than x86: their sources use no x86-only instruction or builtin
# (pause, rdtsc, __builtin_ia32_*, _mm_*) outside include/mtrace/clock.h, which chooses one per
# architecture, and clock.h's fallback branch (no x86, no Arm) compiles and works: a spin-wait step
# (mt_cpu_relax) and a clock that advances.
#   usage: portable.sh SOURCE_ROOT CC...
set -u
src=$1
shift
cc=("$@")
work=$(mktemp -d /tmp/mtrace-portable.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

found=$(cd "$src" && grep -rnE '__builtin_ia32_|\brdtscp?\b|_mm_pause|__rdtsc|asm[^;]*"(pause|rep; ?nop)' \
    --include='*.c' --include='*.h' format libmtrace trace2wl simulator analysis cli include |
    grep -v '^include/mtrace/clock\.h:')
[ -z "$found" ] || fail "x86-only code outside include/mtrace/clock.h:
$found"

cat >"$work/generic.c" <<'C'
/* clock.h as a machine that is neither x86 nor Arm sees it (its system headers come first, so
 * that only clock.h's own branches change). */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#undef __x86_64__
#undef __i386__
#undef __aarch64__
#undef __arm__
#include "mtrace/clock.h"

int main(void)
{
    if (MT_CLOCK_IS_TSC)
        return 2;
    const uint64_t a = mt_clock();
    for (int i = 0; i < 1000; i++)
        mt_cpu_relax();
    struct timespec ts = { 0, 1000000 };
    nanosleep(&ts, NULL);
    const uint64_t b = mt_clock();
    printf("%llu\n", (unsigned long long)(b - a));
    return b > a ? 0 : 1;
}
C
"${cc[@]}" -std=gnu11 -Wall -Wextra -Werror -I"$src/include" -o "$work/generic" "$work/generic.c" 2>"$work/cc.err" ||
    fail "clock.h's generic branch does not compile: $(cat "$work/cc.err")"
"$work/generic" >/dev/null || fail "clock.h's generic branch: exit $?"
echo "ok: no x86-only code outside clock.h; its generic branch builds and runs"
