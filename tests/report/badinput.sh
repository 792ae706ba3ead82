#!/usr/bin/env bash
# mtrace report, mtrace plot and mtrace report --html on bad input.
#   usage: badinput.sh MTRACE REPORT_MKTRACE [all|html-bad-result|plot-missing-series]
# Each must exit 1 with exactly one line on stderr that names the file and the offset (or what was
# expected there), print nothing on stdout, and leave no output behind: no OUT.png / OUT.svg and the
# .dat beside it, no OUT.html or OUT.html.partial, no --folded / --flamegraph / --callsites-csv file,
# and no temporary directory of its own under /tmp.
# all: bad traces (not a trace, an empty file, a file cut inside the header, a sealed chunk with
#   damaged records) to every command; results that are not replay results (a report's JSON, a cut
#   JSON) to mtrace plot; a suppressions file that is missing or holds a NUL byte to report.
# html-bad-result (a known bug, expected to fail): report --html with a good trace and such a result.
# plot-missing-series (a known bug, expected to fail): plotting a replay result whose RSS series
#   file is gone.
set -u
mtrace=$1
mktrace=$2
what=${3:-all}
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d /tmp/mtrace-report-bad.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

t 60 "$mktrace" g.mtr || { fail "report_mktrace"; finish; }
printf 'hello, this is not a trace\n' >notatrace.txt
: >empty.mtr
head -c 100 g.mtr >cut.mtr
# chunk 1 (offset 65536) is sealed: 16 bytes of 0xff inside its records
cp g.mtr chunk.mtr
printf '\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377' |
    dd of=chunk.mtr bs=1 seek=$((65536 + 32 + 200)) conv=notrunc status=none
t 60 "$mtrace" report --json g.mtr >report.json || fail "report --json g.mtr"
printf '{"kind": "replay", "allocator": "glibc", "wall_us": 12' >cut.json

# temporary files of mtrace's own (report --html, its flame graph)
tmp_list() { ls -d /tmp/mtrace-html.* /tmp/mtrace-flame.* 2>/dev/null | sort; }

# bad WHAT NEEDLES OUTPUTS -- CMD...: exit 1, one line on stderr holding every needle (separated by
# '|'), empty stdout, none of the outputs (separated by '|') left, no new temporary of mtrace's.
bad() {
    local what=$1 needles=$2 outputs=$3
    shift 4
    local before after
    before=$(tmp_list)
    t 60 "$@" >out 2>err
    local rc=$?
    [ $rc = 1 ] || fail "$what: exit $rc, expected 1"
    [ -s out ] && fail "$what: printed on stdout: $(head -c 200 out)"
    local IFS='|'
    # shellcheck disable=SC2086
    one_line err "$what" $needles
    for o in $outputs; do
        no_file "$what" "$o"
    done
    unset IFS
    after=$(tmp_list)
    if [ "$before" != "$after" ]; then
        sleep 2 # another test's report --html may be running: its temporaries go away on their own
        local left
        left=$(comm -13 <(echo "$before") <(tmp_list))
        if [ -n "$left" ]; then
            fail "$what: left temporaries behind: $left"
            echo "$left" | xargs rm -rf # ours: made by the command just run
        fi
    fi
    local IFS='|'
    for o in $outputs; do
        rm -f "$o"
    done
    unset IFS
    rm -f out err
}

case $what in
all)
    for x in notatrace.txt empty.mtr cut.mtr chunk.mtr; do
        bad "report $x" "$x|offset" "" -- "$mtrace" report "$x"
        bad "report --json $x" "$x|offset" "" -- "$mtrace" report --json "$x"
        bad "report --csv $x" "$x|offset" "" -- "$mtrace" report --csv "$x"
        bad "report callsite outputs $x" "$x|offset" "f.folded|f.svg|c.csv" -- \
            "$mtrace" report --folded f.folded --flamegraph f.svg --callsites-csv c.csv "$x"
        bad "plot $x" "$x|offset" "o.png|o.dat" -- "$mtrace" plot -o o.png "$x"
        bad "plot --kind sizes $x" "$x|offset" "o.svg|o.dat" -- "$mtrace" plot --kind sizes -o o.svg "$x"
        bad "report --html $x" "$x|offset" "o.html|o.html.partial" -- "$mtrace" report --html o.html "$x"
    done
    # the messages say what was expected where
    t 60 "$mtrace" report cut.mtr 2>err >/dev/null
    grep -q "offset 100" err || fail "cut.mtr: the message does not name offset 100 (where the file ends): $(cat err)"
    t 60 "$mtrace" report chunk.mtr 2>err >/dev/null
    off=$(sed -n 's/.*offset \([0-9]*\).*/\1/p' err)
    if [ -z "$off" ] || [ "$off" -lt 65568 ] || [ "$off" -gt $((65536 + 32 + 216)) ]; then
        fail "chunk.mtr: the message names offset '$off', not one in the damaged records: $(cat err)"
    fi
    # a suppressions file that cannot be used: named, with the line at fault
    printf 'site_one\nsite\000two\n' >nul.supp
    bad "report --suppress missing.supp" "missing.supp" "" -- "$mtrace" report --suppress missing.supp g.mtr
    bad "report --suppress nul.supp" "nul.supp:2:|NUL" "o.html|o.html.partial" -- \
        "$mtrace" report --html o.html --suppress nul.supp g.mtr
    for r in report.json cut.json; do
        bad "plot $r" "$r|offset" "o.png|o.dat" -- "$mtrace" plot -o o.png "$r"
        bad "plot --kind compare $r" "$r|offset" "o.png|o.dat" -- "$mtrace" plot --kind compare -o o.png "$r"
    done
    ;;
html-bad-result)
    for r in report.json cut.json; do
        bad "report --html g.mtr $r" "$r|expected" "o.html|o.html.partial" -- "$mtrace" report --html o.html g.mtr "$r"
    done
    ;;
plot-missing-series)
    t 60 "$mtrace" convert g.mtr -o g.mtw --quiet >/dev/null || fail "convert"
    t 120 env "$replay_asan" "$mtrace" replay g.mtw --json r.json --rss-series r.tsv --quiet >/dev/null || fail "replay"
    rm -f r.tsv
    bad "plot, the RSS series gone" "r.tsv" "o.png|o.dat" -- "$mtrace" plot -o o.png r.json
    ;;
*)
    echo "unknown case $what"
    exit 2
    ;;
esac
finish
