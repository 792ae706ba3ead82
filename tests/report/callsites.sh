#!/usr/bin/env bash
# mtrace report's callsites, end to end: prog_report runs under `mtrace record --stacks 8`.
#   usage: callsites.sh MTRACE PROG_REPORT
# prog_report mallocs 1000 bytes in main (never freed) and 3000 bytes in the shared library
# libreport_callee (freed at the end), then churns on two threads; it prints the lines of the two
# calls. `mtrace report --json` must list a callsite for each, with the file's basename, the line,
# the function and the module, and their calls, bytes, leaks and share of the peak; the callsites'
# peak_bytes add up to peak_live_bytes and, as every allocation has a stack, their calls, bytes and
# leaks add up to the totals. --folded, --flamegraph and --callsites-csv write well-formed files
# whose numbers agree with the JSON; when one of them cannot be renamed into place (a directory of
# that name), none is left (the --folded file renamed before it stayed); of a trace with stacks and
# no call (/bin/true), each is written with nothing in it; a program built by clang (no
# .debug_aranges) has its callsites' files and lines. Not in sanitized builds
# (the recorder is an LD_PRELOAD shim).
set -u
mtrace=$1
prog=$2
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d /tmp/mtrace-report-sites.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

t 60 "$mtrace" record --stacks 8 -o t.mtr -- "$prog" 2000 >lines.txt 2>rec.err ||
    { fail "mtrace record: $(cat rec.err)"; finish; }
main_line=$(awk '$1 == "main_line" { print $2 }' lines.txt)
lib_line=$(awk '$1 == "lib_line" { print $2 }' lines.txt)
[ -n "$main_line" ] && [ -n "$lib_line" ] || { fail "prog_report printed: $(cat lines.txt)"; finish; }

t 60 "$mtrace" report --json --folded t.folded --flamegraph t.svg --callsites-csv t.csv t.mtr >r.json 2>err ||
    fail "report --json: $(cat err)"
# does every allocation carry a stack? (the sums below are equalities only then)
t 60 "$mtrace" dump t.mtr >dump.txt || fail "dump"
nostack=$(awk '$3 ~ /^(malloc|calloc|realloc|reallocarray|memalign|posix_memalign|aligned_alloc|valloc|pvalloc)$/ && !/stack=/' dump.txt | wc -l)

"$PY" - r.json t.folded t.csv "$main_line" "$lib_line" "$nostack" <<'PYEOF' || fail "report --json / --folded / --callsites-csv"
import csv, json, os, sys
r = json.load(open(sys.argv[1]))
folded, csvpath = sys.argv[2], sys.argv[3]
main_line, lib_line, nostack = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
bad = []
def check(cond, msg):
    if not cond:
        bad.append(msg)
sites = r["callsites"]
check(len(sites) >= 2, "%d callsites" % len(sites))
def find(base, line):
    return [c for c in sites if c["file"] and os.path.basename(c["file"]) == base and c["line"] == line]
m = find("prog_report.c", main_line)
l = find("libreport_callee.c", lib_line)
check(len(m) == 1, "callsite prog_report.c:%d: %d entries in %s" % (main_line, len(m), json.dumps(sites, indent=1)))
check(len(l) == 1, "callsite libreport_callee.c:%d: %d entries in %s" % (lib_line, len(l), json.dumps(sites, indent=1)))
if m:
    c = m[0]
    check(c["function"] == "main", "main site: function %r" % c["function"])
    check(os.path.basename(c["module"]) == "prog_report", "main site: module %r" % c["module"])
    check((c["calls"], c["bytes"], c["leaked_blocks"], c["leaked_bytes"], c["peak_bytes"]) == (1, 1000, 1, 1000, 1000),
          "main site: calls, bytes, leaked blocks, leaked bytes, peak %r" % c)
if l:
    c = l[0]
    check(c["function"] == "report_callee_alloc", "library site: function %r" % c["function"])
    check(os.path.basename(c["module"]) == "libreport_callee.so", "library site: module %r" % c["module"])
    check((c["calls"], c["bytes"], c["leaked_blocks"], c["leaked_bytes"], c["peak_bytes"]) == (1, 3000, 0, 0, 3000),
          "library site: calls, bytes, leaked blocks, leaked bytes, peak %r" % c)
total = lambda k: sum(c[k] for c in sites)
check(total("peak_bytes") == r["peak_live_bytes"],
      "callsites' peak_bytes add up to %d, peak_live_bytes is %d" % (total("peak_bytes"), r["peak_live_bytes"]))
if nostack == 0:
    check(total("leaked_bytes") == r["leaked_bytes"], "leaked_bytes: %d != %d" % (total("leaked_bytes"), r["leaked_bytes"]))
    check(total("leaked_blocks") == r["leaked_blocks"], "leaked_blocks: %d != %d" % (total("leaked_blocks"), r["leaked_blocks"]))
    check(total("calls") == r["allocations"], "calls: %d != allocations %d" % (total("calls"), r["allocations"]))
    # both count the calls that returned a block only, failures or not
    asked = sum(v for k, v in r["bytes"].items())
    check(total("bytes") == asked, "bytes: %d != %d" % (total("bytes"), asked))
else:
    check(total("leaked_bytes") <= r["leaked_bytes"], "leaked_bytes above the total")
check(r["leaked_bytes"] >= 1000 and r["leaked_blocks"] >= 1, "the 1000-byte leak is not counted")
# sorted by calls
check([c["calls"] for c in sites] == sorted((c["calls"] for c in sites), reverse=True), "callsites not sorted by calls")

# folded: "frame;frame;... WEIGHT", weight = bytes by default: adds up to the callsites' bytes
wsum, lines, has_lib = 0, 0, False
for line in open(folded):
    stack, _, w = line.rstrip("\n").rpartition(" ")
    check(stack != "" and w.isdigit() and int(w) > 0, "folded line: %r" % line)
    if w.isdigit():
        wsum += int(w)
    lines += 1
    frames = stack.split(";")
    if frames[-1] == "report_callee_alloc" and "main" in frames:
        has_lib = True
check(lines > 0, "the folded file is empty")
check(wsum == total("bytes"), "folded weights add up to %d, the callsites' bytes to %d" % (wsum, total("bytes")))
check(has_lib, "no folded stack main;...;report_callee_alloc")

# callsites CSV: a header, then one row per callsite, the same numbers
rows = list(csv.reader(open(csvpath)))
check(rows and rows[0] == ["function", "file", "line", "module", "offset", "calls", "bytes", "leaked_blocks",
                          "leaked_bytes", "peak_bytes"], "CSV header: %r" % (rows[0] if rows else None))
check(len(rows) == len(sites) + 1, "CSV: %d rows for %d callsites" % (len(rows) - 1, len(sites)))
for row, c in zip(rows[1:], sites):
    check(len(row) == 10, "CSV row: %r" % row)
    if len(row) == 10:
        check(row[0] == c["function"] and int(row[2]) == c["line"] and int(row[5]) == c["calls"] and
              int(row[9]) == c["peak_bytes"], "CSV row %r against %r" % (row, c))
        check(row[4] == ("0x%x" % c["offset"] if "offset" in c else ""), "CSV offset %r against %r" % (row, c))
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
PYEOF

svg_ok t.svg || fail "the flame graph t.svg is not an SVG document"
grep -q report_callee_alloc t.svg || fail "the flame graph does not name report_callee_alloc"

# the text report names the callsites by file:line
t 60 "$mtrace" report t.mtr >r.txt 2>err || fail "report: $(cat err)"
grep -q "prog_report.c:$main_line" r.txt || fail "the text report does not name prog_report.c:$main_line"
grep -q "libreport_callee.c:$lib_line" r.txt || fail "the text report does not name libreport_callee.c:$lib_line"
# one output that cannot be renamed into place: none of the set stays
mkdir a.dir
t 60 "$mtrace" report --folded u.folded --flamegraph a.dir --callsites-csv u.csv t.mtr >/dev/null 2>err &&
    fail "report with --flamegraph naming a directory: exit 0"
grep -q "a.dir" err || fail "report with --flamegraph naming a directory: $(cat err)"
for f in u.folded u.csv; do [ -e "$f" ] && fail "report left $f when the flame graph could not be written"; done
# a trace with stacks and no call: each output asked for is written, with nothing in it (no file
# at all, with exit 0, read as a success whose file went missing)
t 60 "$mtrace" record --stacks 8 -o none.mtr -- /bin/true >/dev/null 2>rec.err || fail "record /bin/true: $(cat rec.err)"
t 60 "$mtrace" report --folded n.folded --flamegraph n.svg --callsites-csv n.csv none.mtr >/dev/null 2>err ||
    fail "report of a trace without calls, with stacks: $(cat err)"
[ -f n.folded ] && [ ! -s n.folded ] || fail "report of a trace without calls: no empty n.folded"
svg_ok n.svg || fail "report of a trace without calls: n.svg is not an SVG document"
[ "$(wc -l <n.csv 2>/dev/null)" = 1 ] || fail "report of a trace without calls: n.csv is not its header alone"
# a program built by clang, which writes no .debug_aranges: its callsites have their file and line
# (before, none had: the lookup of a compilation unit by address went through that section alone)
if command -v clang >/dev/null; then
    cat >clang_sites.c <<'CEOF'
#include <stdlib.h>
__attribute__((noinline)) void *make(size_t n) { return malloc(n); }
int main(void)
{
    void *v[100];
    for (int i = 0; i < 100; i++)
        v[i] = make(100 + (size_t)i);
    for (int i = 0; i < 100; i++)
        free(v[i]);
    return 0;
}
CEOF
    clang -g -O1 -o clang_sites clang_sites.c 2>err || fail "clang: $(cat err)"
    t 60 "$mtrace" record --stacks 8 -o c.mtr -- ./clang_sites >/dev/null 2>err || fail "record clang_sites: $(cat err)"
    t 60 "$mtrace" report --json c.mtr >c.json 2>err || fail "report clang_sites: $(cat err)"
    "$PY" - c.json <<'PYEOF' || fail "clang_sites: the callsite of make() has no file and line"
import json, sys
sites = json.load(open(sys.argv[1]))["callsites"]
print("clang_sites callsites:", [(c["function"], c.get("file"), c.get("line"), c["calls"]) for c in sites])
ok = [c for c in sites if c["function"] == "make" and (c.get("file") or "").endswith("clang_sites.c") and c.get("line") == 2]
sys.exit(0 if ok and ok[0]["calls"] == 100 else 1)
PYEOF
fi
finish
