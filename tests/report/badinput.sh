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
# series-not-a-file (a regression: gnuplot read for ever): a result whose RSS series names
#   /dev/zero, /dev/urandom, a FIFO or a directory, to plot and report --html.
# bad-figures (a regression: plot and report --html drew them): a result with a figure that
#   compare rejects (1e400, negative, a string), top-level and nested, to compare, plot (both kinds)
#   and report --html: rejected alike, by one rule.
set -u
mtrace=$1
mktrace=$2
what=${3:-all}
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d /tmp/mtrace-report-bad.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

bad_traces "$mktrace"
t 60 "$mtrace" report --json g.mtr >report.json || fail "report --json g.mtr"
printf '{"kind": "replay", "allocator": "glibc", "wall_us": 12' >cut.json

# temporary files of mtrace's own (report --html, its flame graph, gnuplot's log): in a TMPDIR of
# this test's, so that no other test's temporaries can be taken for ours
export TMPDIR="$work/tmp"
mkdir -p "$TMPDIR"
tmp_list() { ls -A "$TMPDIR" | sort; }

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
        local left
        left=$(comm -13 <(echo "$before") <(echo "$after"))
        fail "$what: left temporaries behind: $left"
        (cd "$TMPDIR" && echo "$left" | xargs rm -rf) # ours: made by the command just run
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
        # chunk.mtr's header reads, and says that the trace has no stacks: said before the damage
        # after it is met (a trace that is not one, or is cut in its header, gets the damage)
        needle=offset
        [ "$x" = chunk.mtr ] && needle="no stacks for --folded"
        bad "report callsite outputs $x" "$x|$needle" "f.folded|f.svg|c.csv" -- \
            "$mtrace" report --folded f.folded --flamegraph f.svg --callsites-csv c.csv "$x"
        bad "plot $x" "$x|offset" "o.png|o.dat" -- "$mtrace" plot -o o.png "$x"
        bad "plot --kind sizes $x" "$x|offset" "o.svg|o.dat" -- "$mtrace" plot --kind sizes -o o.svg "$x"
        bad "report --html $x" "$x|offset" "o.html|o.html.partial" -- "$mtrace" report --html o.html "$x"
    done
    # temporaries go to $TMPDIR, as the checks above assume: one that does not exist is named
    TMPDIR="$work/no-such-dir" t 60 "$mtrace" report --html o.html g.mtr >/dev/null 2>err &&
        fail "report --html with TMPDIR missing: exit 0"
    grep -q "no-such-dir" err || fail "report --html does not use \$TMPDIR: $(cat err)"
    rm -f o.html
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
series-not-a-file)
    t 60 "$mtrace" convert g.mtr -o g.mtw --quiet >/dev/null || fail "convert"
    t 120 env "$replay_asan" "$mtrace" replay g.mtw --json r.json --rss-series r.tsv --quiet >/dev/null || fail "replay"
    mkfifo fifo
    for series in /dev/zero /dev/urandom "$work/fifo" "$work"; do
        "$PY" -c 'import json, sys
r = json.load(open("r.json")); r["rss_series"] = sys.argv[1]; json.dump(r, open("s.json", "w"))' "$series"
        bad "plot, the RSS series $series" "s.json|$series|expected a regular file" "o.png|o.dat" -- \
            "$mtrace" plot -o o.png s.json
        bad "report --html, the RSS series $series" "s.json|$series|expected a regular file" \
            "o.html|o.html.partial" -- "$mtrace" report --html o.html g.mtr s.json
    done
    ls ./*.partial.* 2>/dev/null && fail "temporaries left: $(ls ./*.partial.*)"
    ;;
bad-figures)
    t 60 "$mtrace" convert g.mtr -o g.mtw --quiet >/dev/null || fail "convert"
    t 120 env "$replay_asan" "$mtrace" replay g.mtw --json r.json --rss-series r.tsv --quiet >/dev/null || fail "replay"
    for key in wall_us avg_cycles.malloc; do
        for v in 1e400 -5 '"12"'; do
            "$PY" -c 'import json, sys
r = json.load(open("r.json")); key, v = sys.argv[1].split("."), json.loads(sys.argv[2])
o = r[key[0]] if len(key) > 1 else r
o[key[-1]] = v
text = json.dumps(r)
# json.dumps writes an overflowing float as Infinity: put the literal back
open("b.json", "w").write(text.replace("Infinity", sys.argv[2]))' "$key" "$v"
            needles="b.json|\"$key\" is not a number of at least 0"
            bad "compare, $key $v" "$needles" "" -- "$mtrace" compare b.json
            bad "plot, $key $v" "$needles" "o.png|o.dat" -- "$mtrace" plot -o o.png b.json
            bad "plot --kind compare, $key $v" "$needles" "o.png|o.dat" -- "$mtrace" plot --kind compare -o o.png b.json
            bad "report --html, $key $v" "$needles" "o.html|o.html.partial" -- \
                "$mtrace" report --html o.html g.mtr b.json
        done
    done
    ;;
*)
    echo "unknown case $what"
    exit 2
    ;;
esac
finish
