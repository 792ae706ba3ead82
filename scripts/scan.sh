#!/usr/bin/env bash
# Static analysis: clang's analyzer (clang --analyze, Debian's clang) over every C file of the tools
# and libraries (-Dtests=false -Dbench=false), with the flags meson gives each.
#
#   scripts/scan.sh [DIR]
#
# Removes DIR (default build-scan) and configures it with clang (meson setup, no build): its
# compile_commands.json names each file and its flags. Runs the analyzer on each, one per CPU, and
# prints one line per finding, "FILE:LINE: CHECKER: DESCRIPTION" with FILE relative to the source
# root, then a count. Exits 0 with no finding, 1 with any, 2 when clang is missing or a file does
# not compile. There is no suppression list: a finding is a defect to fix, or code to restructure
# so the analyzer sees what holds (an assert of the invariant, an explicit check); the commits that
# did so name scan-build, which ran the same analyzer beside a full compile of each file (340 s of
# CPU in a CI run, against 196 s for the analyzer alone). CLANG names another clang (clang-16, say).
set -uo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 2
root=$PWD

case ${1:-} in
-h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
build=${1:-build-scan}
clang=${CLANG:-clang}
command -v "$clang" >/dev/null || { echo "scan.sh: $clang not found (apt-get install clang)" >&2; exit 2; }

# Only a directory this script or meson made is removed (not ".", not a source folder).
if [ -n "$(ls -A "$build" 2>/dev/null)" ] && [ ! -f "$build/build.ninja" ] && [ ! -f "$build/scan.log" ]; then
    echo "scan.sh: $build is neither empty nor a build directory; not removing it" >&2
    exit 2
fi
rm -rf "$build"
mkdir -p "$build"
build=$(cd "$build" && pwd) # the analyzer's commands run in the build directory
log=$build/scan.log
if ! CC=$clang meson setup "$build" -Dtests=false -Dbench=false -Db_colorout=never >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "scan.sh: meson setup failed ($log)" >&2
    exit 2
fi

# One command per file: the compile's, less its output and dependency file, with --analyze. Each
# writes its diagnostics to DIR/out/N.txt and its exit status to DIR/out/N.rc.
mkdir -p "$build/out"
python3 - "$build" "$clang" >"$build/commands" <<'PY' || exit 2
import json, shlex, sys
build, clang = sys.argv[1], sys.argv[2]
for n, e in enumerate(json.load(open(build + "/compile_commands.json"))):
    args, keep, skip = shlex.split(e["command"])[1:], [], False
    for a in args:
        if skip:
            skip = False
        elif a in ("-o", "-MQ", "-MF"):
            skip = True
        elif a not in ("-MD", "-c"):
            keep.append(a)
    out = "%s/out/%d" % (build, n)
    print("cd %s && %s --analyze -o /dev/null %s >%s.txt 2>&1; echo $? >%s.rc" % (
        shlex.quote(e["directory"]), shlex.quote(clang), " ".join(map(shlex.quote, keep)),
        shlex.quote(out), shlex.quote(out)))
PY
files=$(wc -l <"$build/commands")
xargs -d '\n' -P "$(nproc 2>/dev/null || echo 2)" -I{} bash -c {} <"$build/commands"
failed=$(grep -Lx 0 "$build"/out/*.rc | wc -l)
if [ "$(ls "$build"/out/*.rc 2>/dev/null | wc -l)" != "$files" ] || [ "$failed" != 0 ]; then
    for rc in $(grep -Lx 0 "$build"/out/*.rc); do tail -n 20 "${rc%.rc}.txt"; done
    echo "scan.sh: $failed of $files files did not compile under the analyzer" >&2
    exit 2
fi

# The analyzer's findings are warnings named by their checker ("[core.NullDereference]"); the
# compiler's own warnings name a -W flag and are -Werror's business in the builds.
found=$(
    cat "$build"/out/*.txt |
        sed -n 's/^\([^:]*\):\([0-9]*\):[0-9]*: warning: \(.*\) \[\([a-zA-Z]*\.[a-zA-Z.]*\)\]$/\1:\2: \4: \3/p' |
        while IFS= read -r line; do
            file=${line%%:*}
            case $file in /*) ;; *) file=$(cd "$build" && realpath -m "$file") ;; esac
            echo "$(realpath -m --relative-to="$root" "$file"):${line#*:}"
        done | sort -t: -k1,1 -k2,2n -u
)
if [ -z "$found" ]; then
    echo "scan.sh: no findings ($files files)"
    exit 0
fi
echo "$found"
echo "scan.sh: $(echo "$found" | wc -l) finding(s)"
exit 1
