#!/usr/bin/env bash
# End-to-end: a trace cut short after it was written (a partial copy, a disk that filled) must not
# read as whole. `mtrace info` says "truncated" and exits 3 (so does dump, after the records
# present); report, convert and pack refuse it
# (exit 1, a message naming the file); a packed trace cut short is refused too. A trace whose
# process was killed is unfinished, not truncated: it still reads with exit 0.
#   usage: cut_trace.sh MTRACE_BINARY PROG_LOOP LIBMTRACE_SO
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1 loop=$2 shim=$3
work=$(mktemp -d /tmp/mtrace-cut.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect RC NEEDLE CMD...: CMD exits RC and its stdout+stderr holds NEEDLE.
expect() {
    local want=$1 needle=$2
    shift 2
    timeout -k 5 60 "$@" >"$work/out" 2>&1
    local rc=$?
    [ "$rc" = "$want" ] || fail "$*: exit $rc, expected $want: $(head -c 600 "$work/out")"
    grep -q -- "$needle" "$work/out" || fail "$*: no '$needle' in: $(head -c 600 "$work/out")"
}

"$mtrace" record -o "$work/t.mtr" -- "$loop" 300000 >"$work/rec.out" 2>&1 || fail "record: $(cat "$work/rec.out")"
size=$(stat -c %s "$work/t.mtr")
[ "$size" -ge $((4 * 65536)) ] || fail "the trace has $size bytes, expected 4 chunks or more"
expect 0 "state         complete" "$mtrace" info "$work/t.mtr"
# the whole trace converts; its progress line (\r) is for a terminal only, not this redirected stderr
expect 0 "" "$mtrace" convert "$work/t.mtr" -o "$work/t.wl"
grep -q $'\r' "$work/out" && fail "convert wrote a carriage return to a stderr that is no terminal"

# cut inside a chunk, at a chunk boundary, inside the header chunk
for cut in 131676 $((size - 65536)) 1000; do
    head -c "$cut" "$work/t.mtr" >"$work/cut.mtr"
    expect 3 "state         truncated" "$mtrace" info "$work/cut.mtr"
    grep -q "cut.mtr: offset $cut: truncated: the file ends at byte $cut" "$work/out" ||
        fail "info of a cut at $cut: no message naming the file and offset: $(cat "$work/out")"
    expect 3 '"file_truncated": *true' "$mtrace" info --json "$work/cut.mtr"
    grep -q '"complete": *true' "$work/out" && fail "info --json of a cut at $cut says complete"
    expect 1 "cut.mtr: offset $cut: truncated" "$mtrace" report "$work/cut.mtr"
    expect 3 "cut.mtr: offset $cut: truncated" "$mtrace" dump "$work/cut.mtr"
    expect 1 "truncated" "$mtrace" convert "$work/cut.mtr" -o "$work/cut.wl"
    [ -e "$work/cut.wl" ] && fail "convert of a cut trace left $work/cut.wl"
    expect 1 "truncated" "$mtrace" pack "$work/cut.mtr" -o "$work/cut.mtz"
    [ -e "$work/cut.mtz" ] && fail "pack of a cut trace left $work/cut.mtz"
done

# packed: whole reads as whole; cut inside a frame (its data or its header), it reads as the raw
# trace cut inside that chunk does: the records of the whole frames before it, exit 3 from info
# and dump, report, convert and pack refuse it (once info and dump refused it too, exit 1)
expect 0 "" "$mtrace" pack "$work/t.mtr" -o "$work/t.mtz"
expect 0 "state         complete" "$mtrace" info "$work/t.mtz"
"$mtrace" dump "$work/t.mtz" >"$work/whole.txt" 2>/dev/null
psize=$(stat -c %s "$work/t.mtz")
for cut in $((psize - 5)) $((psize / 2)) $((psize / 2 + 7)); do
    head -c "$cut" "$work/t.mtz" >"$work/cut.mtz"
    expect 3 "state         truncated" "$mtrace" info "$work/cut.mtz"
    grep -q "cut.mtz: offset $cut: truncated: the file ends at byte $cut, inside the packed frame at offset" "$work/out" ||
        fail "info of a packed trace cut at $cut: no message naming the file and offset: $(cat "$work/out")"
    expect 1 "cut.mtz: offset $cut: truncated" "$mtrace" report "$work/cut.mtz"
    expect 1 "truncated" "$mtrace" convert "$work/cut.mtz" -o "$work/cut.wl"
    [ -e "$work/cut.wl" ] && fail "convert of a cut packed trace left $work/cut.wl"
    expect 3 "cut.mtz: offset $cut: truncated" "$mtrace" dump "$work/cut.mtz"
    # the records of the frames before the cut, as the raw trace cut in the same chunk gives them
    "$mtrace" dump "$work/cut.mtz" >"$work/cut.txt" 2>/dev/null
    chunks=$("$mtrace" info --json "$work/cut.mtz" 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["chunks"])')
    # (frames are the raw chunks in file order; the raw cut leaves the next chunk's header short)
    head -c $(((chunks + 1) * 65536 + 31)) "$work/t.mtr" >"$work/cut.mtr"
    "$mtrace" dump "$work/cut.mtr" 2>/dev/null | cmp -s - "$work/cut.txt" ||
        fail "dump of the packed trace cut at $cut differs from the raw trace cut in the same chunk"
    [ -s "$work/cut.txt" ] || fail "dump of the packed trace cut at $cut printed no record"
done

# killed: unfinished, whole; info reads it with exit 0
LD_PRELOAD=$shim MTRACE_OUT="$work/k.mtr" "$loop" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do
    [ "$(stat -c %s "$work/k.mtr" 2>/dev/null || echo 0)" -gt 0 ] && break
    sleep 0.05
done
sleep 0.3
kill -KILL "$pid"
wait "$pid" 2>/dev/null
expect 0 "state         not finished" "$mtrace" info "$work/k.mtr"

[ "$failures" = 0 ] || exit 1
echo "ok"
