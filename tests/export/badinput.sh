#!/usr/bin/env bash
# mtrace export on bad input.
#   usage: badinput.sh MTRACE REPORT_MKTRACE
# - Not a trace, an empty file, a header cut short: exit 1, one line on stderr naming the file and the
#   offset, and no output at all (the directory it would have made is not left behind either).
# - A sealed chunk with damaged records: exit 1, one line naming the file and an offset inside the
#   damage; the tables are written, whole, and the records table holds every record before the
#   damage: its file is a non-empty prefix of the good trace's (the same rows, byte for byte).
# - A trace cut short after it was written (inside its first chunk of records): its records are
#   exported, and it stops there as damage does: exit 1, one line naming the file and offset,
#   mtrace_traces says where.
# - An output directory that cannot be made, a regular file in its place (its first table cannot be
#   opened: once a double free), and files of an earlier export without --force: no file written, no
#   temporary left.
# - -j 1, 2 and 3 (the caller alone; one worker decoding and merging; two more): the same tables, byte
#   for byte, and the same message, for the good trace and the damaged and cut ones.
set -u
mtrace=$1
mktrace=$2
. "$(dirname "$0")/../report/lib.sh"
work=$(mktemp -d /tmp/mtrace-export-bad.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

bad_traces "$mktrace"
# chunk.mtr's damage at the chunk's first record: the first record of thread 1, before which
# nothing is known
cp g.mtr first.mtr
printf '\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377' |
    dd of=first.mtr bs=1 seek=$((65536 + 32)) conv=notrunc status=none
tables="mtrace_traces mtrace_records mtrace_stacks mtrace_threads mtrace_rss"

t 60 "$mtrace" export g.mtr -o good 2>err || fail "export g.mtr: $(cat err)"
for x in $tables; do [ -f "good/$x.rowbinary" ] || fail "export g.mtr: no good/$x.rowbinary"; done

for x in notatrace.txt empty.mtr cut.mtr; do
    t 60 "$mtrace" export "$x" -o "out.$x" >out 2>err
    rc=$?
    [ $rc = 1 ] || fail "export $x: exit $rc, expected 1"
    [ -s out ] && fail "export $x: printed on stdout: $(head -c 200 out)"
    one_line err "export $x" "$x" offset
    no_file "export $x" "out.$x"
done
grep -q "offset 100" <(t 60 "$mtrace" export cut.mtr -o out.cut 2>&1) || fail "cut.mtr: the message does not name offset 100"

t 60 "$mtrace" export chunk.mtr -o damaged >out 2>err
rc=$?
[ $rc = 1 ] || fail "export chunk.mtr: exit $rc, expected 1"
one_line err "export chunk.mtr" chunk.mtr offset "records before it"
off=$(sed -n 's/.*offset \([0-9]*\).*/\1/p' err)
if [ -z "$off" ] || [ "$off" -lt 65568 ] || [ "$off" -gt $((65536 + 32 + 216)) ]; then
    fail "chunk.mtr: the message names offset '$off', not one in the damaged records: $(cat err)"
fi
for x in $tables; do [ -f "damaged/$x.rowbinary" ] || fail "export chunk.mtr: no damaged/$x.rowbinary"; done
n=$(wc -c <damaged/mtrace_records.rowbinary)
if [ "$n" -eq 0 ]; then
    fail "export chunk.mtr: no record exported, expected those before the damage"
elif ! cmp -s -n "$n" damaged/mtrace_records.rowbinary good/mtrace_records.rowbinary; then
    fail "export chunk.mtr: its records are not the first $n bytes of the good trace's"
elif [ "$n" -ge "$(wc -c <good/mtrace_records.rowbinary)" ]; then
    fail "export chunk.mtr: as many records as the whole trace"
fi
grep -qF "chunk.mtr: offset $off" damaged/mtrace_traces.rowbinary ||
    fail "export chunk.mtr: mtrace_traces does not say where the export stopped"
ls damaged | grep -q partial && fail "export chunk.mtr: left temporaries: $(ls damaged)"

t 60 "$mtrace" export first.mtr -o first >out 2>err
rc=$?
[ $rc = 1 ] || fail "export first.mtr: exit $rc, expected 1"
one_line err "export first.mtr" first.mtr "offset 65568" "the 0 call records before it"
[ -f first/mtrace_records.rowbinary ] && [ ! -s first/mtrace_records.rowbinary ] ||
    fail "export first.mtr: the records table is not there, empty"
grep -qF "first.mtr: offset 65568" first/mtrace_traces.rowbinary ||
    fail "export first.mtr: mtrace_traces does not say where the export stopped"

cut_at=$((65536 + 4096))
head -c $cut_at g.mtr >short.mtr
t 60 "$mtrace" export short.mtr -o short >out 2>err
rc=$?
[ $rc = 1 ] || fail "export short.mtr: exit $rc, expected 1"
one_line err "export short.mtr" short.mtr "offset $cut_at" truncated "call records before it"
grep -qF "short.mtr: offset $cut_at" short/mtrace_traces.rowbinary ||
    fail "export short.mtr: mtrace_traces does not say where the export stopped"

# a directory that cannot be made; an earlier export's files
t 60 "$mtrace" export g.mtr -o /proc/self/mtrace-export >out 2>err
rc=$?
[ $rc = 1 ] || fail "export to /proc/self: exit $rc, expected 1"
one_line err "export to /proc/self" /proc/self/mtrace-export
printf 'not a directory\n' >afile
t 60 "$mtrace" export g.mtr -o afile >out 2>err
rc=$?
[ $rc = 1 ] || fail "export to a regular file: exit $rc, expected 1"
one_line err "export to a regular file" "afile/mtrace_traces.rowbinary" "Not a directory"
[ "$(cat afile)" = "not a directory" ] || fail "export to a regular file: the file changed"
cp -r good before
t 60 "$mtrace" export g.mtr -o good >out 2>err
rc=$?
[ $rc = 2 ] || fail "export over an earlier export: exit $rc, expected 2"
one_line err "export over an earlier export" "exists" "--force"
diff -r before good >/dev/null || fail "export over an earlier export changed its files"
t 60 "$mtrace" export g.mtr -o good --force 2>err || fail "export --force: $(cat err)"
diff -r before good >/dev/null || fail "export --force of the same trace wrote other bytes"
ls good | grep -q partial && fail "export --force: left temporaries: $(ls good)"

# a write that fails midway (the file size limit, its signal ignored: write returns EFBIG): exit 1,
# one line naming the file, no table and no temporary left, the directory it made gone
(trap '' XFSZ; ulimit -f 64; exec timeout -k 5 60 "$mtrace" export g.mtr -o full) >out 2>err
rc=$?
[ $rc = 1 ] || fail "export past the file size limit: exit $rc, expected 1"
one_line err "export past the file size limit" "full/mtrace_records.rowbinary"
no_file "export past the file size limit" full

# -j N: the same tables and the same stop, whatever the number of threads reading
for x in g chunk first short; do
    for j in 1 2 3; do
        t 60 "$mtrace" export -j $j $x.mtr -o "j$j.$x" >out 2>"err.$j.$x"
        echo $? >"rc.$j.$x"
        sed -i "s|j$j\.$x|DIR|g" "err.$j.$x"
    done
    for j in 2 3; do
        cmp -s "rc.1.$x" "rc.$j.$x" || fail "export -j $j $x.mtr: exit $(cat "rc.$j.$x"), -j 1's $(cat "rc.1.$x")"
        cmp -s "err.1.$x" "err.$j.$x" || fail "export -j $j $x.mtr said: $(cat "err.$j.$x"); -j 1: $(cat "err.1.$x")"
        for y in $tables; do
            cmp -s "j1.$x/$y.rowbinary" "j$j.$x/$y.rowbinary" || fail "export -j $j $x.mtr: $y differs from -j 1's"
        done
    done
done

# --trace-id: the key of every row (little-endian in RowBinary); 0 and other non-numbers are refused
t 60 "$mtrace" export g.mtr -o keyed --trace-id 42 2>err || fail "export --trace-id 42: $(cat err)"
for x in mtrace_traces mtrace_records mtrace_threads; do
    [ "$(head -c 8 "keyed/$x.rowbinary" | od -An -tx1 | tr -d ' \n')" = 2a00000000000000 ] ||
        fail "export --trace-id 42: $x does not start with trace id 42"
done
for v in 0 -1 x 18446744073709551616; do
    t 60 "$mtrace" export g.mtr -o "keyed.$v" --trace-id "$v" >out 2>err
    rc=$?
    [ $rc = 2 ] || fail "export --trace-id $v: exit $rc, expected 2"
    no_file "export --trace-id $v" "keyed.$v"
done
finish
