#!/usr/bin/env bash
# End-to-end: pages of file mappings that become the program's anonymous memory when written
# (tests/prog_copied_pages.c: a library loaded with dlopen whose constructor writes 8 MiB of its
# data and .bss, then a 16 MiB file mapped private and writable with 10 MiB of it written, beside a
# 2 MiB malloc'd block; then the file unmapped and the library closed). The recorder writes the
# library's writable segment as a mapping made at the first RSS sample after the dlopen, and the
# private file mapping as one made, each counted at its end by its pages copied on write; the
# replay maps and writes those, and its predicted peak RSS lands near the program's native VmHWM
# (before, both were missing: the prediction was the heap's and the file pages alone). Memory
# only, wide bounds; no times asserted.
#   usage: copied_pages.sh MTRACE_BINARY PROG_COPIED_PAGES LIB_COPIED_PAGES
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1 prog=$2 lib=$3
work=$(mktemp -d /tmp/mtrace-copied.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "$0")/lib.sh"

head -c $((16 << 20)) /dev/zero >"$work/file"
"$prog" "$lib" "$work/file" >"$work/native" 2>&1 || fail "native run failed: $(cat "$work/native")"
native=$(sed -n 's/^vmhwm_kb //p' "$work/native")
"$mtrace" record -o "$work/p.mtr" -- "$prog" "$lib" "$work/file" >"$work/out" 2>&1 ||
    fail "record failed: $(cat "$work/out")"
for k in loaded file_opened file_mapped file_unmapped unloaded; do
    grep -q "^$k 1$" "$work/out" || fail "the traced program's $k: $(cat "$work/out")"
done
# the two mappings made and unmapped, each with its pages copied counted at its end
"$mtrace" dump "$work/p.mtr" >"$work/dump" 2>&1 || fail "dump failed: $(tail -n 3 "$work/dump")"
python3 - "$work/dump" <<'PY' || exit 1
import sys
maps, unmaps = {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 7 and f[2] == "vm" and f[3] in ("0", "1"):
        (maps if f[3] == "0" else unmaps)[int(f[4])] = (int(f[5]), int(f[6]))
print("mapped", maps, "unmapped", unmaps)
lib = [a for a, (n, _) in maps.items() if 8 << 20 <= n < 9 << 20]
fil = [a for a, (n, _) in maps.items() if n == 16 << 20]
if len(lib) != 1 or len(fil) != 1:
    print("FAIL: expected one mapping of the library's data (8 MiB and a page) and one of the file (16 MiB)")
    sys.exit(1)
for a, want, what in ((lib[0], 2048, "the library's data"), (fil[0], 2560, "the file's written part")):
    n = unmaps.get(a, (0, -1))[1]
    if not want <= n <= want + 8:
        print("FAIL: %s: %d pages counted at its end, expected %d" % (what, n, want)); sys.exit(1)
PY
"$mtrace" convert "$work/p.mtr" -o "$work/p.wl" >"$work/convert.out" 2>&1 || fail "convert failed: $(cat "$work/convert.out")"
"$mtrace" replay "$work/p.wl" --allocator glibc --json "$work/r.json" >"$work/replay.out" 2>&1 ||
    fail "replay failed: $(cat "$work/replay.out")"
# without the copied pages, the prediction is under half the native peak
near_native "$work/r.json" "$native" 0.1 || exit 1
