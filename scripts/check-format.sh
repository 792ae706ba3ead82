#!/usr/bin/env bash
# Checks that every C source and header git tracks is formatted as .clang-format says (clang-format
# --dry-run --Werror): prints each file that is not, and exits non-zero if any. Fix with
#   git ls-files '*.c' '*.h' | xargs clang-format -i
#   usage: scripts/check-format.sh [--results FILE]   (appends "ok format" or "FAIL format ..." to FILE)
set -u
cd "$(dirname "$0")/.."
results=
[ "${1:-}" = --results ] && results=$2
command -v clang-format >/dev/null || { echo "check-format.sh: clang-format is not installed (scripts/setup.sh)" >&2; exit 2; }
bad=()
while IFS= read -r f; do
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files '*.c' '*.h')
if [ ${#bad[@]} -eq 0 ]; then
    echo "check-format.sh: every C file is formatted"
    [ -n "$results" ] && echo "ok format" >>"$results"
    exit 0
fi
printf 'not formatted as .clang-format says: %s\n' "${bad[@]}"
[ -n "$results" ] && echo "FAIL format (${#bad[@]} files)" >>"$results"
exit 1
