#!/usr/bin/env bash
# mtrace report's callsites across processes, end to end: prog_workers starts 5 workers, each a
# fresh image with its code and libraries where ASLR put them, under `mtrace record --stacks 16`.
#   usage: callsites_across.sh MTRACE PROG_WORKERS
# Worker I leaks 100 * (I + 1) bytes at one line (1500 bytes in all) and 48 bytes in a library
# without symbols, and frees 64 bytes it made at another line. The total of `mtrace report --json
# DIR` has one callsite for each (merged by file:line; by module and offset for the library's),
# whatever the addresses: the top leaking one is the leak's line with 1500 bytes in 5 blocks, leaked
# in 5 traces; every callsite's figures are the sums of the traces' callsites with its key. The
# text total shows the same; --callsites-csv writes the merged callsites with the traces columns, the
# library's with its offset (as the JSON's), no two rows alike; --top N cuts the total's lists;
# --folded and --flamegraph hold every trace's stacks, each under its process's frame; a trace that
# cannot be read leaves no CSV, folded stacks or flame graph. Not in sanitized builds (the recorder
# is an LD_PRELOAD shim).
set -u
mtrace=$1
prog=$2
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/mtrace-across.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
workers=5

mkdir tree
t 60 "$mtrace" record --stacks 16 -o tree/t.%p.mtr -- "$prog" "$workers" >lines.txt 2>rec.err ||
    { fail "mtrace record: $(cat rec.err)"; finish; }
leak_line=$(awk '$1 == "leak_line" { print $2; exit }' lines.txt)
temp_line=$(awk '$1 == "temp_line" { print $2; exit }' lines.txt)
[ -n "$leak_line" ] && [ -n "$temp_line" ] || { fail "prog_workers printed: $(cat lines.txt)"; finish; }
[ "$(grep -c "^leak_line $leak_line\$" lines.txt)" = "$workers" ] || fail "not $workers workers: $(cat lines.txt)"

t 60 "$mtrace" report --json --callsites-csv sites.csv tree >r.json 2>err || fail "report --json: $(cat err)"
"$PY" - r.json sites.csv "$leak_line" "$temp_line" "$workers" <<'PYEOF' || fail "the total's callsites"
import csv, json, os, sys
d = json.load(open(sys.argv[1]))
csvpath, leak_line, temp_line, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
reps, tot = d["reports"], d["total"]
bad = []
def check(cond, msg):
    if not cond:
        bad.append(msg)
sites, leaking = tot["callsites"], tot["leaking_callsites"]
check(tot["traces_with_stacks"] == tot["traces"] == len(reps), "traces with stacks: %r" % tot)
def at(base, line):
    return [c for c in sites if c["file"] and os.path.basename(c["file"]) == base and c["line"] == line]
leak, temp = at("prog_workers.c", leak_line), at("prog_workers.c", temp_line)
lib = [c for c in sites if c["module"] == "libworkers_stripped.so"]
check(len(leak) == 1, "prog_workers.c:%d: %d callsites in %s" % (leak_line, len(leak), json.dumps(sites, indent=1)))
check(len(temp) == 1, "prog_workers.c:%d: %d callsites" % (temp_line, len(temp)))
check(len(lib) == 1, "libworkers_stripped.so: %d callsites in %s" % (len(lib), json.dumps(sites, indent=1)))
leaked = 100 * n * (n + 1) // 2
if leaking:
    top = leaking[0]
    check(os.path.basename(top["file"] or "") == "prog_workers.c" and top["line"] == leak_line,
          "top leaking callsite %s:%r, expected prog_workers.c:%d" % (top["file"], top["line"], leak_line))
    check((top["function"], top["calls"], top["bytes"], top["leaked_blocks"], top["leaked_bytes"]) ==
          ("worker", n, leaked, n, leaked), "top leaking callsite's figures: %r" % top)
    check((top["traces"], top["leaking_traces"]) == (n, n), "top leaking callsite's traces: %r" % top)
else:
    check(False, "no leaking callsite")
if lib:
    c = lib[0]
    check(c["function"] == "??" and c["file"] is None and "offset" in c, "library callsite has a symbol: %r" % c)
    check((c["leaked_blocks"], c["leaked_bytes"], c["traces"], c["leaking_traces"]) == (n, 48 * n, n, n),
          "library callsite's figures: %r" % c)
if temp:
    c = temp[0]
    check((c["calls"], c["bytes"], c["leaked_bytes"], c["traces"], c["leaking_traces"]) == (n, 64 * n, 0, n, 0),
          "temporary's callsite: %r" % c)
    check(c not in leaking, "a callsite without leaks among the leaking ones")
# every callsite: the sums of the traces' callsites with its key
def key(c):
    return (c["function"], c["file"], c["line"], c["module"], c.get("offset", 0))
want = {}
for r in reps:
    for c in r["callsites"]:
        w = want.setdefault(key(c), {"calls": 0, "bytes": 0, "leaked_blocks": 0, "leaked_bytes": 0,
                                     "peak_bytes": 0, "traces": 0, "leaking_traces": 0})
        for f in ("calls", "bytes", "leaked_blocks", "leaked_bytes", "peak_bytes"):
            w[f] += c[f]
        w["traces"] += 1
        w["leaking_traces"] += c["leaked_bytes"] > 0
check(len(sites) == len(want), "%d callsites in the total, %d distinct in the traces" % (len(sites), len(want)))
for c in sites:
    w = want.get(key(c))
    check(w is not None and all(c[f] == w[f] for f in w), "callsite %r: expected %r" % (c, w))
check([c["bytes"] for c in sites] == sorted((c["bytes"] for c in sites), reverse=True), "callsites not by bytes")
check([c["leaked_bytes"] for c in leaking] == sorted((c["leaked_bytes"] for c in leaking), reverse=True),
      "leaking callsites not by leaked bytes")
check(all(c["leaked_bytes"] for c in leaking), "a leaking callsite without leaks")
# --callsites-csv: the merged callsites, with the traces columns
rows = list(csv.DictReader(open(csvpath)))
check(len(rows) == len(sites), "CSV: %d rows, %d callsites" % (len(rows), len(sites)))
lr = [x for x in rows if os.path.basename(x["file"]) == "prog_workers.c" and int(x["line"]) == leak_line]
check(len(lr) == 1 and (int(lr[0]["leaked_bytes"]), int(lr[0]["traces"]), int(lr[0]["leaking_traces"])) ==
      (leaked, n, n), "CSV: the leak's row: %r" % lr)
# a row without a symbol carries its offset, as the JSON does: no two rows alike
if lib:
    lrow = [x for x in rows if x["module"] == "libworkers_stripped.so"]
    check(len(lrow) == 1 and lrow[0]["function"] == "??" and lrow[0]["offset"] == "0x%x" % lib[0]["offset"],
          "CSV: the library's row %r, JSON offset 0x%x" % (lrow, lib[0]["offset"]))
check(all(x["offset"] == "" for x in rows if x["function"] != "??"), "CSV: an offset beside a symbol")
keys = [tuple(x[f] for f in ("function", "file", "line", "module", "offset")) for x in rows]
check(len(set(keys)) == len(keys), "CSV: two rows alike in %r" % keys)
for m in bad:
    print("  " + m)
sys.exit(1 if bad else 0)
PYEOF

t 60 "$mtrace" report --top 1 --json tree >top1.json 2>err || fail "report --top 1 --json: $(cat err)"
"$PY" -c 'import json, sys
t = json.load(open(sys.argv[1]))["total"]
sys.exit(0 if len(t["callsites"]) == 1 and len(t["leaking_callsites"]) == 1 else 1)' top1.json ||
    fail "--top 1: not one callsite in each of the total's lists"

t 60 "$mtrace" report tree >text.out 2>err || fail "text report: $(cat err)"
sed -n '/^all [0-9]* traces/,$p' text.out >total.txt
row=$(sed -n '/^top callsites by leaks, all [0-9]* traces$/{n;p;q}' total.txt)
case $row in
*" 1.5 KiB  worker  "*"prog_workers.c:$leak_line  leaked in $workers traces") ;;
*) fail "text: the total's top leaking callsite: '$row' in:$(cat total.txt)" ;;
esac
grep -q "^top callsites by bytes requested, all [0-9]* traces\$" total.txt || fail "text: no table by bytes: $(cat total.txt)"

# --folded and --flamegraph of several traces: every trace's stacks, each under a first frame of its
# own, "COMMAND (pid N)"; past that frame, the lines of each trace's own --folded
t 60 "$mtrace" report --folded all.folded --flamegraph all.svg tree >/dev/null 2>err ||
    fail "report --folded --flamegraph of several traces: $(cat err)"
# (a trace without calls has no stack to show: the pid of each that has)
ntraces=0
: >each.folded
: >pids.want
for trace in tree/*; do
    rm -f one.folded
    t 60 "$mtrace" report --folded one.folded "$trace" >/dev/null 2>err || fail "report --folded $trace: $(cat err)"
    [ -s one.folded ] || continue
    cat one.folded >>each.folded
    t 60 "$mtrace" info "$trace" | awk '$1 == "process" { print $3 }' | tr -d , >>pids.want
    ntraces=$((ntraces + 1))
done
sed 's/^[^;]*;//' all.folded | sort >all.rest
sort each.folded >each.sorted
cmp -s all.rest each.sorted ||
    fail "--folded of $ntraces traces: not each trace's stacks ($(wc -l <all.folded) lines, $(wc -l <each.folded) in the traces')"
roots=$(cut -d';' -f1 all.folded | sort -u)
[ "$(printf '%s\n' "$roots" | sed -n 's/^prog_workers (pid \([0-9]*\))$/\1/p' | sort)" = "$(sort -u pids.want)" ] ||
    fail "--folded of $ntraces traces: the processes' frames: $roots; expected the pids $(sort -u pids.want | tr '\n' ' ')"
grep -q "<title>$(printf '%s\n' "$roots" | tail -1 | sed 's/[()]/./g') " all.svg ||
    fail "--flamegraph of several traces: no process frame in the graph"

# a trace that cannot be read among them: no total, and the CSV, folded stacks and flame graph
# already there are left as they were
one=$(ls tree/*.mtr.* | head -1)
head -c 3000 "$one" >cut.mtr
for f in kept.csv kept.folded kept.svg; do echo "kept" >$f; done
t 60 "$mtrace" report --callsites-csv kept.csv --folded kept.folded --flamegraph kept.svg tree cut.mtr >/dev/null 2>err &&
    fail "a cut trace among several: exit 0"
for f in kept.csv kept.folded kept.svg; do
    [ "$(cat $f)" = kept ] || fail "a cut trace among several: $f was replaced: $(head -3 $f)"
done
no_file "a cut trace among several" kept.csv.partial.* kept.folded.partial.* kept.svg.partial.*

# one trace's --callsites-csv keeps its columns
t 60 "$mtrace" report --callsites-csv one.csv "$one" >/dev/null 2>err || fail "report of $one: $(cat err)"
[ "$(head -1 one.csv)" = "function,file,line,module,offset,calls,bytes,leaked_blocks,leaked_bytes,peak_bytes" ] ||
    fail "one trace's CSV header: $(head -1 one.csv)"
finish
