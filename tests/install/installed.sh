#!/usr/bin/env bash
# The installed tree works on its own: `meson install --destdir D` puts mtrace, trace2wl, mtrace-sim,
# libmtrace.so, mtrace.h, mtrace.pc and the man pages (mtrace.1, mtrace-COMMAND.1, trace2wl.1,
# mtrace-sim.1; rendered by man -l)
# under D; a program built with `pkg-config --cflags --libs
# mtrace` (pointed into D) and -std=c11 -Wpedantic -Werror calls the control API and gets -ENODEV
# untraced; D's own `mtrace record` traces it with D's own libmtrace.so (not the build tree's, not
# one installed on this machine) and D's `mtrace replay` replays it with D's own mtrace-sim; D moved
# elsewhere still uses its own libmtrace.so.
#   usage: installed.sh BUILD_DIR CC...
set -u
unset MALLOC_PERTURB_ MTRACE_SHIM
build=$1
shift
cc=("$@") # the compiler's command: it may be several words (ccache cc)
work=$(mktemp -d /tmp/mtrace-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; } # to stderr: also from inside $(...)
command -v pkg-config >/dev/null || { echo "SKIP: pkg-config missing"; exit 77; }

d=$work/root
meson install -C "$build" --no-rebuild --destdir "$d" >"$work/install.log" 2>&1 ||
    fail "meson install: $(tail -5 "$work/install.log")"
find_one() { # NAME: the one installed file of that name under D
    local found
    found=$(find "$d" -name "$1" \( -type f -o -type l \))
    { [ -n "$found" ] && [ "$(wc -l <<<"$found")" = 1 ]; } || fail "installed $1: '${found}'"
    echo "$found"
}
mtrace=$(find_one mtrace) || exit 1
for f in trace2wl mtrace-sim libmtrace.so mtrace.h mtrace.pc; do
    find_one "$f" >/dev/null || exit 1
done
[ "$(dirname "$(find_one mtrace-sim)")" = "$(dirname "$mtrace")" ] || fail "mtrace-sim is not beside mtrace"
# the man pages: mtrace.1 and mtrace-COMMAND.1 for each command mtrace --help lists, in a man1 folder
man1=$(dirname "$(find_one mtrace.1)") || exit 1
[ "$(basename "$man1")" = man1 ] || fail "mtrace.1 is in $man1, not in a man1 folder"
for c in $("$mtrace" --help | sed -n '/^Commands:$/,/^$/p' | awk 'NF > 1 { print "mtrace-" $1 }') trace2wl mtrace-sim; do
    [ -s "$man1/$c.1" ] || fail "no $man1/$c.1: $(ls "$man1")"
done
if command -v man >/dev/null; then
    LC_ALL=C man -l "$man1/mtrace-record.1" 2>&1 | grep -q -- "--stacks N" ||
        fail "man -l $man1/mtrace-record.1: $(LC_ALL=C man -l "$man1/mtrace-record.1" 2>&1 | head -5)"
fi
shim=$(find_one libmtrace.so)

pc=$(find_one mtrace.pc)
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$d pkg-config --cflags --libs mtrace) ||
    fail "pkg-config --cflags --libs mtrace failed"
grep -q -- "-I$d/" <<<"$flags" || fail "pkg-config gave no include directory inside D: $flags"

cat >"$work/phase.c" <<'C'
#include <mtrace.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    void *before = malloc(111);
    const int start = mtrace_start();
    void *p[5];
    for (int i = 0; i < 5; i++)
        p[i] = malloc(4242);
    const int mark = mtrace_mark("phase");
    for (int i = 0; i < 5; i++)
        free(p[i]);
    const int stop = mtrace_stop();
    free(before);
    const char *preload = getenv("LD_PRELOAD");
    printf("start %d mark %d stop %d preload %s\n", start, mark, stop, preload ? preload : "-");
    return 0;
}
C
# shellcheck disable=SC2086 # pkg-config's flags are several words
"${cc[@]}" -std=c11 -Wall -Wextra -Wpedantic -Werror -o "$work/phase" "$work/phase.c" $flags 2>"$work/cc.err" ||
    fail "a program built with pkg-config's flags: $(cat "$work/cc.err")"

"$work/phase" >"$work/untraced.out" || fail "the program failed untraced"
grep -q "^start -19 mark -19 stop -19 preload -$" "$work/untraced.out" ||
    fail "untraced, the control API should return -ENODEV: $(cat "$work/untraced.out")"

(cd "$work" && "$mtrace" record --paused -o "$work/phase.mtr" -- "$work/phase") >"$work/traced.out" 2>"$work/traced.err" ||
    fail "installed mtrace record: $(cat "$work/traced.err")"
read -r _ start _ mark _ stop _ preload <"$work/traced.out"
{ [ "$start $mark $stop" = "0 0 0" ] && [ "$(realpath "$preload")" = "$(realpath "$shim")" ]; } ||
    fail "traced with D's shim $shim, the program printed: $(cat "$work/traced.out")"
"$mtrace" info --json "$work/phase.mtr" >"$work/info.json" 2>"$work/info.err" ||
    fail "installed mtrace info: $(cat "$work/info.err")"
python3 - "$work/info.json" <<'PY' || exit 1
import json, sys
j = json.load(open(sys.argv[1]))
malloc, free, marks = j["calls"]["malloc"], j["calls"]["free"], j["events"]["mark"]
print("traced: %d malloc, %d free, %d mark" % (malloc, free, marks))
if malloc < 5 or free < 5 or marks != 1 or not j["complete"]:
    print("FAIL: the phase's calls are not in the trace"); sys.exit(1)
PY
"$mtrace" convert "$work/phase.mtr" -o "$work/phase.wl" >"$work/convert.out" 2>&1 ||
    fail "installed mtrace convert: $(cat "$work/convert.out")"
"$mtrace" replay "$work/phase.wl" --allocator glibc >"$work/replay.out" 2>&1 ||
    fail "installed mtrace replay (with the installed mtrace-sim): $(cat "$work/replay.out")"
# The tree moved elsewhere still uses its own shim (found relative to the program, not at the prefix).
moved=$work/moved
mv "$d" "$moved"
mtrace=$moved${mtrace#"$d"}
(cd "$work" && "$mtrace" record -o "$work/moved.mtr" -- "$work/phase") >"$work/moved.out" 2>"$work/moved.err" ||
    fail "the moved tree's mtrace record: $(cat "$work/moved.err")"
read -r _ _ _ _ _ _ _ preload <"$work/moved.out"
[ "$(realpath "$preload")" = "$(realpath "$moved${shim#"$d"}")" ] ||
    fail "the moved tree's mtrace preloaded $preload"
echo "ok: installed under $d, built with pkg-config, traced and replayed from the installed tree, and moved"
