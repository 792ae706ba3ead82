#!/usr/bin/env bash
# End-to-end: memory a program manages outside malloc with madvise, brk and sbrk (tests/prog_ownmem.c:
# a 32 MiB mapping written, given back with MADV_DONTNEED, 4 MiB of it written again; then 48 MiB
# added to the break with sbrk and brk, written, given back). The recorder records the madvise and
# the break's pages, the converter makes them madvise, mmap and munmap ops, and the replay holds the
# break's 48 MiB and gives the mapping's pages back where the program did: its peak RSS lands near
# the traced program's (without them it held the 4 MiB the mapping had at its end, and no break).
# mtrace report and the replay say how much of it is the program's own, not the allocator's.
# Memory only, wide bounds; no times asserted.
#   usage: own_memory.sh MTRACE_BINARY PROG_OWNMEM
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1 prog=$2
work=$(mktemp -d /tmp/mtrace-ownmem.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$mtrace" record -o "$work/p.mtr" -- "$prog" >"$work/out" 2>&1 || fail "record failed: $(cat "$work/out")"
for k in mapped advised sbrk_grew brk_grew sbrk_shrank brk_shrank unmapped; do
    grep -q "^$k 1$" "$work/out" || fail "the traced program's $k: $(cat "$work/out")"
done
"$mtrace" report --json "$work/p.mtr" >"$work/report.json" 2>"$work/report.err" ||
    fail "report failed: $(cat "$work/report.err")"
python3 - "$work/report.json" <<'PY' || exit 1
import json, sys
o = json.load(open(sys.argv[1]))["own_memory"]
print("report: own memory", o)
want = {"maps": 3, "brk_maps": 2, "advises": 1, "peak_brk_bytes": 48 << 20, "peak_mapped_bytes": 80 << 20}
bad = {k: o[k] for k in want if o[k] != want[k]}
if bad:
    print("FAIL: mtrace report's own_memory: %s, expected %s" % (bad, want)); sys.exit(1)
# the break's phase is the anonymous peak: the mapping (80 MiB mapped, 4 MiB written) and the break
if not 48 * 1024 <= o["anon_peak_kb"] <= 64 * 1024 or o["live_at_anon_peak_bytes"] != 0:
    print("FAIL: anonymous peak %d KiB, malloc live %d bytes then" % (o["anon_peak_kb"], o["live_at_anon_peak_bytes"]))
    sys.exit(1)
PY
"$mtrace" convert "$work/p.mtr" -o "$work/p.wl" >"$work/convert.out" 2>&1 || fail "convert failed: $(cat "$work/convert.out")"
grep -q "^  program's own brk   at most 48.0 MiB" "$work/convert.out" || fail "no brk of 48 MiB: $(cat "$work/convert.out")"
grep -q "^  program's madvise   1 ops" "$work/convert.out" || fail "no madvise: $(cat "$work/convert.out")"
"$mtrace" replay "$work/p.wl" --allocator glibc --json "$work/r.json" >"$work/replay.out" 2>&1 ||
    fail "replay failed: $(cat "$work/replay.out")"
grep -q "of them by the program's brk/sbrk at most 49,152 Kb; 1 madvise ops dropped pages" "$work/replay.out" ||
    fail "the summary does not name the brk and the madvise: $(cat "$work/replay.out")"
python3 - "$work/r.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
traced, replay = j["source_peak_anon_kb"], j["max_anon_rss_kb"]
own, advises = j["program_peak_resident_kb"], j["program_advises"]
print("traced anon %d KiB, replay anon %d KiB, own mappings at most %d KiB resident, %d madvise" %
      (traced, replay, own, advises))
if advises != 1 or j["program_brk_peak_kb"] != 48 * 1024:
    print("FAIL: madvise %d, brk %d KiB" % (advises, j["program_brk_peak_kb"])); sys.exit(1)
# the break's 48 MiB, and the mapping's 32 MiB before the madvise: at least 48 MiB at once
if not 48 * 1024 <= own <= 56 * 1024:
    print("FAIL: the program's own mappings at most %d KiB resident" % own); sys.exit(1)
# the program makes no malloc call: the RSS less its own mappings is the replay's own, a few MiB
if j["rss_less_program_peak_kb"] > 8 * 1024:
    print("FAIL: %d KiB of the RSS not the program's own mappings" % j["rss_less_program_peak_kb"]); sys.exit(1)
if not 0.85 * traced <= replay <= 1.15 * traced:
    print("FAIL: replay %d KiB against the traced program's %d KiB" % (replay, traced)); sys.exit(1)
PY
