#!/usr/bin/env bash
# End-to-end: the prints of reused blocks' pages. A program's large blocks made of heap memory that
# earlier blocks wrote whole show every page resident whatever the program writes; written a tenth
# each while the fresh ones are written half, the fresh blocks' share stood for them and a replay
# with mmap_threshold=4096 held a third more than the program (tests/prog_reused.c). Recorded on
# glibc's defaults, converted and replayed with that setting, the replay must land near the program
# run natively with it. Memory figures are stable run to run (no times are asserted).
#   usage: reused_pages.sh MTRACE_BINARY PROG_REUSED
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1 prog=$2
work=$(mktemp -d /tmp/mtrace-reused.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

native=$(GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4096 "$prog" | sed -n 's/^peak_rss_kb //p')
[ -n "$native" ] || fail "the program printed no peak"
"$mtrace" record -o "$work/r.mtr" -- "$prog" >/dev/null 2>&1 || fail "record failed"
# PAGES events at a block's end with the prints' three fields: the 128 reused blocks
"$mtrace" dump "$work/r.mtr" >"$work/dump" || fail "dump failed"
printed=$(awk '$3 == "pages" && $7 == 1 && NF == 10' "$work/dump" | wc -l)
[ "$printed" -ge 100 ] || fail "$printed blocks ended with their pages' prints, for 128 reused ones"
# of the pages compared, those that changed: a tenth of each block's (its first 2 or 3 of 23)
read -r sampled changed < <(awk '$3 == "pages" && $7 == 1 && NF == 10 {s += $8; c += $9} END {print s, c}' "$work/dump")
python3 - "$sampled" "$changed" <<'PY' || exit 1
import sys
s, c = map(int, sys.argv[1:])
if not (0.07 * s <= c <= 0.15 * s):
    print("FAIL: %d of %d pages printed changed, for a tenth written" % (c, s)); sys.exit(1)
PY
"$mtrace" convert "$work/r.mtr" -o "$work/r.wl" >"$work/convert.out" 2>&1 || fail "convert failed: $(cat "$work/convert.out")"
grep -q '^  large blocks .* by their prints' "$work/convert.out" || fail "convert says nothing of prints: $(cat "$work/convert.out")"
"$mtrace" replay "$work/r.wl" --allocator glibc --mallopt mmap_threshold=4096 --json "$work/r.json" >"$work/r.out" 2>&1 ||
    fail "replay failed: $(cat "$work/r.out")"
auto=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["predicted_peak_rss_kb"]))' "$work/r.json")
echo "native ${native} KiB, predicted ${auto} KiB"
python3 - "$native" "$auto" <<'PY'
import sys
native, auto = map(int, sys.argv[1:])
# the fresh blocks' share for the reused ones: about 1.3 x native
if not (0.88 * native <= auto <= 1.12 * native):
    print("FAIL: predicted %d KiB, native %d KiB: off by more than 12 %%" % (auto, native)); sys.exit(1)
PY
