#!/usr/bin/env bash
# mtrace export against the real engine: real traces (python3 with callsites; a python3 that forks a
# child and starts a thread, one trace per process) exported, loaded into a private ClickHouse server
# with doc/export.md's statements, and every documented query checked figure for figure against
# mtrace report --json (check_queries.py), through the plain tables and through Distributed ones;
# and a trace written record by record with the cases real programs seldom show (MK_EDGE_TRACE).
#   usage: export_clickhouse.sh MTRACE DOC/export.md MK_EDGE_TRACE
# SKIP (77) when ClickHouse is not installed.
set -u
mtrace=$1
doc=$2
mk_edge=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/clickhouse_lib.sh"
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi
work=$(mktemp -d /tmp/mtrace-export-ch.XXXXXX)
cleanup() { ch_stop; rm -rf "$work"; }
trap cleanup EXIT
ch_start "$work/ch"
trap cleanup EXIT
cd "$work" || exit 1
unset MALLOC_PERTURB_

fail=0
pairs=()
# record NAME FRAMES CMD...: records with stacks of FRAMES frames (0: none), exports and reports
# every trace it wrote.
record() {
    local name=$1 frames=$2
    shift 2
    timeout -k 5 300 env PYTHONMALLOC=malloc "$mtrace" record --stacks "$frames" -o "$name.mtr" -- "$@" >/dev/null 2>"$name.err" ||
        { echo "FAIL: recording $name: $(tail -3 "$name.err")"; fail=1; return; }
    local i=0 trace
    while IFS= read -r trace; do
        timeout -k 5 300 "$mtrace" export "$trace" -o "$name.$i.out" 2>"$name.$i.export.err" ||
            { echo "FAIL: mtrace export $trace: $(cat "$name.$i.export.err")"; fail=1; }
        timeout -k 5 300 "$mtrace" report --json "$trace" >"$name.$i.json" ||
            { echo "FAIL: mtrace report --json $trace"; fail=1; }
        pairs+=("$name.$i.out:$name.$i.json")
        i=$((i + 1))
    done < <(sed -n 's/^mtrace: wrote //p' "$name.err")
    echo "$name: $i trace(s)"
}

record python 16 "$PY" -c '
import json
d = [{"k%d" % i: list(range(i % 10))} for i in range(1500)]
print(len(json.dumps(d)))'

record forked 16 "$PY" -c '
import os, threading
keep = []
def work(n):
    keep.append([str(i) * 3 for i in range(n)])
t = threading.Thread(target=work, args=(6000,))
t.start()
pid = os.fork()
if pid == 0:
    work(9000)
    os._exit(0)
work(3000)
t.join()
os.waitpid(pid, 0)
print(len(keep))'

# the python3 trace again (under another name and trace id), its callsites found with report's
# options: patterns skipped, no wrappers detected
cp python.mtr skip.mtr
timeout -k 5 300 "$mtrace" export skip.mtr -o skip.out --trace-id 7 --skip-frames 'PyUnicode_New,PyType_Generic*' --no-auto-skip 2>skip.err ||
    { echo "FAIL: mtrace export --skip-frames: $(cat skip.err)"; fail=1; }
timeout -k 5 300 "$mtrace" report --json --skip-frames 'PyUnicode_New,PyType_Generic*' --no-auto-skip skip.mtr >skip.json ||
    { echo "FAIL: mtrace report --json --skip-frames"; fail=1; }
pairs+=("skip.out:skip.json")

# without stacks: an empty mtrace_stacks, which is not loaded (an empty file: nothing to load)
record nostacks 0 "$PY" -c 'print(sorted(str(i) for i in range(3000))[-1])'

timeout -k 5 60 "$mk_edge" edge.mtr || { echo "FAIL: $mk_edge"; exit 1; }
timeout -k 5 60 "$mtrace" export edge.mtr -o edge.out 2>edge.err || { echo "FAIL: mtrace export edge.mtr: $(cat edge.err)"; fail=1; }
timeout -k 5 60 "$mtrace" report --json edge.mtr >edge.json || { echo "FAIL: mtrace report --json edge.mtr"; fail=1; }
pairs+=("edge.out:edge.json")

[ "$fail" = 0 ] || exit 1
[ "${#pairs[@]}" -ge 6 ] || { echo "FAIL: expected a trace for each of the 2 processes of 'forked' and 1 each for 'python', 'skip', 'nostacks' and the edge cases, got ${#pairs[@]}"; exit 1; }
timeout -k 5 600 "$PY" "$here/check_queries.py" "$CH_HTTP_PORT" "$doc" mtrace_test "${pairs[@]}"
