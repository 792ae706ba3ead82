#!/usr/bin/env bash
# Recorder overhead on churn, interleaved native / mtrace / mtrace with 16-frame stacks, medians of
# the CPU ns per call (user + system of the thread: robust on a shared machine).
#   usage: bench/quick_overhead.sh [BUILD] [THREADS] [REPS] [CALLS_PER_THREAD]
set -eu
build=${1:-build}
threads=${2:-1}
reps=${3:-7}
calls=${4:-3000000}
churn=$build/bench/churn
shim=$build/libmtrace/libmtrace.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for _ in $(seq "$reps"); do
    "$churn" -t "$threads" -n "$calls" | sed 's/.*cpu_ns_per_call=/native /'
    rm -f "$tmp/t.mtr"
    LD_PRELOAD=$shim MTRACE_OUT=$tmp/t.mtr "$churn" -t "$threads" -n "$calls" | sed 's/.*cpu_ns_per_call=/mtrace /'
    rm -f "$tmp/t.mtr"
    LD_PRELOAD=$shim MTRACE_OUT=$tmp/t.mtr MTRACE_STACKS=16 "$churn" -t "$threads" -n "$calls" |
        sed 's/.*cpu_ns_per_call=/mtrace-stacks16 /'
done | python3 -c '
import sys, statistics
v = {}
for line in sys.stdin:
    k, x = line.split()
    v.setdefault(k, []).append(float(x))
base = statistics.median(v["native"])
for k in ("native", "mtrace", "mtrace-stacks16"):
    m = statistics.median(v[k])
    print("%-16s %7.1f cpu ns/call  added %+6.1f  ratio %.2fx" % (k, m, m - base, m / base))'
