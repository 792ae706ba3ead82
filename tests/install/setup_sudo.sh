#!/usr/bin/env bash
# scripts/setup.sh goes through sudo only when it is not root: as root (a container, a fresh Debian
# machine's root shell) it runs apt-get itself; as another user it puts sudo in front; as another
# user without sudo it says so and fails before running anything. apt-get, sudo and id are stand-ins
# that log their arguments, so nothing is installed.
#   usage: setup_sudo.sh SOURCE_ROOT
set -u
src=$1
work=$(mktemp -d /tmp/mtrace-setup.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

bin=$work/bin
mkdir -p "$bin"
for tool in sh cat sed dirname env; do
    ln -s "$(command -v $tool)" "$bin/$tool" || fail "no $tool"
done
printf '#!/bin/sh\necho "apt-get $*" >>"%s/log"\n' "$work" >"$bin/apt-get"
printf '#!/bin/sh\necho "sudo" >>"%s/log"\nexec "$@"\n' "$work" >"$bin/sudo"
# shellcheck disable=SC2016 # expanded when the stand-in runs
printf '#!/bin/sh\necho "$FAKE_UID"\n' >"$bin/id"
chmod +x "$bin/apt-get" "$bin/sudo" "$bin/id"

run() { # UID [ARGS...]: runs setup.sh with only the stand-ins and a few tools on PATH
    local uid=$1
    shift
    rm -f "$work/log"
    FAKE_UID=$uid PATH=$bin /bin/sh "$src/scripts/setup.sh" "$@" >"$work/out" 2>&1
}

all=$(cat "$src/scripts/packages.txt" "$src/scripts/packages-tests.txt" | tr -s ' \n' ' ' | sed 's/ $//')
tool=$(tr -s ' \n' ' ' <"$src/scripts/packages.txt" | sed 's/ $//')
for p in meson gcc libzstd-dev libunwind-dev libdw-dev; do
    grep -qw -- "$p" <<<"$tool" || fail "scripts/packages.txt lacks $p, which the build needs"
done
grep -qw check "$src/scripts/packages-tests.txt" || fail "scripts/packages-tests.txt lacks check"

run 0 || fail "as root: exit $?: $(cat "$work/out")"
grep -q sudo "$work/log" && fail "as root it went through sudo: $(cat "$work/log")"
[ "$(sed -n 1p "$work/log")" = "apt-get update -q" ] || fail "as root, first: $(sed -n 1p "$work/log")"
[ "$(sed -n 2p "$work/log")" = "apt-get install -y -q --no-install-recommends $all" ] ||
    fail "as root, second: $(sed -n 2p "$work/log")"

run 0 --tool || fail "as root with --tool: exit $?: $(cat "$work/out")"
[ "$(sed -n 2p "$work/log")" = "apt-get install -y -q --no-install-recommends $tool" ] ||
    fail "--tool installed: $(sed -n 2p "$work/log")"

run 1000 || fail "as a user with sudo: exit $?: $(cat "$work/out")"
[ "$(tr '\n' ' ' <"$work/log")" = "sudo apt-get update -q sudo apt-get install -y -q --no-install-recommends $all " ] ||
    fail "as a user: $(cat "$work/log")"

rm "$bin/sudo"
run 1000 && fail "as a user without sudo it succeeded"
[ -e "$work/log" ] && fail "as a user without sudo it ran: $(cat "$work/log")"
grep -q "not root and sudo is not installed" "$work/out" || fail "no reason given: $(cat "$work/out")"

run 1000 --help || fail "--help: exit $?"
grep -q -- "--tool" "$work/out" || fail "--help printed: $(cat "$work/out")"
[ -e "$work/log" ] && fail "--help ran: $(cat "$work/log")"

run 0 --bogus && fail "an unknown option was accepted"
grep -q "unknown option --bogus" "$work/out" || fail "unknown option: $(cat "$work/out")"
echo "ok: root runs apt-get itself, a user goes through sudo, no sudo is an error"
