#!/usr/bin/env bash
# End-to-end: memory a program maps itself that the RSS does not count as anonymous
# (tests/prog_shmem.c: a shared anonymous mapping with 32 MiB written, a private one of 16 MiB
# written whose second half a file mapped with MAP_FIXED then replaces, and 16 MiB of malloc'd
# blocks; the shared mapping then grown by mremap). The shared mapping is shared memory, counted with
# the file pages: the recorder does not write it as the program's own anonymous memory, nor its
# mremap as a private mapping made, and the replay's predicted peak RSS (its anonymous
# peak plus the traced program's file-backed and shared pages) lands near the program's native
# VmHWM instead of counting those 32 MiB twice; the replay's summary says so ("file-backed and
# shared pages", the traced peak "(sampled)"). The file mapped over the private mapping unmaps
# that half. Then a file mapped shared, written and unmapped with no call between (a linker's output,
# as ld.gold writes it), recorded with RSS samples 100 s apart: the unmap takes a sample before it,
# due or not, and the predicted peak holds the file's dirty pages. Memory only, wide bounds; no
# times asserted.
#   usage: shared_memory.sh MTRACE_BINARY PROG_SHMEM
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1 prog=$2
work=$(mktemp -d /tmp/mtrace-shmem.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "$0")/lib.sh"

head -c $((8 << 20)) /dev/zero >"$work/file"
"$prog" "$work/file" >"$work/native" 2>&1 || fail "native run failed: $(cat "$work/native")"
native=$(sed -n 's/^vmhwm_kb //p' "$work/native")
"$mtrace" record -o "$work/p.mtr" -- "$prog" "$work/file" >"$work/out" 2>&1 || fail "record failed: $(cat "$work/out")"
for k in shared_mapped private_mapped file_opened file_mapped_fixed shared_grown shared_unmapped private_unmapped; do
    grep -q "^$k 1$" "$work/out" || fail "the traced program's $k: $(cat "$work/out")"
done
"$mtrace" report --json "$work/p.mtr" >"$work/report.json" 2>"$work/report.err" ||
    fail "report failed: $(cat "$work/report.err")"
python3 - "$work/report.json" <<'PY' || exit 1
import json, sys
o = json.load(open(sys.argv[1]))["own_memory"]
print("report: own memory", o)
# the private mapping alone is the program's own anonymous memory; the shared one is not
if o["maps"] != 1 or o["peak_mapped_bytes"] != 16 << 20:
    print("FAIL: own mappings %d, at most %d bytes; expected the private one alone" % (o["maps"], o["peak_mapped_bytes"]))
    sys.exit(1)
PY
"$mtrace" convert "$work/p.mtr" -o "$work/p.wl" >"$work/convert.out" 2>&1 || fail "convert failed: $(cat "$work/convert.out")"
"$mtrace" replay "$work/p.wl" --allocator glibc --json "$work/r.json" >"$work/replay.out" 2>&1 ||
    fail "replay failed: $(cat "$work/replay.out")"
# the summary's words: the traced peak is the highest RSS sample, and the pages added to the
# replay's anonymous peak hold the shared mapping as well as the file pages
grep -Eq "^traced program's peak RSS [0-9,]+ Kb \(sampled\); replay " "$work/replay.out" ||
    fail "the summary's traced peak line: $(grep "peak RSS" "$work/replay.out")"
grep -q "plus the traced program's file-backed and shared pages, [0-9,]* Kb" "$work/replay.out" ||
    fail "the summary's predicted peak line: $(grep "predicted peak" "$work/replay.out")"
# counted twice, the shared pages put the prediction 32 MiB (about 1.5x) above the native peak
near_native "$work/r.json" "$native" 0.15 || exit 1

# the file written through a shared mapping and unmapped: its pages are the peak, and only a sample
# taken before the unmap sees them
head -c $((32 << 20)) /dev/zero >"$work/out.bin"
"$prog" "$work/out.bin" write >"$work/native2" 2>&1 || fail "native write run failed: $(cat "$work/native2")"
native=$(sed -n 's/^vmhwm_kb //p' "$work/native2")
"$mtrace" record --rss-ms 100000 -o "$work/w.mtr" -- "$prog" "$work/out.bin" write >"$work/out2" 2>&1 ||
    fail "record write failed: $(cat "$work/out2")"
grep -q "^file_unmapped 1$" "$work/out2" || fail "the traced program's unmap: $(cat "$work/out2")"
"$mtrace" convert "$work/w.mtr" -o "$work/w.wl" >"$work/convert2.out" 2>&1 ||
    fail "convert write failed: $(cat "$work/convert2.out")"
"$mtrace" replay "$work/w.wl" --allocator glibc --json "$work/w.json" >"$work/replay2.out" 2>&1 ||
    fail "replay write failed: $(cat "$work/replay2.out")"
python3 - "$work/w.json" "$native" <<'PY'
import json, sys
j, native = json.load(open(sys.argv[1])), int(sys.argv[2])
predicted, traced = j["predicted_peak_rss_kb"], j["source_peak_rss_kb"]
print("file written: native VmHWM %d KiB, traced peak (sampled) %d KiB, predicted %d KiB (%.3f)" %
      (native, traced, predicted, predicted / native))
# without the sample before the unmap the samples never see the file's 32 MiB
if not 0.85 * native <= predicted <= 1.15 * native:
    print("FAIL: predicted %d KiB against native %d KiB" % (predicted, native)); sys.exit(1)
PY
