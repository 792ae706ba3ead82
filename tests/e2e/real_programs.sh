#!/usr/bin/env bash
# End-to-end: real programs from Debian packages give the same output and exit status traced and
# untraced, and their traces read back with every call and no loss.
#   usage: real_programs.sh MTRACE_BINARY SOURCE_ROOT
set -u
# The programs' calls depend on the locale: under POSIX (a fresh Debian root shell sets no LANG) sort
# makes 23 calls and xz -T2 74, under C.UTF-8 297 and more, past the thresholds below. One locale,
# present on every Debian (libc-bin), whatever the shell that runs the tests.
export LC_ALL=C.UTF-8
mtrace=$1
src=$2
work=$(mktemp -d /tmp/mtrace-e2e.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# check NAME MIN_CALLS MIN_THREADS CMD...: runs CMD untraced and traced, compares, inspects the trace.
check() {
    local name=$1 min_calls=$2 min_threads=$3
    shift 3
    "$@" >"$work/$name.native.out" 2>"$work/$name.native.err"
    local native_rc=$?
    "$mtrace" record -o "$work/$name.mtr" -- "$@" >"$work/$name.traced.out" 2>"$work/$name.traced.err"
    local traced_rc=$?
    if [ "$native_rc" != "$traced_rc" ]; then
        fail "$name: exit status $traced_rc traced, $native_rc untraced"
    fi
    if ! cmp -s "$work/$name.native.out" "$work/$name.traced.out"; then
        fail "$name: stdout differs traced and untraced"
        diff "$work/$name.native.out" "$work/$name.traced.out" | head -5
    fi
    # stderr may only gain mtrace's own "wrote" lines
    if ! diff <(cat "$work/$name.native.err") <(grep -v '^mtrace: wrote ' "$work/$name.traced.err") >/dev/null; then
        fail "$name: stderr differs traced and untraced"
        diff <(cat "$work/$name.native.err") <(grep -v '^mtrace: wrote ' "$work/$name.traced.err") | head -5
    fi
    # Every process of the command wrote a trace of its own (a compiler driver forks and execs).
    local traces
    traces=$(sed -n 's/^mtrace: wrote //p' "$work/$name.traced.err")
    if [ -z "$traces" ] || [ ! -f "$work/$name.mtr" ]; then
        fail "$name: no trace written"
        return
    fi
    local jsons=()
    local i=0
    while IFS= read -r trace; do
        "$mtrace" info --json "$trace" >"$work/$name.$i.json" || { fail "$name: mtrace info $trace failed"; return; }
        jsons+=("$work/$name.$i.json")
        i=$((i + 1))
    done <<<"$traces"
    python3 - "$name" "$min_calls" "$min_threads" "${jsons[@]}" <<'PY' || failures=$((failures + 1))
import json, sys
name, min_calls, min_threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
problems = []
total = threads = 0
for path in sys.argv[4:]:
    j = json.load(open(path))
    f = j["file"]
    if j["kind"] != "trace": problems.append("%s: kind is %r" % (f, j["kind"]))
    if j["truncated"]: problems.append("%s: truncated" % f)
    if j["lost_calls"]: problems.append("%s: %d calls lost" % (f, j["lost_calls"]))
    calls = sum(j["calls"].values())
    if calls != j["call_records"]: problems.append("%s: calls{} sums to %d, call_records is %d" % (f, calls, j["call_records"]))
    if j["events"]["thread_start"] != j["threads"]: problems.append("%s: thread_start events != threads" % f)
    # mtrace info states the recorder's clock and its cost from the header (MT_STR_CLOCK).
    if not j.get("clock", "").startswith("source="): problems.append("%s: no clock statement" % f)
    # A process that exec'd ends without the finish of a normal exit: its latest record is the exec.
    if not j["complete"] and not j["ended_at_exec"]: problems.append("%s: not complete and not ended at an exec" % f)
    total += calls
    threads = max(threads, j["threads"])
if total < min_calls: problems.append("only %d calls, expected at least %d" % (total, min_calls))
if threads < min_threads: problems.append("%d threads, expected at least %d" % (threads, min_threads))
if problems:
    print("FAIL: %s: %s" % (name, "; ".join(problems)))
    sys.exit(1)
print("ok: %s: %d calls in %d trace(s), up to %d threads" % (name, total, len(sys.argv) - 4, threads))
PY
}

# An interpreter: every Python object through malloc.
export PYTHONMALLOC=malloc
check python 100000 1 /usr/bin/python3 -c '
import json
d = [{"k%d" % i: list(range(i % 10))} for i in range(20000)]
print(len(json.dumps(d)))'
unset PYTHONMALLOC

# Ends through os._exit (libc's _exit, no destructors) in a forked child and in the parent, as
# multiprocessing workers and forking servers do: both traces are finished all the same.
check python-exit 1000 1 /usr/bin/python3 -c '
import os, sys
pid = os.fork()
if pid == 0:
    x = [str(i) for i in range(10000)]
    os._exit(0)
os.waitpid(pid, 0)
print("done")
sys.stdout.flush()
os._exit(7)'

# A compiler on a real source file (gcc drives cc1 and as: an exec'd and forked pipeline).
check gcc 10000 1 gcc -O2 -I"$src/include" -c "$src/format/trace_reader.c" -o "$work/trace_reader.o"

# A C++ program: the C++ compiler proper.
check gxx 1000 1 g++ -O1 -fsyntax-only -x c++ - <<<'#include <map>
#include <regex>
#include <iostream>
#include <string>
std::map<std::string, int> m; int main() { m["a"] = 1; return m.size(); }'

# Multithreaded tools: sort with worker threads, xz with two compression threads.
seq 1 300000 | sed 's/$/ line of text to sort/' | shuf --random-source=<(yes) >"$work/lines.txt"
check sort 100 2 sort --parallel=2 "$work/lines.txt"
head -c 20000000 /dev/zero | tr '\0' 'x' >"$work/big.txt"
check xz 10 2 xz -T2 -1 -c "$work/big.txt"

# A program running on another allocator: jemalloc answers malloc, the trace says so.
jemalloc=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
if [ -f "$jemalloc" ]; then
    LD_PRELOAD=$jemalloc check python-jemalloc 1000 1 /usr/bin/python3 -c 'print(sum(len(str(i)) for i in range(100000)))'
    if ! grep -q 'libjemalloc' <("$mtrace" info "$work/python-jemalloc.mtr"); then
        fail "python-jemalloc: the trace does not name jemalloc as the allocator"
    fi
else
    echo "skip: jemalloc not installed"
fi

# A relative output path holds for every process of the command, also one that changed directory:
# the shell's trace and that of the program it runs after cd land side by side.
mkdir -p "$work/rel" "$work/elsewhere"
(cd "$work/rel" && "$mtrace" record -o rel.mtr -- sh -c 'cd ../elsewhere && ls >/dev/null') 2>"$work/rel.err"
n=$(ls "$work/rel" | grep -c '^rel\.mtr')
if [ "$n" -lt 2 ] || [ -n "$(ls "$work/elsewhere")" ]; then
    fail "relative -o: $n trace(s) in the directory given, in the other: $(ls "$work/elsewhere" | tr '\n' ' ')"
fi
while IFS= read -r trace; do
    case $trace in "$work/rel/rel.mtr"*) ;; *) fail "relative -o: wrote $trace" ;; esac
done < <(sed -n 's/^mtrace: wrote //p' "$work/rel.err")

if [ "$failures" -ne 0 ]; then
    echo "$failures failure(s)"
    exit 1
fi
