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
# many-results (regression: the script was built in a 16 KiB array that stopped taking results
# after ~46 of them, exit 0): 80 results, each with an RSS series of its own (an absolute path, as
# replay records it) and an allocator name of its own, are all in the gnuplot script (captured by a
# gnuplot wrapper) and in the SVG's legend.
# long-series (regression: a result's long "rss_series" path, 4 KB of "./", overflowed that array
# on the stack): three such results draw; a path past PATH_MAX, or with a line break, is refused in
# one line, and one with a quote is read as it is.
# failing-leaves-nothing (regression: the .dat was renamed into place before gnuplot ran): with a
# gnuplot that fails, every kind of plot exits 1 and leaves no picture, no .dat and no temporary,
# also when gnuplot exits before reading a script longer than a pipe holds (SIGPIPE killed mtrace);
# a successful plot replaces a symlink planted at its .dat's name.
# bad-kind-or-format (regression: -o x.jpg wrote a PNG named .jpg, exit 0; a --kind that did not fit
# printed the usage and no reason): an output other than .png or .svg is refused, naming it, and
# writes nothing; a --kind that does not fit says why in one line, exit 2.
# axes: the size histogram's counts on a log scale; replays drawn against the share of the
# workload's ops done (the RSS series' sixth column), the RSS axis from zero; report --html's page
# with unique element ids (each gnuplot picture names its parts alike) and the replays as a table;
# a trace with one RSS sample drawn from its records' times (plot refused it).
# odd-text (regression: a command line or an allocator name that was not UTF-8 went into gnuplot's
# SVG as it was, which no XML reader then opened; a backslash in a name under the compare bars was
# an escape to gnuplot, \377 a byte that is not UTF-8 either): a trace whose command holds \xff\xfe,
# a surrogate, U+FFFF, a cut character, controls, quotes and backslashes, and replay results whose
# allocator names hold such bytes, draw every kind of plot as SVG that parses as XML (and as PNG),
# each text there with '?' for what XML refuses and the rest as given; report --html's page is
# UTF-8 and every picture in it parses.
# descriptors-short (regression: a gnuplot that could not be started was reported twice, "cannot
# start gnuplot" then an empty "gnuplot failed to draw"): under a limit on open files that runs out
# at each step of a plot in turn (a trace, --kind rss, --kind compare), every run that fails exits 1
# with one line that says why and leaves nothing; one of them fails to start gnuplot.
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

# gnuplot_wrapper DIR fails|exits|capture: a gnuplot first in PATH (DIR/gnuplot) that fails after
# reading its script, or at once without reading it, or hands the script on to the real one after
# appending it to DIR/script.gp.
gnuplot_wrapper() {
    local real
    real=$(command -v gnuplot)
    mkdir -p "$1"
    if [ "$2" = fails ]; then
        printf '#!/bin/sh\ncat >/dev/null\necho "line 1: fake gnuplot error" >&2\nexit 1\n' >"$1/gnuplot"
    elif [ "$2" = exits ]; then
        printf '#!/bin/sh\necho "line 1: fake gnuplot error" >&2\nexit 1\n' >"$1/gnuplot"
    else
        printf '#!/bin/sh\ntee -a "%s/script.gp" | exec "%s" "$@"\n' "$1" "$real" >"$1/gnuplot"
    fi
    chmod +x "$1/gnuplot"
}

# only_files WHAT NAME...: the current directory holds exactly these names.
only_files() {
    local what=$1
    shift
    local have want
    have=$(ls -A | sort)
    want=$(printf '%s\n' "$@" | sort)
    [ "$have" = "$want" ] || fail "$what: the directory holds: $(echo $have), expected: $(echo $want)"
}

cd "$work" || exit 1
case $what in
many-results)
    cd res || exit 1
    mkdir many
    # absolute series paths, as mtrace replay records them: the old array held ~46 such results
    for i in $(seq 1 80); do
        cp r1.tsv "many/rss-series-$i.tsv"
        "$PY" - r1.json "many/r$i.json" "$work/res/many/rss-series-$i.tsv" "alloc$i" <<'PYEOF' || fail "r$i.json"
import json, sys
d = json.load(open(sys.argv[1]))
d["rss_series"], d["allocator"] = sys.argv[3], sys.argv[4]
json.dump(d, open(sys.argv[2], "w"))
PYEOF
    done
    gnuplot_wrapper "$work/gp" capture
    results=$(for i in $(seq 1 80); do echo "many/r$i.json"; done)
    # shellcheck disable=SC2086
    PATH="$work/gp:$PATH" t 120 "$mtrace" plot -o many.svg $results 2>err || fail "plot 80 results: $(cat err)"
    svg_ok many.svg || fail "many.svg is not an SVG document"
    "$PY" - "$work/gp/script.gp" many.svg <<'PYEOF' || fail "80 results"
import re, sys
script = open(sys.argv[1]).read()
svg = open(sys.argv[2]).read()
plot = [l for l in script.splitlines() if l.startswith("plot ")]
assert len(plot) == 1, "%d plot commands in the script" % len(plot)
files = re.findall(r"'([^']*/many/rss-series-(\d+)\.tsv)'", plot[0])
drawn = sorted(set(int(n) for _, n in files))
assert drawn == list(range(1, 81)), "series in the script: %s" % drawn
titles = set(int(n) for n in re.findall(r"alloc(\d+) RSS", plot[0]))
assert titles == set(range(1, 81)), "titles in the script: %s" % sorted(titles)
legend = set(int(n) for n in re.findall(r">alloc(\d+) RSS<", svg))
assert legend == set(range(1, 81)), "in the SVG's legend: %s" % sorted(legend)
PYEOF
    finish
    ;;
long-series)
    cd res || exit 1
    # rss_series: "/" + "./" * N + the series' absolute path
    long_result() {
        "$PY" - r1.json "$1" "$2" "$work/res/$3" <<'PYEOF' || fail "make $1"
import json, sys
d = json.load(open(sys.argv[1]))
d["rss_series"] = "/" + "./" * int(sys.argv[3]) + sys.argv[4].lstrip("/")
json.dump(d, open(sys.argv[2], "w"))
PYEOF
    }
    # where the old array's end fell depended on the lengths: two of them
    for n in 1950 2000; do
        long_result long.json $n r1.tsv
        t 120 "$mtrace" plot -o long.png long.json long.json long.json 2>err ||
            fail "plot 3 x long.json ($n x ./): $(cat err)"
        png_ok long.png || fail "long.png ($n x ./) is not a PNG"
    done
    # the same through the compare bars and the HTML page
    t 120 "$mtrace" plot --kind compare -o longc.svg long.json long.json long.json 2>err ||
        fail "plot --kind compare 3 x long.json: $(cat err)"
    svg_ok longc.svg || fail "longc.svg is not an SVG document"
    t 120 "$mtrace" report --html long.html ../g.mtr long.json long.json long.json 2>err ||
        fail "report --html with 3 x long.json: $(cat err)"
    [ "$(grep -c '<svg' long.html 2>/dev/null)" -ge 4 ] || fail "long.html: $(grep -c '<svg' long.html) figures, expected 4"
    rm -f long.png long.dat longc.svg longc.dat long.html

    # past PATH_MAX: refused, nothing written
    long_result toolong.json 2100 r1.tsv
    t 60 "$mtrace" plot -o x.png toolong.json 2>err
    rc=$?
    [ $rc = 1 ] || fail "plot toolong.json: exit $rc, expected 1"
    one_line err "plot toolong.json" toolong.json "too long"
    no_file "plot toolong.json" x.png x.dat

    # a line break in the series' name: refused (gnuplot would read it as the end of the command)
    cp r1.tsv "$(printf 'nl\nseries.tsv')"
    "$PY" - r1.json nl.json "$(printf 'nl\nseries.tsv')" <<'PYEOF' || fail "make nl.json"
import json, sys
d = json.load(open(sys.argv[1]))
d["rss_series"] = sys.argv[3]
json.dump(d, open(sys.argv[2], "w"))
PYEOF
    t 60 "$mtrace" plot -o x.png nl.json 2>err
    rc=$?
    [ $rc = 1 ] || fail "plot nl.json: exit $rc, expected 1"
    one_line err "plot nl.json" 'nl\x0aseries.tsv' "control character"
    no_file "plot nl.json" x.png x.dat
    ls | grep -q partial && fail "plot nl.json left a temporary: $(ls)"

    # a quote: read as it is ('' inside gnuplot's single quotes)
    cp r1.tsv "it's.tsv"
    "$PY" - r1.json quote.json "it's.tsv" <<'PYEOF' || fail "make quote.json"
import json, sys
d = json.load(open(sys.argv[1]))
d["rss_series"] = sys.argv[3]
json.dump(d, open(sys.argv[2], "w"))
PYEOF
    t 60 "$mtrace" plot -o "it's.png" quote.json 2>err || fail "plot quote.json: $(cat err)"
    png_ok "it's.png" || fail "it's.png is not a PNG"
    finish
    ;;
odd-text)
    # the command line: the program by a name that is not UTF-8, then odd arguments
    t 60 "$mktrace" odd.mtr 250 8000 2 "/usr/bin/$(printf 'pr\377\376g')" "it's" 'say "hi"' 'back\slash\377' \
        "$(printf 'ctl\001\033\177')" "$(printf 'sur\355\240\200 nonchar\357\277\277 cut\346\227')" ||
        fail "report_mktrace odd.mtr"
    for k in live sizes; do
        t 60 "$mtrace" plot --kind $k -o "odd-$k.svg" odd.mtr 2>err || fail "plot --kind $k odd.mtr: $(cat err)"
        t 60 "$mtrace" plot --kind $k -o "odd-$k.png" odd.mtr 2>err || fail "plot --kind $k -o PNG odd.mtr: $(cat err)"
        png_ok "odd-$k.png" || fail "odd-$k.png is not a PNG"
    done
    # results named by allocators that are not UTF-8, or whose names gnuplot would read as escapes
    cd res || exit 1
    odd_result() {
        "$PY" - r1.json "$1" "$2" <<'PYEOF' || fail "make $1"
import json, os, sys
d = json.load(open(sys.argv[1]))
name = os.fsencode(sys.argv[3])  # the bytes as given, invalid UTF-8 included
quoted = b"".join(b"\\u%04x" % c if c < 0x20 else b"\\" + bytes([c]) if c in b'"\\' else bytes([c]) for c in name)
d["allocator"] = "@NAME@"
open(sys.argv[2], "wb").write(json.dumps(d).encode().replace(b'"@NAME@"', b'"' + quoted + b'"'))
PYEOF
    }
    odd_result odd1.json "$(printf 'je_m\377\376 "q" it'"'"'s \001 \357\277\276 \360\237\230\200')"
    odd_result odd2.json 'b\377_x'
    for k in rss compare; do
        t 60 "$mtrace" plot --kind $k -o "odd-$k.svg" odd1.json odd2.json 2>err ||
            fail "plot --kind $k with odd allocator names: $(cat err)"
        t 60 "$mtrace" plot --kind $k -o "odd-$k.png" odd1.json odd2.json 2>err ||
            fail "plot --kind $k -o PNG with odd allocator names: $(cat err)"
        png_ok "odd-$k.png" || fail "odd-$k.png is not a PNG"
    done
    t 120 "$mtrace" report --html odd.html ../odd.mtr odd1.json odd2.json 2>err || fail "report --html: $(cat err)"
    "$PY" - ../odd-live.svg ../odd-sizes.svg odd-rss.svg odd-compare.svg odd.html <<'PYEOF' || fail "odd text"
import re, sys, xml.dom.minidom
def texts(node):
    if node.nodeType == node.TEXT_NODE:
        yield node.data
    for c in node.childNodes:
        yield from texts(c)
want = {
    "odd-live.svg": ["pr??g it's say \"hi\" back\\slash\\377 ctl    sur??? nonchar??? cut??"],
    "odd-sizes.svg": ["allocation sizes: pr??g it's"],
    "odd-rss.svg": ["je_m?? \"q\" it's   ??? \U0001F600 RSS", "b\\377_x RSS", "b\\377_x ideal"],
    "odd-compare.svg": ["je_m??  q  it's   ??? \U0001F600", "b\\377_x"],
}
for path in sys.argv[1:5]:
    try:
        doc = xml.dom.minidom.parse(path)
    except Exception as e:
        sys.exit("%s: not XML: %s" % (path, e))
    assert doc.documentElement.tagName == "svg", path
    shown = "\n".join(texts(doc))
    for w in want[path.split("/")[-1]]:
        assert w in shown, "%s: %r not shown in %r" % (path, w, shown[-600:])
page = open(sys.argv[5], "rb").read().decode("utf-8")  # fails on a byte that is not UTF-8
pictures = re.findall(r"<svg.*?</svg>", page, re.S)
assert len(pictures) >= 4, "%d pictures in the page" % len(pictures)
for p in pictures:
    xml.dom.minidom.parseString(p.encode())
PYEOF
    finish
    ;;
axes)
    # the scripts as drawn: sizes on a log scale, replays against the share of the workload's ops
    # done (each replay's own seconds would stretch one allocator's curve against another's)
    gnuplot_wrapper "$work/gp" capture
    PATH="$work/gp:$PATH" t 60 "$mtrace" plot --kind sizes -o s.svg g.mtr 2>err || fail "sizes: $(cat err)"
    grep -q '^set logscale y' "$work/gp/script.gp" || fail "the size histogram is not on a log scale"
    : >"$work/gp/script.gp"
    PATH="$work/gp:$PATH" t 60 "$mtrace" plot -o r.svg res/r1.json res/r2.json 2>err || fail "rss: $(cat err)"
    plot=$(grep '^plot ' "$work/gp/script.gp")
    [ "$(grep -o 'using (\$6\*100):' <<<"$plot" | wc -l)" = 5 ] ||
        fail "replays not drawn against ops done: $plot"
    grep -q "^set xlabel 'workload ops done (%)'" "$work/gp/script.gp" || fail "x axis label"
    grep -q '^set yrange \[0:\*\]' "$work/gp/script.gp" || fail "the RSS axis does not start at zero"
    svg_ok r.svg || fail "r.svg is not an SVG document"
    # a trace with one RSS sample (a program that ran briefly) still gets its live-bytes curve, from
    # its records' own times: points in time order, up to the last call's
    t 60 "$mktrace" one.mtr 100000 || fail "report_mktrace one.mtr"
    t 60 "$mtrace" plot -o one.png one.mtr 2>err || fail "plot of a one-sample trace: $(cat err)"
    png_ok one.png || fail "one.png is not a PNG"
    "$PY" - one.dat <<'PYEOF' || fail "one.dat"
import sys
rows = [[float(x) for x in l.split()] for l in open(sys.argv[1]) if l.strip() and not l.startswith('#')]
assert len(rows) >= 100, "%d points" % len(rows)
ts = [r[0] for r in rows]
assert ts == sorted(ts) and ts[-1] > ts[0], "times out of order or all alike"
assert max(r[1] for r in rows) > 0, "no live bytes"
assert all(r[2] == 0 for r in rows), "RSS on a curve drawn from records"
PYEOF
    # the HTML page: four gnuplot pictures inlined, their ids unique in the page and every reference
    # to one resolved; the replays' comparison a table, not preformatted text
    t 120 "$mtrace" report --html page.html g.mtr res/r1.json res/r2.json 2>err || fail "report --html: $(cat err)"
    "$PY" - page.html <<'PYEOF' || fail "page.html"
import collections, re, sys
s = open(sys.argv[1]).read()
assert s.count("<svg") >= 4, "%d pictures" % s.count("<svg")
ids = collections.Counter(re.findall(r'\sid="([^"]+)"', s))
dup = [k for k, v in ids.items() if v > 1]
assert not dup, "repeated ids: %s" % dup[:5]
refs = [a or b for a, b in re.findall(r'url\(#([^)]+)\)|href="#([^"]+)"', s)]
assert all(r in ids for r in refs), "references to no id: %s" % [r for r in refs if r not in ids][:5]
rep = s[s.index("<h2>Replays</h2>"):]
assert rep.split("\n", 1)[1].startswith("<table>"), "the replays are not a table: %r" % rep[:80]
assert "verdict against" in rep[:rep.index("</table>")]
PYEOF
    finish
    ;;
failing-leaves-nothing)
    gnuplot_wrapper "$work/gp" fails
    mkdir out
    cd out || exit 1
    # fails "NAMES" CMD...: exit 1, gnuplot's complaint shown, nothing here but NAMES
    fails() {
        local keep=$1
        shift
        PATH="$work/gp:$PATH" t 60 "$mtrace" "$@" 2>err
        local rc=$?
        [ $rc = 1 ] || fail "$*: exit $rc with a failing gnuplot, expected 1"
        grep -q "fake gnuplot error" err || fail "$*: gnuplot's message is not shown: $(cat err)"
        rm -f err
        # shellcheck disable=SC2086
        only_files "$* with a failing gnuplot" $keep
    }
    fails "" plot -o o.png ../g.mtr
    fails "" plot --kind sizes -o o.svg ../g.mtr
    fails "" plot -o o.png ../res/r1.json ../res/r2.json
    fails "" plot --kind compare -o o.png ../res/r1.json ../res/r2.json
    # a planted symlink at the .dat: kept by the failing run, replaced by a good one
    echo precious >victim
    ln -s victim o.dat
    fails "victim o.dat" plot -o o.png ../g.mtr
    [ -L o.dat ] || fail "a failing plot replaced the symlink planted at o.dat"
    # a gnuplot that exits without reading a long script (30 results with 4 KB series paths, far
    # more than a pipe holds): mtrace must not die of SIGPIPE with its temporaries left
    "$PY" - ../res/r1.json long.json "$work/res/r1.tsv" <<'PYEOF' || fail "make long.json"
import json, sys
d = json.load(open(sys.argv[1]))
d["rss_series"] = "/" + "./" * 1900 + sys.argv[3].lstrip("/")
json.dump(d, open(sys.argv[2], "w"))
PYEOF
    gnuplot_wrapper "$work/gp-exits" exits
    PATH="$work/gp-exits:$PATH" t 60 "$mtrace" plot -o l.png $(for _ in $(seq 30); do echo long.json; done) 2>err
    rc=$?
    [ $rc = 1 ] || fail "plot with a gnuplot that reads nothing: exit $rc, expected 1: $(cat err)"
    rm -f err
    only_files "plot with a gnuplot that reads nothing" victim o.dat long.json
    t 60 "$mtrace" plot -o o.png ../g.mtr 2>err || fail "plot -o o.png: $(cat err)"
    [ "$(cat victim)" = precious ] || fail "plot -o o.png wrote through the symlink planted at o.dat"
    [ -L o.dat ] && fail "o.dat is still the planted symlink"
    grep -q '^# t_s' o.dat || fail "o.dat does not hold the data"
    finish
    ;;
bad-kind-or-format)
    mkdir out
    cd out || exit 1
    # refused WHAT RC NEEDLES -- CMD...: exit RC, one line on stderr holding every needle ('|'), no
    # file left here
    refused() {
        local what=$1 want=$2 needles=$3
        shift 4
        t 60 "$mtrace" "$@" 2>err
        local rc=$?
        [ $rc = "$want" ] || fail "$what: exit $rc, expected $want"
        local IFS='|'
        # shellcheck disable=SC2086
        one_line err "$what" $needles
        unset IFS
        rm -f err
        only_files "$what"
    }
    for o in x.jpg x.JPEG x.pdf x noext.d/x x.png.txt; do
        refused "plot -o $o TRACE" 2 "$o|.png or .svg" -- plot -o "$o" ../g.mtr
        refused "plot --kind sizes -o $o TRACE" 2 "$o|.png or .svg" -- plot --kind sizes -o "$o" ../g.mtr
        refused "plot -o $o RESULTS" 2 "$o|.png or .svg" -- plot -o "$o" ../res/r1.json ../res/r2.json
        refused "plot --kind compare -o $o RESULTS" 2 "$o|.png or .svg" -- \
            plot --kind compare -o "$o" ../res/r1.json ../res/r2.json
    done
    # another case of the extension is the same format
    t 60 "$mtrace" plot -o X.SVG ../g.mtr 2>err || fail "plot -o X.SVG: $(cat err)"
    svg_ok X.SVG || fail "X.SVG is not an SVG document"
    rm -f X.SVG X.dat
    refused "plot --kind rss TRACE" 2 "--kind rss|g.mtr|trace|live or sizes" -- plot --kind rss -o k.png ../g.mtr
    refused "plot --kind compare TRACE" 2 "--kind compare|g.mtr|trace" -- plot --kind compare -o k.png ../g.mtr
    refused "plot --kind live RESULT" 2 "--kind live|r1.json|replay results|rss or compare" -- \
        plot --kind live -o k.png ../res/r1.json
    refused "plot --kind sizes RESULTS" 2 "--kind sizes|r1.json|replay results" -- \
        plot --kind sizes -o k.png ../res/r1.json ../res/r2.json
    refused "plot --kind bogus" 2 "--kind bogus|live|rss" -- plot --kind bogus -o k.png ../g.mtr
    refused "plot TRACE TRACE" 2 "g.mtr|trace" -- plot -o k.png ../g.mtr ../g.mtr
    finish
    ;;
descriptors-short)
    mkdir out
    cd out || exit 1
    started=0
    for args in "-o o.png ../g.mtr" "--kind rss -o o.png ../res/r1.json" "--kind compare -o o.png ../res/r1.json"; do
        # Descriptors 3 to 12 taken, so that the shell mtrace runs to look for gnuplot has one from
        # 10 up to spare; the limit then rises a descriptor at a time until the plot is drawn.
        for limit in $(seq 14 60); do
            (
                for fd in $(seq 3 12); do eval "exec $fd</dev/null"; done
                # shellcheck disable=SC2086
                ulimit -n "$limit" && exec timeout -k 5 60 "$mtrace" plot $args
            ) >/dev/null 2>err
            rc=$?
            if [ $rc = 0 ]; then
                rm -f err o.png o.dat
                break
            fi
            # the shell or the loader short of descriptors itself: not mtrace's to say
            grep -qv '^mtrace: ' err && { rm -f err; continue; }
            grep -q 'cannot start gnuplot' err && started=$((started + 1))
            [ $rc = 1 ] || fail "plot $args under ulimit -n $limit: exit $rc, expected 1"
            one_line err "plot $args under ulimit -n $limit"
            rm -f err
            only_files "plot $args under ulimit -n $limit"
        done
        [ $rc = 0 ] || fail "plot $args: not drawn under any limit up to 60"
    done
    [ $started -gt 0 ] || fail "no limit made starting gnuplot fail: the case checked nothing"
    finish
    ;;
esac

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
