#!/usr/bin/env bash
# mtrace export against mtrace report on one python3 trace, and the trace in ClickHouse: the export's
# time and size, the load, the peak query, each REPS times (medians by sort | middle line).
#   usage: bench/export_clickhouse.sh BUILD_DIR [ROUNDS] [REPS]
# ROUNDS: rounds of the python3 workload (8: 11.4 M records). Needs clickhouse-server and -client.
set -eu
build=$(cd "$1" && pwd)
rounds=${2:-8}
reps=${3:-3}
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/tests/export/clickhouse_lib.sh"
work=$(mktemp -d /tmp/mtrace-bench-export.XXXXXX)
cleanup() { ch_stop; rm -rf "$work"; }
trap cleanup EXIT
cd "$work"
mtrace=$build/cli/mtrace
PYTHONMALLOC=malloc "$mtrace" record -o big.mtr -- /usr/bin/python3 -c "
import json
for r in range($rounds):
    d = [{'k%d' % i: list(range(i % 10))} for i in range(30000)]
    s = json.dumps(d)
print(len(s))" >/dev/null 2>&1
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for i in $(seq 1 "$reps"); do
    rm -rf out
    /usr/bin/time -f "%e %U %S %M" -o t.export "$mtrace" export big.mtr -o out 2>/dev/null
    /usr/bin/time -f "%e %U %S %M" -o t.report "$mtrace" report --json big.mtr >/dev/null
    cat t.export >>export.times
    cat t.report >>report.times
done
records=$("$mtrace" report --json big.mtr | /usr/bin/python3 -c 'import json, sys; j = json.load(sys.stdin); print(sum(j["calls"].values()))')
echo "trace: $records call records, $(stat -c %s big.mtr) bytes; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "export: wall $(cut -d' ' -f1 export.times | median) s, CPU $(awk '{ print $2 + $3 }' export.times | median) s, max RSS $(cut -d' ' -f4 export.times | median) KB, files $(du -cb out/* | tail -1 | cut -f1) bytes"
echo "report --json: wall $(cut -d' ' -f1 report.times | median) s, CPU $(awk '{ print $2 + $3 }' report.times | median) s, max RSS $(cut -d' ' -f4 report.times | median) KB"
ch_start "$work/ch"
trap cleanup EXIT
/usr/bin/python3 - "$src/doc/export.md" >schema.sql <<'PY'
import re, sys
for b in re.findall(r'```sql\n(.*?)```', open(sys.argv[1]).read(), re.S):
    if re.match(r'-- (table|view):', b):
        print(b.strip() + ';')
PY
ch "$(cat schema.sql)" --multiquery
for t in traces rss threads stacks; do
    [ -s out/mtrace_$t.rowbinary ] && ch "INSERT INTO mtrace_$t FORMAT RowBinary" <out/mtrace_$t.rowbinary
done
/usr/bin/time -f "%e" -o t.load clickhouse-client --port "$CH_PORT" --query "INSERT INTO mtrace_records FORMAT RowBinary" <out/mtrace_records.rowbinary
echo "load of mtrace_records: $(cat t.load) s wall, $(du -sb ch/data/data/default/mtrace_records | cut -f1) bytes stored"
for i in $(seq 1 "$reps"); do
    /usr/bin/time -f "%e" -a -o peak.times clickhouse-client --port "$CH_PORT" --query "SELECT * FROM mtrace_peaks" >peak.out
    /usr/bin/time -f "%e" -a -o calls.times clickhouse-client --port "$CH_PORT" --query "SELECT op, count() FROM mtrace_records GROUP BY op" >/dev/null
done
echo "mtrace_peaks: $(median <peak.times) s wall ($(cut -f2-3 peak.out | tr '\t' ' ') bytes, blocks); calls per function: $(median <calls.times) s"
