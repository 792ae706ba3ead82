#!/usr/bin/env bash
# An allocator that calls its own malloc and free by name (plt_malloc.so: calloc is its malloc and
# memset, realloc its malloc, memcpy and free) replays a workload of callocs and reallocs on several
# threads: its calls by name go to it, not to mtrace-sim's own heap, so its free never meets a block
# it did not make. Before, the replay died ("free(): invalid pointer").
#   usage: plt_allocator.sh MTRACE SIM_MKWL PLT_MALLOC
set -u
mtrace=$1 mkwl=$2 lib=$3
. "$(dirname "$0")/../report/lib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/mtrace-sim-plt.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
t 60 "$mkwl" mixed m.wl || { fail "sim_mkwl"; finish; }
t 120 "$mtrace" replay m.wl --allocator "$lib" --json r.json >out 2>err
rc=$?
[ $rc = 0 ] || fail "replay on plt_malloc.so: exit $rc: $(tail -n 3 err)"
"$PY" - r.json <<'PY' || fail "the replay's calls: $(head -c 300 r.json)"
import json, sys
calls = json.load(open(sys.argv[1]))["calls"]
assert calls["calloc"] > 0 and calls["realloc"] > 0, calls
PY
finish
