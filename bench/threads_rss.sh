#!/usr/bin/env bash
# Memory of many short threads: tests/prog_shortthreads creates and joins N threads one at a time
# (each 100 calls, malloc and free in turn); its peak RSS (VmHWM, as the program reads it) natively
# and traced (mtrace record), then the trace's workload replayed on glibc (mtrace replay): the
# replay's max RSS and its own bookkeeping, in Kb and as a share of that max RSS. Medians over REPS
# runs of each, for each N.
#   usage: bench/threads_rss.sh [BUILD] [REPS] [N...]        (defaults build 3 200 2000)
set -eu
build=${1:-build}
reps=${2:-3}
shift $(($# < 2 ? $# : 2))
counts=${*:-200 2000}
prog=$build/tests/prog_shortthreads
mtrace=$build/cli/mtrace
[ -x "$prog" ] && [ -x "$mtrace" ] || { echo "threads_rss.sh: build first: meson setup $build && ninja -C $build" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
peak() { sed -n 's/^peak_rss_kb //p'; }
echo "threads_rss.sh: $(date -u '+%F %T') UTC, $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $reps runs each, N = $counts" >&2
for n in $counts; do
    for r in $(seq "$reps"); do
        native=$("$prog" "$n" | peak)
        rm -f "$tmp/t.mtr" "$tmp/t.wl"
        traced=$("$mtrace" record -o "$tmp/t.mtr" -- "$prog" "$n" 2>/dev/null | peak)
        "$mtrace" convert "$tmp/t.mtr" -o "$tmp/t.wl" --quiet
        "$mtrace" replay "$tmp/t.wl" --allocator glibc --quiet --json "$tmp/r.json" >/dev/null
        replay=$(python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(j["max_rss_kb"], j["bookkeeping_kb"])' "$tmp/r.json")
        echo "$n $native $traced $replay" | tee /dev/stderr
    done
done | python3 -c '
import statistics, sys
v = {}
for line in sys.stdin:
    n, *x = map(int, line.split())
    v.setdefault(n, []).append(x)
print("%6s %12s %12s %12s %16s %10s" % ("N", "native Kb", "traced Kb", "replay Kb", "bookkeeping Kb", "share"))
for n, rows in v.items():
    med = [statistics.median(r[i] for r in rows) for i in range(4)]
    shares = [100.0 * r[3] / r[2] for r in rows]
    print("%6d %12.0f %12.0f %12.0f %16.0f %9.1f %%" % (n, med[0], med[1], med[2], med[3], statistics.median(shares)))'
