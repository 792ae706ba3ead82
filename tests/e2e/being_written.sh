#!/usr/bin/env bash
# End-to-end: a trace that a process is still recording into is not a whole trace. The traced shell
# makes its calls and then waits on a FIFO; meanwhile
# - info prints its counts, states "being written" (JSON being_written), says so on stderr, exit 3;
# - report, convert and pack refuse it: exit 1, one line naming the file and "still being written",
#   no output file; export writes the records so far and stops as on damage: exit 1;
# and once the process has ended (released through the FIFO) every one of them takes it: exit 0.
# A killed process's trace is unfinished but whole: report takes it.
#   usage: being_written.sh MTRACE_BINARY
set -u
unset MALLOC_PERTURB_
mtrace=$1
work=$(mktemp -d /tmp/mtrace-writing.XXXXXX)
recorder=
cleanup() { # a traced shell still waiting on the FIFO is let go
    [ -n "$recorder" ] && kill -0 "$recorder" 2>/dev/null && timeout 5 sh -c 'echo >"$1"' sh "$work/go"
    rm -rf "$work"
}
trap cleanup EXIT
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
mkfifo "$work/go"
# the shell blocks opening the FIFO until the test writes into it
"$mtrace" record -o "$work/t.mtr" -- sh -c 'x=$(seq 1 200); read -r line <"$1"; echo "$x" | wc -l' sh "$work/go" \
    >"$work/record.out" 2>&1 &
recorder=$!
for _ in $(seq 1 100); do # until the trace exists and holds its first records
    [ -s "$work/t.mtr" ] && "$mtrace" info "$work/t.mtr" 2>/dev/null | grep -q "^records *[1-9]" && break
    sleep 0.1
done

"$mtrace" info "$work/t.mtr" >"$work/info.out" 2>"$work/info.err"
rc=$?
[ $rc = 3 ] || fail "info, while recording: exit $rc, expected 3"
grep -q "^state *being written" "$work/info.out" || fail "info, while recording: $(grep state "$work/info.out")"
grep -q "still being written" "$work/info.err" || fail "info, while recording: stderr: $(cat "$work/info.err")"
"$mtrace" info --json "$work/t.mtr" 2>/dev/null | grep -q '"being_written":true' || fail "info --json: no being_written true"
for cmd in "report $work/t.mtr" "convert $work/t.mtr -o $work/t.wl" "pack $work/t.mtr -o $work/t.mtz"; do
    # shellcheck disable=SC2086
    "$mtrace" $cmd >"$work/out" 2>"$work/err"
    rc=$?
    [ $rc = 1 ] || fail "$cmd, while recording: exit $rc, expected 1"
    [ "$(wc -l <"$work/err")" = 1 ] && grep -q "t.mtr: .*still being written" "$work/err" ||
        fail "$cmd, while recording: stderr: $(cat "$work/err")"
done
[ -e "$work/t.wl" ] || [ -e "$work/t.mtz" ] && fail "convert or pack wrote an output while recording"
"$mtrace" export "$work/t.mtr" -o "$work/x" >/dev/null 2>"$work/err"
rc=$?
[ $rc = 1 ] || fail "export, while recording: exit $rc, expected 1"
grep -q "still being written" "$work/err" || fail "export, while recording: stderr: $(cat "$work/err")"

echo >"$work/go" # the program ends
wait $recorder || fail "record: exit $?: $(cat "$work/record.out")"
grep -q "^200$" "$work/record.out" || fail "the traced program's output: $(cat "$work/record.out")"
"$mtrace" info "$work/t.mtr" >"$work/info.out" 2>"$work/err" || fail "info, ended: exit $?: $(cat "$work/err")"
grep -q "^state *complete" "$work/info.out" || fail "info, ended: $(grep state "$work/info.out")"
for cmd in "report $work/t.mtr" "convert $work/t.mtr -o $work/t.wl" "pack $work/t.mtr -o $work/t.mtz"; do
    # shellcheck disable=SC2086
    "$mtrace" $cmd >/dev/null 2>"$work/err" || fail "$cmd, ended: exit $?: $(cat "$work/err")"
done

# killed: no lock left, the trace is unfinished and whole
"$mtrace" record -o "$work/k.mtr" -- sh -c 'x=$(seq 1 50); kill -9 $$' >/dev/null 2>&1
"$mtrace" report "$work/k.mtr" >"$work/out" 2>"$work/err" || fail "report of a killed process's trace: $(cat "$work/err")"
grep -q "killed or crashed" "$work/out" || fail "report of a killed process's trace does not say it did not finish"

[ $failures = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "being-written checks passed"
