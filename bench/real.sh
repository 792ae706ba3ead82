#!/usr/bin/env bash
# Tracing overhead on real programs from the Debian packages: native vs mtrace vs heaptrack,
# runs interleaved, wall-clock medians.
#
# usage: bench/real.sh [BUILD_DIR]        (default build-bench; relative to the repository root)
# environment:
#   REPS          repetitions (default 5)
#   WORKLOADS     subset of: true python python-malloc cc1 gcc (default: all)
#   NO_HEAPTRACK=1  skip heaptrack
#   ZSTD_LEVEL    level of the zstd stand-in compression of the last mtrace trace (default 19)
#   QUIET_IDLE, QUIET_MAX   before each run, wait up to QUIET_MAX s (default 60) for the CPUs to be
#                 QUIET_IDLE % idle (default 85; 0: don't wait): the machine may be shared
# Workloads:
#   true           /bin/true: the fixed cost of starting and finishing a trace
#   python         /usr/bin/python3.11 on a dict/list/str churn script (default pymalloc: only
#                  objects over 512 bytes reach malloc)
#   python-malloc  the same with PYTHONMALLOC=malloc: every object allocation is a malloc call
#   cc1            gcc's cc1 compiling format/trace_reader.c at -O2 (one process)
#   gcc            the gcc driver doing the same -c (gcc, cc1 and as: mtrace follows the fork and exec
#                  and writes one trace per process; heaptrack follows none, so no heaptrack row)
# Writes a markdown report to stdout and to bench/out/real.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${1:-build-bench}
REPS=${REPS:-5}
WORKLOADS=${WORKLOADS:-"true python python-malloc cc1 gcc"}
PY=/usr/bin/python3.11 # python3 on PATH may be a pyenv shim script: we want the real binary
SHIM=$ROOT/$BUILD/libmtrace/libmtrace.so
CLI=$BUILD/cli/mtrace
MTCOUNT=$BUILD/bench/mtcount
[ -e "$SHIM" ] || { echo "real.sh: $SHIM missing; build first: meson setup $BUILD && ninja -C $BUILD" >&2; exit 1; }
[ -x "$PY" ] || { echo "real.sh: $PY missing" >&2; exit 1; }
HAVE_HT=0; [ -z "${NO_HEAPTRACK:-}" ] && command -v heaptrack >/dev/null && HAVE_HT=1
HAVE_CLI=0; [ -x "$CLI" ] && HAVE_CLI=1
CC1=$(gcc -print-prog-name=cc1)
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || true)

TMP=$(mktemp -d "${TMPDIR:-/tmp}/mtreal.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
RAW=$TMP/runs.tsv   # workload tool rep wall_ns calls bytes cpu_ns
TIME=/usr/bin/time  # GNU time: user + system time of the whole process tree
[ -x "$TIME" ] || { echo "real.sh: $TIME (GNU time) missing" >&2; exit 1; }
: >"$RAW"

cat >"$TMP/work.py" <<'EOF'
d = {}
out = []
for i in range(1500000):
    k = "k%d" % (i % 40000)
    v = d.get(k)
    if v is None or i % 5 == 0:
        d[k] = ["x" * (i % 1500), i, (i, k), {"a": i}]
    else:
        v.append(k * (i % 7 + 1))
        if len(v) > 12:
            del v[4:]
    if i % 1000 == 0:
        out.append(",".join(sorted(d)[:200]))
        if len(out) > 50:
            out = out[25:]
print(len(d), len(out))
EOF


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
SRC=$ROOT/format/trace_reader.c
# cmd_for WORKLOAD: sets CMD (array) and ENVV (array of NAME=VALUE).
cmd_for() {
    ENVV=()
    case $1 in
    true) CMD=(/bin/true) ;;
    python) CMD=("$PY" "$TMP/work.py") ;;
    python-malloc) CMD=("$PY" "$TMP/work.py"); ENVV=(PYTHONMALLOC=malloc) ;;
    cc1) CMD=("$CC1" -quiet ${MULTIARCH:+-imultiarch "$MULTIARCH"} -O2 -I"$ROOT/include" "$SRC" -o "$TMP/out.s") ;;
    gcc) CMD=(gcc -O2 -I"$ROOT/include" -c "$SRC" -o "$TMP/out.o") ;;
    *) echo "real.sh: unknown workload $1" >&2; exit 2 ;;
    esac
}

# calls_in FILES...: total call records over the traces.
calls_in() {
    local total=0 f v
    for f in "$@"; do
        v=""
        if [ "$HAVE_CLI" = 1 ]; then
            v=$("$CLI" info --json "$f" 2>/dev/null | "$PY" -c \
                'import json,sys; d=json.load(sys.stdin); print(d.get("call_records", d.get("records", "")))' \
                2>/dev/null || true)
        fi
        if [ -z "$v" ] && [ -x "$MTCOUNT" ]; then
            v=$("$MTCOUNT" "$f" 2>/dev/null | sed -n 's/^calls=\([0-9]*\).*/\1/p' || true)
        fi
        [ -n "$v" ] || { echo 0; return; }
        total=$((total + v))
    done
    echo "$total"
}

run() { # run WORKLOAD TOOL REP
    local w=$1 tool=$2 rep=$3 t0 t1 calls=0 bytes=0
    cmd_for "$w"
    rm -rf "$TMP/tr" && mkdir -p "$TMP/tr"
    wait_quiet
    case $tool in
    native)
        t0=$(date +%s%N); "$TIME" -f '%U %S' -o "$TMP/cpu" env "${ENVV[@]}" "${CMD[@]}" >/dev/null; t1=$(date +%s%N) ;;
    mtrace)
        t0=$(date +%s%N)
        "$TIME" -f '%U %S' -o "$TMP/cpu" env "${ENVV[@]}" LD_PRELOAD="$SHIM" MTRACE_OUT="$TMP/tr/t.mtr" "${CMD[@]}" >/dev/null
        t1=$(date +%s%N)
        calls=$(calls_in "$TMP"/tr/t.mtr*)
        bytes=$(cat "$TMP"/tr/t.mtr* | wc -c) ;;
    heaptrack)
        t0=$(date +%s%N)
        (cd "$TMP/tr" && "$TIME" -f '%U %S' -o "$TMP/cpu" env "${ENVV[@]}" heaptrack -o "$TMP/tr/ht" "${CMD[@]}" >"$TMP/ht.log" 2>&1)
        t1=$(date +%s%N)
        calls=$(sed -n 's/^[[:space:]]*allocations:[[:space:]]*\([0-9]*\).*/\1/p' "$TMP/ht.log" | head -1)
        bytes=$(cat "$TMP"/tr/ht* | wc -c) ;;
    esac
    local cpu
    cpu=$(awk '{printf "%.0f", ($1 + $2) * 1e9}' "$TMP/cpu")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$tool" "$rep" "$((t1 - t0))" "${calls:-0}" "$bytes" "$cpu" >>"$RAW"
    echo "  $w $tool rep=$rep wall_ms=$(((t1 - t0) / 1000000)) cpu_ms=$((cpu / 1000000)) calls=$calls bytes=$bytes" >&2
}

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
for rep in $(seq 1 "$REPS"); do
    for w in $WORKLOADS; do
        run "$w" native "$rep"
        run "$w" mtrace "$rep"
        if [ "$HAVE_HT" = 1 ] && [ "$w" != gcc ]; then
            run "$w" heaptrack "$rep"
        fi
    done
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

# Compressed sizes of each workload's traces (one more mtrace run, untimed).
SIZES=$TMP/sizes.tsv # workload calls raw zstd pack
: >"$SIZES"
for w in $WORKLOADS; do
    cmd_for "$w"
    rm -rf "$TMP/tr" && mkdir -p "$TMP/tr"
    env "${ENVV[@]}" LD_PRELOAD="$SHIM" MTRACE_OUT="$TMP/tr/t.mtr" "${CMD[@]}" >/dev/null
    calls=$(calls_in "$TMP"/tr/t.mtr*)
    raw=0 z=0 pk=0 pkok=$HAVE_CLI
    for f in "$TMP"/tr/t.mtr*; do
        raw=$((raw + $(stat -c %s "$f")))
        zstd -"${ZSTD_LEVEL:-19}" -q -f "$f" -o "$TMP/z.zst"
        z=$((z + $(stat -c %s "$TMP/z.zst")))
        if [ "$pkok" = 1 ] && "$CLI" pack "$f" -o "$TMP/p.mtz" >/dev/null 2>&1; then
            pk=$((pk + $(stat -c %s "$TMP/p.mtz")))
        else
            pkok=0
        fi
        rm -f "$TMP/p.mtz" "$TMP/z.zst"
    done
    [ "$pkok" = 1 ] || pk=-1
    printf '%s\t%s\t%s\t%s\t%s\n' "$w" "$calls" "$raw" "$z" "$pk" >>"$SIZES"
done

mkdir -p bench/out
CPU=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
"$PY" - "$RAW" "$REPS" "$(nproc)" "$CPU" "$BUILD" "$LOAD0" "$LOAD1" "$HAVE_CLI" "$SIZES" "${ZSTD_LEVEL:-19}" <<'EOF' | tee bench/out/real.md
import statistics as st, sys, datetime, collections
raw, reps, ncpu, cpu, build, load0, load1, have_cli, sizes, zl = sys.argv[1:]
rows = collections.defaultdict(list)
order = []
for line in open(raw):
    w, tool, rep, wall, calls, b, cpuns = line.rstrip('\n').split('\t')
    if w not in order:
        order.append(w)
    rows[(w, tool)].append((int(wall), int(calls or 0), int(b or 0), int(cpuns)))
med = st.median
print(f"# mtrace overhead on real programs ({datetime.date.today()})\n")
print(f"Machine: {ncpu} CPUs, {cpu}. Build: `{build}`. Medians of {reps} interleaved repetitions "
      f"(load average {load0} before, {load1} after).\n")
print("calls: malloc-family call records in the mtrace trace(s) (for heaptrack: the allocations it "
      "reports, frees not included). added ns/call = (mtrace - native) / calls. Wall: elapsed time of "
      "the whole run; cpu: user + system time of the process tree (GNU time, 10 ms resolution), which "
      "leaves out waiting for a CPU on a busy machine; for heaptrack it includes heaptrack_interpret.\n")
print("| workload | native s | mtrace s | ratio | calls | added ns/call | native cpu s | mtrace cpu s | ratio (cpu) | added ns/call (cpu) | trace B/call | heaptrack s | ratio | heaptrack cpu s | ratio (cpu) | heaptrack allocs |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for w in order:
    n, m, h = rows.get((w, "native")), rows.get((w, "mtrace")), rows.get((w, "heaptrack"))
    nw = med([x[0] for x in n]) / 1e9
    mw = med([x[0] for x in m]) / 1e9
    nc = med([x[3] for x in n]) / 1e9
    mc = med([x[3] for x in m]) / 1e9
    calls = int(med([x[1] for x in m]))
    b = med([x[2] for x in m])
    added = f"{(mw - nw) * 1e9 / calls:+.0f}" if calls else "-"
    cadded = f"{(mc - nc) * 1e9 / calls:+.0f}" if calls else "-"
    cratio = f"{mc / nc:.2f}x" if nc else "-"
    bpc = f"{b / calls:.2f}" if calls else "-"
    hs = hr = hc = hcr = ha = "-"
    if h:
        hw = med([x[0] for x in h]) / 1e9
        hcpu = med([x[3] for x in h]) / 1e9
        hs, hr, ha = f"{hw:.3f}", f"{hw / nw:.2f}x", str(int(med([x[1] for x in h])))
        hc, hcr = f"{hcpu:.2f}", (f"{hcpu / nc:.2f}x" if nc else "-")
    print(f"| {w} | {nw:.3f} | {mw:.3f} | {mw / nw:.2f}x | {calls} | {added} | {nc:.2f} | {mc:.2f} | {cratio} "
          f"| {cadded} | {bpc} | {hs} | {hr} | {hc} | {hcr} | {ha} |")
print("\nPer repetition (wall ms): " + "; ".join(
    f"{w}/{t}: " + ",".join(str(x[0] // 1000000) for x in rows[(w, t)])
    for w in order for t in ("native", "mtrace", "heaptrack") if (w, t) in rows))
print(f"\n## Trace size\n\n| workload | calls | raw B/call | zstd -{zl} B/call | mtrace pack B/call |")
print("|---|---|---|---|---|")
for line in open(sizes):
    w, calls, r, z, pk = line.rstrip('\n').split('\t')
    calls, r, z, pk = int(calls), int(r), int(z), int(pk)
    if not calls:
        print(f"| {w} | 0 | - | - | - |")
        continue
    pks = f"{pk / calls:.2f}" if pk >= 0 else "n/a"
    print(f"| {w} | {calls} | {r / calls:.2f} | {z / calls:.2f} | {pks} |")
import os
noisy = os.path.join(os.path.dirname(raw), "noisy")
if os.path.exists(noisy):
    print(f"\n{sum(1 for _ in open(noisy))} run(s) started on a busy machine (no quiet moment within QUIET_MAX).")
if have_cli != "1":
    print("\nNote: the mtrace CLI was not built; call counts come from bench/mtcount (the reader API).")
EOF
