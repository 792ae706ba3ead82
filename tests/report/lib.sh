# Shared by the report tests' shell scripts (sourced): failure counting, time limits, file checks.
# Every program runs under timeout(1), so a hang fails the test instead of stalling the suite.
failures=0
unset MALLOC_PERTURB_ # meson's; glibc would fill every block and touch its pages

# Debian's python3: a pyenv shim earlier in PATH may be slow to start.
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi

# For mtrace replay (t LIMIT env "$replay_asan" MTRACE replay ...): in a sanitized build the replay
# leaves the blocks the workload never frees, by design, and LeakSanitizer would fail every such
# replay; elsewhere this changes nothing.
replay_asan="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:allocator_may_return_null=1"

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

# png_ok FILE: starts with the PNG signature 89 50 4E 47 0D 0A 1A 0A and holds more than that.
png_ok() {
    [ -f "$1" ] && [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
        [ "$(wc -c <"$1")" -gt 100 ]
}

# xml_ok FILE: parses as XML.
xml_ok() {
    "$PY" -c 'import xml.dom.minidom, sys; xml.dom.minidom.parse(sys.argv[1])' "$1" 2>/dev/null
}

# svg_ok FILE: parses as XML and its root element is <svg>.
svg_ok() {
    "$PY" -c 'import xml.dom.minidom, sys
d = xml.dom.minidom.parse(sys.argv[1])
sys.exit(0 if d.documentElement.tagName == "svg" else 1)' "$1" 2>/dev/null
}

# no_file WHAT PATH...: none of the paths exists.
no_file() {
    local what=$1
    shift
    for f in "$@"; do
        [ -e "$f" ] && fail "$what: $f was left behind ($(wc -c <"$f") bytes)"
    done
    return 0
}

finish() {
    if [ "$failures" -gt 0 ]; then
        echo "$failures failure(s)"
        exit 1
    fi
    echo "all checks passed"
    exit 0
}
