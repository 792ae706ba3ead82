#!/usr/bin/env bash
# mtrace report's peak RSS on python3 traces with a large live set: a script that keeps ~600 000
# small objects alive (about 2.4 M blocks with PYTHONMALLOC=malloc, which sends every object to
# malloc) while it churns for a few seconds; recorded once without stacks and once with 16-frame
# stacks, then each report run REPS times per mtrace given (medians of GNU time's %M and %U).
#   usage: bench/report_memory.sh [-s SECONDS] [-r REPS] MTRACE...   (default 6 s, 3 reps)
# The first MTRACE records; compare builds by naming several (e.g. main's and a branch's).
set -eu
secs=6 reps=3
while getopts s:r: o; do
    case $o in
    s) secs=$OPTARG ;;
    r) reps=$OPTARG ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-s SECONDS] [-r REPS] MTRACE..." >&2; exit 2; }
py=/usr/bin/python3
tmp=$(mktemp -d /tmp/mtrace-report-memory.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/live.py" <<PY
import time
t0 = time.time()
keep = []
while time.time() - t0 < $secs:
    for i in range(10000):
        d = {"a": i, "b": str(i), "c": [i, i + 1]}
        if i % 10 == 0:
            keep.append(d)
    if len(keep) > 600000:
        del keep[:1000]
PY
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for stacks in 0 16; do
    trace=$tmp/live.$stacks.mtr
    opt=()
    [ "$stacks" = 0 ] || opt=(--stacks "$stacks")
    PYTHONMALLOC=malloc "$1" record "${opt[@]}" -o "$trace" -- "$py" "$tmp/live.py" 2>/dev/null
    calls=$("$1" info "$trace" | sed -n 's/^records *[0-9]* (\([0-9]*\) calls.*/\1/p')
    peak=$("$1" report "$trace" | sed -n 's/^peak live *//p')
    echo "stacks $stacks: $calls calls, peak live $peak"
    for m in "$@"; do
        for _ in $(seq "$reps"); do
            /usr/bin/time -f '%M %U' -o "$tmp/time" "$m" report "$trace" >/dev/null
            cat "$tmp/time"
        done >"$tmp/runs"
        echo "  $m: peak RSS $(cut -d' ' -f1 "$tmp/runs" | median) KiB, user $(cut -d' ' -f2 "$tmp/runs" | median) s (median of $reps)"
    done
done
