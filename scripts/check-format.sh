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
# The files git tracks; without git (a tarball, a root with no git installed) those the tree holds
# outside build directories. Before, no git meant no file checked and a pass.
if command -v git >/dev/null && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files '*.c' '*.h')
else
    mapfile -t files < <(find . -mindepth 1 \( -name '.*' -o -name 'build*' -o -name out -o -name subprojects \) -prune \
        -o -type f \( -name '*.c' -o -name '*.h' \) -print | sed 's|^\./||' | sort)
fi
[ ${#files[@]} -gt 0 ] || { echo "check-format.sh: no C file found to check" >&2; exit 2; }
# One clang-format per 64 files, on every CPU (one per file took 28 s of CI for 248 files): it names
# each file it would change in an "error: code should be clang-formatted" line.
log=$(printf '%s\0' "${files[@]}" |
    xargs -0 -n 64 -P "$(nproc 2>/dev/null || echo 2)" clang-format --dry-run --Werror 2>&1 >/dev/null)
status=$?
mapfile -t bad < <(printf '%s\n' "$log" | sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
if [ $status -ne 0 ] && [ ${#bad[@]} -eq 0 ]; then # it failed, and not on formatting
    printf '%s\n' "$log" | tail -n 20
    echo "check-format.sh: clang-format failed" >&2
    [ -n "$results" ] && echo "FAIL format (clang-format failed)" >>"$results"
    exit 1
fi
if [ ${#bad[@]} -eq 0 ]; then
    echo "check-format.sh: every C file is formatted (${#files[@]} files)"
    [ -n "$results" ] && echo "ok format" >>"$results"
    exit 0
fi
printf 'not formatted as .clang-format says: %s\n' "${bad[@]}"
[ -n "$results" ] && echo "FAIL format (${#bad[@]} files)" >>"$results"
exit 1
