#!/usr/bin/env bash
# The man pages say what --help says: for mtrace, each command that mtrace --help lists, trace2wl and
# mtrace-sim, the page (mtrace.1, mtrace-COMMAND.1, trace2wl.1, mtrace-sim.1, made at build time from
# the same text) exists, man -l renders it with
# no warning from groff, every option that --help names is in the rendered page, and every word of
# --help is there in the same order (nothing dropped, nothing reordered).
#   usage: man_pages.sh MTRACE TRACE2WL MTRACE_SIM PAGE_DIR
set -u
mtrace=$1
t2w=$2
sim=$3
dir=$4
command -v man >/dev/null || { echo "SKIP: man (man-db) is not installed"; exit 77; }
work=$(mktemp -d /tmp/mtrace-man.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

commands=$("$mtrace" --help | sed -n '/^Commands:$/,/^$/p' | awk 'NF > 1 { print $1 }')
[ -n "$commands" ] || fail "mtrace --help lists no commands"
for page in mtrace trace2wl mtrace-sim $commands; do
    if [ "$page" = mtrace ]; then
        file=$dir/mtrace.1
        "$mtrace" --help >"$work/help" || fail "mtrace --help: exit $?"
    elif [ "$page" = trace2wl ] || [ "$page" = mtrace-sim ]; then
        file=$dir/$page.1
        if [ "$page" = trace2wl ]; then prog=$t2w; else prog=$sim; fi
        "$prog" --help >"$work/help" || fail "$page --help: exit $?"
    else
        file=$dir/mtrace-$page.1
        "$mtrace" "$page" --help >"$work/help" || fail "mtrace $page --help: exit $?"
    fi
    [ -s "$file" ] || { fail "no man page $file"; continue; }
    LC_ALL=C MANWIDTH=100 man --warnings -l "$file" >"$work/page" 2>"$work/err" || fail "man -l $file: exit $?"
    [ -s "$work/err" ] && fail "man -l $file warned: $(cat "$work/err")"
    python3 - "$work/help" "$work/page" "$page" <<'PY' || failures=$((failures + 1))
import re, sys
help_text, page, name = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
ok = True
def no(what):
    global ok
    print(f"FAIL: {name}: {what}")
    ok = False
words = page.split()
for opt in sorted(set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", help_text))):
    if not any(w.strip(",.;:()[]|'\"") .startswith(opt) for w in words):
        no(f"option {opt} of --help is not in the man page")
# every word of --help, in order; the headings ("Options:") become the page's section names
headings = re.compile(r"^[A-Z][a-z]+( [a-z]+)?:$")
want = [w for line in help_text.splitlines() if not headings.match(line) for w in line.split()]
want = want[1:] if want and want[0] == "usage:" else want
i = 0
for k, w in enumerate(want):
    while i < len(words) and words[i] != w:
        i += 1
    if i == len(words):
        no(f"word {k} of --help, {w!r} (after {' '.join(want[max(0, k - 6):k])!r}), is not in the page in order")
        break
    i += 1
sys.exit(0 if ok else 1)
PY
done
if [ $failures -gt 0 ]; then
    echo "$failures failure(s)"
    exit 1
fi
echo "all man pages agree with --help"
