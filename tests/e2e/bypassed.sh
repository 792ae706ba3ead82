#!/usr/bin/env bash
# The recorder preloaded after another allocator (LD_PRELOAD="libtcmalloc_minimal.so.4 libmtrace.so")
# sees no call: the program's malloc is tcmalloc's. It says so once on stderr, and the trace says
# why it holds no call (mtrace info: a "bypassed" line, "bypassed": true in --json). Before, the
# trace held 0 calls and nothing said why. mtrace record puts the recorder first, and a program
# whose calls reach the recorder (python3, not PIE) is not said to be bypassed. A program whose
# executable defines malloc (an allocator linked in, as rustc's jemalloc) is bypassed whatever the
# order: the message and info say the malloc is the executable's, and give no LD_PRELOAD advice.
#   usage: bypassed.sh MTRACE_BINARY LIBMTRACE_SO PROG_LOOP PROG_OWN_MALLOC
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1 shim=$2 loop=$3 own=$4
tc=
for d in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib; do
    [ -e "$d/libtcmalloc_minimal.so.4" ] && tc=$d/libtcmalloc_minimal.so.4 && break
done
[ -n "$tc" ] || { echo "SKIP: libtcmalloc_minimal.so.4 not installed"; exit 77; }
work=$(mktemp -d /tmp/mtrace-bypassed.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

LD_PRELOAD="$tc $shim" MTRACE_OUT="$work/b.mtr" "$loop" 1000 >/dev/null 2>"$work/err" ||
    fail "the program failed: $(cat "$work/err")"
[ "$(wc -l <"$work/err")" = 1 ] && grep -qF "malloc is $tc's" "$work/err" && grep -q "no call will be recorded" "$work/err" ||
    fail "expected one line naming $tc on stderr: $(cat "$work/err")"
"$mtrace" info "$work/b.mtr" >"$work/info" 2>&1 || fail "info: $(cat "$work/info")"
grep -q "^bypassed .*$tc's" "$work/info" || fail "info does not say why the trace is empty: $(cat "$work/info")"
"$mtrace" info --json "$work/b.mtr" >"$work/info.json" 2>&1 || fail "info --json"
grep -q '"bypassed":true' "$work/info.json" && grep -qF "\"bypassed_by\":\"$tc\"" "$work/info.json" ||
    fail "info --json: $(cat "$work/info.json")"

# mtrace record with tcmalloc preloaded already: the recorder goes first and records the calls
LD_PRELOAD=$tc "$mtrace" record -o "$work/r.mtr" -- "$loop" 1000 >/dev/null 2>"$work/err" ||
    fail "record: $(cat "$work/err")"
grep -q "no call will be recorded" "$work/err" && fail "record warned: $(cat "$work/err")"
"$mtrace" info "$work/r.mtr" >"$work/info" 2>&1 || fail "info: $(cat "$work/info")"
grep -q "^bypassed" "$work/info" && fail "a trace recorded first in LD_PRELOAD says bypassed"
grep -Eq "^calls +malloc 10[0-9][0-9] free 1000" "$work/info" || fail "record with tcmalloc: $(grep calls "$work/info")"

# Debian's python3 is not PIE: its own PLT entry stands for malloc (dlsym finds it), yet its calls
# reach the recorder. Not bypassed.
if [ -x /usr/bin/python3 ]; then
    LD_PRELOAD=$shim MTRACE_OUT="$work/p.mtr" /usr/bin/python3 -c pass 2>"$work/err" || fail "python3: $(cat "$work/err")"
    [ -s "$work/err" ] && fail "python3 with the recorder alone: $(cat "$work/err")"
    "$mtrace" info "$work/p.mtr" 2>&1 | grep -q "^bypassed" && fail "python3's trace says bypassed"
fi

# an allocator linked into the executable: no order of LD_PRELOAD helps, and none is advised
"$mtrace" record -o "$work/o.mtr" -- "$own" 100 >"$work/out" 2>"$work/err" || fail "record own: $(cat "$work/err")"
grep -q "^made 100$" "$work/out" || fail "the program with its own malloc: $(cat "$work/out")"
grep -q "malloc is its own, linked into .*prog_own_malloc: no call will be recorded" "$work/err" ||
    fail "record own: expected the executable named: $(cat "$work/err")"
grep -q "LD_PRELOAD" "$work/err" && fail "record own: LD_PRELOAD advised: $(cat "$work/err")"
"$mtrace" info "$work/o.mtr" >"$work/info" 2>&1 || fail "info own: $(cat "$work/info")"
grep -q "^bypassed .*its own, linked into .*prog_own_malloc" "$work/info" || fail "info own: $(grep bypassed "$work/info")"
"$mtrace" info --json "$work/o.mtr" 2>&1 | grep -q '"bypassed_by_executable":true' || fail "info --json own"

[ "$failures" = 0 ] || exit 1
echo "ok"
