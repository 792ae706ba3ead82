#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, -Dfuzzer=true) and fuzzes each for a bounded time.
#
#   scripts/fuzz.sh [--merge] [--build-only] [--build DIR] [--results FILE] [SECONDS_PER_TARGET] [TARGET...]
#
# SECONDS_PER_TARGET defaults to 60; TARGETs default to all of them: trace trace_packed pack_model
# workload convert sim json report (tests/fuzz/README.md). Each run starts from tests/fuzz/corpus/<target>/ and
# tests/fuzz/regressions/<target>/ and keeps what it finds new in DIR/fuzz-work/<target>/; the
# committed corpus changes only with --merge, which adds the new inputs that bring coverage
# (libFuzzer -merge=1). Crashing inputs are written to DIR/fuzz-artifacts/<target>/. The build
# directory defaults to build-fuzz-clang. Each crashing input is named (path, size, and for small ones
# a base64 copy in the log, so that a CI log keeps it). Ends with a table (executions, seconds,
# crashes) and exits non-zero if any target crashed, leaked, timed out or ran out of memory.
# --results FILE appends one line per target: "ok TARGET EXECS" or "FAIL TARGET EXECS [INPUT...]"
# (scripts/test.sh counts them; a failed build makes every target FAIL). Targets run FUZZ_JOBS at a
# time (default: the number of cores; libFuzzer's own run uses one).
#
# --build-only builds the targets and stops (scripts/test.sh builds them early, behind other work).
#
# Reproduce a crash with the replay program of any build, e.g.
#   build/tests/fuzz/fuzz_replay_trace build-fuzz-clang/fuzz-artifacts/trace/crash-...
# or with the fuzzer itself: build-fuzz-clang/tests/fuzz/fuzz_trace FILE
set -uo pipefail
export LC_ALL=C # comm and sort agree on the order of file names
cd "$(dirname "$0")/.."
root=$PWD

merge=0
build_only=0
build=build-fuzz-clang
secs=60
results=
targets=()
all=(trace trace_packed pack_model workload convert sim json report)
while [ $# -gt 0 ]; do
    case $1 in
    --merge) merge=1 ;;
    --build-only) build_only=1 ;;
    --build) build=$2; shift ;;
    --results) results=$2; shift ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
    trace|trace_packed|pack_model|convert|report) echo tests/fuzz/dict/trace.dict ;;
    workload|sim) echo tests/fuzz/dict/workload.dict ;;
    json) echo tests/fuzz/dict/json.dict ;;
    esac
}

# Every target failed, for --results, when nothing could be fuzzed; then exit 1.
all_failed() {
    echo "fuzz.sh: $1" >&2
    local t
    if [ -n "$results" ]; then
        for t in "${targets[@]}"; do echo "FAIL $t ? ($1)" >>"$results"; done
    fi
    exit 1
}
command -v clang >/dev/null || all_failed "clang is not installed (Debian: clang, libclang-rt-14-dev)"
# Everything is built with clang, ASan, UBSan and libFuzzer's coverage instrumentation, so the
# libraries under test are instrumented too; the targets link with libFuzzer (tests/fuzz/meson.build).
# werror off: a warning that only clang gives in code outside the fuzz targets must not stop fuzzing.
fuzz_opts=(-Dfuzzer=true -Dwerror=false -Db_sanitize=address,undefined -Db_lundef=false
    "-Dc_args=-fsanitize=fuzzer-no-link -fno-sanitize-recover=all")
if [ ! -f "$build/build.ninja" ]; then
    CC=clang meson setup "$build" "${fuzz_opts[@]}" >"$build.setup.log" 2>&1 ||
        { cat "$build.setup.log"; all_failed "meson setup $build failed"; }
elif [ "$(meson introspect --buildoptions "$build" |
    python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "fuzzer"])')" != "[True]" ]; then
    meson configure "$build" "${fuzz_opts[@]}" >/dev/null || all_failed "meson configure $build failed"
fi
ninja -C "$build" $(printf 'tests/fuzz/fuzz_%s ' "${targets[@]}") >"$build/fuzz-build.log" 2>&1 ||
    { tail -n 40 "$build/fuzz-build.log"; all_failed "the build failed ($build/fuzz-build.log)"; }
[ "$build_only" = 0 ] || exit 0

# Names a crashing input; one of at most 12 KiB compressed is also printed, so that the log keeps it.
show_input() {
    local f=$1 z
    echo "   crashing input: $f ($(wc -c <"$f") bytes)"
    echo "     reproduce: build/tests/fuzz/fuzz_replay_$2 $f"
    z=$(gzip -9c <"$f" | base64 -w 0)
    if [ ${#z} -le 16384 ]; then
        echo "     or from this log: echo '$z' | base64 -d | gunzip >$(basename "$f")"
    fi
}

# fuzz_one TARGET: fuzzes one target; its report goes to standard output, its --results line and its
# summary line to $build/fuzz-TARGET.result and .summary; exits 1 if it failed.
fuzz_one() {
    local t=$1 work art seeds log start rc took execs new inputs f failed=0
    work=$build/fuzz-work/$t
    art=$build/fuzz-artifacts/$t
    mkdir -p "$work" "$art"
    seeds=("tests/fuzz/corpus/$t")
    [ -d "tests/fuzz/regressions/$t" ] && seeds+=("tests/fuzz/regressions/$t")
    log=$build/fuzz-$t.log
    find "$art" -type f | sort >"$art.before"
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
    mapfile -t inputs < <(find "$art" -type f | sort | comm -13 "$art.before" -)
    rm -f "$art.before"
    new=${#inputs[@]}
    [ -n "$execs" ] || execs=?
    if [ $rc -ne 0 ] || [ "$new" -gt 0 ]; then
        failed=1
        echo "   FAILED (exit $rc); the report:"
        grep -E "^==[0-9]+==ERROR|SUMMARY|runtime error|invariant broken|Test unit written|deadly signal|out-of-memory|timeout" "$log" |
            head -n 12 | sed 's/^/   /'
        echo "   full log: $log"
        for f in "${inputs[@]}"; do
            show_input "$f" "$t"
        done
        echo "FAIL $t $execs ${inputs[*]}" >"$build/fuzz-$t.result"
    else
        echo "ok $t $execs" >"$build/fuzz-$t.result"
    fi
    printf '%-13s %12s execs %5ss  %s crash(es)\n' "$t" "$execs" "$took" "$new" >"$build/fuzz-$t.summary"
    if [ $merge -eq 1 ]; then
        "$build/tests/fuzz/fuzz_$t" -merge=1 -max_len="$(max_len "$t")" -timeout=20 -rss_limit_mb=2048 \
            "tests/fuzz/corpus/$t" "$work" >"$build/fuzz-$t.merge.log" 2>&1 ||
            { echo "   merge failed: $build/fuzz-$t.merge.log"; failed=1; }
        grep -E "MERGE-OUTER: [0-9]+ new files" "$build/fuzz-$t.merge.log" | sed 's/^/   /'
    fi
    return $failed
}

# libFuzzer runs on one core: the targets run FUZZ_JOBS at a time (default: the number of cores), each
# for SECONDS_PER_TARGET; each one's report is printed whole once it ends, in the targets' order.
parallel=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$parallel" -ge 1 ] 2>/dev/null || parallel=1
failed=0
summary=()
for ((i = 0; i < ${#targets[@]}; i += parallel)); do
    batch=("${targets[@]:i:parallel}")
    pids=()
    for t in "${batch[@]}"; do
        rm -f "$build/fuzz-$t.result" "$build/fuzz-$t.summary"
        fuzz_one "$t" >"$build/fuzz-$t.report" 2>&1 &
        pids+=($!)
    done
    for j in "${!batch[@]}"; do
        t=${batch[$j]}
        wait "${pids[$j]}" || failed=1
        cat "$build/fuzz-$t.report"
        if [ -s "$build/fuzz-$t.result" ]; then
            [ -z "$results" ] || cat "$build/fuzz-$t.result" >>"$results"
            summary+=("$(cat "$build/fuzz-$t.summary")")
        else
            failed=1
            [ -z "$results" ] || echo "FAIL $t ? (no result)" >>"$results"
            summary+=("$t: no result")
        fi
    done
done
echo
echo "fuzz summary ($build):"
printf '  %s\n' "${summary[@]}"
[ $failed -eq 0 ] || echo "  crashing inputs: $build/fuzz-artifacts/<target>/"
exit $failed
