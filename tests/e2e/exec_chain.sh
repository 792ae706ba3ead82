#!/usr/bin/env bash
# A process that execs goes on in a trace file of its own (the first name taken, the recorder appends
# ".PID", then ".PID.1" ...). Each trace that ended at an exec names the one that follows it:
# `mtrace info` (text and JSON), `mtrace report` (text and JSON) and a note on stderr from
# `mtrace convert`, whose workload is the program up to the exec only. A forked child's trace, of
# another pid, is never taken for a continuation; a continuation removed is said to be missing. The
# blocks live at an exec are leaks "at exit", not "at stop". The report of them all counts processes
# and threads once, and the traces that ended at an exec apart from unfinished ones.
#   usage: exec_chain.sh MTRACE_BINARY
set -u
unset MALLOC_PERTURB_
mtrace=$1
work=$(mktemp -d /tmp/mtrace-exec.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# env -> sh (forks ls, then execs sort): three images of one pid, and ls's trace beside them
printf '%s\n' c b a >"$work/in.txt"
timeout -k 5 120 "$mtrace" record -o "$work/t.mtr" -- env sh -c "ls / >/dev/null; exec sort '$work/in.txt'" \
    >"$work/out" 2>"$work/err" || { fail "record: $(cat "$work/err")"; exit 1; }
[ "$(cat "$work/out")" = "$(printf '%s\n' a b c)" ] || fail "sort's output changed: $(cat "$work/out")"
pid=$("$mtrace" info --json "$work/t.mtr" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
first=$work/t.mtr second=$work/t.mtr.$pid third=$work/t.mtr.$pid.1
for f in "$second" "$third"; do [ -f "$f" ] || fail "no trace $f: $(ls "$work")"; done
nfiles=$(ls "$work" | grep -c '^t\.mtr')
[ "$nfiles" = 4 ] || fail "expected 4 traces (env, sh, sort, ls): $(ls "$work")"

# info: each names the next; the last is complete
check_info() { # TRACE NEXT|""
    "$mtrace" info --json "$1" >"$work/info.json" || { fail "info $1"; return; }
    python3 - "$1" "$2" "$work/info.json" <<'PY' || failures=$((failures + 1))
import json, sys
path, want, j = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
if want:
    ok = j["ended_at_exec"] and not j["complete"] and j.get("continued_in") == want
else:
    ok = j["complete"] and not j["ended_at_exec"] and "continued_in" not in j
if not ok:
    print("FAIL: info %s: ended_at_exec %s complete %s continued_in %r, expected %r"
          % (path, j["ended_at_exec"], j["complete"], j.get("continued_in"), want))
    sys.exit(1)
PY
}
check_info "$first" "$second"
check_info "$second" "$third"
check_info "$third" ""
"$mtrace" info "$first" | grep -qxF "state         ended at an exec: the program went on in $second" ||
    fail "info text: $("$mtrace" info "$first" | grep '^state')"

# the report of them all: 4 traces of 2 processes (env's, which went on in sh, then sort; ls's) and
# 2 threads, 2 traces ended at an exec and none unfinished (before: "4 threads", 2 "incomplete")
"$mtrace" report "$work" >"$work/all.txt" 2>&1 || fail "report of the directory: $(tail -3 "$work/all.txt")"
grep -qx "all 4 traces (2 processes): 2 threads" "$work/all.txt" ||
    fail "report of the directory: $(grep -A3 '^all ' "$work/all.txt")"
grep -qx "ended at exec  2 traces: the process went on in the program it ran" "$work/all.txt" ||
    fail "report of the directory does not count the exec'd traces apart: $(grep -A3 '^all ' "$work/all.txt")"
grep -q "^not finished" "$work/all.txt" && fail "report of the directory calls an exec unfinished"
"$mtrace" report --json "$work" | python3 -c '
import json, sys
t = json.load(sys.stdin)["total"]
got = [t[k] for k in ("traces", "processes", "threads", "ended_at_exec_traces", "incomplete_traces")]
sys.exit(0 if got == [4, 2, 2, 2, 0] else "report --json of the directory: %r" % got)' || fail "report --json totals"

# report: text and JSON
"$mtrace" report "$second" >"$work/report.txt" 2>&1 || fail "report $second: $(cat "$work/report.txt")"
grep -qF "(the trace ended at an exec: the program went on in $third)" "$work/report.txt" ||
    fail "report text: $(sed -n 3p "$work/report.txt")"
grep -qF "killed or crashed" "$work/report.txt" && fail "report calls an exec a crash"
"$mtrace" report --json "$first" | python3 -c '
import json, sys
j = json.load(sys.stdin)
sys.exit(0 if j["ended_at_exec"] and j["continued_in"] == sys.argv[1] else 1)' "$second" || fail "report --json"

# convert: a note on stderr, with --quiet too; the workload is still written
"$mtrace" convert -q "$first" -o "$work/t.wl" >"$work/conv.out" 2>"$work/conv.err" || fail "convert: $(cat "$work/conv.err")"
[ -s "$work/t.wl" ] || fail "convert wrote no workload"
grep -qF "ended at an exec: the workload is the program up to it; the program went on in $second" "$work/conv.err" ||
    fail "convert's note: $(cat "$work/conv.err")"
"$mtrace" convert -q -f "$third" -o "$work/t.wl" 2>"$work/conv.err" || fail "convert $third"
[ -s "$work/conv.err" ] && fail "convert of a complete trace said: $(cat "$work/conv.err")"

# the continuation gone: said, not guessed (ls's trace, of another pid, is not taken)
rm -f "$second" "$third"
"$mtrace" info "$first" | grep -qF "ended at an exec (the program image was replaced; no trace of what followed" ||
    fail "info with the continuation removed: $("$mtrace" info "$first" | grep '^state')"
"$mtrace" report "$first" 2>&1 | grep -qF "no trace of what followed was found beside it" ||
    fail "report with the continuation removed"

# with stacks, the blocks live at an exec are leaks of a trace that ended as the program chose
# ("at exit"), not what a killed process left ("at stop")
timeout -k 5 60 "$mtrace" record --stacks 4 -o "$work/s.mtr" -- sh -c 'exec true' >/dev/null 2>&1 ||
    fail "record with stacks"
"$mtrace" report "$work/s.mtr" >"$work/s.txt" 2>&1 || fail "report with stacks: $(cat "$work/s.txt")"
grep -qF "killed or crashed" "$work/s.txt" && fail "report with stacks calls an exec a crash: $(grep -F killed "$work/s.txt")"
"$mtrace" report --json "$work/s.mtr" | python3 -c '
import json, sys
k = json.load(sys.stdin)["leak_kinds"]
sys.exit(0 if k["at_exit"]["blocks"] > 0 and k["at_stop"]["blocks"] == 0 else 1)' ||
    fail "leak kinds at an exec: $("$mtrace" report --json "$work/s.mtr" | grep -o '"leak_kinds":{[^}]*}[^}]*}[^}]*}')"

[ "$failures" = 0 ] || exit 1
echo "ok"
