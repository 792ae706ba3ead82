#!/usr/bin/env bash
# Checks the messages of the commits made since the rule was set (SINCE, below): a subject "area:
# what" (the area a folder, a file or a few of them, comma-separated) of at most 72 characters, a
# blank line after it, and a body that says why. Prints each commit that breaks it and exits
# non-zero if any. Earlier commits are left as they are: history is not rewritten.
#   usage: scripts/check-commits.sh [--results FILE]   (appends "ok commits" or "FAIL commits ..." to FILE)
set -u
cd "$(dirname "$0")/.." || exit 2
results=
[ "${1:-}" = --results ] && results=$2
SINCE=6a7879cdb52c6f78e64b4cb1397ed8dddb04b7c3
say() { [ -n "$results" ] && echo "$1" >>"$results"; }
if ! command -v git >/dev/null || ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "check-commits.sh: not a git checkout: no commits to check"
    exit 0
fi
if ! git cat-file -e "$SINCE^{commit}" 2>/dev/null; then
    echo "check-commits.sh: commit $SINCE is not in this clone's history (a shallow clone?)" >&2
    say "FAIL commits (history incomplete)"
    exit 1
fi
bad=0 n=0
while read -r c; do
    n=$((n + 1))
    subject=$(git log -1 --format=%s "$c")
    second=$(git log -1 --format=%B "$c" | sed -n 2p)
    body=$(git log -1 --format=%b "$c" | grep -c '[^[:space:]]')
    why=()
    [ ${#subject} -le 72 ] || why+=("subject of ${#subject} characters, more than 72")
    [[ $subject =~ ^[A-Za-z0-9_./+-]+(,\ ?[A-Za-z0-9_./+-]+)*(\ [a-z0-9_./+-]+)?:\ [^\ ] ]] ||
        why+=("subject not \"area: what\"")
    [ -z "$second" ] || why+=("no blank line after the subject")
    [ "$body" -gt 0 ] || why+=("no body saying why")
    if [ ${#why[@]} -gt 0 ]; then
        bad=$((bad + 1))
        printf '%s %s\n' "$(git log -1 --format=%h "$c")" "$subject"
        printf '    %s\n' "${why[@]}"
    fi
done < <(git rev-list --no-merges "$SINCE..HEAD")
if [ $bad -eq 0 ]; then
    echo "check-commits.sh: every commit since ${SINCE:0:7} has an \"area: what\" subject and a body ($n commits)"
    say "ok commits"
    exit 0
fi
echo "check-commits.sh: $bad of $n commits since ${SINCE:0:7} break the rule (git commit --amend, or reword in a rebase)"
say "FAIL commits ($bad)"
exit 1
