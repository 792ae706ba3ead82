#!/usr/bin/env bash
# mtrace record -o DIR/ (or -o naming an existing directory) writes one trace per process inside DIR,
# which mtrace report DIR then reads (before, the recorder was handed the directory itself as a file
# name: the program ran untraced and record exited 0, or, without --force, "exists" refused it). A
# DIR holding traces of an earlier recording is refused without --force and emptied of them with it;
# a path that is no directory, or one that cannot be made, is refused before the program runs.
#   usage: record_into_dir.sh MTRACE_BINARY
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1
work=$(mktemp -d /tmp/mtrace-intodir.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ntraces() { ls "$1" | grep -c '^mtrace\.[0-9]*\.mtr'; }

# an existing directory, with and without the slash, with --force as the survey ran it; sh forks ls
# and ends at an exec: three traces, all in d
mkdir "$work/d"
timeout -k 5 60 "$mtrace" record -f -o "$work/d/" -- sh -c 'ls / >/dev/null; exec true' >/dev/null 2>"$work/err"
rc=$?
[ "$rc" = 0 ] || fail "record -f -o d/: exit $rc: $(cat "$work/err")"
[ "$(ntraces "$work/d")" = 3 ] || fail "record -f -o d/: expected 3 traces in d: $(ls "$work/d"); $(cat "$work/err")"
[ "$(grep -c "^mtrace: wrote $work/d/mtrace\." "$work/err")" = 3 ] || fail "record -o d/ named: $(cat "$work/err")"
"$mtrace" report "$work/d" >"$work/report.txt" 2>&1 || fail "report d: $(cat "$work/report.txt")"

# d holds traces now: refused without --force, the program not run, one line naming d
: >"$work/keep.txt"
cp "$work/keep.txt" "$work/d/notes.txt"
rm -f "$work/ran"
timeout -k 5 60 "$mtrace" record -o "$work/d" -- sh -c ": >'$work/ran'" >/dev/null 2>"$work/err"
rc=$?
[ "$rc" = 2 ] || fail "record -o d over earlier traces: exit $rc, expected 2"
[ -e "$work/ran" ] && fail "record -o d over earlier traces: the program ran"
[ "$(wc -l <"$work/err")" = 1 ] && grep -qF "$work/d holds traces of an earlier recording" "$work/err" ||
    fail "record -o d over earlier traces said: $(cat "$work/err")"
# with --force: the earlier traces go, the one new trace stays with the other files
timeout -k 5 60 "$mtrace" record -f -o "$work/d" -- true 2>"$work/err" || fail "record -f -o d: $(cat "$work/err")"
[ "$(ntraces "$work/d")" = 1 ] || fail "record -f -o d: expected 1 trace: $(ls "$work/d")"
[ -e "$work/d/notes.txt" ] || fail "record -f -o d removed a file that is no trace"

# DIR/ is made if missing; not its parents; a file is no directory
timeout -k 5 60 "$mtrace" record -o "$work/new/" -- true 2>"$work/err" || fail "record -o new/: $(cat "$work/err")"
[ "$(ntraces "$work/new")" = 1 ] || fail "record -o new/: $(ls "$work/new" 2>&1)"
: >"$work/afile"
for d in "$work/missing/sub/" "$work/afile/"; do
    rm -f "$work/ran"
    timeout -k 5 60 "$mtrace" record -o "$d" -- sh -c ": >'$work/ran'" >/dev/null 2>"$work/err"
    rc=$?
    [ "$rc" = 2 ] || fail "record -o $d: exit $rc, expected 2: $(cat "$work/err")"
    [ -e "$work/ran" ] && fail "record -o $d: the program ran"
    [ "$(wc -l <"$work/err")" = 1 ] || fail "record -o $d: expected one line: $(cat "$work/err")"
done

[ "$failures" = 0 ] || exit 1
echo "ok"
