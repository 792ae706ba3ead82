#!/usr/bin/env bash
# End-to-end: forks while another thread maps and unmaps memory (tests/prog_fork_maps.c, 500
# children, recorded into a directory: a trace per process). A child forked while the other thread
# held the recorder's lock on its list of mappings used to wait for it for ever at its first mmap
# (about one child in 150 here; each has a 3 s alarm, and the program counts those that did not
# exit 0). The child now starts with that lock free. Every child must exit 0.
#   usage: fork_maps.sh MTRACE_BINARY PROG_FORK_MAPS
set -u
unset MALLOC_PERTURB_
mtrace=$1 prog=$2
work=$(mktemp -d /tmp/mtrace-forkmaps.XXXXXX)
trap 'rm -rf "$work"' EXIT
MTRACE_QUIET=1 "$mtrace" record -o "$work/t/" -- "$prog" 500 >"$work/out" 2>"$work/err" ||
    { echo "FAIL: record: $(tail -n 3 "$work/err")"; exit 1; }
grep -q "^children 500 failed 0$" "$work/out" || { echo "FAIL: $(cat "$work/out")"; exit 1; }
echo "ok: $(cat "$work/out"), $(ls "$work/t" | wc -l) traces"
