#!/usr/bin/env bash
# The recorder's instructions per call, by call type: churn under callgrind natively and under each
# given shim. Deterministic (instructions, not time), so it needs no quiet machine.
#   usage: bench/shim_instructions.sh [-b BUILD] [-n CALLS] [-a 'CHURN ARGS'] SHIM.so...
# -a passes more options to churn, e.g. -a '-l 8192 -S 65536' for the large working set (~100 MB live).
#   defaults: BUILD build-bench (its bench/churn), 400000 calls, 1 thread
# Prints per shim, for malloc, free, calloc and realloc: the calls churn's work() made and the
# instructions of the shim's own function per call (what it inlines included, the real call not);
# then the shim's code per call over all calls, and what the whole program gained per call against
# the native run (the shim's code, plus the libc work it asks for: chunk zeroing, copy-out, start).
# Under valgrind a program runs tens of times slower, so a call's time delta often takes two bytes
# where it takes one natively: about 7 instructions per call more than a native run executes.
set -eu
build=build-bench calls=400000 extra=
while getopts b:n:a: o; do
    case $o in
    b) build=$OPTARG ;;
    n) calls=$OPTARG ;;
    a) extra=$OPTARG ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-b BUILD] [-n CALLS] [-a ARGS] SHIM.so..." >&2; exit 2; }
churn=$build/bench/churn
[ -x "$churn" ] || { echo "shim_instructions.sh: $churn missing; build first" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "shim_instructions.sh: valgrind missing" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$tmp/native.cg" "$churn" $extra -t 1 -n "$calls" >/dev/null 2>&1
k=0
for so in "$@"; do
    k=$((k + 1))
    LD_PRELOAD=$(realpath "$so") MTRACE_OUT=$tmp/t$k.mtr valgrind --tool=callgrind \
        --callgrind-out-file="$tmp/shim$k.cg" "$churn" $extra -t 1 -n "$calls" >/dev/null 2>&1
done
python3 - "$tmp" "$@" <<'PY'
import collections, os, re, sys
tmp, shims = sys.argv[1], sys.argv[2:]
API = ('malloc', 'free', 'calloc', 'realloc')

def load(path, shim_name):
    """Self instructions per function of the shim's object, calls from churn's work() into it, and the total."""
    names = {}
    def name(kind, s):
        m = re.match(r'\((\d+)\)(?: (.*))?', s)
        if not m:
            return s
        if m.group(2) is not None:
            names[(kind, m.group(1))] = m.group(2)
        return names.get((kind, m.group(1)), '?')
    own, calls, total = collections.Counter(), collections.Counter(), 0
    ob = fn = cob = cfn = None
    pending = None
    for line in open(path):
        line = line.rstrip('\n')
        if line.startswith('summary:'):
            total = int(line.split()[1])
        elif line.startswith('ob='):
            ob = name('ob', line[3:])
        elif line.startswith('fn='):
            fn = name('fn', line[3:])
        elif line.startswith(('fl=', 'fi=', 'fe=')):
            name('fl', line[3:])
        elif line.startswith('cob='):
            cob = name('ob', line[4:])
        elif line.startswith(('cfi=', 'cfl=')):
            name('fl', line[4:])
        elif line.startswith('cfn='):
            cfn = name('fn', line[4:])
        elif line.startswith('calls='):
            pending = int(line[6:].split()[0])
        elif line and (line[0].isdigit() or line[0] in '+-*'):
            parts = line.split()
            cost = int(parts[-1]) if len(parts) > 1 else 0
            if pending is not None:  # the inclusive cost of a call: not the caller's own
                if fn == 'work' and cob and os.path.basename(cob) == shim_name:
                    calls[cfn] += pending
                pending = None
            elif ob and os.path.basename(ob) == shim_name:
                own[fn] += cost
    return own, calls, total

native = load(os.path.join(tmp, 'native.cg'), '')[2]
for k, so in enumerate(shims, 1):
    own, calls, total = load(os.path.join(tmp, 'shim%d.cg' % k), os.path.basename(os.path.realpath(so)))
    n = sum(calls.values())
    print(so)
    for f in API:
        if calls[f]:
            print('  %-8s %8d calls  %6.1f instructions per call' % (f, calls[f], own[f] / calls[f]))
    print('  shim code per call %.1f (general path, chunk claims, RSS samples: %.1f); program +%.1f per call'
          % (sum(own.values()) / n, sum(v for f, v in own.items() if f not in API) / n, (total - native) / n))
PY
