#!/usr/bin/env bash
# The README's demo, the whole pipeline on a real program from a Debian package: the Python
# interpreter runs an allocation-heavy script on two threads under the recorder; the trace is
# reported, converted into a workload and replayed on glibc, jemalloc and tcmalloc; the results are
# compared and plotted. Everything it writes goes to out/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
mtrace=$build/cli/mtrace
out=out/demo
mkdir -p "$out"
rm -f "$out"/*

python=/usr/bin/python3
script='
import threading, json
def work(n):
    docs = [{"id": i, "name": "item%d" % i, "tags": [str(j) for j in range(i % 7)]} for i in range(n)]
    text = json.dumps(docs)
    return len(json.loads(text))
threads = [threading.Thread(target=work, args=(40000,)) for _ in range(2)]
for t in threads: t.start()
for t in threads: t.join()
print("python done:", work(20000), "documents")
'

# PYTHONMALLOC=malloc sends every Python object to malloc instead of Python's own small-object pool.
echo "== 1. mtrace record: $python on 2 threads, 8 frames of stack per call"
PYTHONMALLOC=malloc "$mtrace" record --stacks 8 -o "$out/python.mtr" -- "$python" -c "$script"

echo
echo "== 2. mtrace report (the first lines)"
"$mtrace" report "$out/python.mtr" --flamegraph "$out/flame.svg" >"$out/report.txt"
head -n 16 "$out/report.txt"

echo
echo "== 3. mtrace convert"
"$mtrace" convert "$out/python.mtr" -o "$out/python.wl" --force

echo
echo "== 4. mtrace replay on glibc, jemalloc and tcmalloc (mtrace compare prints the same table later)"
"$mtrace" replay "$out/python.wl" --allocator glibc --allocator jemalloc --allocator tcmalloc \
    --json "$out/replay.json" --rss-series "$out/replay.tsv" --quiet

echo
echo "== 5. plots and the HTML page"
"$mtrace" plot -o "$out/trace.png" "$out/python.mtr"
"$mtrace" plot -o "$out/replay-rss.png" "$out"/replay.{glibc,jemalloc,tcmalloc}.json
"$mtrace" plot --kind compare -o "$out/compare.png" "$out"/replay.{glibc,jemalloc,tcmalloc}.json
"$mtrace" report --html "$out/report.html" "$out/python.mtr" "$out"/replay.{glibc,jemalloc,tcmalloc}.json

echo
echo "files in $out:"
echo "  python.mtr          the trace (mtrace info / dump / report read it)"
echo "  report.txt          mtrace report's text"
echo "  python.wl           the workload (mtrace replay reads it)"
echo "  replay.*.json       replay results per allocator; replay.*.tsv their RSS over time"
echo "  trace.png           live bytes and RSS of the traced program over time"
echo "  replay-rss.png      RSS against ideal RSS per allocator, beside the traced program's RSS"
echo "  compare.png         wall time and peak RSS per allocator"
echo "  flame.svg           flame graph of bytes allocated per call stack"
echo "  report.html         all of it in one page"
