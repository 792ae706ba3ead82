#!/usr/bin/env bash
# mtrace report's --temporary and --suppress on the command line, on report_mktrace's trace (no
# stacks, so it runs in every build): the rule chosen is the one reported, a rule not known is a
# usage error that names the rules, and suppressions given for a trace without stacks are said not to apply.
#   usage: leaks_cli.sh MTRACE REPORT_MKTRACE
set -u
mtrace=$1
mktrace=$2
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d /tmp/mtrace-report-leaks.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

t 60 "$mktrace" g.mtr || { fail "report_mktrace"; finish; }
for rule in thread heaptrack; do
    t 60 "$mtrace" report --json --temporary $rule g.mtr >$rule.json || fail "report --temporary $rule"
    grep -q "\"temporary_rule\": *\"$rule\"" $rule.json || fail "--temporary $rule: not in the JSON"
done
t 60 "$mtrace" report --json g.mtr >default.json || fail "report"
grep -q '"temporary_rule": *"thread"' default.json || fail "the default rule is not thread's"
t 60 "$mtrace" report --temporary bogus g.mtr >out 2>err
rc=$?
[ $rc = 2 ] || fail "--temporary bogus: exit $rc, expected 2 (usage)"
grep -q -- "--temporary 'bogus': expected one of thread, heaptrack" err ||
    fail "--temporary bogus: the message does not say what was expected: $(head -c 200 err)"
printf '# none apply\nmain\n' >s.supp
t 60 "$mtrace" report --suppress s.supp g.mtr >out || fail "report --suppress"
grep -q "suppressions apply to stacks" out || fail "--suppress without stacks: not said"
finish
