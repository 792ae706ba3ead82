#!/usr/bin/env bash
# How deep real programs' allocation stacks are, and what recording them costs the traced program in
# memory. For python3 (a malloc-heavy loop, PYTHONMALLOC=malloc), gcc's cc1 (-O2 on
# format/trace_reader.c, as bench/real.sh) and a small C program (ls -l /usr/lib):
#   - depth: recorded with --stacks 64, the share of calls whose stack is deeper than 8, 16, 32 and
#     64 frames (a stack cut at 64 ends with the marker frame 0), and the median and 99th percentile;
#   - memory: peak RSS (GNU time %M, median of REPS runs) untraced, and traced with --stacks 16 and 64;
#     then, untraced, traced and traced with --stacks 16, the program's anonymous and file pages at its
#     exit (bench/rss_at_exit.c, medians): what the recorder's tables take is anonymous, the program's
#     unwind tables that the unwinder reads are file pages.
#   usage: bench/stack_depth.sh [-r REPS] [BUILD]     (default 3 reps, build dir "build")
set -eu
reps=3
while getopts r: o; do
    case $o in
    r) reps=$OPTARG ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
mtrace=$build/cli/mtrace
[ -x "$mtrace" ] || { echo "stack_depth.sh: $mtrace missing" >&2; exit 1; }
tmp=$(mktemp -d /tmp/mtrace-stack-depth.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/loop.py" <<'PY'
keep = []
for i in range(300000):
    d = {"a": i, "b": str(i), "c": [i, i + 1]}
    if i % 10 == 0:
        keep.append(d)
PY
cc1=$(gcc -print-prog-name=cc1)
multiarch=$(gcc -print-multiarch 2>/dev/null || true)
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
at_exit_lib=$(realpath "$build/bench/librss_at_exit.so")
[ -e "$at_exit_lib" ] || { echo "stack_depth.sh: $at_exit_lib missing" >&2; exit 1; }
at_exit() { # at_exit CMD...: "anon KiB, file KiB", medians at the program's exit over $reps runs
    rm -f "$tmp/exit"
    for _ in $(seq "$reps"); do
        LD_PRELOAD="$at_exit_lib${LD_PRELOAD:+ $LD_PRELOAD}" MT_RSS_AT_EXIT="$tmp/exit" "$@" >/dev/null 2>&1
    done
    # the program's lines, not mtrace record's own
    echo "anon $(awk '$1 != "mtrace" { print $3 }' "$tmp/exit" | median) file $(awk '$1 != "mtrace" { print $4 }' "$tmp/exit" | median)"
}
peak_rss() { # peak_rss CMD...: median peak RSS in KiB over $reps runs
    for _ in $(seq "$reps"); do
        /usr/bin/time -f '%M' -o "$tmp/time" "$@" >/dev/null 2>&1
        cat "$tmp/time"
    done | median
}
# depth TRACE: from `mtrace dump`, each call weighted once by its stack's depth
depth() {
    "$mtrace" dump "$1" | awk '
        / stack id=/ { id = $4; sub("id=", "", id); n = NF - 4; cut[id] = ($NF == "0x0"); d[id] = cut[id] ? 65 : n; next }
        / stack=[0-9]+/ { for (i = NF; i > 0; i--) if ($i ~ /^stack=/) { k = substr($i, 7); break }
                          if (k in d) { c++; h[d[k]]++ } }
        END {
            if (!c) { print "  no calls with stacks"; exit }
            for (x = 1; x <= 65; x++) { cum += h[x]; if (!med && cum >= c / 2) med = x; if (!p99 && cum >= c * 0.99) p99 = x
                                        if (x == 8) a = c - cum; if (x == 16) b = c - cum; if (x == 32) e = c - cum }
            printf "  %d calls with stacks: deeper than 8 frames %.1f %%, 16 %.1f %%, 32 %.1f %%, 64 (cut) %.1f %%; median %s, p99 %s\n",
                c, 100 * a / c, 100 * b / c, 100 * e / c, 100 * h[65] / c, med, p99 == 65 ? ">64" : p99
        }'
}
for w in python cc1 ls; do
    # python: every object through malloc (set for the traced and the untraced runs alike)
    if [ "$w" = python ]; then export PYTHONMALLOC=malloc; else unset PYTHONMALLOC; fi
    case $w in
    python) cmd=(/usr/bin/python3 "$tmp/loop.py") ;;
    cc1) cmd=("$cc1" -quiet ${multiarch:+-imultiarch "$multiarch"} -O2 -I"$root/include" "$root/format/trace_reader.c" -o "$tmp/out.s") ;;
    ls) cmd=(ls -l /usr/lib) ;;
    esac
    echo "$w: ${cmd[*]}"
    "$mtrace" record --stacks 64 -o "$tmp/d.mtr" -- "${cmd[@]}" >/dev/null 2>&1
    depth "$tmp/d.mtr"
    echo "  $("$mtrace" info "$tmp/d.mtr" | sed -n 's/^events.* stack \([0-9]*\).*/\1/p') STACK events (a stack numbered again counts again)"
    rm -f "$tmp"/*.mtr*
    echo "  at exit, KiB: untraced $(at_exit "${cmd[@]}"); traced, no stacks $(at_exit "$mtrace" record -o "$tmp/s.mtr" --force -- "${cmd[@]}"); --stacks 16 $(at_exit "$mtrace" record --stacks 16 -o "$tmp/s.mtr" --force -- "${cmd[@]}")"
    echo "  peak RSS untraced $(peak_rss "${cmd[@]}") KiB, --stacks 16 $(peak_rss "$mtrace" record --stacks 16 -o "$tmp/s.mtr" --force -- "${cmd[@]}") KiB, --stacks 64 $(peak_rss "$mtrace" record --stacks 64 -o "$tmp/s.mtr" --force -- "${cmd[@]}") KiB, no stacks $(peak_rss "$mtrace" record -o "$tmp/s.mtr" --force -- "${cmd[@]}") KiB"
done
