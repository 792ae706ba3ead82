# shellcheck shell=bash
# Shared by the report tests' shell scripts (sourced): the checks of tests/lib/common.sh (failure
# counting, time limits, one-line messages), and checks of the files the report commands write.
# Every program runs under timeout(1), so a hang fails the test instead of stalling the suite.
# shellcheck source=tests/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
unset MALLOC_PERTURB_ # meson's; glibc would fill every block and touch its pages

# Debian's python3: a pyenv shim earlier in PATH may be slow to start.
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi

# For mtrace replay (t LIMIT env "$replay_asan" MTRACE replay ...): in a sanitized build the replay
# leaves the blocks the workload never frees, by design, and LeakSanitizer would fail every such
# replay; elsewhere this changes nothing.
replay_asan="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:allocator_may_return_null=1"

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

# bad_traces MKTRACE: in the current directory, g.mtr (MKTRACE's good trace, of two chunks at least)
# and files that are not good traces: notatrace.txt, empty.mtr, cut.mtr (cut inside the header), and
# chunk.mtr, whose chunk 1 (offset 65536, sealed) holds 16 bytes of 0xff inside its records.
bad_traces() {
    t 60 "$1" g.mtr || {
        fail "report_mktrace"
        finish
    }
    printf 'hello, this is not a trace\n' >notatrace.txt
    : >empty.mtr
    head -c 100 g.mtr >cut.mtr
    cp g.mtr chunk.mtr
    printf '\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377' |
        dd of=chunk.mtr bs=1 seek=$((65536 + 32 + 200)) conv=notrunc status=none
}
