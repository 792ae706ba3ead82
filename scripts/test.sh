#!/usr/bin/env bash
# Runs every test: the Check unit tests and end-to-end tests in the normal build, the same under
# AddressSanitizer and UndefinedBehaviorSanitizer, the formatting check, the commit messages'
# check (scripts/check-commits.sh) and the static analysis (scripts/scan.sh; one test each), then
# each libFuzzer target fuzzed for a bounded time (scripts/fuzz.sh, clang) and the multithreaded
# code under ThreadSanitizer (scripts/tsan.sh).
# Builds what is missing. Each fuzz target and each TSan test counts as one test. Ends with one line
# "N passed, N failed" and exits non-zero on any failure.
#
#   MTRACE_FUZZ_SECONDS  seconds per fuzz target (default 7; 0 skips fuzzing)
#   MTRACE_TSAN=0        skips the ThreadSanitizer tests
#   MTRACE_SCAN=0        skips the static analysis
set -u
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
fuzz_secs=${MTRACE_FUZZ_SECONDS:-7}

# setup_build DIR OPTION...: configures DIR (when it is not yet) and builds it.
setup_build() {
    local dir=$1
    shift
    if [ ! -f "$dir/build.ninja" ]; then
        local log
        log=$(mktemp)
        meson setup "$dir" "$@" >"$log" 2>&1 || { cat "$log"; rm -f "$log"; return 1; }
        rm -f "$log"
    fi
    ninja -C "$dir"
}

run_suite() {
    setup_build "$@" || return 1
    meson test -C "$1" --print-errorlogs --num-processes "$jobs"
    return 0
}

# testlog.json has one JSON object per test; SKIP counts as neither passed nor failed. The results
# files of fuzz.sh and tsan.sh have one line per test: "ok NAME ..." or "FAIL NAME ...".
count() {
    python3 - "$@" <<'PY'
import json, sys
passed = failed = 0
for path in sys.argv[1:]:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        failed += 1
        print(f"missing test log {path}", file=sys.stderr)
        continue
    for line in lines:
        if not path.endswith(".json"):
            if line.startswith("ok "):
                passed += 1
            elif line.strip():
                failed += 1
            continue
        r = json.loads(line)["result"]
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r != "SKIP":
            failed += 1
print(f"{passed} {failed}")
PY
}

# stage TEXT: a heading, with the seconds since the start and the CPU seconds (user, system) of the
# processes waited for so far, so that a log tells where the time went and how busy the cores were.
stage() {
    local f
    f=$(mktemp)
    times >"$f" # the builtin, in this shell: in a pipe or $(...) it would report a subshell's
    echo "== $* (at ${SECONDS} s; CPU so far: $(sed -n 2p "$f"))"
    rm -f "$f"
}

build_failed=0
rm -f build/meson-logs/testlog.json build-asan/meson-logs/testlog.json
# -Werror here, not in meson.build's defaults: a user's newer compiler with a new warning must not
# stop the build, but no warning passes the project's own tests.
# sweep_stride: the tests that cut or damage a file at each of its offsets try every 16th one and
# all those at boundaries of the file's structure (tests/test_util.h); ASan makes each offset several
# times slower, and the plain build tries them all.
asan_opts=(-Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false -Dsweep_stride=16)
# The sanitized build with clang where there is one: its runtime holds ASan's and UBSan's together,
# while gcc's brings libubsan.so beside libasan.so, whose 6 MB of zeroed globals LeakSanitizer reads
# through at every process's exit (most of that exit's time; page faults are dear in this VM). The
# suite runs many short processes: each costs a quarter less (mtrace --version: 79 against
# 109 ms of CPU; cli-options 28 against 36 s).
asan_cc=cc
command -v clang >/dev/null && asan_cc=clang
stage "unit and end-to-end tests (build)"
asan_log=$(mktemp)
asan_done=$(mktemp)
behind_pid=
# What the later stages build, built early: the fuzz targets and the ThreadSanitizer build (their
# stages build again, which then finds nothing to do, and report any failure).
later_builds=()
[ "$fuzz_secs" -gt 0 ] && later_builds+=("scripts/fuzz.sh --build-only")
[ "${MTRACE_TSAN:-1}" != 0 ] && later_builds+=("scripts/tsan.sh --build-only")
later=$(printf '%s >/dev/null 2>&1; ' "${later_builds[@]}")
if setup_build build -Dwerror=true; then
    # The sanitizer build goes on behind the plain tests, at the lowest priority: it takes the core
    # that the tests which run alone (is_parallel : false, a third of the suite's time) leave idle,
    # and next to nothing from a test that wants it; then, the same way, the later stages' builds.
    # The sanitizer build's output is shown in its own stage below.
    nice -n 19 bash -c "$(declare -f setup_build); CC=$asan_cc setup_build build-asan ${asan_opts[*]} >'$asan_log' 2>&1;
        echo done >'$asan_done'; ${later}" &
    behind_pid=$!
    meson test -C build --print-errorlogs --num-processes "$jobs"
else
    build_failed=1
fi
stage "the same under ASan/UBSan (build-asan)"
if [ -n "$behind_pid" ]; then
    while [ ! -s "$asan_done" ] && kill -0 "$behind_pid" 2>/dev/null; do sleep 1; done
    cat "$asan_log"
    echo "(built behind the plain tests; what is left, if anything:)"
fi
rm -f "$asan_log" "$asan_done"
# The static analysis goes on behind the sanitized tests, at the lowest priority, as the sanitized
# build does behind the plain ones: those tests leave a core idle a quarter of their time (waits for
# the processes they run), which the analyzer's runs take. Its output and result come in its own
# stage below.
scan_log=$(mktemp)
scan_pid=
if [ "${MTRACE_SCAN:-1}" != 0 ]; then
    nice -n 19 scripts/scan.sh build-scan >"$scan_log" 2>&1 &
    scan_pid=$!
fi
CC=$asan_cc run_suite build-asan "${asan_opts[@]}" || build_failed=$((build_failed + 1))

logs=(build/meson-logs/testlog.json build-asan/meson-logs/testlog.json)
extra=$(mktemp --suffix=.results)
trap 'rm -f "$extra"' EXIT
stage "formatting (scripts/check-format.sh)"
scripts/check-format.sh --results "$extra"
stage "commit messages (scripts/check-commits.sh)"
scripts/check-commits.sh --results "$extra"
if [ -n "$scan_pid" ]; then
    stage "static analysis (scripts/scan.sh: clang's analyzer over the tools, zero findings; run behind the sanitized tests)"
    if wait "$scan_pid"; then scan_ok=1; else scan_ok=0; fi
    cat "$scan_log"
    if [ "$scan_ok" = 1 ]; then echo "ok scan" >>"$extra"; else echo "FAIL scan" >>"$extra"; fi
fi
rm -f "$scan_log"
# the later stages' builds, if they are still going (they share those build directories)
[ -z "$behind_pid" ] || wait "$behind_pid"
if [ "$fuzz_secs" -gt 0 ]; then
    stage "fuzzing each target for ${fuzz_secs} s (scripts/fuzz.sh)"
    scripts/fuzz.sh --results "$extra" "$fuzz_secs"
    # A run that stopped before writing its results (killed) leaves targets uncounted: one failure.
    [ -s "$extra" ] || echo "FAIL fuzz.sh (no results)" >>"$extra"
fi
if [ "${MTRACE_TSAN:-1}" != 0 ]; then
    stage "ThreadSanitizer (scripts/tsan.sh)"
    before=$(wc -l <"$extra")
    scripts/tsan.sh --results "$extra"
    [ "$(wc -l <"$extra")" -gt "$before" ] || echo "FAIL tsan.sh (no results)" >>"$extra"
fi
logs+=("$extra")

stage "done"
read -r passed failed < <(count "${logs[@]}")
failed=$((failed + build_failed))
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
