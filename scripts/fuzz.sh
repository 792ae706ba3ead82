#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, -Dfuzzer=true) and fuzzes each for a bounded time.
#
#   scripts/fuzz.sh [--merge] [--build DIR] [SECONDS_PER_TARGET] [TARGET...]
#
# SECONDS_PER_TARGET defaults to 60; TARGETs default to all of them: trace trace_packed workload
# convert sim json report (tests/fuzz/README.md). Each run starts from tests/fuzz/corpus/<target>/ and
# tests/fuzz/regressions/<target>/ and keeps what it finds new in DIR/fuzz-work/<target>/; the
# committed corpus changes only with --merge, which adds the new inputs that bring coverage
# (libFuzzer -merge=1). Crashing inputs are written to DIR/fuzz-artifacts/<target>/. The build
# directory defaults to build-fuzz-clang. Ends with a table (executions, seconds, crashes) and exits
# non-zero if any target crashed, leaked, timed out or ran out of memory.
#
# Reproduce a crash with the replay program of any build, e.g.
#   build/tests/fuzz/fuzz_replay_trace build-fuzz-clang/fuzz-artifacts/trace/crash-...
# or with the fuzzer itself: build-fuzz-clang/tests/fuzz/fuzz_trace FILE
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

merge=0
build=build-fuzz-clang
secs=60
targets=()
all=(trace trace_packed workload convert sim json report)
while [ $# -gt 0 ]; do
    case $1 in
    --merge) merge=1 ;;
    --build) build=$2; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    [0-9]*) secs=$1 ;;
    *) targets+=("$1") ;;
    esac
    shift
done
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
    case " ${all[*]} " in *" $t "*) ;; *) echo "fuzz.sh: unknown target $t (targets: ${all[*]})" >&2; exit 2 ;; esac
done

# Inputs stay small: traces and workloads are read in their plain forms (tests/fuzz/fuzz.h).
max_len() {
    case $1 in
    json) echo 16384 ;;
    *) echo 65536 ;;
    esac
}
dict() {
    case $1 in
    trace|trace_packed|convert|report) echo tests/fuzz/dict/trace.dict ;;
    workload|sim) echo tests/fuzz/dict/workload.dict ;;
    json) echo tests/fuzz/dict/json.dict ;;
    esac
}

command -v clang >/dev/null || { echo "fuzz.sh: clang is not installed (Debian: clang, libclang-rt-14-dev)" >&2; exit 1; }
# Everything is built with clang, ASan, UBSan and libFuzzer's coverage instrumentation, so the
# libraries under test are instrumented too; the targets link with libFuzzer (tests/fuzz/meson.build).
# werror off: a warning that only clang gives in code outside the fuzz targets must not stop fuzzing.
fuzz_opts=(-Dfuzzer=true -Dwerror=false -Db_sanitize=address,undefined -Db_lundef=false
    "-Dc_args=-fsanitize=fuzzer-no-link -fno-sanitize-recover=all")
if [ ! -f "$build/build.ninja" ]; then
    CC=clang meson setup "$build" "${fuzz_opts[@]}" >"$build.setup.log" 2>&1 ||
        { cat "$build.setup.log"; exit 1; }
elif [ "$(meson introspect --buildoptions "$build" |
    python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "fuzzer"])')" != "[True]" ]; then
    meson configure "$build" "${fuzz_opts[@]}" >/dev/null || exit 1
fi
ninja -C "$build" $(printf 'tests/fuzz/fuzz_%s ' "${targets[@]}") >"$build/fuzz-build.log" 2>&1 ||
    { tail -n 40 "$build/fuzz-build.log"; exit 1; }

failed=0
summary=()
for t in "${targets[@]}"; do
    work=$build/fuzz-work/$t
    art=$build/fuzz-artifacts/$t
    mkdir -p "$work" "$art"
    seeds=("tests/fuzz/corpus/$t")
    [ -d "tests/fuzz/regressions/$t" ] && seeds+=("tests/fuzz/regressions/$t")
    log=$build/fuzz-$t.log
    before=$(find "$art" -type f | wc -l)
    echo "== $t: ${secs}s, max_len $(max_len "$t")"
    start=$(date +%s)
    # The first corpus directory is where libFuzzer writes: the work directory, not the committed one.
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
        "$build/tests/fuzz/fuzz_$t" -max_total_time="$secs" -max_len="$(max_len "$t")" -timeout=20 \
        -rss_limit_mb=2048 -dict="$(dict "$t")" -artifact_prefix="$art/" -print_final_stats=1 \
        "$work" "${seeds[@]}" >"$log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    new=$(($(find "$art" -type f | wc -l) - before))
    [ -n "$execs" ] || execs=?
    if [ $rc -ne 0 ] || [ "$new" -gt 0 ]; then
        failed=1
        echo "   FAILED (exit $rc); the report:"
        grep -E "^==[0-9]+==ERROR|SUMMARY|runtime error|invariant broken|Test unit written|deadly signal|out-of-memory|timeout" "$log" |
            head -n 12 | sed 's/^/   /'
        echo "   full log: $log"
    fi
    summary+=("$(printf '%-13s %12s execs %5ss  %s crash(es)' "$t" "$execs" "$took" "$new")")
    if [ $merge -eq 1 ]; then
        "$build/tests/fuzz/fuzz_$t" -merge=1 -max_len="$(max_len "$t")" -timeout=20 -rss_limit_mb=2048 \
            "tests/fuzz/corpus/$t" "$work" >"$build/fuzz-$t.merge.log" 2>&1 ||
            { echo "   merge failed: $build/fuzz-$t.merge.log"; failed=1; }
        grep -E "MERGE-OUTER: [0-9]+ new files" "$build/fuzz-$t.merge.log" | sed 's/^/   /'
    fi
done
echo
echo "fuzz summary ($build):"
printf '  %s\n' "${summary[@]}"
[ $failed -eq 0 ] || echo "  crashing inputs: $build/fuzz-artifacts/<target>/"
exit $failed
