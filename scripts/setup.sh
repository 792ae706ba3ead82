#!/bin/sh
# Installs the Debian packages mtrace needs. scripts/packages.txt lists what the tools need to build
# and run (compiler, meson, zstd, libunwind, libdw, gnuplot for `mtrace plot`);
# scripts/packages-tests.txt what the tests, the demo and the benchmarks need besides (Check, the
# allocators the demo replays on, the real programs the end-to-end tests trace, clang for the fuzz
# targets, GNU time for the benchmarks).
#
#   scripts/setup.sh          both lists (the README's demo and the test suite)
#   scripts/setup.sh --tool   the tools only (enough for `meson setup build -Dtests=false -Dbench=false`)
#
# Root runs apt-get itself; any other user goes through sudo, which must then be installed.
set -eu
dir=$(dirname "$0")
lists="$dir/packages.txt $dir/packages-tests.txt"
case "${1:-}" in
    --tool) lists="$dir/packages.txt" ;;
    "") ;;
    -h|--help) sed -n '1d; /^#/!q; s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
esac
if [ "$(id -u)" = 0 ]; then
    as_root=""
elif command -v sudo >/dev/null 2>&1; then
    as_root="sudo"
else
    echo "setup.sh: not root and sudo is not installed: run it as root, or install sudo" >&2
    exit 1
fi
# One word per package, several packages a line: word splitting is wanted here.
# shellcheck disable=SC2086
packages=$(cat $lists)
# shellcheck disable=SC2086
$as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
# shellcheck disable=SC2086
$as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $packages
