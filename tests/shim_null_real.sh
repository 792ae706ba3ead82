#!/usr/bin/env bash
# The shim's pthread_create when the real one was not found at start-up (tests/hide_pthread_create.c
# hides it from the shim's dlsym): it calls a NULL function no more. Found on a later look-up, the
# program runs and its threads are traced; never found, pthread_create fails with EAGAIN and the
# program sees the failure, without a crash.
#   usage: shim_null_real.sh MTRACE_BINARY LIBMTRACE_SO HIDE_SO PROG_THREADS
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1 shim=$2 hide=$3 prog=$4
work=$(mktemp -d /tmp/mtrace-nullreal.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

HIDE_PTHREAD_CREATE=once LD_PRELOAD="$shim $hide" MTRACE_OUT="$work/once.mtr" "$prog" 100 \
    >"$work/once.out" 2>"$work/once.err"
rc=$?
[ "$rc" = 0 ] || fail "pthread_create found late: exit $rc (a signal is 128+N): $(cat "$work/once.err")"
grep -q '^calls0 100$' "$work/once.out" || fail "the threads did not run: $(cat "$work/once.out")"
"$mtrace" info --json "$work/once.mtr" >"$work/once.json" || fail "mtrace info failed"
python3 - "$work/once.json" <<'PY' || exit 1
import json, sys
j = json.load(open(sys.argv[1]))
if j["threads"] < 3 or j["calls"]["malloc"] < 100:
    print("FAIL: threads %d, malloc %d: the threads were not traced" % (j["threads"], j["calls"]["malloc"]))
    sys.exit(1)
PY

HIDE_PTHREAD_CREATE=always LD_PRELOAD="$shim $hide" MTRACE_OUT="$work/always.mtr" "$prog" 100 \
    >"$work/always.out" 2>"$work/always.err"
rc=$?
[ "$rc" = 1 ] || fail "pthread_create never found: exit $rc, want 1 (prog_threads' own failure; a signal is 128+N)"
echo "ok: found late, the threads ran traced; never found, pthread_create failed without a crash"
