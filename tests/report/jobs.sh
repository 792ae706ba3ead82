#!/usr/bin/env bash
# mtrace report, info and pack with -j N give what they give with -j 1, byte for byte (text and
# --json, standard output, standard error and exit status; pack's file), on whole traces and damaged
# ones: a 7-thread trace of many chunks (raw and
# packed), the same with bytes overwritten inside chunks and frames (a record decoded wrong, an
# opcode that is none, a frame zstd refuses), cut short, and a killed process's trace (a partial
# result, "not finished"); with PROG (unsanitized builds) a recorded 4-thread program with stacks,
# whose peak is found by a second pass. Then -j's own usage errors.
#   usage: jobs.sh MTRACE REPORT_MKTRACE [PROG_THREADS]
set -u
mtrace=$1
mktrace=$2
prog=${3:-}
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d /tmp/mtrace-report-jobs.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

# The -j values held against -j 1: 2, 3 and 5 on whole traces; on damaged ones only 3 (the damage
# lands in one pass's share either way, and each case costs a run per value). Under the sanitizers
# (MTRACE_SWEEP_STRIDE above 1: scripts/test.sh) 2 and 3 only, which split the work in two and in
# three, as 5 does: the plain build holds all three, and a sanitized run costs four times as much.
all_jobs="2 3 5"
[ "${MTRACE_SWEEP_STRIDE:-1}" -gt 1 ] && all_jobs="2 3"
jobs=$all_jobs

# same_as_j1 COMMAND TRACE [OPTIONS...]: mtrace COMMAND with -j 1 and each of $jobs, in text and
# JSON, agrees in every output.
same_as_j1() {
    local cmd=$1 trace=$2
    shift 2
    for fmt in text json; do
        local f=""
        [ $fmt = json ] && f=--json
        t 120 "$mtrace" "$cmd" $f "$@" -j 1 "$trace" >"1.out" 2>"1.err"
        echo $? >1.rc
        for j in $jobs; do
            t 120 "$mtrace" "$cmd" $f "$@" -j $j "$trace" >"$j.out" 2>"$j.err"
            echo $? >$j.rc
            for part in out err rc; do
                cmp -s 1.$part $j.$part ||
                    fail "$cmd $trace $* ($fmt): -j $j's $part differs from -j 1's: $(diff 1.$part $j.$part | head -5)"
            done
        done
        checked=$((checked + 1))
    done
}

# same_pack TRACE: mtrace pack with each -j of $jobs writes the bytes -j 1 writes (or fails alike,
# leaving nothing).
same_pack() {
    local trace=$1
    for j in 1 $jobs; do
        rm -f p$j.mtz
        t 120 "$mtrace" pack -j $j "$trace" -o p$j.mtz 2>&1 | sed "s/p$j\.mtz/OUT/g" >p$j.err
        echo "${PIPESTATUS[0]}" >>p$j.err
        [ $j = 1 ] && continue
        cmp -s p1.err p$j.err || fail "pack $trace: -j $j's message or status differs: $(diff p1.err p$j.err | head -4)"
        if [ -e p1.mtz ] || [ -e p$j.mtz ]; then
            cmp -s p1.mtz p$j.mtz || fail "pack $trace: -j $j's packed trace differs from -j 1's"
        fi
    done
    ls ./*.partial.* >/dev/null 2>&1 && fail "pack $trace: a partial output was left behind"
    checked=$((checked + 1))
}

# same TRACE [OPTIONS...]: info, pack and report (with OPTIONS) agree at every -j; report's outputs
# last.
same() {
    same_as_j1 info "$1"
    same_pack "$1"
    same_as_j1 report "$@"
}

# patch FILE OFFSET HEX: overwrites bytes of FILE at OFFSET.
patch() {
    "$PY" -c 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2])); f.write(bytes.fromhex(sys.argv[3]))' "$@"
}

checked=0
t 120 "$mktrace" m.mtr 250 400000 7 || { fail "report_mktrace"; finish; }
[ "$(stat -c %s m.mtr)" -gt $((32 * 65536)) ] || fail "the trace is too small to span many chunks"
same m.mtr
same m.mtr --temporary heaptrack
t 120 "$mtrace" pack -f m.mtr -o m.mtz 2>/dev/null || fail "pack"
same m.mtz
t 120 "$mtrace" pack -f --plain m.mtr -o p.mtz 2>/dev/null || fail "pack --plain"
same p.mtz

# Damage: the same bytes at a few places inside chunks 5 to 40 (some decode to other values, some
# to an error), each case compared. With a sweep stride above 1 (MTRACE_SWEEP_STRIDE: the sanitizer
# build, tests/test_util.h) each place gets one of the byte strings in turn, the last place the
# last string as without it: every place and every string still damages the trace.
jobs=3
place=0
for at in $((5 * 65536 + 700)) $((12 * 65536 + 40000)) $((23 * 65536 + 33)) $((40 * 65536 + 9000)); do
    kind=0
    for bytes in ff 8080808080808080808080 00; do
        kind=$((kind + 1))
        [ "${MTRACE_SWEEP_STRIDE:-1}" -gt 1 ] && [ $(((place + 2) % 3 + 1)) != $kind ] && continue
        cp m.mtr d.mtr
        patch d.mtr $at $bytes
        same d.mtr
    done
    place=$((place + 1))
done
grep -q "expected\|runs past" 1.err || fail "no damage case ended in an error (the last: $(cat 1.err))"
# A frame in the middle of the packed trace.
size=$(stat -c %s m.mtz)
for at in $((size / 3)) $((size / 2 + 100)); do
    cp m.mtz d.mtz
    patch d.mtz $at 5a5a5a5a5a5a5a5a
    same d.mtz
done
# Cut short (the header counts more chunks than the file holds): an error before any pass.
head -c $((20 * 65536 + 1000)) m.mtr >cut.mtr
same cut.mtr
[ "$(cat 1.rc)" = 1 ] || fail "a cut trace: exit $(cat 1.rc), expected 1"
# A killed process's trace: no end fields in the header, the chunks the file holds, one chunk of
# each of two threads cut off mid-chunk as a crash leaves it (not sealed, the rest zero).
head -c $((30 * 65536)) m.mtr >k.mtr
patch k.mtr 36 00000000
patch k.mtr 64 0000000000000000
patch k.mtr 96 0000000000000000
for c in 25 28; do
    patch k.mtr $((c * 65536 + 6)) 0000
    "$PY" -c 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2])); f.write(bytes(30000))' k.mtr $((c * 65536 + 35536))
done
same k.mtr
jobs=$all_jobs
[ "$(cat 1.rc)" = 0 ] || fail "a killed process's trace: exit $(cat 1.rc), expected 0: $(cat 1.err)"
grep -q '"complete": *false' 1.out || fail "a killed process's trace: not marked as partial: $(head -c 300 1.out)"

# A recorded program with stacks: callsites, caller trees and the second pass to the peak.
if [ -n "$prog" ]; then
    if t 120 "$mtrace" record -s 8 -o s.mtr -- "$prog" 20000 >/dev/null 2>rec.err; then
        same s.mtr
        same s.mtr --top 3 --tree-depth 2
    else
        fail "record: $(cat rec.err)"
    fi
fi

# Usage: -j takes a whole number from 1 on; --jobs is its long name.
t 60 "$mtrace" report -j 0 m.mtr >out 2>err
rc=$?
[ $rc = 2 ] || fail "-j 0: exit $rc, expected 2 (usage)"
grep -q -- "--jobs '0': expected a whole number from 1" err || fail "-j 0: $(head -c 200 err)"
t 60 "$mtrace" report --jobs 2 --json m.mtr >j2.json || fail "--jobs 2"
t 60 "$mtrace" report --json m.mtr >jd.json || fail "report without -j"
cmp -s j2.json jd.json || fail "the default -j gives another report than --jobs 2"
echo "$checked comparisons"
finish
