#!/usr/bin/env bash
# Compares recorder builds on churn in paired rounds: each round runs native, then churn under each
# given shim, and a shim's figure is its CPU ns per call minus the native run of the same round.
# On a shared machine whose speed drifts from minute to minute, the paired differences are far
# steadier than medians taken apart (a round takes a second or two).
# With -p every worker is pinned, worker i to the i-th CPU (churn -p): the CPUs of a virtual machine
# can differ in speed by tens of percent (bench/cpu_scaling.sh), and an unpinned 1-thread run lands
# on either, which widens the spread of the differences severalfold.
#   usage: bench/ab_overhead.sh [-b BUILD] [-t THREADS] [-r ROUNDS] [-n CALLS_PER_THREAD] [-p] [-i K] [-a 'CHURN ARGS'] SHIM.so...
# With -i K each run measures in-process instead (churn -A K, one thread): phases of K calls with
# recording paused and resumed in turn, on the same heap and pages; a shim's figure per round is its
# median added ns per call over those phases, and the native runs (where pausing does nothing) give
# the method's floor, near 0. On a large working set, runs of one build differ by ~100 ns per call
# from the pages they get, which pairing rounds does not remove; in-process phases do. A paused
# call still enters the shim, so this leaves out what loading the shim alone costs.
# -a passes more options to churn, e.g. -a '-l 8192 -S 65536' for the large working set (~100 MB live).
# A SHIM may be written VAR=VALUE@SHIM.so: that run also gets VAR=VALUE in its environment, e.g.
# MTRACE_CLOCK_EVERY=1@build/libmtrace/libmtrace.so to compare the recorder's clock policies.
#   defaults: BUILD build-bench (its bench/churn), 1 thread, 15 rounds, 5000000 calls per thread
# Prints per shim: the median added ns per call with its quartiles, and for each later shim its
# paired difference to the first one and in how many rounds it was lower.
set -eu
build=build-bench threads=1 rounds=15 calls=5000000 pin= extra= inproc=
while getopts b:t:r:n:pa:i: o; do
    case $o in
    b) build=$OPTARG ;;
    t) threads=$OPTARG ;;
    r) rounds=$OPTARG ;;
    n) calls=$OPTARG ;;
    p) pin=-p ;;
    a) extra=$OPTARG ;;
    i) inproc=$OPTARG ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-b BUILD] [-t THREADS] [-r ROUNDS] [-n CALLS] [-p] [-i K] [-a ARGS] SHIM.so..." >&2; exit 2; }
[ -z "$inproc" ] || extra="$extra -A $inproc"
churn=$build/bench/churn
[ -x "$churn" ] || { echo "ab_overhead.sh: $churn missing; build first: meson setup $build && ninja -C $build" >&2; exit 1; }
for arg in "$@"; do
    so=${arg##*@}
    [ -e "$so" ] || { echo "ab_overhead.sh: $so: no such file" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -n "$inproc" ]; then
    cpu_ns() { sed -n 's/^phases=.*added_median=\([-0-9.]*\).*/\1/p'; }
else
    cpu_ns() { sed -n 's/^threads=.*cpu_ns_per_call=//p'; }
fi
for _ in $(seq "$rounds"); do
    line="$("$churn" $pin $extra -t "$threads" -n "$calls" | cpu_ns)"
    for arg in "$@"; do
        so=${arg##*@} env=
        [ "$so" = "$arg" ] || env=${arg%@*}
        rm -f "$tmp/t.mtr"
        line="$line $(env $env LD_PRELOAD="$(realpath "$so")" MTRACE_OUT="$tmp/t.mtr" "$churn" $pin $extra -t "$threads" -n "$calls" | cpu_ns)"
    done
    echo "$line"
done | INPROC="$inproc" python3 -c '
import os, statistics as st, sys
names = sys.argv[1:]
inproc = bool(os.environ["INPROC"])
rows = [[float(x) for x in l.split()] for l in sys.stdin]
def q(v):
    v = sorted(v)
    return st.median(v), v[len(v) // 4], v[(3 * len(v)) // 4]
if inproc:
    m, lo, hi = q([r[0] for r in rows])
    print("native, in-process phases: %+.1f ns/call [quartiles %+.1f .. %+.1f] over %d rounds (the floor)" % (m, lo, hi, len(rows)))
else:
    print("native: median %.1f CPU ns/call over %d rounds" % (st.median(r[0] for r in rows), len(rows)))
for k, n in enumerate(names, 1):
    m, lo, hi = q([r[k] - (0 if inproc else r[0]) for r in rows])
    line = "%-40s added %+6.1f ns/call [quartiles %+.1f .. %+.1f]" % (n, m, lo, hi)
    if k > 1:
        d = [r[k] - r[1] for r in rows]
        line += "; vs %s %+.1f (lower in %d of %d rounds)" % (names[0], st.median(d), sum(x < 0 for x in d), len(d))
    print(line)' "$@"
