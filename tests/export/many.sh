#!/usr/bin/env bash
# mtrace export of several traces: a process tree's files, or a directory of them, into one set of
# tables. Each table's file is byte for byte the files of the traces' own exports one after the
# other (each row under its trace's id); a directory gives its trace files by name, a file given
# beside its directory counts once; a trace that cannot be read, or an operand that is no trace,
# stops it with exit 1 and leaves no file and no scratch directory; --trace-id is refused with
# several traces (exit 2); a damaged trace gives its rows before the damage, exit 1.
#   usage: many.sh MTRACE REPORT_MKTRACE
set -u
mtrace=$1
mktrace=$2
. "$(dirname "$0")/../report/lib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/mtrace-export-many.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
tables="mtrace_traces mtrace_records mtrace_stacks mtrace_threads mtrace_rss"
mkdir tree
t 60 "$mktrace" tree/a.mtr 250 4000 2 || fail "report_mktrace a"
t 60 "$mktrace" tree/a.mtr.101 250 6000 3 || fail "report_mktrace a.101"
t 60 "$mktrace" tree/a.mtr.102 1000 3000 1 || fail "report_mktrace a.102"
echo "not a trace" >tree/notes.txt

# each trace on its own, as the reference
for f in a.mtr a.mtr.101 a.mtr.102; do
    t 60 "$mtrace" export "tree/$f" -o "one.$f" 2>err || fail "export of $f: $(cat err)"
done
# joined: same_as_joined DIR WHAT
same_as_joined() {
    for tb in $tables; do
        cat one.a.mtr/$tb.rowbinary one.a.mtr.101/$tb.rowbinary one.a.mtr.102/$tb.rowbinary >want
        cmp -s want "$1/$tb.rowbinary" || fail "$2: $tb.rowbinary is not the traces' own exports one after the other"
    done
    [ -z "$(ls -A "$1" | grep -v '\.rowbinary$')" ] || fail "$2: left in the directory: $(ls -A "$1")"
}
t 60 "$mtrace" export tree/a.mtr tree/a.mtr.101 tree/a.mtr.102 -o list 2>err || fail "export of three traces: $(cat err)"
same_as_joined list "three traces"
[ "$(grep -c '^mtrace: exported tree/' err)" = 3 ] || fail "three traces: not one line per trace: $(cat err)"
grep -q "^mtrace: exported 3 traces to list: " err || fail "three traces: no total line: $(cat err)"
t 60 "$mtrace" export tree -o dir 2>err || fail "export of a directory: $(cat err)"
same_as_joined dir "a directory"
t 60 "$mtrace" export tree/a.mtr tree -o both 2>err || fail "export of a file and its directory: $(cat err)"
same_as_joined both "a file beside its directory"

# again into the same directory: refused without --force, replaced with it
t 60 "$mtrace" export tree -o dir 2>err
rc=$?
[ $rc = 2 ] || fail "an earlier export without --force: exit $rc, expected 2"
t 60 "$mtrace" export tree -o dir --force 2>err || fail "--force: $(cat err)"
same_as_joined dir "a directory again with --force"

# a trace that cannot be read, an operand that is no trace: exit 1, nothing written
for bad in tree/missing.mtr tree/notes.txt; do
    t 60 "$mtrace" export tree/a.mtr "$bad" -o out.bad 2>err
    rc=$?
    [ $rc = 1 ] || fail "$bad among traces: exit $rc, expected 1"
    grep -q "$bad" err || fail "$bad among traces: the message does not name it: $(cat err)"
    [ ! -e out.bad ] || fail "$bad among traces: left $(ls -A out.bad)"
done
printf 'MTRC' >tree2.mtr
mkdir -p out.bad2
t 60 "$mtrace" export tree/a.mtr tree2.mtr -o out.bad2 2>err
rc=$?
[ $rc = 1 ] || fail "a trace cut in its header among traces: exit $rc, expected 1"
[ -z "$(ls -A out.bad2)" ] || fail "a trace cut in its header among traces: left $(ls -A out.bad2)"

t 60 "$mtrace" export tree --trace-id 7 -o out.id 2>err
rc=$?
[ $rc = 2 ] || fail "--trace-id with several traces: exit $rc, expected 2"
grep -q -- "--trace-id names one trace" err || fail "--trace-id with several traces: $(cat err)"

# a damaged trace among good ones: its rows before the damage, exit 1
cp tree/a.mtr.101 d.mtr
"$PY" -c 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(3 * 65536 + 700); f.write(bytes.fromhex("8080808080808080808080"))' d.mtr
t 60 "$mtrace" export tree/a.mtr d.mtr -o dmg 2>err
rc=$?
[ $rc = 1 ] || fail "a damaged trace among traces: exit $rc, expected 1"
grep -q "^mtrace: d.mtr: offset [0-9]*: .*; exported the [0-9]* call records before it" err ||
    fail "a damaged trace among traces: the message does not say where it stopped: $(cat err)"
for tb in $tables; do
    [ -s "dmg/$tb.rowbinary" ] || [ "$tb" = mtrace_stacks ] || fail "a damaged trace among traces: no $tb"
done
finish
