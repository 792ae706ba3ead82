#!/usr/bin/env bash
# Replay fidelity: each program recorded once on glibc's defaults, then run natively and replayed
# on glibc, jemalloc, tcmalloc and mimalloc, and on glibc with mmap_threshold 4 KiB / 64 KiB / 1 MiB /
# 32 MiB and arena_max=1; peak RSS native against replayed (medians of REPS runs), the allocators'
# order by peak RSS, and each setting's change against glibc's defaults, native and replayed.
#
# usage: bench/fidelity.sh [BUILD_DIR]      (default build; relative to the repository root)
# environment:
#   REPS       runs of each native program and each replay (default 3)
#   PROGRAMS   subset of: partial python (default: both)
# Programs:
#   partial    tests/prog_partial.c: large blocks of which about a quarter is written (page evidence)
#   python     /usr/bin/python3.11 building and dropping dicts of strings (small blocks, pymalloc)
# Writes a markdown report to stdout and to bench/out/fidelity.md.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${1:-build}
REPS=${REPS:-3}
PROGRAMS=${PROGRAMS:-"partial python"}
CLI=$BUILD/cli/mtrace
SIM=$BUILD/simulator/mtrace-sim
PARTIAL=$BUILD/tests/e2e/prog_partial
LIBDIR=/usr/lib/x86_64-linux-gnu
declare -A LIB=([jemalloc]=$LIBDIR/libjemalloc.so.2 [tcmalloc]=$LIBDIR/libtcmalloc_minimal.so.4
                [mimalloc]=$LIBDIR/libmimalloc.so.2)
for f in "$CLI" "$SIM" "$PARTIAL" /usr/bin/time; do
    [ -x "$f" ] || { echo "fidelity.sh: $f missing; build first: meson setup $BUILD && ninja -C $BUILD" >&2; exit 1; }
done
unset MALLOC_PERTURB_ # glibc would write every byte of every block
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mtfid.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
mkdir -p bench/out
cat >"$TMP/work.py" <<'PY'
keep = []
for r in range(40):
    d = {("k%d" % i): ("v%d" % i) * (i % 7 + 1) for i in range(20000)}
    if r % 4 == 0:
        keep.append(d)
print(len(keep))
PY

cmd_of() {
    case $1 in
    partial) echo "$PARTIAL -n 3000" ;;
    python) echo "/usr/bin/python3.11 $TMP/work.py" ;;
    esac
}

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# native NAME ALLOC SETTING: peak RSS in KiB (median), run with the allocator preloaded or the tunable set
native() {
    local prog=$1 alloc=$2 setting=$3 env=()
    [ "$alloc" != glibc ] && env+=("LD_PRELOAD=${LIB[$alloc]}")
    [ -n "$setting" ] && env+=("GLIBC_TUNABLES=glibc.malloc.${setting}")
    for _ in $(seq "$REPS"); do
        env "${env[@]}" /usr/bin/time -f '%M' -o "$TMP/time" $(cmd_of "$prog") >/dev/null 2>&1
        tail -n 1 "$TMP/time"
    done | median
}

# replayed WL ALLOC SETTING: the replay's peak RSS in KiB (median)
replayed() {
    local wl=$1 alloc=$2 setting=$3 args=()
    [ -n "$setting" ] && args+=(--mallopt "$setting")
    for _ in $(seq "$REPS"); do
        "$CLI" replay "$wl" --allocator "$alloc" "${args[@]}" --json "$TMP/r.json" --quiet >/dev/null 2>&1
        python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["max_rss_kb"])' "$TMP/r.json"
    done | median
}

{
echo "## Replay fidelity ($(date -u +%Y-%m-%d), REPS=$REPS, \`bench/fidelity.sh\`)"
echo
for prog in $PROGRAMS; do
    "$CLI" record -o "$TMP/$prog.mtr" -- $(cmd_of "$prog") >/dev/null 2>&1
    "$CLI" convert "$TMP/$prog.mtr" -o "$TMP/$prog.wl" >"$TMP/conv.out" 2>&1
    echo "### $prog: \`$(cmd_of "$prog" | sed "s|$TMP/||")\`"
    echo
    sed -n 's/^  large blocks *//p' "$TMP/conv.out" | sed 's/^/large blocks: /'
    echo
    echo "| run | native peak RSS KiB | replay peak RSS KiB | replay/native |"
    echo "| --- | ---: | ---: | ---: |"
    declare -A N=() R=()
    for alloc in glibc jemalloc tcmalloc mimalloc; do
        N[$alloc]=$(native "$prog" "$alloc" "")
        R[$alloc]=$(replayed "$TMP/$prog.wl" "$alloc" "")
        echo "| $alloc | ${N[$alloc]} | ${R[$alloc]} | $(awk -v r="${R[$alloc]}" -v n="${N[$alloc]}" 'BEGIN{printf "%.3f", r/n}') |"
    done
    for setting in mmap_threshold=4096 mmap_threshold=65536 mmap_threshold=1048576 mmap_threshold=33554432 arena_max=1; do
        N[$setting]=$(native "$prog" glibc "$setting")
        R[$setting]=$(replayed "$TMP/$prog.wl" glibc "$setting")
        echo "| glibc $setting | ${N[$setting]} | ${R[$setting]} | $(awk -v r="${R[$setting]}" -v n="${N[$setting]}" 'BEGIN{printf "%.3f", r/n}') |"
    done
    echo
    echo "Order by peak RSS, native: $(for a in glibc jemalloc tcmalloc mimalloc; do echo "${N[$a]} $a"; done | sort -n | awk '{printf "%s%s", (NR>1?" < ":""), $2}');" \
         "replayed: $(for a in glibc jemalloc tcmalloc mimalloc; do echo "${R[$a]} $a"; done | sort -n | awk '{printf "%s%s", (NR>1?" < ":""), $2}')"
    echo
    echo "| setting | native change | replayed change | difference (points) |"
    echo "| --- | ---: | ---: | ---: |"
    for setting in mmap_threshold=4096 mmap_threshold=65536 mmap_threshold=1048576 mmap_threshold=33554432 arena_max=1; do
        awk -v s="$setting" -v n="${N[$setting]}" -v n0="${N[glibc]}" -v r="${R[$setting]}" -v r0="${R[glibc]}" 'BEGIN {
            a = 100 * (n - n0) / n0; b = 100 * (r - r0) / r0
            printf "| %s | %+.1f %% | %+.1f %% | %.1f |\n", s, a, b, (a > b ? a - b : b - a) }'
    done
    echo
    unset N R
done
} | tee bench/out/fidelity.md
