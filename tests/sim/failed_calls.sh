#!/usr/bin/env bash
# Replayed calls that fail (the allocator returns NULL where the traced call got a block) are in the
# text summary, not only in the JSON, and the exit status says so: 3, for mtrace-sim and for
# mtrace replay (whose comparison table is still printed). A replay without failures exits 0 and
# has no such line. Before, both exited 0 and only the JSON's "failed" counts told.
#   usage: failed_calls.sh MTRACE MTRACE_SIM SIM_MKWL
set -u
mtrace=$1 sim=$2 mkwl=$3
. "$(dirname "$0")/../report/lib.sh"
work=$(mktemp -d /tmp/mtrace-sim-failed.XXXXXX)
trap 'rm -rf "$work"' EXIT
line='3 replayed calls failed (the allocator returned NULL where the traced call got a block): malloc 3'

"$mkwl" oom "$work/oom.wl" && "$mkwl" mixed "$work/ok.wl" || { fail "sim_mkwl"; finish; }

t 60 env "$replay_asan" "$sim" "$work/oom.wl" >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" = 3 ] || fail "mtrace-sim: exit $rc, expected 3: $(cat "$work/err")"
grep -qxF "$line" "$work/out" || fail "mtrace-sim: the summary does not say which calls failed: $(cat "$work/out")"

t 60 env "$replay_asan" "$sim" "$work/oom.wl" --quiet >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" = 3 ] || fail "mtrace-sim --quiet: exit $rc, expected 3"
grep -qxF "mtrace-sim: $line" "$work/err" || fail "mtrace-sim --quiet: stderr does not say so: $(cat "$work/err")"

t 60 env "$replay_asan" "$mtrace" replay "$work/oom.wl" --allocator glibc --allocator glibc --json "$work/r.json" \
    >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" = 3 ] || fail "mtrace replay: exit $rc, expected 3: $(cat "$work/err")"
[ "$(grep -cxF "$line" "$work/out")" = 2 ] || fail "mtrace replay: not one failed-calls line per run: $(cat "$work/out")"
grep -q "verdict against" "$work/out" || fail "mtrace replay: no comparison table: $(cat "$work/out")"
[ -s "$work/r.glibc.json" ] && [ -s "$work/r.glibc-2.json" ] || fail "mtrace replay: result files missing: $(ls "$work")"

t 60 env "$replay_asan" "$mtrace" replay "$work/ok.wl" >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" = 0 ] || fail "mtrace replay of a workload that replays whole: exit $rc: $(cat "$work/err")"
grep -q "failed" "$work/out" && fail "mtrace replay of a workload that replays whole mentions failed calls"

finish
