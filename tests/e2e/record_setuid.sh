#!/usr/bin/env bash
# A set-user-ID program runs without LD_PRELOAD (the loader's secure mode), so it is not traced:
# mtrace record says so once, runs it all the same and passes its exit status through. Before, it
# ran untraced in silence and no trace was written. A set-user-ID file of the caller's own is not
# privileged: traced, no warning. A program that wrote no trace for another reason (statically
# linked) gets one line too. The set-user-ID part needs root (to give a file to another user) and a
# file system that honours set-user-ID; skipped otherwise.
#   usage: record_setuid.sh MTRACE_BINARY PROG_LOOP
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1 loop=$2
work=$(mktemp -d /tmp/mtrace-setuid.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# A program that never loads the recorder (Debian's ldconfig is statically linked): no trace, and
# record says so rather than nothing.
if [ -x /sbin/ldconfig ] && ldd /sbin/ldconfig 2>&1 | grep -q "statically linked\|not a dynamic"; then
    timeout -k 5 60 "$mtrace" record -o "$work/l.mtr" -- /sbin/ldconfig --version >/dev/null 2>"$work/err" ||
        fail "record ldconfig: $(cat "$work/err")"
    [ "$(wc -l <"$work/err")" = 1 ] && grep -q "no trace was written: /sbin/ldconfig did not load the recorder" "$work/err" ||
        fail "a static program: expected one line saying no trace was written: $(cat "$work/err")"
fi

[ "$(id -u)" = 0 ] || { [ "$failures" = 0 ] || exit 1; echo "SKIP: not root"; exit 77; }
findmnt -n -o OPTIONS -T "$work" | grep -qw nosuid && { echo "SKIP: $work is on a nosuid file system"; exit 77; }

cp "$loop" "$work/suid_loop" && chown nobody "$work/suid_loop" && chmod 4755 "$work/suid_loop" ||
    { echo "SKIP: cannot make a set-user-ID file"; exit 77; }
timeout -k 5 60 "$mtrace" record -o "$work/t.mtr" -- "$work/suid_loop" 10 7 >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" = 7 ] || fail "exit $rc, expected the program's 7: $(cat "$work/err")"
grep -q "^sum " "$work/out" || fail "the program did not run: $(cat "$work/out")"
[ "$(wc -l <"$work/err")" = 1 ] && grep -qF "mtrace: $work/suid_loop is set-user-ID" "$work/err" &&
    grep -q "runs untraced" "$work/err" || fail "expected one line saying it runs untraced: $(cat "$work/err")"

# the same by name along PATH
PATH=$work:$PATH timeout -k 5 60 "$mtrace" record -o "$work/t.mtr" -- suid_loop 10 0 >/dev/null 2>"$work/err"
[ "$(wc -l <"$work/err")" = 1 ] && grep -q "suid_loop is set-user-ID" "$work/err" ||
    fail "by name: expected one line: $(cat "$work/err")"

# set-user-ID to the caller: not privileged, traced
cp "$loop" "$work/own_loop" && chmod 4755 "$work/own_loop"
timeout -k 5 60 "$mtrace" record -o "$work/o.mtr" -- "$work/own_loop" 10 0 >/dev/null 2>"$work/err" ||
    fail "own set-user-ID file: $(cat "$work/err")"
grep -q "untraced\|no trace" "$work/err" && fail "own set-user-ID file: warned: $(cat "$work/err")"
[ -s "$work/o.mtr" ] || fail "own set-user-ID file: no trace"

[ "$failures" = 0 ] || exit 1
echo "ok"
