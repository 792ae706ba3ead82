#!/usr/bin/env bash
# Builds the multithreaded code with ThreadSanitizer and runs its tests.
#
#   scripts/tsan.sh [--build-only] [--build DIR] [--results FILE]
#
# Configures DIR (default build-tsan) with -Db_sanitize=thread, builds only what the tests need
# (mtrace-sim, mtrace, libmtrace.so and the test programs) and runs:
#   sim-threads   replays with WAITs between threads, thread creation by creators, stalls
#   sim-rss       replays with the RSS sampler thread running beside the replay threads
#   sim-summary   replays whose per-thread results are merged
#   tsan-shim     the shim's own malloc/free/calloc/realloc/mtrace_control called from 8 threads
#                 at once, whole, paused and truncated (tests/tsan_shim.c: why it dlopens the shim
#                 instead of preloading it)
# Every process of a test writes its TSan reports to DIR/tsan-logs/<test>.<pid>; a test fails if it
# fails or if any report is there. Known races that are not fixed yet are suppressed in
# scripts/tsan.supp and named at the end ("known race still seen") while they still happen.
# --results FILE appends "ok TEST" or "FAIL TEST" per test (scripts/test.sh counts them). Exits
# non-zero if any test failed. Runs TSAN_JOBS tests at a time (default 2). Under a minute on 2 cores.
# --build-only builds and stops (scripts/test.sh builds early, behind other work).
set -uo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
root=$PWD

build=build-tsan
build_only=0
results=
while [ $# -gt 0 ]; do
    case $1 in
    --build-only) build_only=1 ;;
    --build) build=$2; shift ;;
    --results) results=$2; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "tsan.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
tests=(sim-threads sim-rss sim-summary tsan-shim)
targets=(simulator/mtrace-sim cli/mtrace libmtrace/libmtrace.so tests/sim/test_sim_threads
    tests/sim/test_sim_rss tests/sim/test_sim_summary tests/tsan_shim)

all_failed() {
    echo "tsan.sh: $1" >&2
    local t
    if [ -n "$results" ]; then
        for t in "${tests[@]}"; do echo "FAIL $t ($1)" >>"$results"; done
    fi
    exit 1
}

# werror off: GCC warns (-Wtsan) at each atomic_thread_fence, which TSan does not model; warnings are
# the normal build's business. The fences' ordering is then invisible to TSan: code that relies on a
# fence alone for happens-before can be reported as racing (none does today: the simulator's fences
# order atomics only).
tsan_opts=(-Db_sanitize=thread -Db_lundef=false -Dwerror=false)
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" "${tsan_opts[@]}" >"$build.setup.log" 2>&1 ||
        { cat "$build.setup.log"; all_failed "meson setup $build failed"; }
else
    meson configure "$build" "${tsan_opts[@]}" >/dev/null || all_failed "meson configure $build failed"
fi
ninja -C "$build" "${targets[@]}" >"$build/tsan-build.log" 2>&1 ||
    { tail -n 40 "$build/tsan-build.log"; all_failed "the build failed ($build/tsan-build.log)"; }
[ "$build_only" = 0 ] || exit 0

logs=$(cd "$build" && pwd)/tsan-logs
rm -rf "$logs"
mkdir -p "$logs"
# run_one TEST: runs one test; its exit status and seconds go to $logs/TEST.rc and TEST.secs.
run_one() {
    local t=$1 start rc
    start=$(date +%s)
    # halt_on_error=0: every race of a run is reported, not only the first; exitcode 66 fails the
    # process (and so the test) on any report not suppressed. --logbase: each test its own meson log.
    TSAN_OPTIONS="suppressions=$root/scripts/tsan.supp:print_suppressions=1:log_path=$logs/$t:halt_on_error=0:exitcode=66:second_deadlock_stack=1:history_size=4" \
        meson test -C "$build" --no-rebuild --print-errorlogs --logbase "tsan-$t" "$t" >"$logs/$t.meson.log" 2>&1
    rc=$?
    echo $rc >"$logs/$t.rc"
    echo $(($(date +%s) - start)) >"$logs/$t.secs"
}

# Two tests at a time, as meson runs them in the other builds (the longest, sim-threads, first);
# the results are read in the tests' order once all have ended.
parallel=${TSAN_JOBS:-2}
running=0
for t in "${tests[@]}"; do
    if [ "$running" -ge "$parallel" ]; then
        wait -n
        running=$((running - 1))
    fi
    run_one "$t" &
    running=$((running + 1))
done
wait

failed=0
for t in "${tests[@]}"; do
    rc=$(cat "$logs/$t.rc" 2>/dev/null || echo "?")
    reports=$(grep -l "WARNING: ThreadSanitizer" "$logs/$t".[0-9]* 2>/dev/null | wc -l)
    if [ "$rc" = 0 ] && [ "$reports" -eq 0 ]; then
        echo "tsan: $t ok ($(cat "$logs/$t.secs") s)"
        [ -z "$results" ] || echo "ok $t" >>"$results"
    else
        failed=1
        echo "tsan: $t FAILED (meson test exit $rc, $reports process(es) with reports)"
        grep -h "^SUMMARY: ThreadSanitizer" "$logs/$t".[0-9]* 2>/dev/null | sort | uniq -c | sed 's/^/   /'
        [ "$reports" -eq 0 ] || echo "   reports: $logs/$t.*"
        [ "$rc" = 0 ] || tail -n 30 "$logs/$t.meson.log" | sed 's/^/   /'
        [ -z "$results" ] || echo "FAIL $t" >>"$results"
    fi
done
# print_suppressions lists each suppression that matched: the known races, still there.
grep -h "^ *[0-9]* race:" "$logs"/*.[0-9]* 2>/dev/null |
    awk '{ n[$2] += $1 } END { for (k in n) print "tsan: known race still seen (scripts/tsan.supp): " k ", " n[k] " report(s)" }'
exit $failed
