#!/usr/bin/env bash
# mtrace diff on two runs of prog_wrappers that differ at one callsite: emit_output allocates 7
# blocks of 32 bytes through my_xcalloc in the first and 12 in the second (PROG_WRAPPERS_EMIT=12).
#   usage: diff.sh MTRACE PROG_WRAPPERS
# The diff names exactly that function, with +5 calls, +160 bytes, +160 bytes at the peak and no
# change of leaks, in text, JSON and HTML, and nothing else; a run against itself changes nothing;
# with --no-auto-skip the change is placed on the wrapper my_xcalloc; bad arguments are refused.
# Not in sanitized builds (the recorder is an LD_PRELOAD shim).
set -u
mtrace=$1
prog=$2
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d /tmp/mtrace-report-diff.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

t 60 "$mtrace" record --stacks 16 -o a.mtr -- "$prog" 2>rec.err || { fail "record A: $(cat rec.err)"; finish; }
PROG_WRAPPERS_EMIT=12 t 60 "$mtrace" record --stacks 16 -o b.mtr -- "$prog" 2>rec.err ||
    { fail "record B: $(cat rec.err)"; finish; }
t 60 "$mtrace" diff a.mtr b.mtr >d.txt 2>err || fail "diff: $(cat err)"
t 60 "$mtrace" diff --json a.mtr b.mtr >d.json 2>err || fail "diff --json: $(cat err)"
t 60 "$mtrace" diff --json a.mtr a.mtr >same.json 2>err || fail "diff --json A A: $(cat err)"
t 60 "$mtrace" diff --json --no-auto-skip a.mtr b.mtr >raw.json 2>err || fail "diff --no-auto-skip: $(cat err)"

"$PY" - d.json same.json raw.json <<'PYEOF' || fail "diff --json"
import json, sys
d, same, raw = (json.load(open(p)) for p in sys.argv[1:4])
bad = []
def check(cond, msg):
    if not cond:
        bad.append(msg)
fns = d["functions"]
check(len(fns) == 1, "changed functions: %r" % [f["function"] for f in fns])
if fns:
    f = fns[0]
    check(f["function"] == "emit_output", "changed: %r" % f["function"])
    check(f["change"] == {"calls": 5, "bytes": 160, "peak_bytes": 160, "leaked_bytes": 0}, "change %r" % f["change"])
    check((f["a"]["calls"], f["b"]["calls"]) == (10, 15), "calls %r -> %r" % (f["a"], f["b"]))
check(d["unchanged_functions"] == 3, "unchanged %r" % d["unchanged_functions"])
check(d["b"]["allocations"] - d["a"]["allocations"] == 5, "allocations %r -> %r" % (d["a"], d["b"]))
check(same["functions"] == [] and same["unchanged_functions"] == 4, "A against A: %r" % same)
check([(f["function"], f["change"]["calls"]) for f in raw["functions"]] == [("my_xcalloc", 5)],
      "--no-auto-skip: %r" % raw["functions"])
if bad:
    print("\n".join(bad))
    sys.exit(1)
PYEOF

rows=$(sed -n '/^changes per allocating function/,$p' d.txt | tail -n +3)
[ "$(printf '%s\n' "$rows" | grep -c .)" = 1 ] || fail "text: rows: $rows"
printf '%s\n' "$rows" | grep -qE '^ +\+5 +\+160 B +\+160 B +0 B  emit_output  .*prog_wrappers\.c:[0-9]+$' ||
    fail "text: no '+5 +160 B +160 B 0 B emit_output' row: $rows"
grep -q '^wrappers skipped in both: my_x' d.txt || fail "text: the wrappers skipped are not named: $(cat d.txt)"
t 60 "$mtrace" diff --html d.html a.mtr b.mtr 2>err || fail "diff --html: $(cat err)"
fns=$(grep -o '<td class="l"><code>[^<]*</code>' d.html | sed 's/.*<code>//; s/<.*//' | tr '\n' ' ')
[ "$fns" = "emit_output " ] || fail "HTML page: functions listed: '$fns'"
grep -q '<tr><td>+5</td><td>+160 B</td><td>+160 B</td><td>0 B</td><td class="l"><code>emit_output</code>' d.html ||
    fail "HTML page: no +5 / +160 B row for emit_output"
"$mtrace" diff a.mtr >/dev/null 2>&1 && fail "diff with one trace accepted"
"$mtrace" diff a.mtr missing.mtr >/dev/null 2>err && fail "diff with a missing trace succeeded"
grep -q 'missing.mtr' err || fail "diff with a missing trace: the message does not name it: $(cat err)"
finish
