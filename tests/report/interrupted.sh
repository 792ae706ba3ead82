#!/usr/bin/env bash
# mtrace plot and mtrace report --html stopped by SIGTERM or SIGINT while gnuplot runs leave nothing
# behind: no OUT.png / OUT.dat / OUT.html, no OUT.*.partial.*, no $TMPDIR/mtrace-gnuplot.* log, no
# $TMPDIR/mtrace-html.* directory, and no gnuplot that writes its picture after the command is gone.
# The command ends by the signal (exit 128 + N). A stand-in gnuplot (first in PATH) reads the script,
# then writes the picture 1 s later. Before, every one of those was left.
#   usage: interrupted.sh MTRACE REPORT_MKTRACE
set -u
mtrace=$1
mktrace=$2
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d /tmp/mtrace-report-int.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

mkdir bin
cat >bin/gnuplot <<'GP'
#!/bin/sh
echo $$ >"$FAKE_GNUPLOT_DIR/gp.pid"
out=
while IFS= read -r line; do
    case $line in "set output '"*) out=${line#"set output '"}; out=${out%"'"} ;; esac
done
sleep 1
echo "drawn late" >"$out"
GP
chmod +x bin/gnuplot
export FAKE_GNUPLOT_DIR=$work

t 60 "$mktrace" g.mtr || { fail "report_mktrace"; finish; }
t 60 "$mtrace" convert g.mtr -o g.mtw --quiet >/dev/null || fail "convert"
t 120 env "$replay_asan" "$mtrace" replay g.mtw --json r.json --rss-series r.tsv --quiet >/dev/null || fail "replay"

# mtrace's temporaries go to $TMPDIR: one of this test's own, so that no other process's are taken
# for ours
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR"
tmp_list() { ls -A "$TMPDIR" | sort; }

# stopped SIG WHAT CMD...: runs CMD, sends SIG once the stand-in gnuplot has started, checks.
stopped() {
    local sig=$1 what=$2
    shift 2
    local before
    before=$(tmp_list)
    rm -f gp.pid
    PATH=$work/bin:$PATH env --default-signal=INT "$@" >out 2>err &
    local pid=$!
    for _ in $(seq 200); do
        [ -s gp.pid ] && break
        sleep 0.05
    done
    [ -s gp.pid ] || { fail "$what: gnuplot never started: $(cat err)"; kill -KILL "$pid"; wait "$pid"; return; }
    kill -s "$sig" "$pid"
    wait "$pid"
    local rc=$?
    [ "$rc" = $((128 + $(kill -l "$sig"))) ] || fail "$what, SIG$sig: exit $rc: $(cat err)"
    sleep 1.5 # the stand-in, if still alive, has written its picture by now
    local gp
    gp=$(cat gp.pid)
    kill -0 "$gp" 2>/dev/null && { fail "$what, SIG$sig: gnuplot $gp outlived the command"; kill -KILL "$gp"; }
    local left
    left=$(ls | grep -v -x -e bin -e tmp -e g.mtr -e g.mtw -e r.json -e r.tsv -e out -e err -e gp.pid)
    [ -n "$left" ] && { fail "$what, SIG$sig: left $left"; rm -rf $left; }
    left=$(comm -13 <(echo "$before") <(tmp_list))
    [ -n "$left" ] && { fail "$what, SIG$sig: left temporaries $left"; (cd "$TMPDIR" && echo "$left" | xargs rm -rf); }
}

for sig in TERM INT; do
    stopped "$sig" "plot of a trace" "$mtrace" plot -o o.png g.mtr
    stopped "$sig" "plot of a replay" "$mtrace" plot -o o.svg r.json
    stopped "$sig" "report --html" "$mtrace" report --html o.html g.mtr r.json
done
finish
