#!/usr/bin/env bash
# Static analysis: clang's analyzer (scan-build, from Debian's clang-tools) over a fresh build of the
# tools and libraries (-Dtests=false -Dbench=false).
#
#   scripts/scan.sh [DIR]
#
# Removes DIR (default build-scan) and builds in it under scan-build, so that every file is
# analyzed; the HTML reports go to DIR/reports. Prints one line per finding, "FILE:LINE: TYPE:
# DESCRIPTION" with FILE relative to the source root, then a count. Exits 0 with no finding, 1 with
# any, 2 when scan-build is missing or the build fails. There is no suppression list: a finding is a
# defect to fix, or code to restructure so the analyzer sees what holds (an assert of the invariant,
# an explicit check); the commits that did so name scan-build. SCAN_BUILD names another scan-build
# (scan-build-16, say). 2.5 to 3 minutes (4 runs: 137 to 185 s, median 164 s) on 2 cores shared at
# load 2 to 4.7, where a plain build of the same took 21 s.
set -uo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 2
root=$PWD

case ${1:-} in
-h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
build=${1:-build-scan}
scan=${SCAN_BUILD:-scan-build}
command -v "$scan" >/dev/null || { echo "scan.sh: $scan not found (apt-get install clang-tools)" >&2; exit 2; }

# Only a directory this script or meson made is removed (not ".", not a source folder).
if [ -n "$(ls -A "$build" 2>/dev/null)" ] && [ ! -f "$build/build.ninja" ] && [ ! -f "$build/scan.log" ]; then
    echo "scan.sh: $build is neither empty nor a build directory; not removing it" >&2
    exit 2
fi
rm -rf "$build"
mkdir -p "$build"
reports=$(cd "$build" && pwd)/reports
log=$build/scan.log
# The setup runs under scan-build too: it records the analyzer's compiler wrapper as CC.
if ! "$scan" -o "$reports" meson setup "$build" -Dtests=false -Dbench=false >"$log" 2>&1 ||
    ! "$scan" -o "$reports" ninja -C "$build" >>"$log" 2>&1; then
    tail -n 40 "$log"
    echo "scan.sh: the build failed ($log)" >&2
    exit 2
fi

# Each report names its finding in HTML comments: <!-- BUGFILE path -->, BUGLINE, BUGTYPE, BUGDESC.
field() {
    sed -n "s/^<!-- $1 \(.*\) -->\$/\1/p" "$2" | head -n 1
}
found=$(
    for r in "$reports"/*/report-*.html; do
        [ -e "$r" ] || continue
        file=$(realpath -m --relative-to="$root" "$(field BUGFILE "$r")")
        echo "$file:$(field BUGLINE "$r"): $(field BUGTYPE "$r"): $(field BUGDESC "$r")"
    done | sort -t: -k1,1 -k2,2n -u
)
if [ -z "$found" ]; then
    echo "scan.sh: no findings"
    exit 0
fi
echo "$found"
echo "scan.sh: $(echo "$found" | wc -l) finding(s); the reports: $reports (scan-view shows them)"
exit 1
