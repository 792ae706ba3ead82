#!/usr/bin/env bash
# Cost of a handed-over sync point in the replay: `syncbench pingpong N` (thread 0 mallocs, thread 1
# waits for that and frees, thread 0 waits for the free: 2N-1 WAITs that each must wait for the other
# thread), replayed by mtrace-sim with all CPUs and with one (`taskset -c 0`). The replay's own
# malloc/free time (as it measures it) is subtracted from the wall time. Medians over REPS.
#   usage: bench/sync_handover.sh [BUILD] [N] [REPS]        (defaults build-bench 200000 5)
set -eu
build=${1:-build-bench}
n=${2:-200000}
reps=${3:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/bench/syncbench" pingpong "$n" "$tmp/pp.wl" >/dev/null
for pin in all 0; do
    for _ in $(seq "$reps"); do
        if [ "$pin" = all ]; then
            "$build/simulator/mtrace-sim" "$tmp/pp.wl" --quiet --touch none --json "$tmp/pp.json" >/dev/null
        else
            taskset -c "$pin" "$build/simulator/mtrace-sim" "$tmp/pp.wl" --quiet --touch none --json "$tmp/pp.json" >/dev/null
        fi
        python3 - "$tmp/pp.json" "$n" "$pin" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); waits = 2 * int(sys.argv[2]) - 1
ghz = j["cycles"] / j["wall_us"] / 1000.0
call_ns = sum(j["avg_cycles"][op] * j["calls"][op] for op in j["calls"]) / ghz
print(sys.argv[3], (j["wall_us"] * 1000 - call_ns) / waits / 1000, 100.0 * j["sync_sleeps"] / max(j["sync_waits"], 1))
PY
    done
done | python3 -c '
import os, statistics, sys
v = {}
for line in sys.stdin:
    pin, us, slept = line.split()
    v.setdefault(pin, []).append((float(us), float(slept)))
for pin, label in (("all", "%d CPUs" % os.cpu_count()), ("0", "1 CPU (taskset -c 0)")):
    us = [x[0] for x in v[pin]]; sl = [x[1] for x in v[pin]]
    print("%-22s %.3f us per handed-over wait (median of %d; min %.3f max %.3f), %.1f %% of waits slept"
          % (label, statistics.median(us), len(us), min(us), max(us), statistics.median(sl)))'
