#!/usr/bin/env bash
# Tracing overhead on the churn benchmark: native vs mtrace vs heaptrack vs glibc's mtrace(),
# at 1 and 2 threads, runs interleaved so that machine noise hits every variant alike.
#
# usage: bench/overhead.sh [BUILD_DIR]        (default build-bench; relative to the repository root)
# environment:
#   REPS     repetitions (default 5); figures are medians over them
#   N        calls per thread for native and mtrace (default 10000000)
#   NSLOW    calls per thread for heaptrack and glibc mtrace, with a native run of the same size
#            to compare against (default 2000000)
#   THREADS  thread counts (default "1 2")
#   ZSTD_LEVEL  level of the zstd stand-in compression (default 19)
#   STACKS   if set (e.g. 8), also runs mtrace with MTRACE_STACKS=$STACKS ("mtrace-stacks")
#   NO_HEAPTRACK=1, NO_GLIBC=1   skip those tools
#   QUIET_IDLE, QUIET_MAX   before each run, wait up to QUIET_MAX s (default 60) for the CPUs to be
#            QUIET_IDLE % idle (default 85; 0: don't wait): the machine may be shared
# Writes a markdown report to stdout and to bench/out/overhead.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${1:-build-bench}
REPS=${REPS:-5}
N=${N:-10000000}
NSLOW=${NSLOW:-2000000}
THREADS=${THREADS:-"1 2"}
ZSTD_LEVEL=${ZSTD_LEVEL:-19}
PY=/usr/bin/python3.11
[ -x "$PY" ] || PY=$(command -v python3)

CHURN=$BUILD/bench/churn
SHIM=$BUILD/libmtrace/libmtrace.so
CLI=$BUILD/cli/mtrace
MTCOUNT=$BUILD/bench/mtcount
GLIBC_DEBUG=/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0
for f in "$CHURN" "$SHIM"; do
    [ -e "$f" ] || { echo "overhead.sh: $f missing; build first: meson setup $BUILD && ninja -C $BUILD" >&2; exit 1; }
done
HAVE_HT=0; [ -z "${NO_HEAPTRACK:-}" ] && command -v heaptrack >/dev/null && HAVE_HT=1
HAVE_GLIBC=0; [ -z "${NO_GLIBC:-}" ] && [ -e "$GLIBC_DEBUG" ] && HAVE_GLIBC=1
HAVE_CLI=0; [ -x "$CLI" ] && HAVE_CLI=1

TMP=$(mktemp -d "${TMPDIR:-/tmp}/mtbench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
RAW=$TMP/runs.tsv   # tool threads rep calls_per_thread ns_per_call wall_ns cpu_ns_per_call
: >"$RAW"
NOTES=$TMP/notes.txt
: >"$NOTES"

now_ns() { date +%s%N; }

# wait_quiet: on a shared machine, waits (up to QUIET_MAX seconds, default 60) until the CPUs are at
# least QUIET_IDLE percent idle (default 85) over half a second; QUIET_IDLE=0 turns this off.
# Counts the waits that timed out in $TMP/noisy.
cpu_idle() { # prints "idle total" jiffies from /proc/stat
    awk '/^cpu /{t=0; for (i = 2; i <= NF; i++) t += $i; print $5 + $6, t}' /proc/stat
}
wait_quiet() {
    local idle=${QUIET_IDLE:-85} max=${QUIET_MAX:-60} start i0 t0 i1 t1
    [ "$idle" -gt 0 ] || return 0
    start=$(date +%s)
    while :; do
        read -r i0 t0 < <(cpu_idle); sleep 0.5; read -r i1 t1 < <(cpu_idle)
        [ $((t1 - t0)) -gt 0 ] && [ $(( (i1 - i0) * 100 / (t1 - t0) )) -ge "$idle" ] && return 0
        if [ $(($(date +%s) - start)) -ge "$max" ]; then
            echo x >>"$TMP/noisy"
            return 0
        fi
    done
}

# run TOOL THREADS REP CALLS -- command...: runs it, appends a row to $RAW.
run() {
    local tool=$1 th=$2 rep=$3 calls=$4
    shift 5
    local t0 t1 out line
    wait_quiet
    t0=$(now_ns)
    out=$("$@" 2>"$TMP/stderr") || { echo "overhead.sh: $tool failed:" >&2; cat "$TMP/stderr" >&2; exit 1; }
    t1=$(now_ns)
    line=$(printf '%s\n' "$out" | grep -m1 '^threads=') || { echo "overhead.sh: no result line from $tool" >&2; exit 1; }
    local nspc cpu
    nspc=$(printf '%s\n' "$line" | sed -n 's/.* ns_per_call=\([0-9.]*\).*/\1/p')
    cpu=$(printf '%s\n' "$line" | sed -n 's/.* cpu_ns_per_call=\([0-9.]*\).*/\1/p')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$th" "$rep" "$calls" "$nspc" "$((t1 - t0))" "${cpu:-$nspc}" >>"$RAW"
    echo "  $tool t=$th rep=$rep: $line wall_ms=$(((t1 - t0) / 1000000))" >&2
}

# trace_calls FILE FALLBACK: call records in an mtrace trace (CLI, else mtcount, else FALLBACK).
trace_calls() {
    local f=$1 fallback=$2 v=""
    if [ "$HAVE_CLI" = 1 ]; then
        v=$("$CLI" info --json "$f" 2>/dev/null | "$PY" -c \
            'import json,sys; d=json.load(sys.stdin); print(d.get("call_records", d.get("records", "")))' \
            2>/dev/null || true)
        [ -n "$v" ] && { echo "$v cli"; return; }
    fi
    if [ -x "$MTCOUNT" ]; then
        v=$("$MTCOUNT" "$f" 2>/dev/null | sed -n 's/^calls=\([0-9]*\).*/\1/p' || true)
        [ -n "$v" ] && { echo "$v mtcount"; return; }
    fi
    echo "$fallback params"
}

SIZES=$TMP/sizes.tsv  # threads what bytes calls source
: >"$SIZES"

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
for th in $THREADS; do
    echo "== $th thread(s), $REPS reps" >&2
    for rep in $(seq 1 "$REPS"); do
        run native "$th" "$rep" "$N" -- "$CHURN" -t "$th" -n "$N"
        rm -f "$TMP/x.mtr"*
        run mtrace "$th" "$rep" "$N" -- env LD_PRELOAD="$ROOT/$SHIM" MTRACE_OUT="$TMP/x.mtr" \
            "$CHURN" -t "$th" -n "$N"
        if [ -n "${STACKS:-}" ]; then
            rm -f "$TMP/s.mtr"*
            run mtrace-stacks "$th" "$rep" "$N" -- env LD_PRELOAD="$ROOT/$SHIM" MTRACE_OUT="$TMP/s.mtr" \
                MTRACE_STACKS="$STACKS" "$CHURN" -t "$th" -n "$N"
            rm -f "$TMP/s.mtr"*
        fi
        if [ "$HAVE_HT" = 1 ] || [ "$HAVE_GLIBC" = 1 ]; then
            run native-small "$th" "$rep" "$NSLOW" -- "$CHURN" -t "$th" -n "$NSLOW"
        fi
        if [ "$HAVE_HT" = 1 ]; then
            rm -f "$TMP/ht"*
            run heaptrack "$th" "$rep" "$NSLOW" -- heaptrack -o "$TMP/ht" "$CHURN" -t "$th" -n "$NSLOW"
        fi
        if [ "$HAVE_GLIBC" = 1 ]; then
            rm -f "$TMP/g.txt"
            run glibc-mtrace "$th" "$rep" "$NSLOW" -- env LD_PRELOAD="$GLIBC_DEBUG" MALLOC_TRACE="$TMP/g.txt" \
                "$CHURN" -g -t "$th" -n "$NSLOW"
        fi
    done
    # Sizes, from the last repetition's files.
    tr=$TMP/x.mtr
    read -r calls src < <(trace_calls "$tr" "$((th * N))")
    printf '%s\traw\t%s\t%s\t%s\n' "$th" "$(stat -c %s "$tr")" "$calls" "$src" >>"$SIZES"
    echo "  compressing the trace (zstd -$ZSTD_LEVEL) ..." >&2
    zstd -"$ZSTD_LEVEL" -q -f "$tr" -o "$TMP/x.zst"
    printf '%s\tzstd-%s\t%s\t%s\t%s\n' "$th" "$ZSTD_LEVEL" "$(stat -c %s "$TMP/x.zst")" "$calls" "$src" >>"$SIZES"
    rm -f "$TMP/x.zst"
    if [ "$HAVE_CLI" = 1 ]; then
        rm -f "$TMP/x.mtz"
        if "$CLI" pack "$tr" -o "$TMP/x.mtz" 2>"$TMP/stderr"; then
            printf '%s\tmtrace-pack\t%s\t%s\t%s\n' "$th" "$(stat -c %s "$TMP/x.mtz")" "$calls" "$src" >>"$SIZES"
        else
            echo "mtrace pack failed at $th thread(s): $(head -c 300 "$TMP/stderr")" >>"$NOTES"
        fi
        rm -f "$TMP/x.mtz"
    fi
    if [ "$HAVE_HT" = 1 ] && [ -e "$TMP/ht.zst" ]; then
        printf '%s\theaptrack-zst\t%s\t%s\tparams\n' "$th" "$(stat -c %s "$TMP/ht.zst")" "$((th * NSLOW))" >>"$SIZES"
    fi
    if [ "$HAVE_GLIBC" = 1 ] && [ -e "$TMP/g.txt" ]; then
        gcalls=$(grep -c '^@' "$TMP/g.txt" || true)
        printf '%s\tglibc-text\t%s\t%s\tlines\n' "$th" "$(stat -c %s "$TMP/g.txt")" "$gcalls" >>"$SIZES"
    fi
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
[ "$HAVE_CLI" = 1 ] || echo "$CLI not built: no 'mtrace pack' figure; call counts from ${MTCOUNT##*/} or the churn parameters." >>"$NOTES"
[ "$HAVE_HT" = 1 ] || echo "heaptrack skipped (not installed or NO_HEAPTRACK set)." >>"$NOTES"
[ "$HAVE_GLIBC" = 1 ] || echo "glibc mtrace skipped ($GLIBC_DEBUG missing or NO_GLIBC set)." >>"$NOTES"

mkdir -p bench/out
CPU=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
"$PY" - "$RAW" "$SIZES" "$NOTES" "$REPS" "$N" "$NSLOW" "$(nproc)" "$CPU" "$BUILD" "$LOAD0" "$LOAD1" <<'EOF' | tee bench/out/overhead.md
import statistics as st, sys, datetime, collections
raw, sizes, notes, reps, n, nslow, ncpu, cpu, build, load0, load1 = sys.argv[1:]
rows = collections.defaultdict(list)
for line in open(raw):
    tool, th, rep, calls, nspc, wall, cpuns = line.split('\t')
    rows[(tool, int(th))].append((int(calls), float(nspc), int(wall), float(cpuns)))
med = lambda xs: st.median(xs)
print(f"# mtrace overhead on churn ({datetime.date.today()})\n")
print(f"Machine: {ncpu} CPUs, {cpu}. Build: `{build}`. Medians of {reps} interleaved repetitions "
      f"(load average {load0} before, {load1} after).")
print(f"churn defaults otherwise (sizes 16..65536 log-uniform, 1024 live slots, 1/16 calloc, 1/16 realloc).")
print(f"native and mtrace: {n} calls/thread; heaptrack and glibc mtrace: {nslow} calls/thread, "
      f"compared with a native run of the same size (native-small).\n")
print("ns/call is per thread: a thread's wall time over its calls (measured inside churn, start-up and "
      "tear-down excluded); cpu ns/call the same with the thread's CPU time (user + system), which leaves "
      "out time spent waiting for a CPU on a busy machine. Wall s is the whole process, tool start-up and "
      "post-processing included. added = tool - its native baseline; ratio = tool / baseline.\n")
print("| tool | threads | calls/thread | wall s | ns/call median [min-max] | added | ratio | cpu ns/call | added (cpu) | ratio (cpu) |")
print("|---|---|---|---|---|---|---|---|---|---|")
base_of = {"mtrace": "native", "mtrace-stacks": "native", "heaptrack": "native-small",
           "glibc-mtrace": "native-small"}
order = ["native", "mtrace", "mtrace-stacks", "native-small", "heaptrack", "glibc-mtrace"]
ths = sorted({k[1] for k in rows})
for th in ths:
    for tool in order:
        r = rows.get((tool, th))
        if not r:
            continue
        ns = [x[1] for x in r]
        m = med(ns)
        c = med([x[3] for x in r])
        wall = med([x[2] for x in r]) / 1e9
        added = ratio = cadded = cratio = "-"
        b = rows.get((base_of.get(tool), th))
        if b:
            bm = med([x[1] for x in b])
            bc = med([x[3] for x in b])
            added, ratio = f"{m - bm:+.1f}", f"{m / bm:.2f}x"
            cadded, cratio = f"{c - bc:+.1f}", f"{c / bc:.2f}x"
        print(f"| {tool} | {th} | {r[0][0]} | {wall:.3f} | {m:.1f} [{min(ns):.1f}-{max(ns):.1f}] | {added} | {ratio} "
              f"| {c:.1f} | {cadded} | {cratio} |")
# per-rep paired deltas: robust to drift across reps
print("\nPaired per repetition (mtrace ns/call minus the native run just before it), median [min-max]:\n")
for th in ths:
    a, b = rows.get(("mtrace", th)), rows.get(("native", th))
    if a and b:
        d = [x[1] - y[1] for x, y in zip(a, b)]
        dc = [x[3] - y[3] for x, y in zip(a, b)]
        print(f"- {th} thread(s): wall {med(d):+.1f} ns/call [{min(d):+.1f} .. {max(d):+.1f}]; "
              f"cpu {med(dc):+.1f} [{min(dc):+.1f} .. {max(dc):+.1f}]")
print("\n## Trace size (from the last repetition's files)\n")
print("| threads | file | bytes | calls | B/call | calls counted by |")
print("|---|---|---|---|---|---|")
for line in open(sizes):
    th, what, b, calls, src = line.rstrip('\n').split('\t')
    b, calls = int(b), int(calls)
    print(f"| {th} | {what} | {b} | {calls} | {b / calls:.2f} | {src} |" if calls else f"| {th} | {what} | {b} | ? | - | {src} |")
print("\nheaptrack's cpu figures leave out the time its threads block on the pipe to heaptrack_interpret "
      "(another process); its wall figures are the ones to compare.")
import os
noisy = os.path.join(os.path.dirname(raw), "noisy")
if os.path.exists(noisy):
    print(f"\n{sum(1 for _ in open(noisy))} run(s) started on a busy machine (no quiet moment within QUIET_MAX).")
nl = [l.strip() for l in open(notes) if l.strip()]
if nl:
    print("\nNotes:\n")
    for l in nl:
        print(f"- {l}")
EOF
