#!/usr/bin/env bash
# End-to-end: a program's anonymous pages that are there before its main (tests/prog_static_pages.c:
# 16 MiB of a library's .bss written by its constructor, then an 8 MiB block malloc'd and written).
# No op replays them, but the prediction of the program's peak counts them: the traced program's
# anonymous pages at its first RSS sample, in place of the replay's own (its stack, its objects'
# data). Before, the predicted peak was the replay's 8 MiB plus file pages: 40 % of the program's.
# Memory only, wide bounds; no times asserted.
#   usage: static_pages.sh MTRACE_BINARY PROG_STATIC_PAGES
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1 prog=$2
work=$(mktemp -d /tmp/mtrace-static.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$mtrace" record -o "$work/p.mtr" -- "$prog" >"$work/out" 2>&1 || fail "record failed: $(cat "$work/out")"
grep -q "^static 1$" "$work/out" && grep -q "^block 1$" "$work/out" || fail "the traced program: $(cat "$work/out")"
"$mtrace" convert "$work/p.mtr" -o "$work/p.wl" >"$work/convert.out" 2>&1 || fail "convert failed: $(cat "$work/convert.out")"
"$mtrace" replay "$work/p.wl" --allocator glibc --json "$work/r.json" >"$work/replay.out" 2>&1 ||
    fail "replay failed: $(cat "$work/replay.out")"
grep -q "the program's anonymous pages at its start" "$work/replay.out" ||
    fail "the summary does not say what the prediction counts: $(cat "$work/replay.out")"
python3 - "$work/r.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
traced, predicted, start = j["source_peak_rss_kb"], j["predicted_peak_rss_kb"], j["source_start_anon_kb"]
print("traced peak %d KiB, predicted %d KiB; the program's anonymous pages at start %d KiB, the replay's own %d KiB" %
      (traced, predicted, start, j["own_static_kb"]))
if not 16 * 1024 <= start <= 20 * 1024:
    print("FAIL: the program's anonymous pages at its start: %d KiB, expected about 16 MiB" % start); sys.exit(1)
if not 0 < j["own_static_kb"] < 4 * 1024:
    print("FAIL: the replay's own static pages: %d KiB" % j["own_static_kb"]); sys.exit(1)
if not 0.9 * traced <= predicted <= 1.1 * traced:
    print("FAIL: predicted %d KiB against the traced program's %d KiB" % (predicted, traced)); sys.exit(1)
PY
