# shellcheck shell=bash
# Shared by the tests' shell scripts (sourced, by bash): failure counting, a time limit on every
# program, a one-line message check, and the end of a script. It leaves the environment as it is.
# tests/report/lib.sh adds the report tests' file checks to these.
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# t LIMIT CMD...: runs CMD with a time limit; 124 (timeout) is reported as a hang.
t() {
    local limit=$1
    shift
    timeout -k 5 "$limit" "$@"
    local rc=$?
    if [ $rc = 124 ] || [ $rc = 137 ]; then
        fail "hung: $*"
    fi
    return $rc
}

# one_line FILE WHAT NEEDLE...: FILE holds exactly one line, containing every NEEDLE.
one_line() {
    local file=$1 what=$2
    shift 2
    local n
    n=$(wc -l <"$file")
    if [ "$n" != 1 ]; then
        fail "$what: $n lines on stderr, expected 1:"
        sed 's/^/    | /' "$file"
        return
    fi
    for needle in "$@"; do
        grep -qF -- "$needle" "$file" || fail "$what: '$needle' not in: $(cat "$file")"
    done
}

# finish: exit 1 after any failure, else 0.
finish() {
    if [ "$failures" -gt 0 ]; then
        echo "$failures failure(s)"
        exit 1
    fi
    echo "all checks passed"
    exit 0
}
