#!/usr/bin/env bash
# A stack cut at the recorder's frame limit is marked: prog_deep mallocs 40 calls deep and from a
# shallow function. Recorded with --stacks 8: the deep stack's STACK event ends with a frame 0 after
# 8 frames, its folded stack starts at [truncated], and the shallow one is whole (it starts at
# main, never [truncated]). With --stacks 64 both stacks are whole, from main. And 8192 distinct
# stacks all get a stack id.
#   usage: truncated_stacks.sh MTRACE PROG_DEEP
set -u
mtrace=$1
prog=$2
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d /tmp/mtrace-report-deep.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

t 60 "$mtrace" record --stacks 8 -o d8.mtr -- "$prog" 2>/dev/null || fail "record --stacks 8"
t 60 "$mtrace" dump d8.mtr >d8.txt || fail "dump"
# the deep stack: 8 frames and the marker
grep -Eq 'stack id=[0-9]+( 0x[0-9a-f]+){8} 0x0$' d8.txt || fail "no stack of 8 frames ending with 0x0: $(grep 'stack id' d8.txt)"
t 60 "$mtrace" report --folded d8.folded d8.mtr >/dev/null || fail "report --folded"
deep=$(grep -c '^\[truncated\];descend;descend;descend;descend;descend;descend;descend;descend 48$' d8.folded)
[ "$deep" = 1 ] || fail "--stacks 8: the deep stack is not '[truncated];descend x8 48' once: $(cat d8.folded)"
grep -q ';shallow 24$' d8.folded || fail "--stacks 8: no shallow stack: $(cat d8.folded)"
grep ';shallow 24$' d8.folded | grep -q '^\[truncated\]' && fail "--stacks 8: the shallow stack is marked truncated"
t 60 "$mtrace" report --json d8.mtr >d8.json || fail "report --json"
grep -q '"function": *"\[truncated\]"' d8.json || fail "--stacks 8: no [truncated] node in the JSON trees"

t 60 "$mtrace" record --stacks 64 -o d64.mtr -- "$prog" 2>/dev/null || fail "record --stacks 64"
t 60 "$mtrace" report --folded d64.folded d64.mtr >/dev/null || fail "report --folded (64)"
grep -q '\[truncated\]' d64.folded && fail "--stacks 64: a stack of 45 frames is marked truncated: $(cat d64.folded)"
grep -q ';descend 48$' d64.folded || fail "--stacks 64: no deep stack: $(cat d64.folded)"
# folded stacks start where the top-down tree does: at main, not the C runtime's _start above it
grep -q '^main;shallow 24$' d64.folded || fail "--stacks 64: the shallow stack does not start at main: $(cat d64.folded)"
grep -q '_start' d64.folded && fail "--stacks 64: a folded stack keeps the C runtime's frames: $(cat d64.folded)"

# 8192 distinct stacks (more than the stack table's first levels hold, libmtrace/shim_stacks.c):
# every malloc carries a stack id, each path its own, and every id used is defined by a STACK event;
t 60 "$mtrace" record --stacks 16 -o many.mtr -- "$prog" many >many.out 2>/dev/null || fail "record many"
# and the stack table's memory follows the stacks met: hashed over the whole 16 MiB table, 16 384
# stacks (a malloc's and a free's per path) touched nearly every page of it
growth=$(sed -n 's/^rss_anon_growth_kib //p' many.out)
[ -n "$growth" ] && [ "$growth" -lt 4096 ] || fail "many stacks: the traced program's RssAnon grew by '$growth' KiB, expected under 4 MiB"
t 60 "$mtrace" dump many.mtr >many.txt || fail "dump many"
all=$(grep -c ' malloc ' many.txt)
grep ' malloc ' many.txt | grep -o ' stack=[0-9]*' | sed 's/.*=//' | sort -u >used.txt
sed -n 's/.* stack id=\([0-9]*\).*/\1/p' many.txt | sort -u >defined.txt
without=$(grep ' malloc ' many.txt | grep -vc ' stack=')
[ "$without" = 0 ] || fail "many stacks: $without of $all mallocs without a stack id"
[ "$(wc -l <used.txt)" -ge 8192 ] || fail "many stacks: $(wc -l <used.txt) distinct stack ids on $all mallocs, 8192 paths"
[ -z "$(comm -13 defined.txt used.txt)" ] || fail "many stacks: ids used but never defined: $(comm -13 defined.txt used.txt | head -3)"
finish
