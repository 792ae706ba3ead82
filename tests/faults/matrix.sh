#!/usr/bin/env bash
# The real-program matrix: an interpreter, a compiler, multithreaded tools, a server under load and
# a C++ program are each recorded, with stdout, stderr and exit status the same as untraced; every
# trace opens and every thread's records decode (fp_walk); each trace is converted to a workload and
# the workload replayed on glibc and on jemalloc, which must succeed and make exactly the workload's
# calls.
#   usage: matrix.sh MTRACE FP_WALK SOURCE_ROOT [CXX_PROGRAM]
set -u
# The programs' calls depend on the locale: under POSIX (a fresh Debian root shell sets no LANG) sort
# makes 23 calls and xz -T2 74, under C.UTF-8 297 and more, past the thresholds below. One locale,
# present on every Debian (libc-bin), whatever the shell that runs the tests.
export LC_ALL=C.UTF-8
mtrace=$1
walk=$2
src=$3
cxx=${4:-}
work=$(mktemp -d /tmp/mtrace-matrix.XXXXXX)
server_pid=
cleanup() {
    if [ -n "$server_pid" ]; then kill -9 "$server_pid" 2>/dev/null; fi
    rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=tests/lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
start=$SECONDS

# replay_traces NAME TRACE...: walk every trace, convert each that has calls, replay it on glibc and
# jemalloc, compare the replays' calls{} with the workload's.
replay_traces() {
    local name=$1
    shift
    local walked
    if ! walked=$("$walk" "$@" 2>&1); then
        fail "$name: a trace does not read back: $walked"
        return
    fi
    echo "$walked" | sed "s|$work/||; s/^/  /"
    local t calls lost threads starts
    while read -r t _ threads _ _ _ calls _ starts _ lost _; do
        [ "$lost" = 0 ] || fail "$name: $t: $lost calls lost"
        [ "$starts" = "$threads" ] || fail "$name: $t: $starts thread starts for $threads threads"
    done <<<"$walked"
    local i=0
    for t in "$@"; do
        calls=$(echo "$walked" | awk -v f="$t" '$1 == f { print $7 }')
        if [ "${calls:-0}" -lt 100 ]; then
            continue # a helper process (gcc's driver forks as): nothing worth replaying
        fi
        local wl="$work/$name.$i.wl" res="$work/$name.$i.json"
        i=$((i + 1))
        if ! "$mtrace" convert "$t" -o "$wl" >"$work/convert.log" 2>&1; then
            fail "$name: mtrace convert $t failed: $(tail -3 "$work/convert.log")"
            continue
        fi
        "$mtrace" info --json "$wl" >"$wl.json" || { fail "$name: mtrace info $wl failed"; continue; }
        if ! "$mtrace" replay "$wl" --allocator glibc --allocator jemalloc --json "$res" >"$work/replay.log" 2>&1; then
            fail "$name: mtrace replay $wl failed: $(tail -3 "$work/replay.log")"
            continue
        fi
        python3 - "$name" "$wl.json" "${res%.json}.glibc.json" "${res%.json}.jemalloc.json" <<'PY' || failures=$((failures + 1))
import json, sys
name, wl = sys.argv[1], json.load(open(sys.argv[2]))
problems = []
for path in sys.argv[3:]:
    r = json.load(open(path))
    if r["calls"] != wl["calls"]:
        diff = {k: (wl["calls"].get(k), r["calls"].get(k)) for k in set(wl["calls"]) | set(r["calls"])
                if wl["calls"].get(k) != r["calls"].get(k)}
        problems.append("%s replayed other calls than the workload's (workload, replay): %s" % (r["allocator"], diff))
    failed = r.get("failed") or {}
    if sum(failed.values()):
        problems.append("%s: calls failed in the replay: %s" % (r["allocator"], {k: v for k, v in failed.items() if v}))
if problems:
    print("FAIL: %s: %s" % (name, "; ".join(problems)))
    sys.exit(1)
print("  replayed %s: %d calls, %d threads, on glibc and jemalloc" % (wl["file"].split("/")[-1], sum(wl["calls"].values()), wl["threads"]))
PY
    done
    if [ "$i" = 0 ]; then
        fail "$name: no trace with calls to replay"
    fi
}

# check NAME CMD...: runs CMD untraced and traced, compares, then replay_traces.
check() {
    local name=$1
    shift
    local t0=$SECONDS
    "$@" >"$work/$name.native.out" 2>"$work/$name.native.err" </dev/null
    local native_rc=$?
    "$mtrace" record -o "$work/$name.%p.mtr" -- "$@" >"$work/$name.traced.out" 2>"$work/$name.traced.err" </dev/null
    local traced_rc=$?
    [ "$native_rc" = "$traced_rc" ] || fail "$name: exit status $traced_rc traced, $native_rc untraced"
    cmp -s "$work/$name.native.out" "$work/$name.traced.out" || fail "$name: stdout differs traced and untraced"
    if ! diff "$work/$name.native.err" <(grep -v '^mtrace: wrote ' "$work/$name.traced.err") >/dev/null; then
        fail "$name: stderr differs traced and untraced"
        diff "$work/$name.native.err" <(grep -v '^mtrace: wrote ' "$work/$name.traced.err") | head -5
    fi
    mapfile -t traces < <(sed -n 's/^mtrace: wrote //p' "$work/$name.traced.err")
    if [ "${#traces[@]}" = 0 ]; then
        fail "$name: no trace written"
        return
    fi
    echo "$name: exit $traced_rc, ${#traces[@]} trace(s)"
    replay_traces "$name" "${traces[@]}"
    echo "  ($((SECONDS - t0)) s)"
}

# An interpreter doing real work, every object through malloc.
export PYTHONMALLOC=malloc
check python /usr/bin/python3 -c '
import json, re, collections
words = [("w%d" % (i * 7919 % 1000)) for i in range(60000)]
c = collections.Counter(words)
d = {k: [v, k.upper(), re.sub(r"\d", "#", k)] for k, v in c.items()}
s = json.dumps(d, sort_keys=True)
print(len(s), sum(v[0] for v in json.loads(s).values()), c.most_common(2))'
unset PYTHONMALLOC

# A compiler on a real source file (the driver runs cc1 and as).
check gcc gcc -O2 -I"$src/include" -c "$src/format/trace_reader.c" -o "$work/trace_reader.o"

# Multithreaded tools on generated files.
seq 1 200000 | sed 's/$/ some words to sort on/' | shuf --random-source=<(yes) >"$work/lines.txt"
check sort sort --parallel=2 -S 8M "$work/lines.txt"
head -c 12000000 /dev/urandom | od -An -tx1 | head -c 12000000 >"$work/text.txt"
check xz xz -T2 -1 -c "$work/text.txt"

# A C++ program: std::map, std::string, std::thread.
if [ -n "$cxx" ] && [ -x "$cxx" ]; then
    check cxx "$cxx"
else
    echo "skip: no C++ program (g++ missing at configure time)"
fi

# A server under load: redis-server driven by redis-cli and redis-benchmark on loopback, stopped with
# "shutdown nosave". What the clients see must not depend on the tracing.
# wait_bounded PID: waits for the server at most 30 s (then kills it); its exit status in $waited.
wait_bounded() {
    local i
    for i in $(seq 1 300); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$1" 2>/dev/null; then
        fail "redis: the server did not stop on shutdown"
        kill -9 "$1"
    fi
    wait "$1"
    waited=$?
}
redis_session() { # PORT OUT: the deterministic client session, then load, then shutdown
    local port=$1 out=$2 i
    for i in $(seq 1 100); do
        [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break
        sleep 0.1
    done
    {
        for i in $(seq 1 300); do echo "SET key$i value$i"; done
        for i in $(seq 1 100); do echo "RPUSH list $i"; echo "HSET hash f$i $((i * i))"; done
        echo "INCRBY counter 42"
        echo "GET key123"
        echo "LRANGE list 0 4"
        echo "HGET hash f9"
        echo "DBSIZE"
    } | redis-cli -p "$port" >"$out"
    redis-benchmark -p "$port" -n 20000 -c 8 -t set,get,lpush,lpop,hset -q >/dev/null 2>&1
    redis-cli -p "$port" dbsize >>"$out"
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1
}
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
    t0=$SECONDS
    port=$((20000 + RANDOM % 20000))
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
        >"$work/redis.native.log" 2>&1 &
    server_pid=$!
    redis_session "$port" "$work/redis.native.out"
    wait_bounded "$server_pid"
    native_rc=$waited
    port=$((port + 1))
    "$mtrace" record -o "$work/redis.%p.mtr" -- redis-server --port "$port" --bind 127.0.0.1 --save '' \
        --appendonly no --daemonize no >"$work/redis.traced.log" 2>"$work/redis.traced.err" &
    server_pid=$!
    redis_session "$port" "$work/redis.traced.out"
    wait_bounded "$server_pid"
    traced_rc=$waited
    server_pid=
    [ "$native_rc" = 0 ] || fail "redis: the untraced server exited $native_rc"
    [ "$native_rc" = "$traced_rc" ] || fail "redis: exit status $traced_rc traced, $native_rc untraced"
    cmp -s "$work/redis.native.out" "$work/redis.traced.out" || {
        fail "redis: the clients saw other answers traced and untraced"
        diff "$work/redis.native.out" "$work/redis.traced.out" | head -5
    }
    [ "$(tail -1 "$work/redis.native.out")" != "" ] || fail "redis: the session got no answers"
    mapfile -t traces < <(sed -n 's/^mtrace: wrote //p' "$work/redis.traced.err")
    if [ "${#traces[@]}" = 0 ]; then
        fail "redis: no trace written"
    else
        echo "redis: exit $traced_rc, ${#traces[@]} trace(s)"
        replay_traces redis "${traces[@]}"
        grep -q libjemalloc <("$walk" "${traces[0]}") || echo "  (redis-server's malloc is not jemalloc's here)"
    fi
    echo "  ($((SECONDS - t0)) s)"
else
    echo "skip: redis-server or redis-benchmark not installed (Debian: redis-server redis-tools)"
fi

echo "matrix: $((SECONDS - start)) s"
if [ "$failures" -ne 0 ]; then
    echo "$failures failure(s)"
    exit 1
fi
