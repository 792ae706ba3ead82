#!/usr/bin/env bash
# mtrace plot, on a trace written by report_mktrace and on replay results of it.
#   usage: plots.sh MTRACE REPORT_MKTRACE [all|relative-series]
# all: a symlink planted at the picture's name is replaced, not followed;
# -o X.png (no other option) writes a PNG (signature 89 50 4E 47), -o X.svg an SVG that parses
# as XML; --kind sizes both ways; the data files beside them hold the report's numbers (one live-bytes
# point per RSS sample, the size counts adding up to the allocations); for replay results (mtrace
# convert + mtrace replay --json --rss-series) the RSS plot of one and of two results, and --kind
# compare; a --kind that does not fit the input is a usage error (2) that writes nothing.
# relative-series (a known bug, expected to fail): a replay result names its RSS series by the path
# given to replay; plotting it from another directory must still find the series.
# Skipped (77) when gnuplot is not installed.
set -u
mtrace=$1
mktrace=$2
what=${3:-all}
. "$(dirname "$0")/lib.sh"
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "SKIP: gnuplot is not installed (apt-get install gnuplot-nox)"
    exit 77
fi
work=$(mktemp -d /tmp/mtrace-report-plots.XXXXXX)
trap 'rm -rf "$work"' EXIT

t 60 "$mktrace" "$work/g.mtr" || { fail "report_mktrace"; finish; }

# replay results, made in a directory of their own with relative paths (as a user would)
mkdir "$work/res"
(
    cd "$work/res" || exit 1
    t 60 "$mtrace" convert ../g.mtr -o g.mtw --quiet >/dev/null &&
        t 120 env "$replay_asan" "$mtrace" replay g.mtw --json r1.json --rss-series r1.tsv --quiet >/dev/null &&
        t 120 env "$replay_asan" "$mtrace" replay g.mtw --json r2.json --rss-series r2.tsv --mallopt mmap_threshold=65536 --quiet >/dev/null
) || { fail "convert and replay"; finish; }

if [ "$what" = relative-series ]; then
    # from another directory: the series must be found beside the result
    (cd "$work" && t 60 "$mtrace" plot -o "$work/rel.png" res/r1.json) 2>"$work/err" ||
        fail "plot res/r1.json from the parent directory: $(cat "$work/err")"
    png_ok "$work/rel.png" || fail "rel.png is not a PNG"
    (cd / && t 120 "$mtrace" report --html "$work/rel.html" "$work/g.mtr" "$work/res/r1.json") 2>"$work/err" ||
        fail "report --html with an absolute result path"
    grep -q "Cannot find or open" "$work/err" && fail "report --html: gnuplot did not find the RSS series: $(cat "$work/err")"
    [ "$(grep -c '<svg' "$work/rel.html" 2>/dev/null)" -ge 4 ] ||
        fail "rel.html: $(grep -c '<svg' "$work/rel.html") figures, expected 4 (live, sizes, bars, RSS)"
    finish
fi

cd "$work" || exit 1

# ---- a trace ----
t 60 "$mtrace" report --json g.mtr >g.json || fail "report --json"
peak=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["peak_live_bytes"])' g.json)
allocs=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["allocations"])' g.json)

# a symlink planted at the picture's name is replaced, not followed; no temporary is left
echo precious >victim
ln -s victim sym.png
t 60 "$mtrace" plot -o sym.png g.mtr 2>err || fail "plot -o sym.png: $(cat err)"
[ "$(cat victim)" = precious ] || fail "plot -o sym.png wrote through the planted symlink"
[ -L sym.png ] && fail "sym.png is still the planted symlink"
png_ok sym.png || fail "sym.png is not a PNG"
ls | grep -q partial && fail "a temporary was left: $(ls)"
rm -f victim sym.png sym.dat

t 60 "$mtrace" plot -o live.png g.mtr 2>err || fail "plot -o live.png: $(cat err)"
png_ok live.png || fail "live.png is not a PNG: $(head -c 16 live.png 2>/dev/null | od -An -tx1)"
grep -q "wrote live.png" err || fail "plot -o live.png did not say what it wrote: $(cat err)"
# one point per RSS sample (report_mktrace writes 32), live bytes never above the peak
"$PY" - live.dat "$peak" <<'PYEOF' || fail "live.dat"
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip() and not l.startswith('#')]
peak_mib = int(sys.argv[2]) / 1048576.0
assert len(rows) == 32, "%d points, expected 32 (one per RSS sample)" % len(rows)
ts = [float(r[0]) for r in rows]
assert ts == sorted(ts), "times out of order"
assert all(float(r[1]) <= peak_mib + 0.001 for r in rows), "live bytes above the peak"
assert max(float(r[1]) for r in rows) > 0, "no live bytes"
assert all(float(r[2]) > 0 for r in rows), "an RSS sample of 0"
PYEOF

t 60 "$mtrace" plot -o live.svg g.mtr 2>err || fail "plot -o live.svg: $(cat err)"
svg_ok live.svg || fail "live.svg is not an SVG document"

t 60 "$mtrace" plot --kind sizes -o sizes.png g.mtr 2>err || fail "plot --kind sizes -o sizes.png: $(cat err)"
png_ok sizes.png || fail "sizes.png is not a PNG"
sum=$(awk '{ s += $NF } END { print s + 0 }' sizes.dat)
[ "$sum" = "$allocs" ] || fail "sizes.dat: counts add up to $sum, the report has $allocs allocations"
t 60 "$mtrace" plot --kind sizes -o sizes.svg g.mtr 2>err || fail "plot --kind sizes -o sizes.svg: $(cat err)"
svg_ok sizes.svg || fail "sizes.svg is not an SVG document"
cmp -s live.png sizes.png && fail "live.png and sizes.png are the same picture"

# a --kind a trace does not have: usage error, nothing written
t 60 "$mtrace" plot --kind compare -o bad1.png g.mtr 2>err
rc=$?
[ $rc = 2 ] || fail "plot --kind compare on a trace: exit $rc, expected 2"
no_file "plot --kind compare on a trace" bad1.png bad1.dat

# ---- replay results ----
cd res || exit 1
t 60 "$mtrace" plot -o rss.png r1.json 2>err || fail "plot -o rss.png r1.json: $(cat err)"
png_ok rss.png || fail "rss.png is not a PNG"
t 60 "$mtrace" plot -o rss2.svg r1.json r2.json 2>err || fail "plot -o rss2.svg r1.json r2.json: $(cat err)"
svg_ok rss2.svg || fail "rss2.svg is not an SVG document"
t 60 "$mtrace" plot --kind compare -o cmp.png r1.json r2.json 2>err || fail "plot --kind compare: $(cat err)"
png_ok cmp.png || fail "cmp.png is not a PNG"
[ "$(grep -c . cmp.dat)" = 2 ] || fail "cmp.dat: $(grep -c . cmp.dat) lines, expected one per result"
t 60 "$mtrace" plot --kind compare -o cmp.svg r1.json r2.json 2>err || fail "plot --kind compare -o cmp.svg: $(cat err)"
svg_ok cmp.svg || fail "cmp.svg is not an SVG document"
t 60 "$mtrace" plot --kind sizes -o bad2.png r1.json 2>err
rc=$?
[ $rc = 2 ] || fail "plot --kind sizes on replay results: exit $rc, expected 2"
no_file "plot --kind sizes on replay results" bad2.png bad2.dat

finish
