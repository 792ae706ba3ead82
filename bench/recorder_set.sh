#!/usr/bin/env bash
# The recorder's reference set (issue 19): what libmtrace.so adds per call on the programs where it
# costs most, each in paired rounds (native, then traced, then traced with 16-frame stacks, one
# after another), pinned, CPU time (user + system), and the worst of them, which is the figure to
# quote:
#   cache      bench/churn -m: one thread, blocks of 16 B - 64 KiB, 1024 live (fits the caches)
#   two        bench/churn -t 2: two threads, each its own blocks
#   large      bench/churn -m -l 8192 -S 65536: one thread, a ~100 MB working set
#   cross      bench/churn -x -t 2: two threads freeing each other's blocks, as larson does
#   python     python3.11 on a dict/list churn with PYTHONMALLOC=malloc (every object a
#              malloc): a real program, its calls counted from the trace
# churn prints CPU ns per call itself; for python the figure is (traced CPU - native CPU) / calls.
# The sets of one churn thread (cache, large) are measured in-process by default (-i K: churn -A K,
# phases of K calls with recording paused and resumed in turn on the same heap and pages; the
# native column is then the paused phases' median): between two processes the large working set
# moves by ~100 ns per call with the pages it gets (bench/RESULTS.md). -i 0: as the other sets.
#
#   usage: bench/recorder_set.sh [-b BUILD] [-r ROUNDS] [-n CALLS_PER_THREAD] [-s SETS] [-i K] [SHIM.so]
#   defaults: BUILD build, 11 rounds, 2000000 calls, every set, -i 40000, BUILD/libmtrace/libmtrace.so
# Prints a markdown table: per set, the native figure and the median added ns per call with its
# quartiles, without and with stacks; then the worst set's median.
set -eu
build=build rounds=11 calls=2000000 sets="cache two large cross python" inproc=40000
while getopts b:r:n:s:i: o; do
    case $o in
    b) build=$OPTARG ;;
    r) rounds=$OPTARG ;;
    n) calls=$OPTARG ;;
    s) sets=$OPTARG ;;
    i) inproc=$OPTARG ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
shim=$(realpath "${1:-$build/libmtrace/libmtrace.so}")
churn=$build/bench/churn
cli=$build/cli/mtrace
py=/usr/bin/python3.11
for f in "$churn" "$shim" "$cli"; do
    [ -e "$f" ] || { echo "recorder_set.sh: $f missing; build first: meson setup $build && ninja -C $build" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# prints its own CPU time (user + system, seconds) last: no wrapper process runs under the shim
cat >"$tmp/work.py" <<'PY'
import time
d = {}
for i in range(400000):
    d[str(i)] = [i, str(i), (i, i)]
    if i % 3 == 0:
        d.pop(str(i // 2), None)
print(len(d), time.process_time())
PY

# one_round SET: "native traced stacks" ns per call (CPU)
churn_args() {
    case $1 in
    cache) echo "-m" ;;
    two) echo "-t 2" ;;
    large) echo "-m -l 8192 -S 65536" ;;
    cross) echo "-x -t 2" ;;
    esac
}
one_round() {
    local set=$1
    if [ "$set" = python ]; then
        local n t s c
        # a subshell pinned to CPU 0 that becomes python: the shim sees python alone
        n=$( (taskset -p -c 0 $BASHPID >/dev/null; PYTHONMALLOC=malloc exec "$py" "$tmp/work.py") | cut -d' ' -f2)
        rm -f "$tmp/t.mtr"
        t=$( (taskset -p -c 0 $BASHPID >/dev/null
            PYTHONMALLOC=malloc LD_PRELOAD="$shim" MTRACE_OUT="$tmp/t.mtr" exec "$py" "$tmp/work.py") | cut -d' ' -f2)
        c=$("$cli" info --json "$tmp/t.mtr" | python3 -c 'import json,sys; print(sum(json.load(sys.stdin)["calls"].values()))')
        rm -f "$tmp/t.mtr"
        s=$( (taskset -p -c 0 $BASHPID >/dev/null
            PYTHONMALLOC=malloc LD_PRELOAD="$shim" MTRACE_OUT="$tmp/t.mtr" MTRACE_STACKS=16 exec "$py" "$tmp/work.py") |
            cut -d' ' -f2)
        # as ns per call: the native figure is the whole program's CPU per call it makes
        python3 -c "import sys; n,t,s,c=map(float,sys.argv[1:]); print(n*1e9/c, t*1e9/c, s*1e9/c)" "$n" "$t" "$s" "$c"
        return
    fi
    local args
    args=$(churn_args "$set")
    local n t s
    if [ "$inproc" != 0 ] && { [ "$set" = cache ] || [ "$set" = large ]; }; then
        # in-process: the paused phases are the native figure, each run's own
        local a b
        rm -f "$tmp/t.mtr"
        # shellcheck disable=SC2086
        a=$(LD_PRELOAD="$shim" MTRACE_OUT="$tmp/t.mtr" "$churn" -p $args -n "$calls" -A "$inproc" | grep '^phases=')
        rm -f "$tmp/t.mtr"
        # shellcheck disable=SC2086
        b=$(LD_PRELOAD="$shim" MTRACE_OUT="$tmp/t.mtr" MTRACE_STACKS=16 "$churn" -p $args -n "$calls" -A "$inproc" |
            grep '^phases=')
        python3 -c '
import sys
f = lambda line: dict(kv.split("=") for kv in line.split())
a, b = f(sys.argv[1]), f(sys.argv[2])
n = float(a["paused_cpu_ns_per_call"])
print(n, n + float(a["added_median"]), n + float(b["added_median"]))' "$a" "$b"
        return
    fi
    # shellcheck disable=SC2086 # the arguments are words
    n=$("$churn" -p $args -n "$calls" | sed -n 's/^threads=.*cpu_ns_per_call=//p')
    rm -f "$tmp/t.mtr"
    # shellcheck disable=SC2086
    t=$(LD_PRELOAD="$shim" MTRACE_OUT="$tmp/t.mtr" "$churn" -p $args -n "$calls" | sed -n 's/^threads=.*cpu_ns_per_call=//p')
    rm -f "$tmp/t.mtr"
    # shellcheck disable=SC2086
    s=$(LD_PRELOAD="$shim" MTRACE_OUT="$tmp/t.mtr" MTRACE_STACKS=16 "$churn" -p $args -n "$calls" |
        sed -n 's/^threads=.*cpu_ns_per_call=//p')
    echo "$n $t $s"
}

echo "| set | native CPU ns per call | added | added, 16-frame stacks |"
echo "|---|---:|---:|---:|"
for set in $sets; do
    for _ in $(seq "$rounds"); do one_round "$set"; done >"$tmp/$set.rows"
    python3 - "$set" "$tmp/$set.rows" >>"$tmp/table" <<'PY'
import statistics as st, sys
name, path = sys.argv[1], sys.argv[2]
rows = [[float(x) for x in l.split()] for l in open(path) if l.strip()]
def q(v):
    v = sorted(v)
    return "%+.1f [%+.1f .. %+.1f]" % (st.median(v), v[len(v) // 4], v[(3 * len(v)) // 4])
add = [r[1] - r[0] for r in rows]
stk = [r[2] - r[0] for r in rows]
print("| %s | %.1f | %s | %s |\t%f\t%f" % (name, st.median(r[0] for r in rows), q(add), q(stk), st.median(add), st.median(stk)))
PY
    tail -n 1 "$tmp/table" | cut -f1
done
python3 - "$tmp/table" "$rounds" "$inproc" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
worst = max(rows, key=lambda r: float(r[1]))
worst_s = max(rows, key=lambda r: float(r[2]))
name = lambda r: r[0].split("|")[1].strip()
print("\nworst: +%.1f ns per call (%s); with 16-frame stacks +%.1f (%s); medians of %s paired rounds"
      % (float(worst[1]), name(worst), float(worst_s[2]), name(worst_s), sys.argv[2]))
if sys.argv[3] != "0":
    print("(cache and large in-process: churn -A %s, native = the paused phases)" % sys.argv[3])
PY
