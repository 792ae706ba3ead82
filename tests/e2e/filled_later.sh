#!/usr/bin/env bash
# End-to-end: large buffers the program fills over a while are written by the replay when the program
# wrote them (tests/prog_fill.c: a kept 16 MiB buffer, then frames of 24 MiB, each made while the one
# before is live, that one freed, the new one filled in 30 steps 10 ms apart). The recorder counts a
# large fresh block's pages at RSS samples and as other large blocks come and go; the replay holds one
# frame at a time, as the program did (about 40 MiB), where writing each frame as it was made held
# two (64 MiB, +50 %). Memory only, wide bounds; no times asserted.
#   usage: filled_later.sh MTRACE_BINARY PROG_FILL
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1 prog=$2
work=$(mktemp -d /tmp/mtrace-fill.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$mtrace" record -o "$work/p.mtr" -- "$prog" 3 >"$work/out" 2>&1 || fail "record failed: $(cat "$work/out")"
grep -q "^fill 3$" "$work/out" || fail "the traced program: $(cat "$work/out")"
counts=$("$mtrace" dump "$work/p.mtr" | awk '$3 == "pages" && $7 == 8' | wc -l)
[ "$counts" -ge 10 ] || fail "$counts page counts of live blocks in the trace, expected a frame's steps"
"$mtrace" convert "$work/p.mtr" -o "$work/p.wl" >"$work/conv" 2>&1 || fail "convert failed: $(cat "$work/conv")"
grep -q "[1-9][0-9]* written as the RSS samples rose" "$work/conv" ||
    fail "no block written over its life: $(grep 'large blocks' "$work/conv")"
for touch in auto pages; do
    "$mtrace" replay "$work/p.wl" --allocator glibc --touch "$touch" --json "$work/$touch.json" >"$work/replay.out" 2>&1 ||
        fail "replay ($touch) failed: $(cat "$work/replay.out")"
done
python3 - "$work/auto.json" "$work/pages.json" <<'PY'
import json, sys
auto, pages = (json.load(open(f)) for f in sys.argv[1:])
traced, predicted, every = auto["source_peak_rss_kb"], auto["predicted_peak_rss_kb"], pages["predicted_peak_rss_kb"]
print("traced peak %d KiB, predicted %d KiB, with every page written as made %d KiB" % (traced, predicted, every))
if not 0.85 * traced <= predicted <= 1.15 * traced:
    print("FAIL: predicted %d KiB against the traced program's %d KiB" % (predicted, traced)); sys.exit(1)
if every < traced + 16 * 1024:
    print("FAIL: --touch pages predicted %d KiB: the test no longer tells the two apart" % every); sys.exit(1)
PY
