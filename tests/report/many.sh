#!/usr/bin/env bash
# mtrace report of several traces: a process tree's files, or a directory of them. Each trace's
# report in turn, then the totals; in JSON, "total" is the sum of the reports' figures, figure for
# figure; a directory gives its trace files by name, and a file given beside its directory counts
# once; a trace that cannot be read is said and skipped, the total names it and the exit is 1;
# --csv and --html refuse several traces.
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
grep -qx 'all 3 traces (3 processes): 6 threads' text.out || fail "text: no totals line: $(tail -12 text.out)"

# a damaged trace among them: its error (file and offset) on stderr, exit 1, the others reported and
# a total of them that names the trace not read, never "all"; the JSON one valid object whose total
# lists it under failed_traces (empty when every trace was read)
head -c 70000 tree/a.mtr.101 >cut.mtr
t 60 "$mtrace" report tree/a.mtr cut.mtr tree/a.mtr.102 >cut.out 2>err
rc=$?
[ "$rc" = 1 ] || fail "a cut trace among several: exit $rc, expected 1"
grep -q "^mtrace: cut.mtr: offset 70000: " err || fail "a cut trace among several: the error does not name it: $(cat err)"
[ "$(grep -c '^mtrace report: ' cut.out)" = 2 ] || fail "a cut trace among several: not the two other reports"
grep -q '^all ' cut.out && fail "a cut trace among several: a total passed for all of them"
grep -qx '2 of 3 traces (2 processes): 3 threads' cut.out || fail "a cut trace among several: total line: $(grep traces: cut.out)"
grep -qx 'not read       1 trace, in no figure below: cut.mtr' cut.out ||
    fail "a cut trace among several: the total does not name it: $(tail -12 cut.out)"
t 60 "$mtrace" report --json tree/a.mtr cut.mtr tree/a.mtr.102 >cut.json 2>err
rc=$?
[ "$rc" = 1 ] || fail "a cut trace among several, --json: exit $rc, expected 1"
"$PY" - cut.json list.json <<'PY' || fail "a cut trace among several, --json: $(head -c 300 cut.json)"
import json, sys
d, whole = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert [r["file"] for r in d["reports"]] == ["tree/a.mtr", "tree/a.mtr.102"], [r["file"] for r in d["reports"]]
tot = d["total"]
assert tot["traces"] == 2 and tot["threads"] == 3, (tot["traces"], tot["threads"])
assert [f["file"] for f in tot["failed_traces"]] == ["cut.mtr"], tot["failed_traces"]
assert "offset 70000" in tot["failed_traces"][0]["error"], tot["failed_traces"][0]
assert whole["total"]["failed_traces"] == [], whole["total"]["failed_traces"]
PY
# every trace unreadable: still one object, no report, exit 1
cp cut.mtr cut.mtr.2
t 60 "$mtrace" report --json cut.mtr cut.mtr.2 >none.json 2>/dev/null
rc=$?
[ "$rc" = 1 ] || fail "only cut traces: exit $rc, expected 1"
"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert not d["reports"] and len(d["total"]["failed_traces"]) == 2' \
    none.json || fail "only cut traces: $(cat none.json)"

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
