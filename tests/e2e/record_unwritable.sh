#!/usr/bin/env bash
# mtrace record into a directory that cannot be written refuses before it runs the program: exit 2
# and one line naming the directory (before, the program ran untraced and the command exited 0). The
# recorder preloaded without the front end keeps its rule: the program runs on, one line on stderr.
# And mtrace record stopped by SIGTERM leaves no temporary index file behind.
#   usage: record_unwritable.sh MTRACE_BINARY LIBMTRACE_SO
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1 shim=$2
work=$(mktemp -d /tmp/mtrace-unwritable.XXXXXX)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

: >"$work/afile"
mkdir "$work/ro" && chmod 0555 "$work/ro"
dirs=("$work/missing" "$work/afile" /proc)
# root writes into a 0555 directory: only a non-root run checks that one
[ "$(id -u)" != 0 ] && dirs+=("$work/ro")
for d in "${dirs[@]}"; do
    rm -f "$work/ran"
    timeout -k 5 60 "$mtrace" record -o "$d/t.mtr" -- sh -c ": >'$work/ran'" >"$work/out" 2>"$work/err"
    rc=$?
    [ "$rc" = 2 ] || fail "record into $d: exit $rc, expected 2: $(cat "$work/err")"
    [ -e "$work/ran" ] && fail "record into $d: the program ran"
    [ "$(wc -l <"$work/err")" = 1 ] && grep -qF "cannot write the trace into $d:" "$work/err" ||
        fail "record into $d: expected one line naming the directory: $(cat "$work/err")"
done

# the preload path: the program runs on and ends as it would, one line on stderr
rm -f "$work/ran"
LD_PRELOAD=$shim MTRACE_OUT="$work/missing/t.mtr" sh -c ": >'$work/ran'; exit 7" 2>"$work/err"
rc=$?
[ "$rc" = 7 ] || fail "preloaded into a missing directory: exit $rc, expected the program's 7"
[ -e "$work/ran" ] || fail "preloaded into a missing directory: the program did not run"
[ "$(wc -l <"$work/err")" = 1 ] || fail "preloaded into a missing directory: expected one line: $(cat "$work/err")"

# a writable directory still records, and leaves no probe file
timeout -k 5 60 "$mtrace" record -o "$work/t.mtr" -- true >"$work/out" 2>"$work/err" ||
    fail "record into $work: $(cat "$work/err")"
[ -s "$work/t.mtr" ] || fail "record into $work: no trace"
ls -a "$work" | grep -q mtrace-probe && fail "record left its probe file: $(ls -a "$work")"

# mtrace record stopped by SIGTERM (SIGINT is the traced program's) leaves no index file of its own;
# it makes it in TMPDIR, here a directory of this test's alone (other recordings may run beside it)
mkdir "$work/tmp"
TMPDIR=$work/tmp "$mtrace" record -o "$work/s.mtr" -- sleep 30 >/dev/null 2>&1 &
front=$!
for _ in $(seq 50); do # its index and its program, within 5 s however loaded the machine
    traced=$(pgrep -P "$front")
    [ -n "$traced" ] && [ -n "$(ls "$work/tmp")" ] && break
    sleep 0.1
done
[ -n "$(ls "$work/tmp")" ] || fail "record made no index file in TMPDIR"
kill -TERM "$front"
wait "$front"
[ -n "$traced" ] && kill -KILL $traced 2>/dev/null # the traced sleep, left running: ours
left=$(ls "$work/tmp")
[ -n "$left" ] && fail "record stopped by SIGTERM left $left"

[ "$failures" = 0 ] || exit 1
echo "ok"
