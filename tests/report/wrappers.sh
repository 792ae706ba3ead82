#!/usr/bin/env bash
# Callers past allocation wrappers, end to end: prog_wrappers allocates through my_xmalloc and
# my_xcalloc from each of parse_input (12 calls), build_index (25) and emit_output (10), and once in
# main.
#   usage: wrappers.sh MTRACE PROG_WRAPPERS
# With wrappers detected (the default), and with --skip-frames 'my_x*' --no-auto-skip, the
# allocating functions are exactly those three callers and main, with their calls, bytes and leaks,
# each with main as its caller (text and JSON), and the output names the wrappers skipped and why.
# With --no-auto-skip alone the wrappers are the allocating functions (33 and 14 calls), with their
# callers below them. --tree-depth bounds the trees; the HTML page holds them as <details>. The
# top-down tree starts at main, and the text, JSON and page name the frames left out above it.
# Not in sanitized builds (the recorder is an LD_PRELOAD shim).
set -u
mtrace=$1
prog=$2
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d /tmp/mtrace-report-wrappers.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

t 60 "$mtrace" record --stacks 16 -o t.mtr -- "$prog" 2>rec.err || { fail "mtrace record: $(cat rec.err)"; finish; }
t 60 "$mtrace" report --json t.mtr >auto.json 2>err || fail "report --json: $(cat err)"
t 60 "$mtrace" report t.mtr >auto.txt 2>err || fail "report: $(cat err)"
t 60 "$mtrace" report --json --skip-frames 'my_x*' --no-auto-skip t.mtr >pat.json 2>err || fail "report --skip-frames: $(cat err)"
t 60 "$mtrace" report --skip-frames 'nomatch,my_x*' --no-auto-skip t.mtr >pat.txt 2>err || fail "report --skip-frames: $(cat err)"
t 60 "$mtrace" report --json --no-auto-skip t.mtr >none.json 2>err || fail "report --no-auto-skip: $(cat err)"
t 60 "$mtrace" report --json --tree-depth 1 t.mtr >d1.json 2>err || fail "report --tree-depth 1: $(cat err)"
t 60 "$mtrace" report --html page.html t.mtr 2>err || fail "report --html: $(cat err)"
"$mtrace" report --tree-depth 0 t.mtr >/dev/null 2>err && fail "--tree-depth 0 accepted"

"$PY" - auto.json pat.json none.json d1.json <<'PYEOF' || fail "report --json"
import json, sys
auto, pat, none, d1 = (json.load(open(p)) for p in sys.argv[1:5])
bad = []
def check(cond, msg):
    if not cond:
        bad.append(msg)
want = {"build_index": (25, 20 * 50 + 5 * 32, 0), "parse_input": (12, 1000 + 16, 0),
        "emit_output": (10, 30 + 7 * 32, 0), "main": (1, 999, 999)}
for name, r in (("detected", auto), ("--skip-frames", pat)):
    roots = r["allocating_functions"]
    got = {n["function"]: (n["calls"], n["bytes"], n["leaked_bytes"]) for n in roots}
    check(got == want, "%s: allocating functions %r, expected %r" % (name, got, want))
    for n in roots:
        if n["function"] != "main":
            callers = [(c["function"], c["calls"]) for c in n["callers"]]
            check(callers == [("main", n["calls"])], "%s: callers of %s: %r" % (name, n["function"], callers))
    sites = {}
    for c in r["callsites"]:
        sites[c["function"]] = sites.get(c["function"], 0) + c["calls"]
    check(sites == {k: v[0] for k, v in want.items()}, "%s: callsites %r" % (name, sites))
sk = {s["function"]: (s["reason"], s["calls"]) for s in auto["skipped_frames"]}
check(sk == {"my_xmalloc": ("detected", 33), "my_xcalloc": ("detected", 14)}, "detected wrappers: %r" % sk)
sk = {s["function"]: (s["reason"], s.get("pattern"), s["calls"]) for s in pat["skipped_frames"]}
check(sk == {"my_xmalloc": ("pattern", "my_x*", 33), "my_xcalloc": ("pattern", "my_x*", 14)},
      "pattern wrappers: %r" % sk)
check(none["skipped_frames"] == [], "--no-auto-skip skipped %r" % none["skipped_frames"])
got = {n["function"]: n["calls"] for n in none["allocating_functions"]}
check(got == {"my_xmalloc": 33, "my_xcalloc": 14, "main": 1}, "--no-auto-skip: allocating functions %r" % got)
for n in none["allocating_functions"]:
    c = {x["function"]: x["calls"] for x in n["callers"]}
    if n["function"] == "my_xmalloc":
        check(c == {"build_index": 20, "parse_input": 10, "emit_output": 3}, "callers of my_xmalloc: %r" % c)
    if n["function"] == "my_xcalloc":
        check(c == {"build_index": 5, "emit_output": 7, "parse_input": 2}, "callers of my_xcalloc: %r" % c)
# top-down: main's callees are the allocating functions
def find(nodes, fn):
    for n in nodes:
        if n["function"] == fn:
            return n
        m = find(n.get("callees", []), fn)
        if m:
            return m
m = find(auto["top_down"], "main")
got = m and {c["function"]: c["calls"] for c in m["callees"]}
check(m and m["calls"] == 48 and got == {"build_index": 25, "parse_input": 12, "emit_output": 10},
      "top-down under main: %r" % got)
# ... and main is its one root: the C runtime's frames above it are left out, and named
roots = [n["function"] for n in auto["top_down"]]
check(roots == ["main"], "top-down roots: %r, expected main alone" % roots)
lo = auto["top_down_left_out"]
check(lo["stacks"] >= 7 and "__libc_start_main" in lo["functions"] and "main" not in lo["functions"],
      "top_down_left_out: %r" % lo)
check(all("callers" not in n for n in d1["allocating_functions"]), "--tree-depth 1 printed callers")
if bad:
    print("\n".join(bad))
    sys.exit(1)
PYEOF

# the text: the same figures, the wrappers named with their reason
for f in auto.txt pat.txt; do
    sed -n '/^allocating functions and their callers/,/^$/p' "$f" >tree.txt
    for row in "25 build_index" "12 parse_input" "10 emit_output" "1 main"; do
        set -- $row
        grep -qE "^ +$1 .*  $2  .*prog_wrappers\.c:[0-9]+\$" tree.txt || fail "$f: no row '$1 ... $2' in: $(cat tree.txt)"
        [ "$2" = main ] || grep -A1 -E "^ +$1 .*  $2  " tree.txt | tail -1 | grep -qE "^ +$1 .* <- main  " ||
            fail "$f: $2 not called from main with $1 calls: $(cat tree.txt)"
    done
    grep -qE "^ +[0-9]+ .*  my_x(malloc|calloc)  " tree.txt && fail "$f: a wrapper among the allocating functions"
done
grep -qE '^  my_xmalloc  33 calls from 3 or more functions: detected' auto.txt ||
    fail "auto.txt: my_xmalloc not said skipped: $(grep -A3 '^wrappers' auto.txt)"
grep -qE "^  my_xcalloc  14 calls from 3 or more functions: matches --skip-frames 'my_x\*'" pat.txt ||
    fail "pat.txt: my_xcalloc not said skipped by its pattern: $(grep -A3 '^wrappers' pat.txt)"
grep -q '<details' page.html && grep -q 'build_index' page.html || fail "HTML page: no caller tree in <details>"
sed -n '/^callers down to the allocating functions/,/^$/p' auto.txt >down.txt
grep -qE '^  \(from main, .*left out above them in [0-9]+ stacks: .*__libc_start_main' down.txt ||
    fail "auto.txt: the top-down tree does not say what it leaves out: $(head -3 down.txt)"
grep -qE '^ +48 .*  main  .*prog_wrappers\.c:[0-9]+$' down.txt || fail "auto.txt: top-down does not start at main: $(cat down.txt)"
grep -q 'left out above them in [0-9]* stacks: .*<code>__libc_start_main</code>' page.html ||
    fail "HTML page: the top-down tree does not say what it leaves out"
finish
