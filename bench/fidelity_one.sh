#!/usr/bin/env bash
# Replay fidelity of one program, any command: recorded once on glibc's defaults, then run natively
# and replayed once each on glibc, jemalloc, tcmalloc and mimalloc, and on glibc with mmap_threshold
# 4 KiB and 64 KiB and arena_max=1. Prints per run the native peak RSS (GNU time's %M, KiB), the
# replay's prediction of it (predicted_peak_rss_kb) and their ratio. A quick check for a program
# that bench/fidelity.sh does not know (one run each: no medians, no CPU times, no allocator order);
# the issue's rule is within 10 % of the native peak, or 2 MiB below 10 MiB.
#   usage: bench/fidelity_one.sh [-b BUILD] NAME -- COMMAND [ARGS...]
# The trace, workload and replay outputs stay in bench/out/one-NAME/ (removed first).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
if [ "${1:-}" = -b ]; then
    BUILD=$(cd "$2" && pwd)
    shift 2
fi
[ $# -ge 3 ] && [ "$2" = -- ] || { echo "usage: bench/fidelity_one.sh [-b BUILD] NAME -- COMMAND [ARGS...]" >&2; exit 2; }
NAME=$1
shift 2
CLI=$BUILD/cli/mtrace
PY=/usr/bin/python3.11
LIBDIR=/usr/lib/x86_64-linux-gnu
declare -A LIB=([jemalloc]=$LIBDIR/libjemalloc.so.2 [tcmalloc]=$LIBDIR/libtcmalloc_minimal.so.4
                [mimalloc]=$LIBDIR/libmimalloc.so.2)
for f in "$CLI" /usr/bin/time "$PY" "${LIB[@]}"; do
    [ -e "$f" ] || { echo "fidelity_one.sh: $f missing (build first; packages: scripts/setup.sh)" >&2; exit 1; }
done
unset MALLOC_PERTURB_ # glibc would write every byte of every block
OUT=$ROOT/bench/out/one-$NAME
rm -rf "$OUT"
mkdir -p "$OUT"
"$CLI" record -o "$OUT/p.mtr" -- "$@" >/dev/null 2>"$OUT/record.err" </dev/null ||
    { echo "fidelity_one.sh: recording $NAME failed:" >&2; cat "$OUT/record.err" >&2; exit 1; }
"$CLI" convert "$OUT/p.mtr" -o "$OUT/p.wl" >"$OUT/convert.out" 2>&1 ||
    { echo "fidelity_one.sh: converting $NAME failed:" >&2; cat "$OUT/convert.out" >&2; exit 1; }
printf '%-10s %-22s %10s %10s %7s\n' program run native_kb predicted ratio
for run in glibc jemalloc tcmalloc mimalloc mmap_threshold=4096 mmap_threshold=65536 arena_max=1; do
    env=()
    args=(--allocator glibc)
    case $run in
    glibc) ;;
    *=*) env=("GLIBC_TUNABLES=glibc.malloc.$run"); args+=(--mallopt "$run") ;;
    *) env=("LD_PRELOAD=${LIB[$run]}"); args=(--allocator "$run") ;;
    esac
    env "${env[@]}" /usr/bin/time -f '%M' -o "$OUT/time" "$@" >/dev/null 2>"$OUT/native.err" </dev/null ||
        { echo "fidelity_one.sh: $NAME ($run) failed natively:" >&2; cat "$OUT/native.err" "$OUT/time" >&2; exit 1; }
    native=$(tail -n 1 "$OUT/time")
    "$CLI" replay "$OUT/p.wl" "${args[@]}" --json "$OUT/r.json" --quiet >/dev/null 2>"$OUT/replay.err" ||
        { echo "fidelity_one.sh: replay of $NAME ($run) failed:" >&2; cat "$OUT/replay.err" >&2; exit 1; }
    "$PY" -c 'import json, sys
d = json.load(open(sys.argv[1])); native = int(sys.argv[4])
p = d.get("predicted_peak_rss_kb") or d["max_rss_kb"]
print("%-10s %-22s %10d %10d %7.3f" % (sys.argv[2], sys.argv[3], native, p, p / native))' \
        "$OUT/r.json" "$NAME" "$run" "$native"
done
