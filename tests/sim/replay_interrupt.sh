#!/usr/bin/env bash
# mtrace replay interrupted: SIGTERM or SIGINT sent to the front end only (not its process group)
# must end its mtrace-sim child too, and leave no --json or --rss-series file (nor a temporary) of
# the interrupted run; the command exits 128 + the signal. SIGKILL to the front end ends the child too. Before, the child ran on and wrote both
# files after the command had failed.
#   usage: replay_interrupt.sh MTRACE SIM_MKWL SLEEPY_MALLOC_SO [sanitized]
set -u
mtrace=$1 mkwl=$2 sleepy=$3
# The slow allocator is preloaded into the replay, which a sanitized mtrace-sim does not allow.
[ -n "${4:-}" ] && { echo "SKIP: sanitized build"; exit 77; }
work=$(mktemp -d /tmp/mtrace-sim-int.XXXXXX)
trap 'rm -rf "$work"' EXIT
unset MALLOC_PERTURB_ # meson's; glibc would fill every block and touch its pages
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$mkwl" slow "$work/w.wl" || { echo "FAIL: sim_mkwl slow"; exit 1; }

# KILL: the front end cannot pass it on; the child dies with it all the same (PR_SET_PDEATHSIG).
for sig in TERM INT KILL; do
    rm -f "$work"/r.*
    # env --default-signal: a background job of a script starts with SIGINT ignored
    env --default-signal=INT "$mtrace" replay "$work/w.wl" --allocator "$sleepy" --json "$work/r.json" \
        --rss-series "$work/r.tsv" >"$work/out" 2>"$work/err" &
    front=$!
    child=
    for _ in $(seq 100); do
        child=$(pgrep -P "$front" | head -n 1)
        [ -n "$child" ] && break
        sleep 0.05
    done
    [ -n "$child" ] || { fail "$sig: no replay child of the front end"; kill -KILL "$front"; continue; }
    sleep 0.5
    kill -s "$sig" "$front"
    wait "$front"
    rc=$?
    want=$((128 + $(kill -l "$sig")))
    [ "$rc" = "$want" ] || fail "$sig: exit $rc, expected $want: $(cat "$work/err")"
    [ "$sig" = KILL ] || grep -q "interrupted" "$work/err" || fail "$sig: stderr does not say the replay was interrupted: $(cat "$work/err")"
    for _ in $(seq 100); do
        kill -0 "$child" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$child" 2>/dev/null; then
        fail "$sig: the replay child $child outlived the front end"
        kill -KILL "$child"
    fi
    left=$(ls "$work" | grep -v -x -e w.wl -e out -e err)
    [ -z "$left" ] && continue
    fail "$sig: the interrupted replay left: $left"
done

[ "$failures" = 0 ] || exit 1
echo "ok"
