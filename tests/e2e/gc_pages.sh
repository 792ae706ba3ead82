#!/usr/bin/env bash
# End-to-end: a program's own mappings whose written pages are counted only by the madvise that gives
# them back at the end (tests/prog_gcpages.c: 64 mappings of 512 KiB written whole, a 16 MiB malloc'd
# block written and freed while they are held, then each mapping madvised away and unmapped, as
# node's garbage collector does). The replay writes a mapping's pages when it is made, as many as
# were ever seen resident in it: its peak holds the mappings and the block at once, as the traced
# program did. Before, a mapping unmapped with no page resident was written only just before its
# madvise, after the block was gone: the replay peaked at 32 MiB against the program's 48.
# Memory only, wide bounds; no times asserted.
#   usage: gc_pages.sh MTRACE_BINARY PROG_GCPAGES
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1 prog=$2
work=$(mktemp -d /tmp/mtrace-gcpages.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$mtrace" record -o "$work/p.mtr" -- "$prog" >"$work/out" 2>&1 || fail "record failed: $(cat "$work/out")"
grep -q "^dropped 64$" "$work/out" || fail "the traced program: $(cat "$work/out")"
"$mtrace" convert "$work/p.mtr" -o "$work/p.wl" >"$work/convert.out" 2>&1 || fail "convert failed: $(cat "$work/convert.out")"
"$mtrace" replay "$work/p.wl" --allocator glibc --json "$work/r.json" >"$work/replay.out" 2>&1 ||
    fail "replay failed: $(cat "$work/replay.out")"
python3 - "$work/r.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
traced, replay = j["source_peak_anon_kb"], j["max_anon_rss_kb"]
print("traced anon peak %d KiB, replay anon peak %d KiB, own mappings at most %d KiB resident" %
      (traced, replay, j["program_peak_resident_kb"]))
if traced < 44 * 1024:
    print("FAIL: the traced program's anonymous peak is %d KiB, not about 48 MiB" % traced); sys.exit(1)
if not 30 * 1024 <= j["program_peak_resident_kb"] <= 36 * 1024:
    print("FAIL: own mappings at most %d KiB resident, expected their 32 MiB" % j["program_peak_resident_kb"])
    sys.exit(1)
if not 0.9 * traced <= replay <= 1.15 * traced:
    print("FAIL: replay %d KiB against the traced program's %d KiB" % (replay, traced)); sys.exit(1)
PY
