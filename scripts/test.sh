#!/usr/bin/env bash
# Runs every test: the Check unit tests and end-to-end tests in the normal build, then the format
# library's tests again under AddressSanitizer and UndefinedBehaviorSanitizer. Builds what is missing.
# Ends with one line "N passed, N failed" and exits non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

run_suite() {
    local dir=$1
    shift
    if [ ! -f "$dir/build.ninja" ]; then
        local log
        log=$(mktemp)
        meson setup "$dir" "$@" >"$log" 2>&1 || { cat "$log"; rm -f "$log"; return 1; }
        rm -f "$log"
    fi
    ninja -C "$dir" || return 1
    meson test -C "$dir" --print-errorlogs --num-processes "$jobs"
    return 0
}

# testlog.json has one JSON object per test; SKIP counts as neither passed nor failed.
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
        r = json.loads(line)["result"]
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r != "SKIP":
            failed += 1
print(f"{passed} {failed}")
PY
}

build_failed=0
rm -f build/meson-logs/testlog.json build-asan/meson-logs/testlog.json
run_suite build || build_failed=1
run_suite build-asan -Db_sanitize=address,undefined -Db_lundef=false || build_failed=$((build_failed + 1))

read -r passed failed < <(count build/meson-logs/testlog.json build-asan/meson-logs/testlog.json)
failed=$((failed + build_failed))
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
