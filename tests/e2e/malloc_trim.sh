#!/usr/bin/env bash
# End-to-end: malloc_trim is recorded, converted and replayed (tests/prog_trim.c: 48 MiB freed in the
# main arena behind pinned blocks, malloc_trim(0), then 48 MiB made in a second thread's arena). glibc
# gives the free pages inside the heap back, so the program peaks at about 48 MiB; a replay without
# the call keeps them and peaked at 96 MiB (+85 % before malloc_trim was replayed). Memory only,
# wide bounds; no times asserted.
#   usage: malloc_trim.sh MTRACE_BINARY PROG_TRIM
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1 prog=$2
work=$(mktemp -d /tmp/mtrace-trim.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$mtrace" record -o "$work/p.mtr" -- "$prog" trim >"$work/out" 2>&1 || fail "record failed: $(cat "$work/out")"
grep -q "^trim 1$" "$work/out" || fail "the traced program: $(cat "$work/out")"
"$mtrace" dump "$work/p.mtr" | grep -q " malloc_trim pad=0 = 1$" || fail "no malloc_trim record in the trace"
"$mtrace" convert -q "$work/p.mtr" -o "$work/p.wl" || fail "convert failed"
"$mtrace" dump "$work/p.wl" | grep -q " malloc_trim pad=0$" || fail "no malloc_trim op in the workload"
"$mtrace" replay "$work/p.wl" --allocator glibc --json "$work/r.json" >"$work/replay.out" 2>&1 ||
    fail "replay failed: $(cat "$work/replay.out")"
python3 - "$work/r.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
traced, predicted = j["source_peak_rss_kb"], j["predicted_peak_rss_kb"]
print("traced peak %d KiB, predicted %d KiB, malloc_trim calls replayed %d" %
      (traced, predicted, j["calls"]["malloc_trim"]))
if j["calls"]["malloc_trim"] != 1:
    print("FAIL: %d malloc_trim calls replayed, expected 1" % j["calls"]["malloc_trim"]); sys.exit(1)
if traced > 75 * 1024:
    print("FAIL: the traced program peaked at %d KiB: malloc_trim gave nothing back" % traced); sys.exit(1)
if not 0.85 * traced <= predicted <= 1.15 * traced:
    print("FAIL: predicted %d KiB against the traced program's %d KiB" % (predicted, traced)); sys.exit(1)
PY
