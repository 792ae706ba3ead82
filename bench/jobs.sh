#!/usr/bin/env bash
# mtrace report -j N (or info or pack: -c info, -c pack) against -j 1 on one large trace made here: bench/churn traced (THREADS workers,
# CALLS calls each: 4 x 20 M = 80 M records by default), then report run REPS times with each -j
# given, the runs paired (one of each -j in turn, so that a change in the machine's load falls on
# all of them alike). Prints records/s (records / wall seconds; user+sys CPU seconds beside), the
# medians over the runs, the speed-up as the median of the paired ratios against -j 1, the peak RSS,
# the load average before and after, the CPU seconds of the busiest thread (one more run per -j,
# under perf, where it can sample), and checks that every run's report is the same bytes as -j 1's.
#   usage: bench/jobs.sh [-c report|info|pack] [-t THREADS] [-n CALLS] [-r REPS] [-j "1 2 ..."] [-s STACKS] [-z] BUILD
# -s records STACKS frames per call (the report then makes its second pass to the peak); -z packs
# the trace first and reports on the packed file. BUILD is a build directory (cli/mtrace,
# bench/churn, libmtrace/libmtrace.so in it). The trace goes to $TMPDIR (or /tmp) and is removed.
set -eu
cmd=report threads=4 calls=20000000 reps=3 jobs="1 2" stacks=0 pack=0
while getopts c:t:n:r:j:s:z o; do
    case $o in
    c) cmd=$OPTARG ;;
    t) threads=$OPTARG ;;
    n) calls=$OPTARG ;;
    r) reps=$OPTARG ;;
    j) jobs=$OPTARG ;;
    s) stacks=$OPTARG ;;
    z) pack=1 ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# = 1 ] || { echo "usage: $0 [-c report|info|pack] [-t THREADS] [-n CALLS] [-r REPS] [-j \"1 2 ...\"] [-s STACKS] [-z] BUILD" >&2; exit 2; }
build=$(cd "$1" && pwd)
mtrace=$build/cli/mtrace
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mtrace-bench-jobs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# run J OUT: the command with -j J, its output (report, info) or packed trace (pack) in OUT.
run() {
    if [ "$cmd" = pack ]; then
        "$mtrace" pack -f -j "$1" "$trace" -o "$2" 2>/dev/null
    else
        "$mtrace" "$cmd" --json -j "$1" "$trace" >"$2"
    fi
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

trace=$tmp/churn.mtr
"$mtrace" record -s "$stacks" -o "$trace" -- "$build/bench/churn" -t "$threads" -n "$calls" >/dev/null 2>&1
if [ "$pack" = 1 ]; then
    "$mtrace" pack -o "$tmp/churn.mtz" "$trace" 2>/dev/null
    rm -f "$trace"
    trace=$tmp/churn.mtz
fi
records=$("$mtrace" info "$trace" | sed -n 's/^records *\([0-9]*\) .*/\1/p')
echo "mtrace $cmd; trace: churn -t $threads -n $calls, stacks $stacks$([ "$pack" = 1 ] && echo ", packed"):" \
    "$records records, $(stat -c %s "$trace") bytes; $(nproc) CPUs"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

for r in $(seq "$reps"); do
    for j in $jobs; do
        /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" bash -c "$(declare -f run); $(declare -p cmd mtrace trace); run $j $tmp/out.$j"
        read -r wall user sys rss <"$tmp/time"
        echo "$j $r $wall $user $sys $rss" >>"$tmp/runs"
        if ! cmp -s "$tmp/out.$j" "$tmp/out.$(set -- $jobs; echo "$1")"; then
            echo "FAIL: run $r: -j $j's report differs from -j $(set -- $jobs; echo "$1")'s" >&2
            exit 1
        fi
    done
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"

# One more run of each -j under perf (when it can sample here): the CPU seconds of its busiest
# thread, from task-clock samples per thread. On a loaded machine the wall times say how much CPU
# the threads got; CPU(-j base) / busiest thread's CPU says what the split of the work allows.
busiest() {
    perf record -q -F 997 -e task-clock -o "$tmp/perf.data" -- bash -c "$(declare -f run); $(declare -p cmd mtrace trace); run $1 $tmp/perf.out" \
        >/dev/null 2>&1 || return 1
    perf script -i "$tmp/perf.data" -F tid 2>/dev/null | sort | uniq -c | sort -rn |
        awk 'NR == 1 { printf "%.2f\n", $1 / 997 }'
    rm -f "$tmp/perf.data"
}

base=$(set -- $jobs; echo "$1")
printf '%-4s %14s %10s %10s %12s %9s %14s\n' "-j" "records/s" "wall s" "CPU s" "speed-up" "RSS KiB" "busiest thr s"
for j in $jobs; do
    wall=$(awk -v j="$j" '$1 == j { print $3 }' "$tmp/runs" | median)
    cpu=$(awk -v j="$j" '$1 == j { print $4 + $5 }' "$tmp/runs" | median)
    rss=$(awk -v j="$j" '$1 == j { print $6 }' "$tmp/runs" | median)
    # The ratio of each run's wall time to the same round's base run, then their median.
    ratio=$(awk -v j="$j" -v b="$base" '$1 == b { w[$2] = $3 } $1 == j { v[$2] = $3 }
        END { for (r in v) print w[r] / v[r] }' "$tmp/runs" | median)
    top=$(busiest "$j" || echo -)
    printf '%-4s %14.0f %10.2f %10.2f %11.2fx %9s %14s\n' "$j" "$(awk -v r="$records" -v w="$wall" 'BEGIN { print r / w }')" "$wall" "$cpu" "$ratio" \
        "$rss" "$top"
done
echo "(medians of $reps runs; every report the same bytes as -j $base's)"
