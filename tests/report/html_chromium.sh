#!/usr/bin/env bash
# mtrace report --html, loaded in headless Chromium.
#   usage: html_chromium.sh MTRACE PROG_REPORT
# prog_report runs under `mtrace record --stacks 8 --rss-ms 1` (its command line holds a <script>
# element, which the page must show as text), two replays of it give results with RSS series, and
# `mtrace report --html page.html TRACE R1.json R2.json` writes the page. Then:
#  - the page is self-contained: no http:// or https:// reference but the SVG namespace URIs, no
#    src= attribute, no <link>, no url() but fragment references, no @import;
#  - Chromium (--dump-dom, with --screenshot in the same run) renders it with the expected headings, five figures (live bytes, sizes,
#    replay bars, replay RSS, flame graph) and the callsites, and the page writes nothing to the
#    console: no CONSOLE line (Chromium's --enable-logging=stderr form of console messages and
#    uncaught errors) and no "Uncaught". The detector itself is checked on a control page of the
#    test's own that calls console.error;
#  - a 1280x2000 screenshot of the page is not blank: decoded with zlib (pngstat.py), it has many
#    non-white pixels and colours, where the control page's screenshot, taken the same way, is white.
# Skipped (77) without Chromium or gnuplot; not in sanitized builds (the recorder is a preload shim).
# KEEP_WORK=1 keeps the work directory (page, screenshots, Chromium logs) for a look.
set -u
mtrace=$1
prog=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
chromium=""
for c in /usr/bin/chromium /usr/bin/chromium-browser; do
    [ -x "$c" ] && chromium=$c && break
done
if [ -z "$chromium" ]; then
    echo "SKIP: Chromium is not installed (apt-get install chromium)"
    exit 77
fi
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "SKIP: gnuplot is not installed (apt-get install gnuplot-nox): the page would have no figures"
    exit 77
fi
work=$(mktemp -d /tmp/mtrace-report-html.XXXXXX)
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$work"' EXIT
cd "$work" || exit 1

inject='<script>console.error("mtrace-injected")</script>'
t 60 "$mtrace" record --stacks 8 --rss-ms 1 -o t.mtr -- "$prog" 3000 "$inject" >lines.txt 2>rec.err ||
    { fail "mtrace record: $(cat rec.err)"; finish; }
main_line=$(awk '$1 == "main_line" { print $2 }' lines.txt)
t 60 "$mtrace" convert t.mtr -o t.mtw --quiet >/dev/null || fail "convert"
t 120 env "$replay_asan" "$mtrace" replay t.mtw --json R1.json --rss-series R1.tsv --quiet >/dev/null || fail "replay 1"
t 120 env "$replay_asan" "$mtrace" replay t.mtw --json R2.json --rss-series R2.tsv --mallopt mmap_threshold=65536 --quiet >/dev/null ||
    fail "replay 2"
t 120 "$mtrace" report --html page.html t.mtr R1.json R2.json 2>html.err || fail "report --html: $(cat html.err)"
[ -s page.html ] || { fail "no page.html"; finish; }
no_file "report --html" page.html.partial

# ---- self-contained ----
ext=$(grep -oE "https?://[^\"' <>)]*" page.html | grep -vxE 'http://www\.w3\.org/(2000/svg|1999/xlink)' | sort -u)
[ -n "$ext" ] && fail "the page refers to: $ext"
grep -qiE '\ssrc\s*=' page.html && fail "the page has src= attributes: $(grep -oiE '.{0,40}\ssrc\s*=.{0,40}' page.html | head -3)"
grep -qiE '<link[ >]' page.html && fail "the page has <link> elements"
grep -qiE '@import' page.html && fail "the page has @import"
bad_url=$(grep -oiE 'url\([^)]*\)' page.html | grep -viE "^url\(['\"]?#" | sort -u)
[ -n "$bad_url" ] && fail "the page has url() references to files: $bad_url"
grep -qF "$inject" page.html && fail "the command line's <script> element is in the page unescaped"

# ---- Chromium ----
chrome() { # chrome STDERR_FILE ARGS...: headless Chromium, a fresh profile, console messages on stderr
    local errf=$1
    shift
    local profile
    profile=$(mktemp -d "$work/profile.XXXXXX")
    t 60 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" --enable-logging=stderr --v=0 "$@" 2>"$errf"
    local rc=$?
    rm -rf "$profile"
    return $rc
}
# console lines: "CONSOLE(12)] msg" (older Chromium) or ":INFO:CONSOLE:12] msg" (newer)
console_lines() { grep -E 'CONSOLE(\(|:)|Uncaught' "$1"; }

# the control page: white, with a console.error of its own
printf '<!DOCTYPE html><html><head><meta charset="utf-8"><title>control</title></head><body><script>console.error("mtrace-selftest")</script></body></html>\n' >control.html
# (in the background, beside the page's run)
chrome control.err --screenshot="$work/blank.png" --window-size=1280,2000 "file://$work/control.html" >/dev/null &
control_pid=$!

# the page: its DOM and a screenshot, in one run
chrome page.err --dump-dom --screenshot="$work/shot.png" --window-size=1280,2000 "file://$work/page.html" >dom.html ||
    fail "chromium on the page (exit $?): $(tail -5 page.err)"
wait $control_pid || fail "chromium on the control page (exit $?): $(tail -5 control.err)"
console_lines control.err | grep -q mtrace-selftest ||
    fail "the console detector missed the control page's console.error; Chromium said: $(grep -v dbus control.err | tail -5)"
msgs=$(console_lines page.err)
[ -n "$msgs" ] && fail "the page wrote to the console: $msgs"
for h in "<h1>mtrace report</h1>" "<h2>Calls</h2>" "<h2>Live bytes and RSS over time</h2>" "<h2>Allocation sizes</h2>" \
    "<h2>Replays</h2>" "<h2>Flame graph (bytes allocated)</h2>" "<h2>Top callsites</h2>"; do
    grep -qF "$h" dom.html || fail "the DOM has no $h"
done
nsvg=$(grep -o '<svg' dom.html | wc -l)
[ "$nsvg" -ge 5 ] || fail "the DOM has $nsvg SVG figures, expected 5 (live, sizes, replay bars, replay RSS, flame graph)"
grep -qF "prog_report.c:$main_line" dom.html || fail "the DOM does not name the callsite prog_report.c:$main_line"
grep -qF "report_callee_alloc" dom.html || fail "the DOM does not name report_callee_alloc"
grep -qF 'console.error("mtrace-injected")' dom.html || fail "the DOM does not show the command line as text"
grep -qF "$inject" dom.html && fail "the command line's <script> became an element"

png_ok shot.png || { fail "shot.png is not a PNG"; finish; }
png_ok blank.png || { fail "blank.png is not a PNG"; finish; }
"$PY" "$here/pngstat.py" blank.png >blank.stat &
stat_pid=$!
read -r sw sh snon scol <<<"$("$PY" "$here/pngstat.py" shot.png)"
wait $stat_pid
read -r bw bh bnon bcol <blank.stat
echo "control: ${bw}x$bh, $bnon non-white pixels, $bcol colours; page: ${sw}x$sh, $snon non-white, $scol colours"
[ "$sw" = 1280 ] && [ "$sh" = 2000 ] || fail "the page's screenshot is ${sw}x$sh, expected 1280x2000"
[ "${bnon:-1}" = 0 ] || fail "the control page's screenshot is not white ($bnon non-white pixels): the check would prove nothing"
# text, tables and the plots' axes, lines and bars: well over 1 % of 2.56 M pixels
[ "${snon:-0}" -ge 25600 ] || fail "the page's screenshot is (nearly) blank: $snon non-white pixels"
[ "${scol:-0}" -ge 16 ] || fail "the page's screenshot has $scol colours"
cmp -s blank.png shot.png && fail "the page's screenshot is the control page's"
finish
