#!/usr/bin/env bash
# Bytes requested count the calls that returned a block only: prog_failing runs under
# `mtrace record --paused` and prints the bytes its successful calls asked for and how many calls
# failed; `mtrace report --json` (per function, summed, and its one thread's bytes) and
# `mtrace info --json` (bytes_requested) must give that total, and the failures that count.
# regression: failed calls were added too, malloc(SIZE_MAX - 100) and calloc(SIZE_MAX / 2, 4) with
# their wrapped sizes, so a single failed malloc(1 << 62) showed exabytes.
# Not in sanitized builds (the recorder is an LD_PRELOAD shim).
#   usage: failed_calls.sh MTRACE PROG_FAILING
set -u
mtrace=$1
prog=$2
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d /tmp/mtrace-report-failed.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

t 60 "$mtrace" record --paused -o t.mtr -- "$prog" >prog.out 2>rec.err ||
    { fail "mtrace record: $(cat rec.err)"; finish; }
ok_bytes=$(awk '$1 == "ok_bytes" { print $2 }' prog.out)
failed=$(awk '$1 == "failed" { print $2 }' prog.out)
[ -n "$ok_bytes" ] && [ -n "$failed" ] || { fail "prog_failing printed: $(cat prog.out)"; finish; }
t 60 "$mtrace" report --json t.mtr >r.json 2>err || fail "report --json: $(cat err)"
t 60 "$mtrace" info --json t.mtr >i.json 2>err || fail "info --json: $(cat err)"
t 60 "$mtrace" report t.mtr >r.txt 2>err || fail "report: $(cat err)"

"$PY" - r.json i.json r.txt "$ok_bytes" "$failed" <<'PYEOF' || fail "bytes requested"
import json, sys
r, i = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
text = open(sys.argv[3]).read()
ok_bytes, failed = int(sys.argv[4]), int(sys.argv[5])
bad = []
def check(cond, msg):
    if not cond:
        bad.append(msg)
check(failed >= 10, "prog_failing: only %d calls failed" % failed)
check(sum(r["failures"].values()) == failed, "report failures: %s, expected %d in all" % (r["failures"], failed))
check(i["failed_calls"] == failed, "info failed_calls %d, expected %d" % (i["failed_calls"], failed))
check(sum(r["bytes"].values()) == ok_bytes, "report bytes: %s (sum %d), expected %d" % (r["bytes"], sum(r["bytes"].values()), ok_bytes))
expect = {"malloc": 1000, "calloc": 240, "realloc": 2000, "reallocarray": 128, "memalign": 300}
for op, v in r["bytes"].items():
    check(v == expect.get(op, 0), "report bytes[%s] = %d, expected %d" % (op, v, expect.get(op, 0)))
threads = [t for t in r["thread_list"] if t["calls"]]
check(len(threads) == 1 and threads[0]["bytes"] == ok_bytes, "report thread_list: %s, expected bytes %d" % (threads, ok_bytes))
check(i["bytes_requested"] == ok_bytes, "info bytes_requested %d, expected %d" % (i["bytes_requested"], ok_bytes))
check("TiB" not in text and "GiB" not in text, "the text report shows: %s" % text[:1200])
if bad:
    print("\n".join(bad))
    sys.exit(1)
PYEOF
finish
