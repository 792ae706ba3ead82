#!/usr/bin/env bash
# A trace that ends at an exec is cut to the chunks it used, as a finished one is (before, each kept
# the 1 MiB the recorder preallocates: 45 MB for 80 images of a shell script). An exec that fails
# leaves the file usable: the program goes on recording past the cut, and its trace is whole.
#   usage: exec_trim.sh MTRACE_BINARY PROG_EXEC
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1 prog=$2
work=$(mktemp -d /tmp/mtrace-exectrim.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
info() { # TRACE KEY...: the values of info --json, one a line
    "$mtrace" info --json "$1" | python3 -c '
import json, sys
j = json.load(sys.stdin)
print("\n".join(str(j[k]) for k in sys.argv[1:]))' "${@:2}"
}

# a chain of three images of one process (prog_exec, then itself, both single-threaded; and sh
# before them): each file that ended at an exec holds its used chunks and no more
timeout -k 5 60 "$mtrace" record -o "$work/c/" -- sh -c "exec '$prog'" >/dev/null 2>"$work/err" ||
    fail "record the chain: $(cat "$work/err")"
n=0
for t in "$work"/c/*; do
    [ "$(info "$t" ended_at_exec)" = True ] || continue
    n=$((n + 1))
    read -r -d '' chunks bytes < <(info "$t" chunks file_bytes)
    # the chunks of records, and the header's chunk
    [ "$bytes" -le $(((chunks + 1) * 65536)) ] ||
        fail "$(basename "$t") ended at an exec: $bytes bytes for $chunks chunks of records"
done
[ "$n" = 2 ] || fail "expected 2 traces that ended at an exec: $(ls "$work/c")"
"$mtrace" report "$work/c" >/dev/null 2>"$work/err" || fail "report of the chain: $(cat "$work/err")"

# an exec that fails: the program goes on, with megabytes of records past the cut; one trace,
# finished, that reads whole and holds every call after the exec
timeout -k 5 60 "$mtrace" record -o "$work/f.mtr" -- "$prog" missing >"$work/out" 2>"$work/err" ||
    fail "record a failed exec: $(cat "$work/err")"
grep -qx "after_exec_mallocs 200000" "$work/out" || fail "the program after its failed exec: $(cat "$work/out")"
[ "$(ls "$work" | grep -c '^f\.mtr')" = 1 ] || fail "a failed exec made another trace: $(ls "$work")"
read -r -d '' complete ended mallocs frees bytes < <(info "$work/f.mtr" complete ended_at_exec calls file_bytes |
    python3 -c '
import ast, sys
complete, ended, calls, size = sys.stdin.read().split("\n", 3)
calls = ast.literal_eval(calls)
print(complete, ended, calls.get("malloc", 0), calls.get("free", 0), size.strip(), sep="\n")')
[ "$complete" = True ] && [ "$ended" = False ] || fail "after a failed exec: complete $complete, ended_at_exec $ended"
[ "$mallocs" -ge 200001 ] && [ "$frees" -ge 200001 ] || fail "after a failed exec: $mallocs mallocs, $frees frees"
[ "$bytes" -gt 1048576 ] || fail "after a failed exec: $bytes bytes, expected the records to go past the cut"
"$mtrace" dump "$work/f.mtr" >/dev/null 2>"$work/err" || fail "dump after a failed exec: $(cat "$work/err")"
"$mtrace" dump "$work/f.mtr" | grep -q "exec" || fail "the failed exec's event is not in the trace"

[ "$failures" = 0 ] || exit 1
echo "ok"
