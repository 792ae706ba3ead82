#!/usr/bin/env bash
# C++ names people read, end to end: prog_cxx (built -g -O2) runs under `mtrace record --stacks 16`.
#   usage: cxx_names.sh MTRACE PROG_CXX PROG_CXX_SOURCE
# Its two callsites must come back demangled ("geo::make_shapes(int)", "void fill<double>(...)")
# at the lines of prog_cxx.cc marked "// shapes_line" and "// reserve_line", although the second is
# std::vector code inlined from /usr/include/c++ (the line table names the header there). No name
# stays mangled in the text, the JSON, the folded stacks, the callsites CSV or the HTML page, and no
# callsite is placed in a system header. A frame without a symbol shows module+0xOFFSET.
# Not in sanitized builds (the recorder is an LD_PRELOAD shim).
set -u
mtrace=$1
prog=$2
src=$3
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d /tmp/mtrace-report-cxx.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

shapes_line=$(grep -n '; // shapes_line$' "$src" | cut -d: -f1)
reserve_line=$(grep -n '; // reserve_line$' "$src" | cut -d: -f1)
t 60 "$mtrace" record --stacks 16 -o t.mtr -- "$prog" 2>rec.err || { fail "mtrace record: $(cat rec.err)"; finish; }
t 60 "$mtrace" report --json --folded t.folded --callsites-csv t.csv t.mtr >r.json 2>err || fail "report --json: $(cat err)"
t 60 "$mtrace" report t.mtr >r.txt 2>err || fail "report: $(cat err)"
t 60 "$mtrace" report --html r.html t.mtr 2>err || fail "report --html: $(cat err)"

"$PY" - r.json "$shapes_line" "$reserve_line" <<'PYEOF' || fail "report --json"
import json, os, sys
sites = json.load(open(sys.argv[1]))["callsites"]
shapes_line, reserve_line = int(sys.argv[2]), int(sys.argv[3])
bad = []
def check(cond, msg):
    if not cond:
        bad.append(msg)
def at(fn, line):
    return [c for c in sites if c["function"] == fn and c["file"] and os.path.basename(c["file"]) == "prog_cxx.cc"
            and c["line"] == line]
s = at("geo::make_shapes(int)", shapes_line)
check(len(s) == 1 and s[0]["calls"] == 7, "geo::make_shapes(int) at prog_cxx.cc:%d, 7 calls: %r" % (shapes_line, s))
f = at("void fill<double>(std::vector<double, std::allocator<double> >&, int)", reserve_line)
check(len(f) == 1 and f[0]["calls"] == 1 and f[0]["bytes"] == 8000,
      "fill<double> at prog_cxx.cc:%d, 1 call of 8000 bytes: %r" % (reserve_line, f))
for c in sites:
    check(not c["function"].startswith("_Z"), "mangled: %r" % c)
    check(not (c["file"] or "").startswith("/usr/include/"), "in a system header: %r" % c)
    if c["function"] == "??":
        check(c["module"] != "??" and "offset" in c, "no module+offset for an unknown frame: %r" % c)
if bad:
    print("\n".join(bad))
    print(json.dumps(sites, indent=1))
    sys.exit(1)
PYEOF

grep -qF "geo::make_shapes(int)  $(dirname "$src")/prog_cxx.cc:$shapes_line" r.txt ||
    grep -qE "geo::make_shapes\(int\)  .*prog_cxx\.cc:$shapes_line\$" r.txt ||
    fail "text report: no 'geo::make_shapes(int)  ...prog_cxx.cc:$shapes_line' in: $(grep -A6 'top callsites by calls' r.txt)"
for out in r.txt t.folded t.csv r.html; do
    grep -qE '(^|[^A-Za-z0-9_])_Z[A-Za-z0-9_]+' "$out" && fail "$out: a mangled name: $(grep -oE '_Z[A-Za-z0-9_]+' "$out" | head -3)"
done
grep -qF 'geo::make_shapes(int)' t.folded || fail "folded stacks: no geo::make_shapes(int)"
grep -qF 'geo::make_shapes(int)' r.html || fail "HTML page: no geo::make_shapes(int)"
# a frame without a symbol (libstdc++'s own startup allocation) reads module+0xOFFSET in the text
if "$PY" -c 'import json,sys; sys.exit(0 if any(c["function"] == "??" for c in json.load(open("r.json"))["callsites"]) else 1)'; then
    grep -qE '\?\?  [^ ]+\+0x[0-9a-f]+$' r.txt || fail "text report: an unknown frame without module+0xOFFSET"
fi
finish
