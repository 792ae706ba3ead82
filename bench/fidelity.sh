#!/usr/bin/env bash
# Replay fidelity: each program recorded once on glibc's defaults, then run natively and replayed
# on glibc, jemalloc, tcmalloc and mimalloc, and on glibc with mmap_threshold 4 KiB / 64 KiB / 1 MiB /
# 32 MiB and arena_max=1. Per run: peak RSS and CPU time (user+sys), native against replayed
# (medians of REPS runs). Reported per program: whether the program's peak as the replay predicts it
# (predicted_peak_rss_kb: the replay's anonymous peak less its bookkeeping, plus the traced
# program's file-backed and shared pages, plus those of the libraries the allocator brings, allocator_file_kb)
# is within the rule of issue 14 (10 % of
# the native peak, or 2 MiB for a native peak under 10 MiB), beside the replay process's own peak;
# the allocators'
# order by peak RSS and by CPU time, native and replayed, with the pairs the replay orders wrongly
# although natively they are more than 5 % (peak RSS) or 15 % (CPU time) apart (marked "within
# native noise" where the two allocators' native runs overlap, min..max); each setting's
# change of peak RSS against glibc's defaults, native and replayed, flagged when more than
# 5 points apart (and "within native noise" where the replayed change is within 5 points of the
# native runs' range of changes, lowest to highest ratio against the default's runs). Beside the
# whole peak, the anonymous one (resident less file-backed pages), which is what a replay can hold:
# a program's RSS also counts its code (cc1: a 33 MB executable), the replay's its own. Native:
# RssAnon of /proc/PID/status sampled every 10 ms; replayed: the replay's max_anon_rss_kb (its statm samples and high-water mark, less its file-backed pages). The CPU order
# is also given by the replay's time in the allocator's calls and in writing the blocks they return
# (allocator_us + block_writes_us: the page faults of fresh memory are the allocator's doing), which
# leaves the replay's own cost per op out: on a program that spends little time in malloc that cost,
# the same for every allocator, decides the order of the replay's whole CPU time.
# Each program is also recorded once with each glibc setting, converted, and replayed once with it:
# the program's peak of live requested bytes under the setting against on the defaults says whether
# the program itself allocates otherwise under the setting (git's delta threads share out their
# work by how fast each runs: with a 64 KiB mmap threshold each buffer costs a mapping, and its peak
# of live bytes falls by a fifth), which no replay of one recording can know; a setting missed by
# more than 5 points whose own recording, replayed, is within them, and whose live peak moved by
# more than 5 %, is marked "the program changes".
#
# usage: bench/fidelity.sh [BUILD_DIR]      (default build; relative to the repository root)
# environment:
#   REPS       runs of each native program and each replay (default 3)
#   SETTING_RECORDINGS=0  skips recording each program again with each glibc setting (see above)
#   PROGRAMS   subset of: partial trim python python-malloc cc1 clang node ruby tcl threads zstd git
#              gnuplot memcached
#              (default: all; node, ruby and tcl only where Debian's nodejs, ruby and tcl are installed, git
#              only in a clone of mtrace that holds commit GITREV)
# Programs (each isolates one effect, or is a real Debian program):
#   partial        tests/prog_partial.c: large blocks of which about a quarter is written (page evidence)
#   trim           tests/prog_trim.c: 48 MiB freed behind pinned blocks, malloc_trim(0), then 48 MiB
#                  in a second thread's arena (glibc gives the free pages inside its heap back)
#   python         /usr/bin/python3.11 building and dropping dicts of strings; pymalloc keeps small
#                  objects in arenas it maps itself, which no malloc record shows
#   python-malloc  the same with PYTHONMALLOC=malloc: every object is a malloc call
#   cc1            gcc's cc1 compiling format/trace_reader.c at -O2 (obstacks, GC pages, many sizes)
#   clang          Debian's clang compiling the same file at -O2, in one process: 10.9 MB of anonymous
#                  pages before its main (libLLVM's relocated data) that no malloc call makes
#   node           Debian's node building a Map of 300 000 objects and 200 Buffers of 100-300 KB: V8
#                  keeps its heap in pages it maps itself and gives back with madvise at the end
#   ruby           Debian's ruby (3.1) building a Hash of 300 000 strings and upcasing its values:
#                  its heap's 16 KiB pages are mapped 32 KiB at a time and trimmed to alignment,
#                  some kept unwritten to exit (the GC grows the heap ahead of its use)
#   tcl            Debian's tclsh (8.6) building a dict of 300 000 strings and sorting its keys: its
#                  allocator takes 16384 bytes at a time from malloc and carves them up, mostly leaving
#                  the last 16 bytes unwritten, which a mapped chunk puts on a page of their own (the
#                  edge blocks of doc/trace-format.md); 38400-byte blocks the same way, written whole
#   threads        tests/prog_shortthreads.c: 300 threads created and joined one after another,
#                  50000 calls each (per-thread caches and arenas of threads that end)
#   zstd           Debian's zstd -T2 compressing 48 MiB of generated text (2 worker threads,
#                  buffers of MiBs passed between threads)
#   git            Debian's git packing mtrace's own history up to commit GITREV (4056 objects, fixed),
#                  `git pack-objects --revs --all --no-reuse-delta --window=50 --threads=4`: 4 delta
#                  threads, each with its own glibc arena, and zlib's 64 KiB buffers made and freed
#                  by the thousand, written in part, nearly all of reused heap memory (their pages
#                  printed, or estimated from those printed); its peak moves by several MB from run
#                  to run with the threads' timing
#   gnuplot        Debian's gnuplot rendering a 3-D surface into a 2000x1500 PNG (cairo): three 12 MB
#                  image buffers, each calloc'd (a fresh mapping) and filled over a second or more
#                  while the one before is still live or just freed (page counts at RSS samples)
#   memcached      Debian's memcached, 4 worker threads on a Unix socket, driven by
#                  bench/memcached_load.py: 4 connections in parallel (one per worker), 4000 requests
#                  each (sets of 40 B to 330 KiB, gets, deletes, overwrites; ~39 MB of values left
#                  stored), then `shutdown`. Item memory is 1 MiB slab pages malloc'd as a size class
#                  fills, wiped whole as taken (written pages, not partial ones) and never freed; a
#                  few hundred malloc calls in all, every large block live at exit. The client is not
#                  measured: the server runs under GNU time (native) or mtrace record, the client beside it.
# Writes a markdown report to stdout and to bench/out/fidelity.md, every run to bench/out/fidelity.tsv.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${1:-build}
REPS=${REPS:-3}
SETTING_RECORDINGS=${SETTING_RECORDINGS:-1}
GITREV=863b674f556f78a636ac7d6156206a536bf141bc
PROGRAMS=${PROGRAMS:-"partial trim python python-malloc cc1 clang $( [ -x /usr/bin/node ] && echo node) $( [ -x /usr/bin/ruby ] && echo ruby) $( [ -x /usr/bin/tclsh ] && echo tcl) threads zstd $(git -C "$ROOT" cat-file -e "$GITREV" 2>/dev/null && echo git) gnuplot memcached"}
PY=/usr/bin/python3.11 # python3 on PATH may be a pyenv shim script: we want the real binary
CLI=$BUILD/cli/mtrace
PARTIAL=$BUILD/tests/e2e/prog_partial
THREADS=$BUILD/tests/prog_shortthreads
TRIM=$BUILD/tests/e2e/prog_trim
CC1=$(gcc -print-prog-name=cc1)
CLANG=$(command -v clang || echo /usr/bin/clang)
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || true)
LIBDIR=/usr/lib/x86_64-linux-gnu
declare -A LIB=([jemalloc]=$LIBDIR/libjemalloc.so.2 [tcmalloc]=$LIBDIR/libtcmalloc_minimal.so.4
                [mimalloc]=$LIBDIR/libmimalloc.so.2)
ALLOCATORS="glibc jemalloc tcmalloc mimalloc"
SETTINGS="mmap_threshold=4096 mmap_threshold=65536 mmap_threshold=1048576 mmap_threshold=33554432 arena_max=1"
for f in "$CLI" "$PARTIAL" "$TRIM" "$THREADS" /usr/bin/time "$PY" "$CC1" "$CLANG" /usr/bin/zstd /usr/bin/memcached /usr/bin/gnuplot \
         "${LIB[@]}" $(case " $PROGRAMS " in *" node "*) echo /usr/bin/node ;; esac) \
         $(case " $PROGRAMS " in *" ruby "*) echo /usr/bin/ruby ;; esac) \
         $(case " $PROGRAMS " in *" tcl "*) echo /usr/bin/tclsh ;; esac); do
    [ -x "$f" ] || [ -f "$f" ] || {
        echo "fidelity.sh: $f missing; build first: meson setup $BUILD && ninja -C $BUILD" \
             "(packages: scripts/setup.sh)" >&2
        exit 1
    }
done
unset MALLOC_PERTURB_ # glibc would write every byte of every block
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mtfid.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
mkdir -p bench/out
RAW=bench/out/fidelity.tsv # program run kind rep peak_kb cpu_s anon_kb alloc_s (replay: the allocator's calls and writing their blocks)
printf 'program\trun\tkind\trep\tpeak_kb\tcpu_s\tanon_kb\talloc_s\tpredicted_kb\n' >"$RAW"
INFO=$TMP/info.tsv # program command threads calls large-blocks line
: >"$INFO"
SETREC=$TMP/setrec.tsv # program run live-peak-bytes: the program recorded on the defaults and with each setting
: >"$SETREC"
CLIENTS=$TMP/clients.tsv # program run client's-line: what a server's client printed, each run
: >"$CLIENTS"

cat >"$TMP/work.py" <<'PY'
keep = []
for r in range(40):
    d = {("k%d" % i): ("v%d" % i) * (i % 7 + 1) for i in range(20000)}
    if r % 4 == 0:
        keep.append(d)
print(len(keep))
PY
cat >"$TMP/work.js" <<'JS'
const m = new Map();
for (let i = 0; i < 300000; i++) m.set('k' + i, { a: i, s: 'x'.repeat(i % 40) });
const bufs = [];
for (let i = 0; i < 200; i++) bufs.push(Buffer.alloc(100000 + i * 1000));
console.log(m.size, bufs.length);
JS
cat >"$TMP/plot.gp" <<GP
set terminal pngcairo size 2000,1500
set output '$TMP/plot.png'
set samples 400
set isosamples 100
splot sin(x)*cos(y) with pm3d
GP
cat >"$TMP/work.tcl" <<'TCL'
set d [dict create]
for {set i 0} {$i < 300000} {incr i} { dict set d k$i [string repeat x [expr {$i % 97}]] }
set l [lsort [dict keys $d]]
puts [llength $l]
TCL
cat >"$TMP/work.rb" <<'RB'
h = {}
300000.times { |i| h["k#{i}"] = "v" * (i % 300) }
a = h.values.map(&:upcase)
puts a.join(",").size
RB

# zstd's input: words drawn with a fixed seed, so that every run compresses the same bytes and the
# ratio is that of text (about 3:1), not of a repeated pattern that zstd would skip through.
case " $PROGRAMS " in *" zstd "*)
    "$PY" - "$TMP/input.txt" <<'PY'
import random, sys
r = random.Random(1)
words = ["".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(2, 9))) for _ in range(5000)]
n = 0
with open(sys.argv[1], "w") as out:
    while n < 48 << 20:
        line = " ".join(r.choice(words) for _ in range(12)) + " %d\n" % r.randint(0, 10**6)
        out.write(line)
        n += len(line)
PY
esac

# git's input: mtrace's history up to GITREV alone, in a bare repository of its own (the same objects
# whatever was committed since).
case " $PROGRAMS " in *" git "*)
    git init -q --bare "$TMP/repo.git"
    git -C "$TMP/repo.git" fetch -q "$ROOT" "$GITREV:refs/heads/main"
esac

# prog_cmd NAME: sets CMD (the command, an array), ENVV (NAME=VALUE settings the program needs,
# given to the recording, the native runs and nothing else: the replay has no program to pass them to)
# and CLIENT (for a server: the command that drives it while it runs and then stops it; empty else).
prog_cmd() {
    ENVV=()
    CLIENT=()
    case $1 in
    partial) CMD=("$PARTIAL" -n 3000) ;;
    trim) CMD=("$TRIM" trim) ;;
    python) CMD=("$PY" "$TMP/work.py") ;;
    python-malloc) CMD=("$PY" "$TMP/work.py"); ENVV=(PYTHONMALLOC=malloc) ;;
    cc1) CMD=("$CC1" -quiet ${MULTIARCH:+-imultiarch "$MULTIARCH"} -O2 -I"$ROOT/include"
              "$ROOT/format/trace_reader.c" -o "$TMP/out.s") ;;
    clang) CMD=("$CLANG" -O2 -I"$ROOT/include" -c "$ROOT/format/trace_reader.c"
                -o "$TMP/out.o") ;;
    node) CMD=(/usr/bin/node "$TMP/work.js") ;;
    ruby) CMD=(/usr/bin/ruby "$TMP/work.rb") ;;
    tcl) CMD=(/usr/bin/tclsh "$TMP/work.tcl") ;;
    threads) CMD=("$THREADS" 300 50000) ;;
    zstd) CMD=(/usr/bin/zstd -T2 -q -c "$TMP/input.txt") ;;
    gnuplot) CMD=(/usr/bin/gnuplot "$TMP/plot.gp") ;;
    # the revisions on stdin: none (a background job reads /dev/null), --all gives them
    git) CMD=(/usr/bin/git -C "$TMP/repo.git" pack-objects --revs --all --no-reuse-delta --delta-base-offset
              --window=50 --threads=4 -q "$TMP/pack") ;;
    # -u: memcached refuses to run as root without it, and takes it for nothing otherwise; -m: room
    # for all the values, so that no item is evicted and the memory is the load's, not the limit's
    memcached) CMD=(/usr/bin/memcached -u "$(id -un)" -A -t 4 -m 1024 -s "$TMP/mc.sock")
               CLIENT=("$PY" "$ROOT/bench/memcached_load.py" "$TMP/mc.sock" --conns 4 --ops 4000) ;;
    *) echo "fidelity.sh: unknown program $1" >&2; exit 2 ;;
    esac
}

# anon_peak PID: the largest RssAnon (KiB) of PID's child (the program GNU time runs) while PID
# lives, read every 10 ms without starting a process (a fork per sample would take the CPUs the
# program runs on), to stdout.
anon_peak() {
    local tpid=$1 child= peak=0 k v _ tick
    exec {tick}<> <(:) # read -t on a pipe nobody writes: a 10 ms sleep inside bash
    while [ -d "/proc/$tpid" ] && [ ! "$(cut -d' ' -f3 "/proc/$tpid/stat" 2>/dev/null)" = Z ]; do
        [ -n "$child" ] || read -r child _ <"/proc/$tpid/task/$tpid/children" 2>/dev/null || true
        if [ -n "$child" ] && [ -r "/proc/$child/status" ]; then
            while read -r k v _; do
                [ "$k" = RssAnon: ] && [ "$v" -gt "$peak" ] && peak=$v
            done <"/proc/$child/status" 2>/dev/null || true
        fi
        read -r -t 0.01 -u "$tick" _ || true
    done
    exec {tick}>&-
    echo "$peak"
}

# client_start PID: for a server (CLIENT set), starts its client in the background (cpid); the
# client waits for the server's socket, drives it and stops it. PID runs the server (GNU time or
# mtrace record): should the client fail, the server is sent SIGTERM, so that nothing waits for
# it forever. client_wait PROG RUN: waits for the client, keeps what it printed in CLIENTS.
client_start() {
    [ ${#CLIENT[@]} -gt 0 ] || return 0
    local pid=$1
    (
        "${CLIENT[@]}" >"$TMP/client.out" 2>&1 && exit 0
        st=$?
        # shellcheck disable=SC2046 # one pid a word
        kill -TERM $(cat "/proc/$pid/task/$pid/children" 2>/dev/null) 2>/dev/null || true
        exit "$st"
    ) &
    cpid=$!
}
client_wait() {
    [ -n "$cpid" ] || return 0
    if ! wait "$cpid"; then
        echo "fidelity.sh: the client of $1 ($2) failed:" >&2; cat "$TMP/client.out" >&2; exit 1
    fi
    printf '%s\t%s\t%s\n' "$1" "$2" "$(tr '\t\n' '  ' <"$TMP/client.out")" >>"$CLIENTS"
    cpid=
}

# native PROG RUN REP: one native run (CMD, ENVV set), on the run's allocator preloaded or with its
# glibc tunable set; appends its peak RSS (KiB), user+sys seconds and anonymous peak (KiB) to RAW.
native() {
    local prog=$1 run=$2 rep=$3 env=("${ENVV[@]}")
    case $run in
    glibc) ;;
    glibc\ *) env+=("GLIBC_TUNABLES=glibc.malloc.${run#glibc }") ;;
    *) env+=("LD_PRELOAD=${LIB[$run]}") ;;
    esac
    env "${env[@]}" /usr/bin/time -f '%M %U %S' -o "$TMP/time" "${CMD[@]}" >/dev/null 2>"$TMP/err" &
    local tpid=$! cpid=''
    client_start "$tpid"
    local anon
    anon=$(anon_peak "$tpid")
    if ! wait "$tpid"; then
        echo "fidelity.sh: $prog ($run) failed natively:" >&2; cat "$TMP/err" "$TMP/time" >&2; exit 1
    fi
    client_wait "$prog" "$run, native"
    # the last line: GNU time puts "Command exited with non-zero status" before it when there is one
    tail -n 1 "$TMP/time" | awk -v p="$prog" -v r="$run" -v n="$rep" -v a="$anon" \
        '{printf "%s\t%s\tnative\t%s\t%s\t%.2f\t%s\t-\t%s\n", p, r, n, $1, $2 + $3, a, $1}' >>"$RAW"
}

# replayed PROG WL RUN REP [KIND]: one replay of WL on the run's allocator or glibc setting; appends
# the replay's peak RSS (KiB) and its CPU time (cpu_us: user+sys of the whole replay) to RAW as KIND
# (default replay; replay-own: of the program recorded with the run's setting).
replayed() {
    local prog=$1 wl=$2 run=$3 rep=$4 kind=${5:-replay} args=()
    case $run in
    glibc\ *) args=(--allocator glibc --mallopt "${run#glibc }") ;;
    *) args=(--allocator "$run") ;;
    esac
    if ! "$CLI" replay "$wl" "${args[@]}" --json "$TMP/r.json" --quiet >/dev/null 2>"$TMP/err"; then
        echo "fidelity.sh: replay of $prog ($run) failed:" >&2; cat "$TMP/err" >&2; exit 1
    fi
    "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1]))
print("%s\t%s\t%s\t%s\t%d\t%.4f\t%d\t%.4f\t%d" % (*sys.argv[2:6], d["max_rss_kb"], d["cpu_us"] / 1e6,
      d["max_anon_rss_kb"], (d["allocator_us"] + d["block_writes_us"]) / 1e6,
      d.get("predicted_peak_rss_kb") or d["max_rss_kb"]))' \
        "$TMP/r.json" "$prog" "$run" "$kind" "$rep" >>"$RAW"
}

# recorded PROG TRACE WL WHAT [NAME=VALUE...]: records the program (CMD, ENVV and the settings given)
# into TRACE and converts it into WL, the converter's summary into conv.out; the settings reach the
# program through mtrace's environment, so that no env process is traced before it.
recorded() {
    local prog=$1 trace=$2 wl=$3 what=$4
    shift 4
    env "${ENVV[@]}" "$@" "$CLI" record -o "$trace" -- "${CMD[@]}" >/dev/null 2>"$TMP/err" &
    rpid=$! cpid=''
    client_start "$rpid"
    if ! wait "$rpid"; then
        echo "fidelity.sh: recording $prog ($what) failed:" >&2; cat "$TMP/err" >&2; exit 1
    fi
    client_wait "$prog" "$what"
    "$CLI" convert "$trace" -o "$wl" >"$TMP/conv.out" 2>&1
}

# live_peak WL: the most bytes the program had requested and not freed at once, by the workload.
live_peak() {
    "$CLI" info --json "$1" | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["peak_live_bytes"])'
}

RUNS=()
for a in $ALLOCATORS; do RUNS+=("$a"); done
for s in $SETTINGS; do RUNS+=("glibc $s"); done
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
for prog in $PROGRAMS; do
    prog_cmd "$prog"
    wl=$TMP/$prog.wl
    # recorded once, on glibc's defaults
    recorded "$prog" "$TMP/$prog.mtr" "$wl" recorded
    "$PY" - "$prog" "$(printf '%s ' "${ENVV[@]}" "${CMD[@]}" | sed "s|$TMP/||g; s|$ROOT/||g; s| $||")" \
        "$("$CLI" info --json "$wl")" "$(sed -n 's/^  large blocks *//p' "$TMP/conv.out")" >>"$INFO" <<'PY'
import json, sys
prog, cmd, info, large = sys.argv[1:]
d = json.loads(info)
print("\t".join([prog, cmd, str(d["threads"]), str(sum(d["calls"].values())), large]))
PY
    # in rounds, every run once before any twice, so that a disturbance of the shared machine falls
    # on all runs alike rather than on one allocator's
    for rep in $(seq "$REPS"); do
        for run in "${RUNS[@]}"; do
            echo "  $prog $run rep $rep" >&2
            native "$prog" "$run" "$rep"
            replayed "$prog" "$wl" "$run" "$rep"
        done
    done
    if [ "$SETTING_RECORDINGS" != 0 ]; then
        # each glibc setting recorded once more, with the setting, converted and replayed once with it:
        # whether the program itself allocates otherwise under the setting (threads that share out
        # their work by how fast each runs, as git's delta search does), which no replay of the
        # recording on the defaults can know, and what the replay predicts from the program's own
        # calls under the setting
        printf '%s\tdefaults\t%s\n' "$prog" "$(live_peak "$wl")" >>"$SETREC"
        for s in $SETTINGS; do
            echo "  $prog recorded with $s" >&2
            recorded "$prog" "$TMP/$prog.s.mtr" "$TMP/$prog.s.wl" "recorded with $s" "GLIBC_TUNABLES=glibc.malloc.$s"
            printf '%s\tglibc %s\t%s\n' "$prog" "$s" "$(live_peak "$TMP/$prog.s.wl")" >>"$SETREC"
            replayed "$prog" "$TMP/$prog.s.wl" "glibc $s" 1 replay-own
            rm -f "$TMP/$prog.s.mtr" "$TMP/$prog.s.wl"
        done
    fi
    rm -f "$TMP/$prog.mtr" "$wl"
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

"$PY" - "$RAW" "$INFO" "$CLIENTS" "$SETREC" "$REPS" "$LOAD0" "$LOAD1" "$(git rev-parse --short HEAD)" "$(nproc)" \
    "$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)" "$ALLOCATORS" "$SETTINGS" <<'PY' | tee bench/out/fidelity.md
import collections, datetime, itertools, statistics, sys
raw, info, clients, setrec, reps, load0, load1, commit, ncpu, cpu, allocators, settings = sys.argv[1:]
allocators, settings = allocators.split(), settings.split()
runs = allocators + ["glibc " + s for s in settings]
# (program, run, kind) -> [(peak_kb, cpu_s, anon_kb, alloc_s, predicted_kb)]; a native run's
# "predicted" peak is its peak
vals = collections.defaultdict(list)
with open(raw) as f:
    next(f)
    for line in f:
        p, r, k, _, kb, s, anon, alloc, pred = line.rstrip("\n").split("\t")
        vals[(p, r, k)].append((int(kb), float(s), int(anon), float(alloc) if alloc != "-" else float(s), int(pred)))
# (program, run) -> the peak of live requested bytes, recorded on the defaults (run "defaults") or
# with the run's setting
live = {}
for line in open(setrec):
    p, r, b = line.rstrip("\n").split("\t")
    live[(p, r)] = int(b)
med = lambda p, r, k, i: statistics.median(v[i] for v in vals[(p, r, k)])
spread = lambda p, r, k, i: (min(v[i] for v in vals[(p, r, k)]), max(v[i] for v in vals[(p, r, k)]))

def within(rep, nat):
    # issue 14: within 10 % of the native peak, or within 2 MiB where the native peak is under 10 MiB
    return abs(rep - nat) <= (2048 if nat < 10240 else 0.10 * nat)

def order(p, k, i):
    return " < ".join(sorted(allocators, key=lambda a: med(p, a, k, i)))

def misordered(p, i, pct, ri=None):
    """pairs of allocators natively more than pct % apart (field i) that the replay orders the other
    way (field ri of the replay, i unless given); a pair whose native runs' ranges overlap is said
    to be within noise: its medians' order is not the program's"""
    out = []
    ri = i if ri is None else ri
    for a, b in itertools.combinations(allocators, 2):
        na, nb = med(p, a, "native", i), med(p, b, "native", i)
        ra, rb = med(p, a, "replay", ri), med(p, b, "replay", ri)
        if abs(na - nb) > pct / 100 * min(na, nb) and (na < nb) != (ra < rb):
            lo, hi = (a, b) if na < nb else (b, a)
            apart = f"{100 * abs(na - nb) / min(na, nb):.0f} %" if min(na, nb) else "from 0"
            (la, ha), (lb, hb) = spread(p, a, "native", i), spread(p, b, "native", i)
            noise = ", within native noise" if la <= hb and lb <= ha else ""
            out.append(f"{lo} < {hi} ({apart} apart{noise})")
    return out

print(f"## Replay fidelity ({datetime.date.today()}, REPS={reps}, `bench/fidelity.sh`, commit {commit})\n")
print(f"{ncpu} CPUs ({cpu}); load average {load0} before, {load1} after. Peak RSS in KiB, CPU time "
      "(user+sys) in seconds, medians (native: GNU time, 10 ms steps); native CPU time is the "
      "whole program's (its own work too), "
      "the replay's is the replay's: compare their orders, not their values. **fail**: the predicted "
      "peak is not within 10 % of the native one (2 MiB below 10 MiB). **!**: a miss by issue 14's "
      "criteria; \"within native noise\": the two allocators' native runs overlap (min..max). "
      "anon: the anonymous peak (resident less file-backed), what a replay can hold; native: "
      "RssAnon sampled every 10 ms.\n")
summary = []
for line in open(info):
    p, cmd, threads, calls, large = line.rstrip("\n").split("\t")
    print(f"### {p}: `{cmd}`\n")
    print(f"{threads} threads, {calls} calls; large blocks: {large or '-'}\n")
    said = collections.defaultdict(list)  # what the client printed -> the runs it printed it in
    for line in open(clients):
        cp, run, out = line.rstrip("\n").split("\t")
        if cp == p:
            said[out.strip()].append(run)
    for out, when in said.items():
        print(f"Client, {len(when)} of {sum(map(len, said.values()))} runs"
              f"{' (the recorded one among them)' if 'recorded' in when else ''}: {out}\n")
    print("| run | native peak | predicted peak | predicted/native | peak rule | native peak min..max "
          "| predicted min..max | replay process peak | native CPU s | replay CPU s | native anon | replay anon "
          "| anon replay/native |")
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    passed = 0
    for r in runs:
        n, pr, rp = med(p, r, "native", 0), med(p, r, "replay", 4), med(p, r, "replay", 0)
        na, ra = med(p, r, "native", 2), med(p, r, "replay", 2)
        ok = within(pr, n)
        passed += ok
        print(f"| {r} | {n:.0f} | {pr:.0f} | {pr / n:.3f} | {'pass' if ok else '**fail**'} "
              f"| {'..'.join(map(str, spread(p, r, 'native', 0)))} "
              f"| {'..'.join(map(str, spread(p, r, 'replay', 4)))} | {rp:.0f} "
              f"| {med(p, r, 'native', 1):.2f} | {med(p, r, 'replay', 1):.3f} "
              f"| {na:.0f} | {ra:.0f} | {ra / na if na else 0:.3f} |")
    rss_miss, cpu_miss, alloc_miss = misordered(p, 4, 5), misordered(p, 1, 15), misordered(p, 1, 15, 3)
    print(f"\n- order by peak RSS, native: {order(p, 'native', 4)}; predicted: {order(p, 'replay', 4)}; "
          f"pairs more than 5 % apart natively and ordered otherwise by the replay: "
          f"{'**! ' + '; '.join(rss_miss) + '**' if rss_miss else 'none'}")
    print(f"- order by CPU time, native: {order(p, 'native', 1)}; replayed: {order(p, 'replay', 1)}; "
          f"pairs more than 15 % apart natively and ordered otherwise by the replay: "
          f"{'**! ' + '; '.join(cpu_miss) + '**' if cpu_miss else 'none'}")
    print(f"- order by the replay's time in the allocator's calls and writing their blocks (its own cost per op "
          f"left out): "
          f"{order(p, 'replay', 3)}; pairs more than 15 % apart natively (CPU) and ordered otherwise: "
          f"{'**! ' + '; '.join(alloc_miss) + '**' if alloc_miss else 'none'}\n")
    # The native change's range: the setting's runs against the default's, lowest to highest ratio.
    # A replayed change within 5 points of that range, though not of the medians' change, is
    # "within native noise": the native runs do not tell the setting's effect that closely.
    print("| setting | native change | native change min..max | replayed change | difference (points) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    far = []
    n0, r0 = med(p, "glibc", "native", 4), med(p, "glibc", "replay", 4)
    d_lo, d_hi = spread(p, "glibc", "native", 4)
    own = {}  # setting -> (live change %, its own recording's replayed change %, its peak, rule)
    for s in settings:
        r, d = "glibc " + s, (p, "defaults")
        if (p, r) in live and d in live and vals[(p, r, "replay-own")]:
            pr = med(p, r, "replay-own", 4)
            own[s] = (100 * (live[(p, r)] - live[d]) / live[d], 100 * (pr - r0) / r0, pr,
                      within(pr, med(p, r, "native", 0)))
    for s in settings:
        a = 100 * (med(p, "glibc " + s, "native", 4) - n0) / n0
        b = 100 * (med(p, "glibc " + s, "replay", 4) - r0) / r0
        s_lo, s_hi = spread(p, "glibc " + s, "native", 4)
        c_lo, c_hi = 100 * (s_lo / d_hi - 1), 100 * (s_hi / d_lo - 1)
        mark = ""
        if abs(a - b) > 5:
            noise = c_lo - 5 <= b <= c_hi + 5
            changes = s in own and abs(own[s][0]) > 5 and abs(a - own[s][1]) <= 5
            why = " (within native noise)" if noise else " (the program changes)" if changes else ""
            far.append(s + why)
            mark = " **!**" + why.replace("(", "").replace(")", "")
        print(f"| {s} | {a:+.1f} % | {c_lo:+.1f} .. {c_hi:+.1f} % | {b:+.1f} % | {abs(a - b):.1f}{mark} |")
    print()
    if own:
        print("Recorded with each setting (once), converted and replayed once with it: the program's peak of "
              "live requested bytes against its recording on the defaults, and the peak predicted from that "
              "recording.\n")
        print("| setting | live peak, defaults | live peak, with the setting | change | predicted from it "
              "| predicted/native | peak rule | replayed change from it | difference (points) |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
        for s, (lc, oc, pr, ok) in own.items():
            a = 100 * (med(p, "glibc " + s, "native", 4) - n0) / n0
            print(f"| {s} | {live[(p, 'defaults')]} | {live[(p, 'glibc ' + s)]} | {lc:+.1f} % | {pr:.0f} "
                  f"| {pr / med(p, 'glibc ' + s, 'native', 0):.3f} | {'pass' if ok else '**fail**'} "
                  f"| {oc:+.1f} % | {abs(a - oc):.1f} |")
        print()
    summary.append((p, threads, calls, passed, rss_miss, cpu_miss, alloc_miss, far))
print("### Summary\n")
print(f"| program | threads | calls | peak within rule (of {len(runs)}) | peak RSS order: pairs missed (>5 %) "
      "| CPU order: pairs missed (>15 %) | the same by the replay's allocator time | settings >5 points off |")
print("| --- | ---: | ---: | ---: | --- | --- | --- | --- |")
for p, threads, calls, passed, rss_miss, cpu_miss, alloc_miss, far in summary:
    print(f"| {p} | {threads} | {calls} | {passed} | {'; '.join(rss_miss) or 'none'} "
          f"| {'; '.join(cpu_miss) or 'none'} | {'; '.join(alloc_miss) or 'none'} | {', '.join(far) or 'none'} |")
PY
