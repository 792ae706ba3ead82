#!/usr/bin/env bash
# Every command parses its options one way (cli/cli_options.h):
# - -h and --help print the help on stdout, nothing on stderr, exit 0, for mtrace, each of its
#   commands, trace2wl and mtrace-sim; every help has its usage, options, exit status and an example;
# - mtrace --version and -V print "mtrace VERSION";
# - a number that is not one or out of range, a value not in the list: exactly one line on stderr
#   naming the option, the value and what it must be, nothing on stdout, exit 2; through --opt=value
#   as through --opt value;
# - an unknown option, a missing value, a missing or extra operand: one line naming it, then the
#   usage lines, nothing on stdout, exit 2;
# - options after the operands are read (getopt_long permutes), --opt=value works;
# - replay --timing bogus is replay's usage error, not the simulator's;
# - a standard output that cannot take the output (/dev/full): one line saying so, exit 1; a pipe
#   closed by its reader (SIGPIPE ignored) is not an error;
# - an output naming a link to /dev/null or a FIFO is written in place, never replaced; convert and
#   pack, whose outputs are renamed into place, refuse it;
# - --folded, --flamegraph, --callsites-csv of a trace without stacks: exit 1, no file;
# - an output in a missing folder (mtrace-sim's, report's, diff's, plot's): exit 1, said before the
#   work whose result it was to hold;
# - one trace named twice, or alone in a directory: that trace's report.
#   usage: options.sh MTRACE TRACE2WL MTRACE_SIM REPORT_MKTRACE VERSION
set -u
mtrace=$1
t2w=$2
sim=$3
mktrace=$4
version=$5
work=$(mktemp -d /tmp/mtrace-options.XXXXXX)
trap 'rm -rf "$work"' EXIT
unset MALLOC_PERTURB_
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

commands="record info dump pack report diff export convert replay compare sweep plot"

# ok_help NAME CMD...: CMD prints a whole help on stdout, nothing on stderr, exit 0.
ok_help() {
    local name=$1
    shift
    "$@" >"$work/out" 2>"$work/err"
    local rc=$?
    [ $rc = 0 ] || fail "$name: exit $rc"
    [ -s "$work/err" ] && fail "$name wrote to stderr: $(cat "$work/err")"
    head -1 "$work/out" | grep -q '^usage: ' || fail "$name: no usage line first: $(head -3 "$work/out")"
    for section in 'Options:' 'Exit status:' 'Example:'; do
        grep -qx -- "$section" "$work/out" || fail "$name: no '$section' section"
    done
    grep -q -- '-h, --help' "$work/out" || fail "$name: -h, --help not listed"
}

# usage_error WHAT NEEDLE... -- CMD...: exit 2, nothing on stdout, the first line of stderr has every
# NEEDLE, then come the usage lines.
usage_error() {
    local mode=${mode:-usage}
    local what=$1
    shift
    local needles=()
    while [ "$1" != -- ]; do
        needles+=("$1")
        shift
    done
    shift
    "$@" >"$work/out" 2>"$work/err"
    local rc=$?
    [ $rc = 2 ] || fail "$what: exit $rc, expected 2 ($(head -1 "$work/err"))"
    [ -s "$work/out" ] && fail "$what wrote to stdout: $(head -3 "$work/out")"
    for needle in "${needles[@]}"; do
        head -1 "$work/err" | grep -qF -- "$needle" || fail "$what: '$needle' not in: $(head -1 "$work/err")"
    done
    if [ "$mode" = value ]; then
        [ "$(wc -l <"$work/err")" = 1 ] || fail "$what: expected one line on stderr: $(cat "$work/err")"
    else
        sed -n 2p "$work/err" | grep -q '^usage: ' || fail "$what: no usage after the message: $(cat "$work/err")"
    fi
}

# value_error WHAT NEEDLE... -- CMD...: as usage_error, but the one line is all of stderr.
value_error() {
    mode=value usage_error "$@"
}

# ---- help and version ----
for flag in -h --help; do
    ok_help "mtrace $flag" "$mtrace" $flag
    for c in $commands; do
        ok_help "mtrace $c $flag" "$mtrace" $c $flag
    done
    ok_help "trace2wl $flag" "$t2w" $flag
    ok_help "mtrace-sim $flag" "$sim" $flag
done
ok_help "mtrace pack --help among options" "$mtrace" pack --level 3 --help
# help asked for among other arguments, even bad ones after it
ok_help "mtrace dump FILE --help" "$mtrace" dump nosuchfile --help
for flag in --version -V; do
    out=$("$mtrace" $flag 2>&1)
    rc=$?
    [ $rc = 0 ] || fail "mtrace $flag: exit $rc"
    [ "$out" = "mtrace $version" ] || fail "mtrace $flag printed '$out', expected 'mtrace $version'"
done
# mtrace's list of commands is the list of commands
for c in $commands; do
    "$mtrace" --help | grep -q "^  $c " || fail "mtrace --help does not list $c"
done
# mtrace help [COMMAND] prints what --help prints
"$mtrace" --help >"$work/h1"
"$mtrace" help >"$work/h2" 2>"$work/err" || fail "mtrace help: exit $?: $(cat "$work/err")"
cmp -s "$work/h1" "$work/h2" || fail "mtrace help is not mtrace --help"
for c in $commands; do
    "$mtrace" "$c" --help >"$work/h1"
    "$mtrace" help "$c" >"$work/h2" 2>"$work/err" || fail "mtrace help $c: exit $?: $(cat "$work/err")"
    cmp -s "$work/h1" "$work/h2" || fail "mtrace help $c is not mtrace $c --help"
done

# ---- usage errors ----
usage_error "mtrace alone" "no command" -- "$mtrace"
usage_error "unknown command" "unknown command 'frobnicate'" -- "$mtrace" frobnicate
usage_error "help of an unknown command" "mtrace help:" "unknown command 'frobnicate'" -- "$mtrace" help frobnicate
usage_error "help of two commands" "mtrace help:" "one COMMAND" -- "$mtrace" help report info
usage_error "mtrace --bogus" "mtrace:" "'--bogus'" -- "$mtrace" --bogus
for c in $commands; do
    usage_error "mtrace $c --no-such-option" "mtrace $c:" "unknown option '--no-such-option'" -- \
        "$mtrace" $c --no-such-option x
    usage_error "mtrace $c -Z" "mtrace $c:" "unknown option '-Z'" -- "$mtrace" $c -Z x
    usage_error "mtrace $c without operands" "mtrace $c:" -- "$mtrace" $c
done
usage_error "trace2wl --no-such-option" "trace2wl:" "'--no-such-option'" -- "$t2w" --no-such-option x
usage_error "mtrace-sim --no-such-option" "mtrace-sim:" "'--no-such-option'" -- "$sim" --no-such-option x

# numbers: one rule, the option and the value named
value_error "report --top abc" "--top" "'abc'" -- "$mtrace" report --top abc t.mtr
value_error "report --top -5" "--top" "'-5'" -- "$mtrace" report --top -5 t.mtr
value_error "report --top=abc" "--top" "'abc'" -- "$mtrace" report --top=abc t.mtr
value_error "report --top 5x" "--top" "'5x'" -- "$mtrace" report t.mtr --top 5x
value_error "report --tree-depth 0" "--tree-depth" "'0'" -- "$mtrace" report --tree-depth 0 t.mtr
value_error "report --tree-depth 65" "--tree-depth" "'65'" -- "$mtrace" report --tree-depth 65 t.mtr
value_error "report --flame-weight mass" "--flame-weight" "'mass'" "bytes" -- \
    "$mtrace" report --flame-weight mass t.mtr
value_error "diff --top ''" "--top" -- "$mtrace" diff --top '' a.mtr b.mtr
value_error "pack --level 99" "--level" "'99'" "1 to 22" -- "$mtrace" pack --level 99 t.mtr
value_error "pack --level 0" "--level" "'0'" -- "$mtrace" pack t.mtr --level=0
usage_error "pack --level" "a value is missing after '--level'" -- "$mtrace" pack t.mtr --level
value_error "record --stacks 65" "--stacks" "'65'" -- "$mtrace" record --stacks 65 -- true
value_error "record --rss-ms -1" "--rss-ms" "'-1'" -- "$mtrace" record --rss-ms -1 -- true
value_error "replay --repeat 0" "--repeat" "'0'" -- "$mtrace" replay --repeat 0 w.wl
value_error "sweep --repeat 101" "--repeat" "'101'" -- "$mtrace" sweep --repeat 101 --mallopt top_pad=1 w.wl
value_error "mtrace-sim --sample-ms 0" "--sample-ms" "'0'" -- "$sim" w.wl --sample-ms 0
value_error "mtrace-sim --stall-timeout nan" "--stall-timeout" "'nan'" -- "$sim" w.wl --stall-timeout nan
value_error "mtrace-sim --stall-timeout -1" "--stall-timeout" "'-1'" -- "$sim" w.wl --stall-timeout=-1
# values from a list: replay's and sweep's own usage, before any simulator runs
value_error "replay --timing bogus" "mtrace replay:" "--timing" "'bogus'" "asap" -- \
    "$mtrace" replay --timing bogus w.wl
grep -q "mtrace-sim" "$work/err" && fail "replay --timing bogus gave mtrace-sim's usage: $(cat "$work/err")"
value_error "replay --touch bogus" "mtrace replay:" "--touch" "'bogus'" -- "$mtrace" replay w.wl --touch bogus
value_error "sweep --timing bogus" "mtrace sweep:" "--timing" "'bogus'" -- \
    "$mtrace" sweep w.wl --mallopt top_pad=1 --timing bogus
value_error "mtrace-sim --touch bogus" "mtrace-sim:" "--touch" "'bogus'" -- "$sim" w.wl --touch bogus
# settings: read by mtrace-sim's own reader, in replay and in sweep before any replay (a sweep
# replayed every point before the one it could not read)
# a name it does not know is said as such, with the names it knows (it was "expected NAME=VALUE",
# of an argument that was NAME=VALUE)
value_error "replay --mallopt bogus=1" "mtrace replay:" "--mallopt" "'bogus=1'" "unknown setting" \
    "mmap_threshold, trim_threshold" -- "$mtrace" replay w.wl --mallopt bogus=1
value_error "sweep --mallopt foo=1" "mtrace sweep:" "'foo=1'" "unknown setting" "arena_max" -- \
    "$mtrace" sweep w.wl --mallopt foo=1
grep -q "expected NAME=VALUE" "$work/err" && fail "sweep --mallopt foo=1: called not NAME=VALUE: $(cat "$work/err")"
value_error "mtrace-sim --mallopt foo=1" "mtrace-sim:" "'foo=1'" "unknown setting" "mmap_threshold" -- \
    "$sim" w.wl --mallopt foo=1
value_error "replay --mallopt mmap_threshold=lots" "mtrace replay:" "'mmap_threshold=lots'" "NAME=VALUE" -- \
    "$mtrace" replay w.wl --mallopt mmap_threshold=lots
value_error "replay --mallopt mmap_threshold=4096m" "mtrace replay:" "--mallopt" "out of range" -- \
    "$mtrace" replay w.wl --mallopt mmap_threshold=4096m
value_error "sweep --mallopt mmap_threshold=4k,x" "mtrace sweep:" "--mallopt" "mmap_threshold=x:" -- \
    "$mtrace" sweep w.wl --mallopt mmap_threshold=4k,x
# operands
usage_error "info two files" "one FILE only" -- "$mtrace" info a.mtr b.mtr
usage_error "diff one trace" "BEFORE and AFTER" -- "$mtrace" diff a.mtr
usage_error "convert without -o" "no -o WORKLOAD" -- "$mtrace" convert t.mtr
usage_error "plot without -o" "no -o OUT" -- "$mtrace" plot t.mtr
usage_error "export without -o" "no -o DIR" -- "$mtrace" export t.mtr
value_error "export --trace-id 0" "--trace-id" "'0'" -- "$mtrace" export t.mtr -o d --trace-id 0
usage_error "report results without --html" "--html" -- "$mtrace" report t.mtr r.json

# ---- options where getopt_long puts them ----
t=$work/t.mtr
"$mktrace" "$t" >/dev/null 2>"$work/err" || fail "report_mktrace: $(cat "$work/err")"
"$mtrace" info "$t" --json >"$work/info.json" 2>"$work/err" || fail "info TRACE --json: $(cat "$work/err")"
python3 -m json.tool "$work/info.json" >/dev/null 2>&1 || fail "info TRACE --json: not JSON"
"$mtrace" report "$t" --top=3 --tree-depth 2 >/dev/null 2>"$work/err" || fail "report TRACE --top=3: $(cat "$work/err")"
"$mtrace" pack "$t" --level=3 --output="$work/t.mtz" 2>"$work/err" || fail "pack --level=3 --output=: $(cat "$work/err")"
[ -s "$work/t.mtz" ] || fail "pack --output= wrote no $work/t.mtz"
"$mtrace" convert -o "$work/a.wl" "$t" --quiet 2>"$work/err" || fail "convert -o WL TRACE: $(cat "$work/err")"
"$t2w" "$t" --output="$work/b.wl" -q 2>"$work/err" || fail "trace2wl --output=WL: $(cat "$work/err")"
cmp -s "$work/a.wl" "$work/b.wl" || fail "convert and trace2wl (-o before, --output= after) gave different workloads"
"$mtrace" dump -- "$work/a.wl" >/dev/null 2>"$work/err" || fail "dump -- WL: $(cat "$work/err")"
# a workload after the trace is neither a trace nor a replay result: said as such, not as a result
usage_error "report TRACE WORKLOAD" "mtrace report:" "a.wl is a workload" -- "$mtrace" report "$t" "$work/a.wl"

# a replay under ASan: the blocks a workload never frees are not leaks to report
sim_replay() { ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:allocator_may_return_null=1 "$sim" "$@"; }

# ---- a standard output that cannot take what is printed (a full disk): one line, exit 1 ----
# full NAME CMD...: CMD's stdout is /dev/full; it must say so once, naming the standard output.
full() {
    local name=$1
    shift
    "$@" >/dev/full 2>"$work/err"
    local rc=$?
    [ $rc = 1 ] || fail "$name >/dev/full: exit $rc, expected 1"
    grep -q "cannot write the standard output" "$work/err" ||
        fail "$name >/dev/full: no word of the failed write: $(cat "$work/err")"
}
full "info" "$mtrace" info "$t"
full "info --json" "$mtrace" info --json "$t"
full "report" "$mtrace" report "$t"
full "report --json" "$mtrace" report --json "$t"
full "report --csv" "$mtrace" report --csv "$t"
full "dump" "$mtrace" dump "$t"
full "dump WL" "$mtrace" dump "$work/a.wl"
full "convert" "$mtrace" convert "$t" -o "$work/c.wl"
full "trace2wl" "$t2w" "$t" -o "$work/d.wl"
full "mtrace-sim" sim_replay "$work/a.wl"
# a pipe whose reader stops early is not an error: the reader chose (SIGPIPE ignored: EPIPE)
(trap '' PIPE; "$mtrace" dump "$t" 2>"$work/err" | head -c 1 >/dev/null; exit "${PIPESTATUS[0]}")
rc=$?
[ $rc = 0 ] || fail "dump | head -c 1, SIGPIPE ignored: exit $rc: $(cat "$work/err")"

# ---- outputs that name a device, a link to one or a FIFO: written in place, never replaced ----
ln -s /dev/null "$work/null"
sim_replay "$work/a.wl" --quiet --json "$work/null" >/dev/null 2>"$work/err" || fail "mtrace-sim --json LINK-TO-/dev/null: $(cat "$work/err")"
[ -L "$work/null" ] && [ "$(readlink "$work/null")" = /dev/null ] || fail "mtrace-sim --json replaced the link to /dev/null"
ls "$work" | grep -q partial && fail "mtrace-sim --json LINK-TO-/dev/null left a temporary: $(ls "$work")"
mkfifo "$work/fifo"
cat "$work/fifo" >"$work/fifo.out" &
reader=$!
sim_replay "$work/a.wl" --quiet --json "$work/fifo" >/dev/null 2>"$work/err" || fail "mtrace-sim --json FIFO: $(cat "$work/err")"
wait $reader
[ -p "$work/fifo" ] || fail "mtrace-sim --json FIFO: the FIFO was replaced"
python3 -m json.tool "$work/fifo.out" >/dev/null 2>&1 || fail "mtrace-sim --json FIFO: no JSON came through it"
# an output that cannot be made (its folder is missing): said before the replay, not after it,
# when its result would be lost
for opt in --json --rss-series; do
    sim_replay "$work/a.wl" "$opt" "$work/missing/out" >"$work/out" 2>"$work/err"
    rc=$?
    [ $rc = 1 ] || fail "mtrace-sim $opt MISSING/out: exit $rc, expected 1"
    grep -q "missing/out: cannot write" "$work/err" || fail "mtrace-sim $opt MISSING/out: $(cat "$work/err")"
    [ -s "$work/out" ] && fail "mtrace-sim $opt MISSING/out: replayed before saying so: $(head -n 3 "$work/out")"
done
for cmd in "convert $t -o $work/null --force" "pack $t -o $work/null --force"; do
    # shellcheck disable=SC2086
    "$mtrace" $cmd >/dev/null 2>"$work/err"
    rc=$?
    [ $rc = 1 ] || fail "$cmd: exit $rc, expected 1"
    grep -q "not a regular file" "$work/err" || fail "$cmd: $(cat "$work/err")"
    [ -L "$work/null" ] || fail "$cmd replaced the link to /dev/null"
done
# ---- a trace without stacks has nothing for the stacks' outputs: exit 1, no file ----
for opt in --folded --flamegraph --callsites-csv; do
    "$mtrace" report "$t" $opt "$work/nostacks.out" >"$work/out" 2>"$work/err"
    rc=$?
    [ $rc = 1 ] || fail "report TRACE-WITHOUT-STACKS $opt: exit $rc, expected 1"
    grep -q -- "no stacks for $opt" "$work/err" || fail "report TRACE-WITHOUT-STACKS $opt: $(cat "$work/err")"
    [ -e "$work/nostacks.out" ] && fail "report TRACE-WITHOUT-STACKS $opt: wrote $work/nostacks.out"
done
# ---- an output in a missing folder: said before any trace is read ----
# On this trace without stacks a report that read it first would complain of the stacks instead.
# missing_out NAME NEEDLE CMD...: exit 1, NEEDLE on stderr, nothing on stdout.
missing_out() {
    local name=$1 needle=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err"
    local rc=$?
    [ $rc = 1 ] || fail "$name: exit $rc, expected 1"
    grep -q -- "$needle" "$work/err" || fail "$name: $(cat "$work/err")"
    [ -s "$work/out" ] && fail "$name: wrote on stdout: $(head -n 3 "$work/out")"
}
for opt in --folded --flamegraph --callsites-csv --html; do
    missing_out "report $opt MISSING/x" "missing/x: cannot write" "$mtrace" report "$t" $opt "$work/missing/x"
done
missing_out "report T T --folded MISSING/x" "missing/x: cannot write" "$mtrace" report "$t" "$t" --folded "$work/missing/x"
missing_out "diff --html MISSING/x" "missing/x: cannot write" "$mtrace" diff "$t" "$t" --html "$work/missing/x"
missing_out "plot -o MISSING/x.png" "missing/x.png: cannot write" "$mtrace" plot -o "$work/missing/x.png" "$t"
# a folder where the output goes: refused as it is tried, not at the rename after the work
mkdir "$work/folder.png"
for opt in --folded --html; do
    missing_out "report $opt FOLDER" "folder.png: cannot write: Is a directory" "$mtrace" report "$t" $opt "$work/folder.png"
done
missing_out "plot -o FOLDER" "folder.png: cannot write: Is a directory" "$mtrace" plot -o "$work/folder.png" "$t"
# the trace's header says so before a pass over it: the same trace damaged past its header gives
# the missing stacks, not the damage a pass would meet first
cp "$t" "$work/damaged.mtr"
size=$(stat -c %s "$work/damaged.mtr")
printf '\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377' |
    dd of="$work/damaged.mtr" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
"$mtrace" report "$work/damaged.mtr" --folded "$work/nostacks.out" >"$work/out" 2>"$work/err"
rc=$?
[ $rc = 1 ] || fail "report DAMAGED-WITHOUT-STACKS --folded: exit $rc, expected 1"
grep -q -- "no stacks for --folded" "$work/err" || fail "report DAMAGED-WITHOUT-STACKS --folded: $(cat "$work/err")"
# ---- one trace named twice, or alone in a directory: its report ----
mkdir "$work/one"
cp "$t" "$work/one/only.mtr"
"$mtrace" report --json "$t" >"$work/r1.json" 2>"$work/err" || fail "report TRACE: $(cat "$work/err")"
"$mtrace" report --json "$t" "$t" >"$work/r2.json" 2>"$work/err" || fail "report TRACE TRACE: $(cat "$work/err")"
cmp -s "$work/r1.json" "$work/r2.json" || fail "report TRACE TRACE: not TRACE's report"
"$mtrace" report --json "$work/one" >"$work/r3.json" 2>"$work/err" || fail "report DIR-OF-ONE-TRACE: $(cat "$work/err")"
sed "s|$work/one/only.mtr|$t|g" "$work/r3.json" | cmp -s - "$work/r1.json" || fail "report DIR-OF-ONE-TRACE: not its trace's report"

if [ $failures -gt 0 ]; then
    echo "$failures failure(s)"
    exit 1
fi
echo "all options checks passed"
