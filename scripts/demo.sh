#!/usr/bin/env bash
# The README's demo: trace a real program from a Debian package (the Python interpreter running an
# allocation-heavy script with two threads), then summarize and compress the trace.
# Everything it writes goes to out/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
mtrace=$build/cli/mtrace
out=out/demo
mkdir -p "$out"
rm -f "$out"/python.mtr* "$out"/python.mtz

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
echo "== mtrace record: $python (2 threads, PYTHONMALLOC=malloc)"
PYTHONMALLOC=malloc "$mtrace" record -o "$out/python.mtr" -- "$python" -c "$script"

echo
echo "== mtrace info"
"$mtrace" info "$out/python.mtr"

echo
echo "== mtrace pack"
"$mtrace" pack "$out/python.mtr" -o "$out/python.mtz" --force
"$mtrace" info --json "$out/python.mtz" | python3 -c '
import json, sys
j = json.load(sys.stdin)
print("packed: %.2f bytes per call, %d calls, %d threads" % (j["bytes_per_call"], j["call_records"], j["threads"]))'

echo
echo "== mtrace dump (first records)"
"$mtrace" dump "$out/python.mtz" | head -n 8

echo
echo "files: $out/python.mtr (raw trace), $out/python.mtz (packed trace)"
