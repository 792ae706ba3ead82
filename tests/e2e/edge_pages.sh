#!/usr/bin/env bash
# End-to-end: edge blocks (doc/trace-format.md, "Page evidence"). A program whose 16 KiB blocks are
# written to 16 bytes short of their end, as a pool carves them, one in four to the end, is recorded
# on glibc's defaults, converted and replayed with mmap_threshold=4096, where each block is a mapping
# of five pages, the fifth for those 16 bytes alone. The replay must land near the same program run
# natively with that setting; writing every page of every block (--touch pages) lands a fifth above
# it, so the test can tell. Half the blocks are freed before the exit and half live to it: both
# kinds of evidence, at a block's end and at exit, are read. The same on jemalloc, which starts a
# block of 16 KiB at a random cache line of its first page: the replay must write the block's bytes
# up to its last 16, not its whole pages only. Memory figures are stable run to run.
#   usage: edge_pages.sh MTRACE_BINARY PROG_EDGE
set -u
unset MALLOC_PERTURB_ # glibc would write every byte of every block
mtrace=$1
prog=$2
work=$(mktemp -d /tmp/mtrace-edge.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

native=$(GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4096 "$prog" | sed -n 's/^peak_rss_kb //p')
[ -n "$native" ] || fail "the program printed no peak"
"$mtrace" record -o "$work/e.mtr" -- "$prog" >/dev/null 2>&1 || fail "record failed"
"$mtrace" dump "$work/e.mtr" >"$work/e.dump" || fail "dump failed"
# PAGES events of edge blocks: when 17 (at the end) or 20 (at exit), then whether the edge was written
read -r ended at_exit unwritten < <(awk '$3 == "pages" && ($7 == 17 || $7 == 20) {
    e += $7 == 17; x += $7 == 20; u += $8 == 0 } END { print e + 0, x + 0, u + 0 }' "$work/e.dump")
[ "$ended" -ge 1000 ] && [ "$at_exit" -ge 1000 ] ||
    fail "$ended edge events at a block's end and $at_exit at exit, for 1000 blocks of each"
[ "$unwritten" -ge 1450 ] && [ "$unwritten" -le 1550 ] || fail "$unwritten edge blocks unwritten, for 1500"
"$mtrace" convert "$work/e.mtr" -o "$work/e.wl" >"$work/convert.out" 2>&1 || fail "convert failed: $(cat "$work/convert.out")"
grep -Eq '^  edge blocks +20[0-9][0-9] \(1[45][0-9][0-9] with their last bytes unwritten\)' "$work/convert.out" ||
    fail "convert's edge blocks: $(cat "$work/convert.out")"
replay() {
    "$mtrace" replay "$work/e.wl" --json "$work/$1.json" "${@:2}" >"$work/$1.out" 2>&1 ||
        fail "replay $1 failed: $(cat "$work/$1.out")"
    python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["predicted_peak_rss_kb"]))' "$work/$1.json"
}
auto=$(replay auto --allocator glibc --mallopt mmap_threshold=4096)
pages=$(replay pages --allocator glibc --mallopt mmap_threshold=4096 --touch pages)
echo "native ${native} KiB, predicted ${auto} KiB (every page: ${pages} KiB)"
python3 - "$native" "$auto" "$pages" <<'PY'
import sys
native, auto, pages = map(int, sys.argv[1:])
if not (0.95 * native <= auto <= 1.05 * native):
    print("FAIL: predicted %d KiB, native %d KiB: off by more than 5 %%" % (auto, native)); sys.exit(1)
if pages < 1.12 * native:
    print("FAIL: writing every page gave %d KiB, native %d KiB: the test cannot tell" % (pages, native)); sys.exit(1)
PY

jemalloc=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
[ -f "$jemalloc" ] || fail "$jemalloc missing (Debian's libjemalloc2)"
jnative=$(LD_PRELOAD=$jemalloc "$prog" | sed -n 's/^peak_rss_kb //p')
[ -n "$jnative" ] || fail "the program on jemalloc printed no peak"
jauto=$(replay jemalloc --allocator jemalloc)
echo "jemalloc: native ${jnative} KiB, predicted ${jauto} KiB"
python3 - "$jnative" "$jauto" <<'PY'
import sys
native, auto = map(int, sys.argv[1:])
if not (0.95 * native <= auto <= 1.05 * native):
    print("FAIL: jemalloc: predicted %d KiB, native %d KiB: off by more than 5 %%" % (auto, native)); sys.exit(1)
PY
