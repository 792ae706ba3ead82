#!/usr/bin/env bash
# Golden files of trace2wl (tests/golden): small packed traces written by make_golden, and for each
# NAME.mtz the expected `mtrace dump` of its workload (NAME.wl.txt, byte for byte) and some fields
# of `mtrace info --json` on the workload (NAME.info.txt). check also converts each trace with -j 2
# and -j 3 (workers decoding its threads ahead): the same workload, byte for byte, as -j 1's.
#   golden.sh check TRACE2WL MTRACE GOLDEN_DIR    convert each trace and compare (the test)
#   golden.sh regen TRACE2WL MTRACE GOLDEN_DIR    rewrite the expected files (review the diff!)
#   golden.sh repro MAKE_GOLDEN MTRACE GOLDEN_DIR the committed traces are what make_golden writes
set -u
mode=$1 tool=$2 mtrace=$3 dir=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/mtrace-golden.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0

fields() { # the workload header fields worth pinning, one "key":value a line
    "$mtrace" info --json "$1" | grep -o '"\(threads\|slots\|sync_points\|ops\|peak_live_bytes\|duration_s\|unknown_frees\|double_frees\|inversions\|forced\)":[0-9.e+-]*'
}

shopt -s nullglob
traces=("$dir"/*.mtz)
if [ ${#traces[@]} -eq 0 ]; then
    echo "FAIL: no golden traces in $dir"
    exit 1
fi

case $mode in
check | regen)
    for trace in "${traces[@]}"; do
        name=$(basename "$trace" .mtz)
        wl=$work/$name.mtw
        if ! "$tool" --quiet -j 1 "$trace" -o "$wl" 2>"$work/err"; then
            echo "FAIL: $name: trace2wl failed: $(cat "$work/err")"
            failures=$((failures + 1))
            continue
        fi
        for j in 2 3; do
            [ "$mode" = check ] || break
            if ! "$tool" --quiet -j $j "$trace" -o "$work/$name.j$j.mtw" 2>"$work/err"; then
                echo "FAIL: $name: trace2wl -j $j failed: $(cat "$work/err")"
                failures=$((failures + 1))
            elif ! cmp -s "$wl" "$work/$name.j$j.mtw"; then
                echo "FAIL: $name: trace2wl -j $j wrote another workload than -j 1"
                failures=$((failures + 1))
            fi
        done
        "$mtrace" dump "$wl" >"$work/$name.wl.txt" || { echo "FAIL: $name: mtrace dump failed"; failures=$((failures + 1)); }
        fields "$wl" >"$work/$name.info.txt"
        for kind in wl info; do
            if [ "$mode" = regen ]; then
                cp "$work/$name.$kind.txt" "$dir/$name.$kind.txt"
            elif ! cmp -s "$dir/$name.$kind.txt" "$work/$name.$kind.txt"; then
                echo "FAIL: $name: $kind differs from $dir/$name.$kind.txt (< expected, > got):"
                diff "$dir/$name.$kind.txt" "$work/$name.$kind.txt" | head -20
                failures=$((failures + 1))
            else
                echo "ok: $name.$kind.txt"
            fi
        done
    done
    ;;
repro)
    "$tool" "$work" || { echo "FAIL: make_golden failed"; exit 1; }
    for trace in "${traces[@]}"; do
        name=$(basename "$trace" .mtz)
        if [ ! -f "$work/$name.mtz" ]; then
            echo "FAIL: make_golden no longer writes $name.mtz"
            failures=$((failures + 1))
            continue
        fi
        # Records and header, not bytes: another zstd may compress the same chunks differently.
        "$mtrace" dump "$trace" >"$work/committed.txt"
        "$mtrace" dump "$work/$name.mtz" >"$work/regenerated.txt"
        if ! cmp -s "$work/committed.txt" "$work/regenerated.txt"; then
            echo "FAIL: $name.mtz: make_golden writes other records (< committed, > regenerated):"
            diff "$work/committed.txt" "$work/regenerated.txt" | head -20
            failures=$((failures + 1))
        elif ! cmp -s "$trace" "$work/$name.mtz"; then
            echo "ok: $name.mtz (same records; the bytes differ, another zstd?)"
        else
            echo "ok: $name.mtz"
        fi
    done
    for new in "$work"/*.mtz; do
        [ -f "$dir/$(basename "$new")" ] || { echo "FAIL: $(basename "$new") is not committed"; failures=$((failures + 1)); }
    done
    ;;
*)
    echo "usage: golden.sh check|regen|repro TOOL MTRACE GOLDEN_DIR"
    exit 2
    ;;
esac
if [ "$failures" -ne 0 ]; then
    echo "$failures failure(s)"
    exit 1
fi
