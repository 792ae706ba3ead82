#!/usr/bin/env bash
# End-to-end: the page evidence. A program that writes a quarter of each large block is recorded on
# glibc's defaults, converted and replayed with mmap_threshold=4096, where every block is a mapping
# of its own and only the pages written count; the replay must land near the same program run
# natively with that setting, where writing every page (the old default) lands far above it.
# Then the same with every large block left live to the exit (-k, as a server keeps its buffers):
# their only count is the one the recorder takes at exit, without which trace2wl took them as
# written whole. Memory figures are stable run to run (no times are asserted); the bounds are wide.
#   usage: touched_pages.sh MTRACE_BINARY PROG_PARTIAL
set -u
# meson test sets MALLOC_PERTURB_, with which glibc fills every block it hands out or takes back:
# every page of every block would be written, natively and in the replay.
unset MALLOC_PERTURB_
mtrace=$1
prog=$2
work=$(mktemp -d /tmp/mtrace-touch.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

native=$(GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4096 "$prog" -n 1500 | sed -n 's/^peak_rss_kb //p')
[ -n "$native" ] || fail "the program printed no peak"
"$mtrace" record -o "$work/p.mtr" -- "$prog" -n 1500 >/dev/null 2>&1 || fail "record failed"
"$mtrace" info --json "$work/p.mtr" >"$work/info.json" || fail "info failed"
python3 - "$work/info.json" <<'PY' || exit 1
import json, sys
j = json.load(open(sys.argv[1]))
pages = j["events"].get("pages", 0)
if pages < 1500:
    print("FAIL: %d pages events for at least 1500 large blocks (made and ended)" % pages); sys.exit(1)
PY
"$mtrace" convert "$work/p.mtr" -o "$work/p.wl" >"$work/convert.out" 2>&1 || fail "convert failed: $(cat "$work/convert.out")"
grep -q '^  large blocks ' "$work/convert.out" || fail "convert says nothing of large blocks: $(cat "$work/convert.out")"
replay() {
    "$mtrace" replay "$work/p.wl" --allocator glibc --mallopt mmap_threshold=4096 --json "$work/$1.json" "${@:2}" \
        >"$work/$1.out" 2>&1 || fail "replay $1 failed: $(cat "$work/$1.out")"
    python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["max_rss_kb"]))' "$work/$1.json"
}
auto=$(replay auto)
pages=$(replay pages --touch pages)
grep -q '^touch: as the trace' "$work/auto.out" || fail "the replay does not say it used the evidence: $(cat "$work/auto.out")"
echo "native ${native} KiB, replay ${auto} KiB (every page: ${pages} KiB)"
python3 - "$native" "$auto" "$pages" <<'PY'
import sys
native, auto, pages = map(int, sys.argv[1:])
if not (0.7 * native <= auto <= 1.3 * native):
    print("FAIL: replay %d KiB, native %d KiB: off by more than 30 %%" % (auto, native)); sys.exit(1)
if pages < 2 * native:
    print("FAIL: writing every page gave %d KiB, native %d KiB: the test cannot tell" % (pages, native)); sys.exit(1)
PY

# Blocks live at exit: the count at exit (PAGES events with when 4) decides them.
knative=$(GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4096 "$prog" -n 0 -l 64 -k | sed -n 's/^peak_rss_kb //p')
[ -n "$knative" ] || fail "the program (-k) printed no peak"
"$mtrace" record -o "$work/k.mtr" -- "$prog" -n 0 -l 64 -k >/dev/null 2>&1 || fail "record (-k) failed"
"$mtrace" dump "$work/k.mtr" >"$work/k.dump" || fail "dump (-k) failed"
at_exit=$(awk '$3 == "pages" && $7 == 4' "$work/k.dump" | wc -l)
[ "$at_exit" -ge 64 ] || fail "$at_exit PAGES events at exit for 64 large blocks live at exit"
"$mtrace" convert "$work/k.mtr" -o "$work/k.wl" >"$work/kconvert.out" 2>&1 || fail "convert (-k) failed: $(cat "$work/kconvert.out")"
"$mtrace" replay "$work/k.wl" --allocator glibc --mallopt mmap_threshold=4096 --json "$work/k.json" >"$work/k.out" 2>&1 ||
    fail "replay (-k) failed: $(cat "$work/k.out")"
read -r kauto kpredicted < <(python3 -c 'import json,sys; j = json.load(open(sys.argv[1])); print(int(j["max_rss_kb"]), int(j["predicted_peak_rss_kb"]))' "$work/k.json")
echo "live at exit: native ${knative} KiB, replay ${kauto} KiB, predicted for the program ${kpredicted} KiB"
python3 - "$knative" "$kauto" "$kpredicted" <<'PY'
import sys
native, auto, predicted = map(int, sys.argv[1:])
if not (0.7 * native <= auto <= 1.3 * native):
    print("FAIL: blocks live at exit: replay %d KiB, native %d KiB: off by more than 30 %%" % (auto, native)); sys.exit(1)
# the program's peak as predicted (the replay's anonymous peak and the traced program's file pages)
if not (0.8 * native <= predicted <= 1.2 * native):
    print("FAIL: predicted peak %d KiB, native %d KiB: off by more than 20 %%" % (predicted, native)); sys.exit(1)
PY
