#!/usr/bin/env bash
# mtrace report of several traces: a process tree's files, or a directory of them. Each trace's
# report in turn, then the totals; in JSON, "total" is the sum of the reports' figures, figure for
# figure; a directory gives its trace files by name, and a file given beside its directory counts
# once; a trace that cannot be read stops it with no total; --csv and --html refuse several traces.
#   usage: many.sh MTRACE REPORT_MKTRACE
set -u
mtrace=$1
mktrace=$2
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/mtrace-many.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
mkdir tree
t 60 "$mktrace" tree/a.mtr 250 4000 2 || fail "report_mktrace a"
t 60 "$mktrace" tree/a.mtr.101 250 6000 3 || fail "report_mktrace a.101"
t 60 "$mktrace" tree/a.mtr.102 1000 3000 1 || fail "report_mktrace a.102"
echo "not a trace" >tree/notes.txt

t 60 "$mtrace" report --json tree/a.mtr tree/a.mtr.101 tree/a.mtr.102 >list.json 2>err || fail "report of three traces: $(cat err)"
t 60 "$mtrace" report --json tree >dir.json 2>err || fail "report of a directory: $(cat err)"
t 60 "$mtrace" report --json tree/a.mtr tree >both.json 2>err || fail "report of a file and its directory: $(cat err)"
cmp -s list.json dir.json || fail "the directory's report differs from its files' report"
cmp -s list.json both.json || fail "a file given beside its directory changed the report"
"$PY" - list.json <<'PY' || fail "JSON totals"
import json, sys
d = json.load(open(sys.argv[1]))
reps, tot = d["reports"], d["total"]
assert d["kind"] == "reports", d["kind"]
assert len(reps) == 3 and tot["traces"] == 3, (len(reps), tot["traces"])
assert [r["file"] for r in reps] == ["tree/a.mtr", "tree/a.mtr.101", "tree/a.mtr.102"], [r["file"] for r in reps]
assert tot["threads"] == sum(r["threads"] for r in reps) == 6
for table in ("calls", "bytes", "failures"):
    for op, v in tot[table].items():
        assert v == sum(r[table][op] for r in reps), (table, op, v)
for k, src in (("allocations", "allocations"), ("leaked_blocks", "leaked_blocks"), ("leaked_bytes", "leaked_bytes"),
               ("temporary", "temporary")):
    assert tot[k] == sum(r[src] for r in reps), k
assert tot["peak_live_bytes_sum"] == sum(r["peak_live_bytes"] for r in reps)
assert tot["peak_live_bytes_max"] == max(r["peak_live_bytes"] for r in reps)
assert sum(tot["calls"].values()) == 13000, sum(tot["calls"].values())
PY

t 60 "$mtrace" report tree >text.out 2>err || fail "text report of a directory: $(cat err)"
[ "$(grep -c '^mtrace report: ' text.out)" = 3 ] || fail "text: not three reports"
grep -q '^all 3 traces: 6 threads' text.out || fail "text: no totals line: $(tail -12 text.out)"

# a damaged trace among them: its error, a non-zero exit, no total
head -c 70000 tree/a.mtr.101 >cut.mtr
t 60 "$mtrace" report tree/a.mtr cut.mtr >cut.out 2>err
rc=$?
[ "$rc" != 0 ] || fail "a cut trace among several: exit 0"
grep -q "cut.mtr" err || fail "a cut trace among several: the error does not name it: $(cat err)"
grep -q '^all ' cut.out && fail "a cut trace among several: a total was printed"

for opt in --csv "--html x.html"; do
    # shellcheck disable=SC2086 # the option and its argument
    t 60 "$mtrace" report $opt tree >/dev/null 2>err
    [ $? = 2 ] || fail "report $opt of several traces: not a usage error"
done
[ -e x.html ] && fail "--html of several traces wrote a page"

t 60 "$mtrace" report "$work/empty-dir-that-is-missing" >/dev/null 2>&1 && fail "a missing operand: exit 0"
mkdir empty
t 60 "$mtrace" report empty tree >/dev/null 2>err && fail "a directory without traces: exit 0"
grep -q "no trace in the directory" err || fail "a directory without traces: $(cat err)"
finish
