#!/usr/bin/env bash
# Tracing overhead per thread at 1 and at T threads, compared CPU by CPU.
#
# The CPUs of a virtual machine need not be equally fast: on the 2-vCPU machine this was written on,
# churn ran 10-70 % slower on one CPU than on the other (memset of an L2-sized buffer 40 % slower, an
# arithmetic loop 5 %), which one changing from one series to the next, and so does every
# nanosecond the shim adds. A 1-thread run mostly lands
# on one CPU and a T-thread run spreads over all of them, so "per thread at T threads against 1" mixes
# the shim's scaling with the CPUs' difference. Here every run is pinned: each round runs churn with
# 1 thread on each CPU in turn, then with T threads pinned one per CPU (churn -p), each natively and
# under the shim, and a thread's added cost at T threads is compared with the 1-thread run on the
# same CPU of the same round. Every worker makes the same calls (churn -q 0): churn's workers otherwise
# draw random sequences of their own, which differ by a few ns per call natively and under the shim.
#   usage: bench/cpu_scaling.sh [-b BUILD] [-t THREADS] [-r ROUNDS] [-n CALLS_PER_THREAD] [-d DIR] [SHIM.so]
#   defaults: BUILD build-bench, 2 threads, 15 rounds, 5000000 calls per thread, traces written in
#             a new directory under TMPDIR or /tmp (-d: under DIR, e.g. a tmpfs, for a run that
#             leaves the disk's interrupts out), SHIM BUILD/libmtrace/libmtrace.so
# Prints per CPU the medians of the added CPU ns per call at 1 and at T threads, of their paired
# difference (T minus 1; positive: worse per thread at T), in how many rounds T was no worse, and the
# native figures, then the same over all CPUs (the mean of the per-CPU figures of each round).
set -eu
build=build-bench threads=2 rounds=15 calls=5000000 dir=${TMPDIR:-/tmp}
while getopts b:t:r:n:d: o; do
    case $o in
    b) build=$OPTARG ;;
    t) threads=$OPTARG ;;
    r) rounds=$OPTARG ;;
    n) calls=$OPTARG ;;
    d) dir=$OPTARG ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || { echo "usage: $0 [-b BUILD] [-t THREADS] [-r ROUNDS] [-n CALLS] [-d DIR] [SHIM.so]" >&2; exit 2; }
churn=$build/bench/churn
shim=$(realpath "${1:-$build/libmtrace/libmtrace.so}")
[ -x "$churn" ] || { echo "cpu_scaling.sh: $churn missing; build first: meson setup $build && ninja -C $build" >&2; exit 1; }
[ -e "$shim" ] || { echo "cpu_scaling.sh: $shim: no such file" >&2; exit 1; }
mapfile -t cpus < <(python3 -c 'import os; print("\n".join(map(str, sorted(os.sched_getaffinity(0)))))')
[ "${#cpus[@]}" -ge "$threads" ] || { echo "cpu_scaling.sh: $threads threads need as many CPUs; ${#cpus[@]} allowed" >&2; exit 1; }
cpus=("${cpus[@]:0:$threads}")
tmp=$(mktemp -d "$dir/cpu_scaling.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Per-worker CPU ns per call, "cpu=ns" words in worker order.
per_thread() { sed -n 's/^thread=[0-9]* cpu=\([0-9]*\) .*cpu_ns_per_call=\(.*\)/\1=\2/p' | tr '\n' ' '; }
traced() { rm -f "$tmp/t.mtr"; LD_PRELOAD=$shim MTRACE_OUT=$tmp/t.mtr "$@"; }

echo "cpu_scaling.sh: $(date -u '+%F %T') UTC, CPUs ${cpus[*]}, $threads threads, $rounds rounds, $calls calls per thread, shim $shim, traces in $tmp" >&2
for r in $(seq "$rounds"); do
    line="round=$r"
    for c in "${cpus[@]}"; do
        line="$line n1:$(taskset -c "$c" "$churn" -q 0 -p -t 1 -n "$calls" | per_thread)"
        line="$line s1:$(traced taskset -c "$c" "$churn" -q 0 -p -t 1 -n "$calls" | per_thread)"
    done
    cpulist=$(IFS=,; echo "${cpus[*]}")
    for w in $(taskset -c "$cpulist" "$churn" -q 0 -p -t "$threads" -n "$calls" | per_thread); do line="$line nT:$w"; done
    for w in $(traced taskset -c "$cpulist" "$churn" -q 0 -p -t "$threads" -n "$calls" | per_thread); do line="$line sT:$w"; done
    echo "$line" | tee -a "$tmp/rounds" >&2
done
python3 - "$threads" "$tmp/rounds" <<'EOF'
import statistics as st, sys
threads, path = int(sys.argv[1]), sys.argv[2]
rounds = []
for l in open(path):
    d = {}
    for word in l.split()[1:]:
        kind, rest = word.split(":")
        cpu, ns = rest.split("=")
        d[(kind, int(cpu))] = float(ns)
    rounds.append(d)
cpus = sorted({c for d in rounds for (_, c) in d})
def row(name, a1, aT, n1, nT):
    diff = [y - x for x, y in zip(a1, aT)]
    print("%-8s native %6.1f | %6.1f   added %+6.1f | %+6.1f   T-1 %+5.1f [quartiles %+.1f .. %+.1f], no worse in %d of %d"
          % (name, st.median(n1), st.median(nT), st.median(a1), st.median(aT), st.median(diff),
             sorted(diff)[len(diff) // 4], sorted(diff)[(3 * len(diff)) // 4], sum(x <= 0 for x in diff), len(diff)))
print("CPU ns per call, medians over %d rounds; native and added: 1 thread | %d threads" % (len(rounds), threads))
per = {}
for c in cpus:
    n1 = [d[("n1", c)] for d in rounds]; s1 = [d[("s1", c)] for d in rounds]
    nT = [d[("nT", c)] for d in rounds]; sT = [d[("sT", c)] for d in rounds]
    a1 = [s - n for s, n in zip(s1, n1)]; aT = [s - n for s, n in zip(sT, nT)]
    per[c] = (a1, aT, n1, nT)
    row("cpu %d" % c, a1, aT, n1, nT)
mean = lambda k: [st.mean(per[c][k][i] for c in cpus) for i in range(len(rounds))]
row("all", mean(0), mean(1), mean(2), mean(3))
EOF
