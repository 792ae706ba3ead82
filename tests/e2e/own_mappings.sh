#!/usr/bin/env bash
# End-to-end: memory a program maps itself. Python keeps its small objects in 1 MiB arenas it maps
# with mmap, which no malloc record shows: the recorder records those mappings, the converter makes
# them mmap and munmap ops, and the replay holds them, so that its peak RSS lands near the traced
# program's own (it reached 18 % of it before). Memory only, wide bounds; no times asserted.
#   usage: own_mappings.sh MTRACE_BINARY
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1
py=/usr/bin/python3
work=$(mktemp -d /tmp/mtrace-maps.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$py" ] || { echo "SKIP: $py missing"; exit 77; }

"$mtrace" record -o "$work/p.mtr" -- "$py" -c '
keep = [{("k%d" % i): ("v%d" % i) * 3 for i in range(20000)} for _ in range(10)]
print(sum(len(d) for d in keep))' >"$work/out" 2>&1 || fail "record failed: $(cat "$work/out")"
grep -q '^200000$' "$work/out" || fail "the traced program printed: $(cat "$work/out")"
"$mtrace" convert "$work/p.mtr" -o "$work/p.wl" >"$work/convert.out" 2>&1 || fail "convert failed: $(cat "$work/convert.out")"
grep -q '^  program mappings ' "$work/convert.out" || fail "no program mappings: $(cat "$work/convert.out")"
"$mtrace" replay "$work/p.wl" --allocator glibc --json "$work/r.json" >"$work/replay.out" 2>&1 ||
    fail "replay failed: $(cat "$work/replay.out")"
python3 - "$work/r.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
traced, replay, maps = j["source_peak_rss_kb"], j["max_rss_kb"], j["program_maps"]
print("traced %d KiB, replay %d KiB, %d mappings replayed" % (traced, replay, maps))
if maps < 5:
    print("FAIL: %d of the program's own mappings replayed" % maps); sys.exit(1)
if not 0.75 * traced <= replay <= 1.25 * traced:
    print("FAIL: replay %d KiB against the traced program's %d KiB" % (replay, traced)); sys.exit(1)
PY
