#!/usr/bin/env bash
# Predicted against native peak RSS of tests/prog_partial at several seeds, on each allocator: the
# program's peak on an allocator that places large blocks first-fit in large segments (mimalloc)
# swings with the seed (92 to 125 MB), so a replay must start from the heap the program started
# from to follow it. Each seed is run natively (peak: the program's own VmHWM line), recorded once
# on glibc, converted, and replayed with BUILD's mtrace replay (predicted_peak_rss_kb); with
# OLD_BUILD, also with that build's mtrace-sim on the same workload, side by side.
#   usage: bench/seed_spread.sh BUILD [OLD_BUILD]
#   environment: SEEDS (default "1 2 3 4 5 6"), ALLOCATORS (default "glibc jemalloc tcmalloc mimalloc")
set -euo pipefail
build=$(cd "${1:?usage: bench/seed_spread.sh BUILD [OLD_BUILD]}" && pwd)
old=${2:+$(cd "$2" && pwd)}
SEEDS=${SEEDS:-"1 2 3 4 5 6"}
ALLOCATORS=${ALLOCATORS:-"glibc jemalloc tcmalloc mimalloc"}
LIBDIR=/usr/lib/x86_64-linux-gnu
declare -A LIB=([glibc]="" [jemalloc]=$LIBDIR/libjemalloc.so.2 [tcmalloc]=$LIBDIR/libtcmalloc_minimal.so.4
                [mimalloc]=$LIBDIR/libmimalloc.so.2)
prog=$build/tests/e2e/prog_partial
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mtrace-seeds.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# predicted BUILD WL ALLOCATOR: the replay's predicted peak in KiB.
predicted() {
    local args=(--allocator "$3")
    "$1/cli/mtrace" replay "$2" "${args[@]}" --json "$tmp/r.json" --quiet >/dev/null 2>"$tmp/err" ||
        { cat "$tmp/err" >&2; exit 1; }
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["predicted_peak_rss_kb"])' "$tmp/r.json"
}
pct() { python3 -c "import sys; print('%+.1f %%' % (100.0 * ($1 - $2) / $2))"; }

echo "prog_partial -n 3000 -s SEED; peak RSS in KiB; $(date -u +%F), commit $(git -C "$build/.." rev-parse --short HEAD 2>/dev/null || echo ?)"
printf '| allocator | seed | native | predicted | off |%s\n' "${old:+ old build predicted | off |}"
printf '| --- | ---: | ---: | ---: | ---: |%s\n' "${old:+ ---: | ---: |}"
for s in $SEEDS; do
    rm -f "$tmp/p$s.mtr"
    "$build/cli/mtrace" record -o "$tmp/p$s.mtr" -- "$prog" -n 3000 -s "$s" >/dev/null 2>&1
    "$build/cli/mtrace" convert "$tmp/p$s.mtr" -o "$tmp/p$s.wl" >/dev/null 2>&1
    for a in $ALLOCATORS; do
        native=$(env ${LIB[$a]:+LD_PRELOAD=${LIB[$a]}} "$prog" -n 3000 -s "$s" | sed -n 's/^peak_rss_kb //p')
        p=$(predicted "$build" "$tmp/p$s.wl" "$a")
        row="| $a | $s | $native | $p | $(pct "$p" "$native") |"
        if [ -n "$old" ]; then
            po=$(predicted "$old" "$tmp/p$s.wl" "$a")
            row="$row $po | $(pct "$po" "$native") |"
        fi
        echo "$row"
    done
done
