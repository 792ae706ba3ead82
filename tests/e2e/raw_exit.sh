#!/usr/bin/env bash
# End-to-end: a program that leaves by the exit_group system call (tests/prog_raw_exit.c), as Go
# programs do: the recorder's exit work does not run, so its own mappings still live have no count
# at the end, and trace2wl takes them from the RSS samples. Replayed on glibc, its predicted peak
# must land near its native one either way it ends; before, a 512 MiB reservation made PROT_NONE
# was replayed as written whole (16 times the native peak). Memory only, wide bounds.
#   usage: raw_exit.sh MTRACE_BINARY PROG_RAW_EXIT
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1 prog=$2
work=$(mktemp -d /tmp/mtrace-rawexit.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "$0")/lib.sh"

for how in return raw; do
    native=$("$prog" "$how" | sed -n 's/^peak_rss_kb //p')
    [ -n "$native" ] || fail "$how: the program printed no peak"
    "$mtrace" record -o "$work/$how.mtr" -- "$prog" "$how" >"$work/$how.out" 2>&1 || fail "$how: record failed: $(cat "$work/$how.out")"
    "$mtrace" convert "$work/$how.mtr" -o "$work/$how.wl" >"$work/$how.convert" 2>&1 ||
        fail "$how: convert failed: $(cat "$work/$how.convert")"
    grep '^  program mappings' "$work/$how.convert"
    "$mtrace" replay "$work/$how.wl" --allocator glibc --json "$work/$how.json" --quiet >"$work/$how.replay" 2>&1 ||
        fail "$how: replay failed: $(cat "$work/$how.replay")"
    echo "$how:"
    near_native "$work/$how.json" "$native" 0.15 || exit 1
done
