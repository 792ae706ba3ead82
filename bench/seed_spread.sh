#!/usr/bin/env bash
# Predicted against native peak RSS of tests/prog_partial at several seeds, on each allocator: the
# program's peak on an allocator that places large blocks first-fit in large segments (mimalloc)
# swings with the seed (92 to 125 MB), so a replay must start from the heap the program started
# from to follow it. Each seed is run natively (peak: the program's own VmHWM line), recorded once
# on glibc, converted, and replayed with BUILD's mtrace replay (predicted_peak_rss_kb); with
# OLD_BUILD, also with that build's mtrace-sim on the same workload, side by side. With
# MEASURED=1, also replayed from a second recording made with mmap_threshold=4096, where every
# large block is fresh memory and so has its written pages measured, not estimated: what better
# page evidence would give.
#   usage: bench/seed_spread.sh BUILD [OLD_BUILD]
#   environment: SEEDS (default "1 2 3 4 5 6"); RUNS (default "glibc jemalloc tcmalloc mimalloc"; a
#   glibc setting as glibc:mmap_threshold=4096); MEASURED=1
set -euo pipefail
build=$(cd "${1:?usage: bench/seed_spread.sh BUILD [OLD_BUILD]}" && pwd)
old=${2:+$(cd "$2" && pwd)}
SEEDS=${SEEDS:-"1 2 3 4 5 6"}
RUNS=${RUNS:-${ALLOCATORS:-"glibc jemalloc tcmalloc mimalloc"}}
MEASURED=${MEASURED:-0}
LIBDIR=/usr/lib/x86_64-linux-gnu
declare -A LIB=([glibc]="" [jemalloc]=$LIBDIR/libjemalloc.so.2 [tcmalloc]=$LIBDIR/libtcmalloc_minimal.so.4
                [mimalloc]=$LIBDIR/libmimalloc.so.2)
prog=$build/tests/e2e/prog_partial
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mtrace-seeds.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# predicted BUILD WL RUN: the replay's predicted peak in KiB.
predicted() {
    local args=(--allocator "${3%%:*}")
    [ "${3#*:}" = "$3" ] || args+=(--mallopt "${3#*:}")
    "$1/cli/mtrace" replay "$2" "${args[@]}" --json "$tmp/r.json" --quiet >/dev/null 2>"$tmp/err" ||
        { cat "$tmp/err" >&2; exit 1; }
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["predicted_peak_rss_kb"])' "$tmp/r.json"
}
pct() { python3 -c "import sys; print('%+.1f %%' % (100.0 * ($1 - $2) / $2))"; }
# record NAME SEED [ENV...]: a recording of the seed converted to $tmp/NAME.wl
record() {
    local name=$1 seed=$2
    shift 2
    rm -f "$tmp/$name.mtr" "$tmp/$name.wl"
    env "$@" "$build/cli/mtrace" record -o "$tmp/$name.mtr" -- "$prog" -n 3000 -s "$seed" >/dev/null 2>&1
    "$build/cli/mtrace" convert "$tmp/$name.mtr" -o "$tmp/$name.wl" >/dev/null 2>&1
}

echo "prog_partial -n 3000 -s SEED; peak RSS in KiB; $(date -u +%F), commit $(git -C "$build/.." rev-parse --short HEAD 2>/dev/null || echo ?)"
head='| run | seed | native | predicted | off |' rule='| --- | ---: | ---: | ---: | ---: |'
[ -z "$old" ] || { head="$head old build predicted | off |"; rule="$rule ---: | ---: |"; }
[ "$MEASURED" != 1 ] || { head="$head from measured pages | off |"; rule="$rule ---: | ---: |"; }
echo "$head"
echo "$rule"
for s in $SEEDS; do
    record "p$s" "$s"
    [ "$MEASURED" != 1 ] || record "m$s" "$s" MALLOC_MMAP_THRESHOLD_=4096
    for run in $RUNS; do
        a=${run%%:*} nenv=()
        [ "${run#*:}" = "$run" ] || nenv=("MALLOC_$(echo "${run#*:}" | cut -d= -f1 | tr a-z A-Z)_=${run#*=}")
        [ -z "${LIB[$a]}" ] || nenv+=("LD_PRELOAD=${LIB[$a]}")
        native=$(env "${nenv[@]}" "$prog" -n 3000 -s "$s" | sed -n 's/^peak_rss_kb //p')
        p=$(predicted "$build" "$tmp/p$s.wl" "$run")
        row="| $run | $s | $native | $p | $(pct "$p" "$native") |"
        if [ -n "$old" ]; then
            po=$(predicted "$old" "$tmp/p$s.wl" "$run")
            row="$row $po | $(pct "$po" "$native") |"
        fi
        if [ "$MEASURED" = 1 ]; then
            pm=$(predicted "$build" "$tmp/m$s.wl" "$run")
            row="$row $pm | $(pct "$pm" "$native") |"
        fi
        echo "$row"
    done
done
