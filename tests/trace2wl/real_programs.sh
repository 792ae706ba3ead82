#!/usr/bin/env bash
# trace2wl on traces of real programs: python3 with two threads (every object through malloc) and gcc
# compiling a file of this project (gcc, cc1, as: one trace per process). Each trace is converted
# with mtrace convert, and mtrace info --json on the trace and on the workload must agree:
#   - per call, the workload's ops = the trace's calls, except free: trace frees - unknown frees -
#     double frees (frees of blocks made before tracing began, or freed twice, are dropped);
#   - the same threads; slots > 0 where anything was allocated; a workload that reads to its end;
#   - the workload replays (the replay checker, through t2w-model-check --workload: no deadlock,
#     slots used only while live, in every interleaving the WAITs allow).
#   usage: real_programs.sh MTRACE SOURCE_ROOT T2W_MODEL_CHECK [SHIM]
# Skipped (status 77) when SHIM is built with a sanitizer (it links the runtime, gcc, or leaves its
# symbols for the executable to define, clang): it cannot be preloaded into programs built without.
set -u
mtrace=$1
src=$2
checker=$3
shim=${4:-}
if [ -n "$shim" ] && { ldd "$shim" 2>/dev/null | grep -q 'lib[a-z]*san\.so' ||
    nm -D --undefined-only "$shim" 2>/dev/null | grep -q ' __[a-z]*san_'; }; then
    echo "skip: $shim is built with a sanitizer"
    exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/mtrace-t2w-real.XXXXXX")
trap 'rm -rf "$work"' EXIT
# shellcheck source=tests/lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3)

# check NAME CMD...: records CMD, converts every trace it wrote, compares the info of each pair.
check() {
    local name=$1
    shift
    if ! "$mtrace" record -o "$work/$name.%p.mtr" -- "$@" >"$work/$name.out" 2>"$work/$name.err"; then
        fail "$name: the traced command failed: $(grep -v '^mtrace: wrote ' "$work/$name.err" | head -3)"
        return
    fi
    local traces
    traces=$(sed -n 's/^mtrace: wrote //p' "$work/$name.err")
    if [ -z "$traces" ]; then
        fail "$name: no trace written"
        return
    fi
    local i=0 trace
    while IFS= read -r trace; do
        local wl=$work/$name.$i.mtw
        if ! "$mtrace" convert --quiet "$trace" -o "$wl" 2>"$work/convert.err"; then
            fail "$name: mtrace convert $trace: $(cat "$work/convert.err")"
            continue
        fi
        "$mtrace" info --json "$trace" >"$work/$name.$i.trace.json" || { fail "$name: mtrace info $trace"; continue; }
        "$mtrace" info --json "$wl" >"$work/$name.$i.wl.json" || { fail "$name: mtrace info $wl"; continue; }
        "$python" - "$name" "$work/$name.$i.trace.json" "$work/$name.$i.wl.json" <<'PY' || failures=$((failures + 1))
import json, sys
name, tpath, wpath = sys.argv[1:4]
t = json.load(open(tpath))
w = json.load(open(wpath))
problems = []
if t["kind"] != "trace" or w["kind"] != "workload":
    problems.append("kinds %r and %r" % (t["kind"], w["kind"]))
for op, n in t["calls"].items():
    got = w["calls"].get(op)
    want = n - w["unknown_frees"] - w["double_frees"] if op == "free" else n
    if got != want:
        problems.append("%s: %s ops in the workload, expected %s (trace: %d)" % (op, got, want, n))
if w["threads"] != t["threads"]:
    problems.append("threads: workload %d, trace %d" % (w["threads"], t["threads"]))
if w["events"]["thread_start"] != t["threads"]:
    problems.append("%d thread_start ops for %d threads" % (w["events"]["thread_start"], t["threads"]))
allocs = sum(w["calls"][op] for op in ("malloc", "calloc", "realloc", "reallocarray", "memalign",
                                          "posix_memalign", "aligned_alloc", "valloc", "pvalloc"))
if allocs and w["slots"] <= 0:
    problems.append("slots %d" % w["slots"])
if w["sync_points"] != w["events"]["wait"]:
    problems.append("sync_points %d, wait ops %d" % (w["sync_points"], w["events"]["wait"]))
calls = sum(t["calls"].values())
label = "%s (%s)" % (name, t["file"].rsplit("/", 1)[-1])
if problems:
    print("FAIL: %s: %s" % (label, "; ".join(problems)))
    sys.exit(1)
print("ok: %s: %d calls, %d threads, %d slots, %d waits, %d inversions, %d unknown frees, %d double frees, %d forced"
      % (label, calls, w["threads"], w["slots"], w["sync_points"], w["inversions"], w["unknown_frees"],
         w["double_frees"], w["forced"]))
PY
        if ! "$checker" --workload "$wl" --level 2 >"$work/check.out" 2>&1; then
            fail "$name: the workload of $trace does not replay:"
            grep -v '^Running\|^[0-9]*%' "$work/check.out" | head -5
        fi
        i=$((i + 1))
    done <<<"$traces"
}

# An interpreter with two threads that pass objects to each other.
PYTHONMALLOC=malloc check python "$python" -c '
import threading, queue
q = queue.Queue()
def worker():
    while True:
        item = q.get()
        if item is None:
            break
        item.append(sum(len(str(x)) for x in item))
t = threading.Thread(target=worker)
t.start()
for i in range(2000):
    q.put([str(j) * (i % 7) for j in range(i % 50)])
q.put(None)
t.join()
print("done")'

# The C compiler on a file of this project (gcc forks and execs cc1 and as: a trace for each).
check gcc gcc -O1 -I"$src/include" -c "$src/format/trace_reader.c" -o "$work/trace_reader.o"

finish
