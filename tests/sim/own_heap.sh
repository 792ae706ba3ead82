#!/usr/bin/env bash
# The allocator under test sees the workload's calls and nothing else: mtrace-sim keeps its own
# blocks (the workload reader's tables, stdio's buffers, the thread vectors pthread_create
# allocates) in a heap of its own (simulator/sim_heap.c). Each program is recorded and converted,
# then replayed by mtrace-sim with libmtrace.so as the "allocator" (it defines malloc, free, calloc
# and realloc, and records what reaches it): that second trace holds the same calls per function as
# the workload, the same requested sizes, and per thread the same sequence of calls. Before, the
# replay added the reader's 8 blocks and the RSS sampler's thread vector, which moved every block
# after them (mimalloc: a replayed peak 17 % under to 30 % over the program's), and a free(NULL) for
# each traced call that failed.
#   usage: own_heap.sh MTRACE MTRACE_SIM LIBMTRACE PROG...
set -u
mtrace=$1 sim=$2 shim=$3
shift 3
. "$(dirname "$0")/../report/lib.sh"
work=$(mktemp -d /tmp/mtrace-sim-own-heap.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

# The replay makes a reallocarray an overflow check and the allocator's realloc, as glibc's does
# (simulator/sim_alloc.c): both sides count it as a realloc of the product.

# calls FILE: "function count" per line, from mtrace info --json.
calls() {
    "$mtrace" info --json "$1" | "$PY" -c 'import collections, json, sys
c = collections.Counter()
for k, v in json.load(sys.stdin)["calls"].items(): c["realloc" if k == "reallocarray" else k] += v
for k, v in sorted(c.items()): print(k, v)'
}

# sequence FILE: one line per thread, its calls in order as "function request" joined by ";", the
# lines sorted (threads are numbered apart in a trace and in a workload; a workload's dump names
# slots, a trace's pointers: only the function and what was asked are compared).
sequence() {
    "$mtrace" dump "$1" | "$PY" -c '
import re, sys
calls = ("malloc", "calloc", "realloc", "reallocarray", "memalign", "posix_memalign", "aligned_alloc",
         "valloc", "pvalloc", "free", "malloc_usable_size", "mallopt")
threads = {}
for line in sys.stdin:
    f = line.split()
    if len(f) < 3 or f[2] not in calls:
        continue
    # the request: sizes (NxS, N), alignments and mallopt values; not slots (#N) or pointers (0x...)
    asked = [w for w in f[3:] if w == "=" or not (w.startswith("#") or w.startswith("0x") or w.startswith("("))]
    asked = asked[:asked.index("=")] if "=" in asked else asked
    asked = [w for w in asked if w != "->"]
    if f[2] == "reallocarray":
        f[2] = "realloc"
        asked = [str(int(w.split("x")[0]) * int(w.split("x")[1])) if re.fullmatch(r"[0-9]+x[0-9]+", w) else w
                 for w in asked]
    threads.setdefault(f[0], []).append(" ".join([f[2]] + asked))
for seq in sorted(";".join(seq) for seq in threads.values()):
    print(seq)'
}

for prog in "$@"; do
    name=$(basename "$prog")
    args=()
    case $name in
    prog_threads) args=(300) ;;
    esac
    t 60 "$mtrace" record -o "$name.mtr" -- "$prog" "${args[@]}" >/dev/null 2>"$name.err" ||
        { fail "$name: record: $(tail -n 3 "$name.err")"; continue; }
    t 60 "$mtrace" convert "$name.mtr" -o "$name.wl" >/dev/null 2>"$name.err" ||
        { fail "$name: convert: $(tail -n 3 "$name.err")"; continue; }
    t 60 env MTRACE_OUT="$work/$name.replayed.mtr" LD_PRELOAD="$shim" "$sim" "$name.wl" --quiet \
        >/dev/null 2>"$name.err"
    rc=$?
    # 0, or 3 where calls that failed in the trace did not here
    [ $rc = 0 ] || [ $rc = 3 ] || { fail "$name: mtrace-sim exited $rc: $(tail -n 3 "$name.err")"; continue; }
    calls "$name.wl" >want.calls
    calls "$name.replayed.mtr" >got.calls
    [ -s want.calls ] || fail "$name: the workload has no calls"
    cmp -s want.calls got.calls ||
        fail "$name: the allocator saw other calls than the workload's: $(diff want.calls got.calls | head -6 | cut -c1-300)"
    sequence "$name.wl" >want.seq
    sequence "$name.replayed.mtr" >got.seq
    [ "$(wc -l <want.seq)" -gt 0 ] || fail "$name: no calls in the workload's dump"
    cmp -s want.seq got.seq ||
        fail "$name: the replayed calls differ from the workload's: $(diff want.seq got.seq | head -6 | cut -c1-300)"
done
finish
