#!/usr/bin/env bash
# mtrace compare and mtrace sweep through the command line.
#   usage: cli.sh MTRACE MTRACE_SIM SIM_MKWL NOT_AN_ALLOCATOR.so [sanitized]
# compare: the text table has a % change column, --csv a header and a line per file, --json is valid
# JSON (python3 -m json.tool); a file that is not a replay result, or garbage, gives exit 1 and one
# line. sweep: DIR/sweep.csv with a line for the default and one per setting, the lowest-RSS and
# fastest settings named, and DIR/sweep.png a PNG when gnuplot is installed. Every command runs
# under timeout(1).
set -u
mtrace=$1
sim=$2
mkwl=$3
not_an_allocator=$4
sanitized=${5:-}
if [ -n "$sanitized" ]; then
    # the replay leaves the blocks a workload never frees: not leaks to report
    export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:allocator_may_return_null=1
fi
# shellcheck source=tests/lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
unset MALLOC_PERTURB_ # meson's; glibc would fill every block and touch its pages
work=$(mktemp -d /tmp/mtrace-sim-cli.XXXXXX)
trap 'rm -rf "$work"' EXIT

json_ok() { python3 -m json.tool "$1" >/dev/null 2>&1; }

# ---- workloads and results ----
t 60 "$mkwl" mixed "$work/mixed.mtw" || fail "sim_mkwl mixed"
t 60 "$mkwl" layers "$work/layers.mtw" || fail "sim_mkwl layers"

t 120 "$mtrace" replay "$work/mixed.mtw" --json "$work/a.json" --quiet || fail "replay a"
# the same allocator twice (run-to-run spread): a result file each, named apart
t 240 "$mtrace" replay "$work/mixed.mtw" --allocator glibc --allocator glibc --json "$work/twice.json" --quiet ||
    fail "replay glibc twice"
for f in twice.glibc.json twice.glibc-2.json; do
    [ -s "$work/$f" ] || fail "replay glibc twice: no $f: $(ls "$work")"
done
t 120 "$mtrace" replay "$work/mixed.mtw" --json "$work/b.json" --quiet --mallopt mmap_threshold=65536 ||
    fail "replay b"
t 120 "$sim" "$work/mixed.mtw" --json "$work/c.json" --quiet --label other || fail "mtrace-sim c"
for f in a b c; do
    json_ok "$work/$f.json" || fail "$f.json is not valid JSON"
done

# ---- compare: text ----
t 60 "$mtrace" compare "$work/a.json" "$work/b.json" "$work/c.json" >"$work/table.txt" 2>"$work/err" ||
    fail "compare: exit $?"
[ -s "$work/err" ] && fail "compare wrote to stderr: $(cat "$work/err")"
lines=$(wc -l <"$work/table.txt")
[ "$lines" = 4 ] || fail "compare: $lines lines, expected a header and 3 rows:$(cat "$work/table.txt")"
head -1 "$work/table.txt" | grep -q '^allocator .*wall ms.*peak RSS MiB' || fail "compare: header: $(head -1 "$work/table.txt")"
# rows after the first carry the % change against the first
sed -n 2p "$work/table.txt" | grep -q '^glibc ' || fail "compare: first row: $(sed -n 2p "$work/table.txt")"
sed -n 2p "$work/table.txt" | grep -q '%)' && fail "compare: the first row has a change against itself"
sed -n 3p "$work/table.txt" | grep -qE '^glibc mmap_threshold=65536 .*\([+-][0-9]+\.[0-9]%\)' ||
    fail "compare: second row without its setting or % change: $(sed -n 3p "$work/table.txt")"
sed -n 4p "$work/table.txt" | grep -qE '^other .*\([+-][0-9]+\.[0-9]%\)' ||
    fail "compare: third row: $(sed -n 4p "$work/table.txt")"
# the % change is the change in the figure: compare a result with a copy under another name, 0 %
# (the same name twice would be two runs of one row)
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["allocator"] = "copy"; json.dump(d, open(sys.argv[2], "w"))' \
    "$work/a.json" "$work/copy.json"
t 60 "$mtrace" compare "$work/a.json" "$work/copy.json" >"$work/same.txt" || fail "compare a copy"
sed -n 3p "$work/same.txt" | grep -qE '\([+-]?[1-9][0-9]*\.[0-9]%\)|\([+-]?0\.[1-9]%\)' &&
    fail "compare a copy: a nonzero change: $(sed -n 3p "$work/same.txt")"
sed -n 3p "$work/same.txt" | grep -q '(+0.0%)' || fail "compare a copy: no +0.0%: $(sed -n 3p "$work/same.txt")"

# results of another workload: compared all the same, with one warning naming both workloads
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["workload"] = "/elsewhere/other.wl"; json.dump(d, open(sys.argv[2], "w"))' \
    "$work/b.json" "$work/other.json"
t 60 "$mtrace" compare "$work/a.json" "$work/other.json" >"$work/other.txt" 2>"$work/err" || fail "compare a other: exit $?"
[ "$(wc -l <"$work/err")" = 1 ] && grep -q 'warning: .*other.json replayed /elsewhere/other.wl.*different workloads' "$work/err" ||
    fail "compare of two workloads: expected one warning, got: $(cat "$work/err")"

# a damaged or hand-edited result: refused (exit 1), one line naming the file and the figure
bad_result() { # NAME PYTHON-STATEMENT-ON-d
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); exec(sys.argv[3]); json.dump(d, open(sys.argv[2], "w"))' \
        "$work/b.json" "$work/$1.json" "$2"
}
bad_result neg 'd["wall_us"] = -5'
bad_result str 'd["avg_cycles"]["malloc"] = "fast"'
bad_result inf 'd["max_rss_kb"] = 123456789.5' # then 1e999, which reads as infinity
sed -i 's/123456789\.5/1e999/' "$work/inf.json"
bad_result grp 'd["p99_cycles"] = 7'
for f in neg:wall_us str:avg_cycles.malloc inf:max_rss_kb grp:p99_cycles; do
    name=${f%%:*} fig=${f#*:}
    t 60 "$mtrace" compare "$work/a.json" "$work/$name.json" >"$work/bad.txt" 2>"$work/err"
    rc=$?
    [ "$rc" = 1 ] || fail "compare with $name.json: exit $rc, expected 1"
    [ -s "$work/bad.txt" ] && fail "compare with $name.json printed a table"
    [ "$(wc -l <"$work/err")" = 1 ] && grep -q "$name.json: \"$fig\" is not" "$work/err" ||
        fail "compare with $name.json: expected one line naming $fig, got: $(cat "$work/err")"
    t 60 "$mtrace" plot -o "$work/bad.png" --kind compare "$work/a.json" "$work/$name.json" 2>"$work/err"
    rc=$?
    [ "$rc" != 0 ] && grep -q "$name.json: \"$fig\" is not" "$work/err" ||
        fail "plot --kind compare with $name.json: exit $rc: $(cat "$work/err")"
    [ -e "$work/bad.png" ] && fail "plot --kind compare with $name.json wrote a plot"
done

# ---- compare --recordings: results of one allocator and settings from other workloads (recordings
# of one program) are runs of one row, with no warning ----
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["workload"] = "/elsewhere/again.wl"; json.dump(d, open(sys.argv[2], "w"))' \
    "$work/a.json" "$work/again.json"
t 60 "$mtrace" compare --recordings --json "$work/a.json" "$work/again.json" "$work/b.json" >"$work/rec.json" \
    2>"$work/err" || fail "compare --recordings: exit $?: $(cat "$work/err")"
[ -s "$work/err" ] && fail "compare --recordings: said: $(cat "$work/err")"
python3 - "$work/rec.json" <<'PY' || fail "compare --recordings: rows: $(cat "$work/rec.json")"
import json, sys
rows = json.load(open(sys.argv[1]))
assert [(r["runs"], r["recordings"]) for r in rows] == [(2, 2), (1, 1)], rows
PY
t 60 "$mtrace" compare "$work/a.json" "$work/again.json" >"$work/out" 2>"$work/err" || fail "compare a again: exit $?"
grep -q 'different workloads' "$work/err" || fail "compare a again (no --recordings): no warning: $(cat "$work/err")"
t 60 "$mtrace" compare --recordings "$work/a.json" "$work/again.json" >"$work/out" 2>"$work/err" ||
    fail "compare --recordings (text): exit $?"
grep -q 'up to 2 recordings' "$work/out" || fail "compare --recordings (text): no word of the recordings: $(cat "$work/out")"

# ---- compare: CSV ----
t 60 "$mtrace" compare --csv "$work/a.json" "$work/b.json" "$work/c.json" >"$work/table.csv" ||
    fail "compare --csv: exit $?"
[ "$(wc -l <"$work/table.csv")" = 4 ] || fail "compare --csv: $(wc -l <"$work/table.csv") lines, expected 4"
head -1 "$work/table.csv" | grep -qE '^name(,[a-z0-9_]+)+$' || fail "compare --csv: header: $(head -1 "$work/table.csv")"
cols=$(head -1 "$work/table.csv" | awk -F, '{print NF}')
awk -F, -v n="$cols" 'NR > 1 && NF != n { bad = 1 } END { exit bad }' "$work/table.csv" ||
    fail "compare --csv: rows with a column count other than the header's ($cols)"
python3 - "$work/table.csv" "$work/a.json" <<'PY' || fail "compare --csv: figures"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
a = json.load(open(sys.argv[2]))
assert [r["name"] for r in rows] == ["glibc", "glibc mmap_threshold=65536", "other"], rows
assert abs(float(rows[0]["peak_rss_mib"]) - a["max_rss_kb"] / 1024) < 0.01, (rows[0], a["max_rss_kb"])
assert abs(float(rows[0]["wall_ms"]) - a["wall_us"] / 1000) < 0.01 * max(1, a["wall_us"] / 1000)
PY

# ---- compare: JSON ----
t 60 "$mtrace" compare --json "$work/a.json" "$work/b.json" >"$work/table.json" || fail "compare --json: exit $?"
json_ok "$work/table.json" || fail "compare --json: not valid JSON: $(head -c 300 "$work/table.json")"
python3 - "$work/table.json" <<'PY' || fail "compare --json: content"
import json, sys
t = json.load(open(sys.argv[1]))
assert isinstance(t, list) and len(t) == 2, t
assert t[0]["name"] == "glibc" and t[1]["name"] == "glibc mmap_threshold=65536", t
assert t[0]["peak_rss_mib_change_pct"] == 0, t[0]
assert "wall_ms_change_pct" in t[1]
PY

# ---- compare: bad input ----
echo '{"kind": "workload", "file": "x"}' >"$work/notresult.json"
printf 'this is { not json' >"$work/garbage.json"
printf '{"kind": "replay", "allocator": "x", ' >"$work/cut.json"
: >"$work/empty.json"
for bad in notresult garbage cut empty missing; do
    t 60 "$mtrace" compare "$work/a.json" "$work/$bad.json" >"$work/out" 2>"$work/err"
    rc=$?
    [ $rc = 1 ] || fail "compare with $bad.json: exit $rc, expected 1"
    one_line "$work/err" "compare with $bad.json" "$work/$bad.json" "offset"
    [ -s "$work/out" ] && fail "compare with $bad.json printed a table"
done
t 60 "$mtrace" compare >/dev/null 2>&1
[ $? = 2 ] || fail "compare without files: expected exit 2"

# ---- sweep ----
t 300 "$mtrace" sweep "$work/layers.mtw" --mallopt mmap_threshold=4096,1048576 -o "$work/sweep" \
    >"$work/sweep.out" 2>"$work/sweep.err" || fail "sweep: exit $?: $(cat "$work/sweep.err")"
csv=$work/sweep/sweep.csv
if [ ! -f "$csv" ]; then
    fail "sweep: no sweep.csv"
else
    [ "$(wc -l <"$csv")" = 4 ] || fail "sweep.csv: $(wc -l <"$csv") lines, expected a header, the default and 2"
    head -1 "$csv" | grep -q '^allocator,mmap_threshold,wall_ms,cpu_ms,peak_rss_mib' || fail "sweep.csv header: $(head -1 "$csv")"
    sed -n 2p "$csv" | grep -q '^glibc,dynamic (default),' || fail "sweep.csv row 1 (the default): $(sed -n 2p "$csv")"
    sed -n 3p "$csv" | grep -q '^glibc,4096,' || fail "sweep.csv row 2: $(sed -n 3p "$csv")"
    sed -n 4p "$csv" | grep -q '^glibc,1048576,' || fail "sweep.csv row 3: $(sed -n 4p "$csv")"
    # The layers workload: with the threshold at 1 MiB its 256 KiB blocks leave pinned holes in the
    # heap (50 MiB more at the peak), so 4096 must come out 30 MiB below it (see test_sim_rss.c).
    # Not in a sanitized build, whose allocator ignores mallopt.
    if [ -z "$sanitized" ]; then
        python3 - "$csv" <<'PY' || fail "sweep.csv: figures"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
low, high = float(rows[1]["peak_rss_mib"]), float(rows[2]["peak_rss_mib"])
assert high > low + 30, (low, high)
PY
    fi
fi
if [ -z "$sanitized" ]; then
    # glibc's dynamic threshold (the default row) mmaps these blocks too: a tie with 4096, give or take a page
    grep -qE '^lowest peak RSS: glibc mmap_threshold=(4096|dynamic \(default\)): ' "$work/sweep.out" ||
        fail "sweep: lowest-RSS line: $(grep -i lowest "$work/sweep.out")"
else
    grep -qE '^lowest peak RSS: glibc mmap_threshold=(4096|1048576|dynamic \(default\)): ' "$work/sweep.out" ||
        fail "sweep: lowest-RSS line: $(grep -i lowest "$work/sweep.out")"
fi
grep -qE '^fastest: +glibc mmap_threshold=(4096|1048576|dynamic \(default\)): ' "$work/sweep.out" ||
    fail "sweep: fastest line: $(grep -i fastest "$work/sweep.out")"
grep -qF "wrote $csv" "$work/sweep.out" || fail "sweep: does not say it wrote $csv"
# progress: plain lines when stderr is not a terminal (no carriage return, no escape code); on a
# terminal (script(1) gives one), one line rewritten in place
grep -q $'[\r\033]' "$work/sweep.err" && fail "sweep: carriage return or escape code on a stderr that is no terminal"
grep -qx 'mtrace sweep: run 1 of 3: glibc mmap_threshold=dynamic (default)' "$work/sweep.err" || fail "sweep: no plain progress line: $(cat "$work/sweep.err")"
if command -v script >/dev/null 2>&1; then
    t 300 script -qec "'$mtrace' sweep '$work/layers.mtw' --mallopt mmap_threshold=4096 -o '$work/sweep-tty' >/dev/null" \
        /dev/null >"$work/sweep-tty.err" 2>&1 || fail "sweep on a terminal: $(cat "$work/sweep-tty.err")"
    grep -q $'\rmtrace sweep: run 2 of 2' "$work/sweep-tty.err" || fail "sweep on a terminal: no progress line rewritten in place"
    # a replay that fails says so on a line of its own under the progress line, which stays: its
    # words were glued to the line's end, and an empty line followed them
    if [ -z "$sanitized" ]; then
        script -qec "'$mtrace' sweep '$work/layers.mtw' --mallopt mmap_threshold=4096 -o '$work/sweep-tty-bad' \
            --allocator glibc --allocator '$not_an_allocator' >/dev/null" /dev/null >"$work/sweep-tty.err" 2>&1
        tr -d '\r' <"$work/sweep-tty.err" | grep -q '^mtrace-sim: .*not an allocator' ||
            fail "sweep on a terminal, a replay that fails: its words not on a line of their own: $(cat -A "$work/sweep-tty.err")"
        grep -q $'run 2 of 4: .*not_an_allocator.so mmap_threshold=default\033\[K\r*$' "$work/sweep-tty.err" ||
            fail "sweep on a terminal, a replay that fails: the progress line naming it is gone: $(cat -A "$work/sweep-tty.err")"
        [ -z "$(tail -n 1 "$work/sweep-tty.err" | tr -d '\r')" ] &&
            fail "sweep on a terminal, a replay that fails: an empty last line: $(cat -A "$work/sweep-tty.err")"
    fi
fi
for k in 000 001 002; do
    json_ok "$work/sweep/run-$k.json" || fail "sweep: run-$k.json is not valid JSON"
done
if command -v gnuplot >/dev/null 2>&1; then
    png=$work/sweep/sweep.png
    if [ ! -s "$png" ]; then
        fail "sweep: gnuplot is installed but there is no sweep.png"
    else
        magic=$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')
        [ "$magic" = 89504e470d0a1a0a ] || fail "sweep.png: magic $magic, not a PNG"
        grep -qF "wrote $png" "$work/sweep.out" || fail "sweep: does not say it wrote $png"
    fi
else
    echo "gnuplot is not installed (apt-get install gnuplot-nox): sweep.png not checked"
fi
# a bad workload: one line, exit 1, nothing written
printf 'not a workload' >"$work/bad.mtw"
t 60 "$mtrace" sweep "$work/bad.mtw" --mallopt mmap_threshold=1,2 -o "$work/sweep-bad" >/dev/null 2>"$work/err"
[ $? = 1 ] || fail "sweep on a bad workload: expected exit 1"
one_line "$work/err" "sweep on a bad workload" "$work/bad.mtw" "offset"
# usage
t 60 "$mtrace" sweep "$work/layers.mtw" -o "$work/sweep-none" >/dev/null 2>&1
[ $? = 2 ] || fail "sweep without --mallopt: expected exit 2"

finish
