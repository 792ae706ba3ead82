#!/usr/bin/env bash
# Regenerates the fuzz seed corpora (tests/fuzz/corpus/<target>/) from real traces. Not run by CI:
# run it by hand after a format change, look at the result, and commit it.
#
#   tests/fuzz/make_seeds.sh [BUILD_DIR]      (default: build-fuzz, configured with meson if missing)
#
# Records small real programs with `mtrace record` (ls, python3 -c 'print(1)', a two-thread program
# that makes every call and passes blocks between threads, a run cut short by MTRACE_MAX_SIZE), with
# and without --stacks; packs them with `mtrace pack`; converts them with `mtrace convert`; replays
# the workloads with `mtrace replay --json` and adds `mtrace info --json` and `mtrace compare --json`
# outputs. Seeds are kept in the plain forms the targets take (fuzz.h: compact raw traces, packed
# traces with uncompressed frames, workloads with uncompressed frames) next to a few files in their
# real form, each cut to under 64 KiB (a cut trace is still a valid trace). File names avoid the
# extensions .gitignore leaves out (.mtr, .mtz, .wl). Wipes the seed
# directories first; fuzz.sh --merge adds to them afterwards. Existing regressions/ are kept.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build-fuzz}
case $build in /*) ;; *) build=$PWD/$build ;; esac
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" "$root" >/dev/null
fi
ninja -C "$build" cli/mtrace libmtrace/libmtrace.so simulator/mtrace-sim tests/fuzz/fuzz_seedtool >/dev/null
mtrace=$build/cli/mtrace
seedtool=$build/tests/fuzz/fuzz_seedtool
corpus=$root/tests/fuzz/corpus
max=$((60 * 1024))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A program that makes every call the shim records, from two threads, freeing across threads.
cat >"$work/twothreads.c" <<'EOF'
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "mtrace.h"

static void *volatile handoff[64];

static void *worker(void *arg)
{
    long n = (long)arg;
    for (long i = 0; i < n; i++) {
        void *p = malloc((size_t)(i % 300) + 1);
        void *q = calloc(3, (size_t)(i % 50) + 1);
        p = realloc(p, (size_t)(i % 900) + 16);
        void *r = NULL;
        if (posix_memalign(&r, 64, 100) != 0)
            r = NULL;
        void *a = aligned_alloc(32, 96), *m = memalign(128, 200), *v = valloc(50);
        q = reallocarray(q, 4, 20);
        (void)malloc_usable_size(q);
        free(handoff[i % 64]);
        handoff[i % 64] = m;
        free(p), free(q), free(r), free(a), free(v);
        free(NULL);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200;
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    mtrace_mark("start");
    void *big = malloc(4 << 20), *none = malloc((size_t)-1 / 2);
    pthread_t t;
    pthread_create(&t, NULL, worker, (void *)n);
    worker((void *)(n / 2));
    pthread_join(t, NULL);
    mtrace_mark("two threads done");
    for (int i = 0; i < 64; i++)
        free(handoff[i]);
    free(big), free(none);
    return 0;
}
EOF
cc -O1 -pthread -I"$root/include" -o "$work/twothreads" "$work/twothreads.c" -ldl

for d in trace trace_packed workload convert sim json report; do
    rm -rf "${corpus:?}/$d"
    mkdir -p "$corpus/$d"
done

record() { # NAME [record options] -- CMD...
    local name=$1
    shift
    "$mtrace" record -o "$work/$name.mtr" --force "$@" >/dev/null 2>&1 || true
    [ -s "$work/$name.mtr" ] || { echo "make_seeds: $name: no trace" >&2; exit 1; }
}

record ls -- ls /
record ls-stacks --stacks 8 -- ls -l /
record py -- python3 -c 'print(1)'
record py-stacks --stacks 16 -- python3 -c 'print(1)'
record threads --rss-ms 1 -- "$work/twothreads" 300
record threads-stacks --stacks 4 -- "$work/twothreads" 100
MTRACE_MAX_SIZE=1 record truncated -- "$work/twothreads" 20000

for t in ls ls-stacks py py-stacks threads threads-stacks truncated; do
    src=$work/$t.mtr
    # Raw: the compact form (header strings, then each chunk's records), cut.
    "$seedtool" compact-trace "$src" "$corpus/trace/$t.trace" "$max"
    cp "$corpus/trace/$t.trace" "$corpus/convert/$t.trace"
    cp "$corpus/trace/$t.trace" "$corpus/report/$t.trace"
    # Packed: the real file cut, and the plain form (frames uncompressed) cut.
    "$mtrace" pack "$src" -o "$work/$t.mtz" --force >/dev/null
    head -c "$max" "$work/$t.mtz" >"$corpus/trace_packed/$t.packed"
    "$seedtool" compact-trace "$work/$t.mtz" "$corpus/trace_packed/$t.plain.packed" "$max"
    # Workload of the cut trace: the real file and the plain form.
    "$seedtool" expand-trace "$corpus/trace/$t.trace" "$work/$t.cut.mtr"
    "$mtrace" convert "$work/$t.cut.mtr" -o "$work/$t.wl" --force --quiet >/dev/null
    "$seedtool" plain-wl "$work/$t.wl" "$corpus/workload/$t.plain.workload"
    cp "$corpus/workload/$t.plain.workload" "$corpus/sim/$t.plain.workload"
    if [ "$(stat -c %s "$work/$t.wl")" -le "$max" ]; then
        cp "$work/$t.wl" "$corpus/workload/$t.workload"
        cp "$work/$t.wl" "$corpus/sim/$t.workload"
    fi
    # JSON: a replay result and the trace summary.
    "$mtrace" replay "$work/$t.wl" --json "$work/$t.replay.json" --quiet >/dev/null 2>&1 || true
    [ -s "$work/$t.replay.json" ] && head -c "$max" "$work/$t.replay.json" >"$corpus/json/$t.replay.json"
    "$mtrace" info --json "$work/$t.cut.mtr" 2>/dev/null | head -c "$max" >"$corpus/json/$t.info.json" || true
done
# Packed traces for the trace, convert and report targets too (they read both kinds).
cp "$corpus/trace_packed/ls.packed" "$corpus/trace_packed/threads.plain.packed" "$corpus/trace/"
cp "$corpus/trace_packed/threads-stacks.plain.packed" "$corpus/convert/"
cp "$corpus/trace_packed/ls-stacks.plain.packed" "$corpus/report/"
# A raw trace cut inside its header chunk, as a crash or a copy leaves it (used as it is).
head -c 4096 "$work/threads.mtr" >"$corpus/trace/threads.head.trace"
cp "$corpus/trace/threads.head.trace" "$corpus/convert/"
# A comparison of two replays.
"$mtrace" compare --json "$corpus/json/threads.replay.json" "$corpus/json/py.replay.json" \
    >"$corpus/json/compare.json" 2>/dev/null || true
find "$corpus" -type f -empty -delete
chmod 644 "$corpus"/*/*

echo "seeds:"
for d in "$corpus"/*/; do
    printf '  %-14s %3d files %6d KiB\n' "$(basename "$d")" "$(find "$d" -type f | wc -l)" "$(du -sk "$d" | cut -f1)"
done
big=$(find "$corpus" -type f -size +64k)
[ -z "$big" ] || { echo "make_seeds: over 64 KiB: $big" >&2; exit 1; }
