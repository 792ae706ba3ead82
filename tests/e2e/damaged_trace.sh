#!/usr/bin/env bash
# End-to-end: damage inside a sealed chunk of a recorded trace is an error that names the file and
# the offset, for every reader (info, dump, report, convert, export, pack), never a trace read as
# whole with records dropped. A sealed chunk's records end exactly at its `used`: once, a damaged
# varint that made the decoder meet a zero byte ended the chunk there, and every reader exited 0
# without the rest of the chunk (doc/trace-format.md, "What a compliant reader must do").
#   usage: damaged_trace.sh MTRACE_BINARY PROG_LOOP
set -u
unset MALLOC_PERTURB_ # meson test sets it: glibc would write every block it hands out
mtrace=$1 loop=$2
work=$(mktemp -d /tmp/mtrace-damage.XXXXXX)
trap 'rm -rf "$work"' EXIT
# shellcheck source=tests/lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

"$mtrace" record -o "$work/t.mtr" -- "$loop" 20000 >"$work/rec.out" 2>&1 || fail "record: $(cat "$work/rec.out")"

# readers FILE: runs each reader on FILE; $work/rc.NAME and $work/out.NAME hold its status and its
# stdout, stderr and output files together
readers() {
    local f=$1 name
    for name in info dump report convert export pack; do
        rm -rf "$work/o"
        case $name in
        convert | export | pack) t 60 "$mtrace" "$name" "$f" -o "$work/o" >"$work/out.$name" 2>&1 ;;
        *) t 60 "$mtrace" "$name" "$f" >"$work/out.$name" 2>&1 ;;
        esac
        echo $? >"$work/rc.$name"
        if [ -d "$work/o" ]; then cat "$work/o"/* >>"$work/out.$name"; elif [ -e "$work/o" ]; then cat "$work/o" >>"$work/out.$name"; fi
    done
}

# the record chunks in file order, "OFFSET SEALED USED" a line (chunk header: flags at 6, bit 0
# sealed; used at 20); $work/sealed: the sealed ones, "OFFSET USED"
python3 - "$work/t.mtr" >"$work/chunks" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
for off in range(65536, len(d), 65536):
    magic, kind, flags, thread, tid, seq, used = struct.unpack_from('<IHHIIII', d, off)
    if magic == 0x4B43544D:
        print(off, flags & 1, used)
PY
awk '$2 == 1 { print $1, $3 }' "$work/chunks" >"$work/sealed"
[ "$(wc -l <"$work/sealed")" -ge 2 ] || fail "expected 2 sealed chunks or more: $(cat "$work/sealed")"

# flip FROM TO OFFSET MASK: TO is FROM with the byte at OFFSET xor MASK
flip() {
    cp "$1" "$2"
    python3 -c 'import sys; f = open(sys.argv[1], "r+b"); o = int(sys.argv[2]); f.seek(o); b = f.read(1)[0]; f.seek(o); f.write(bytes([b ^ int(sys.argv[3], 0)]))' "$2" "$3" "$4"
}

# The case found: a zero first byte inside a sealed chunk, where a damaged record that decoded as a
# shorter one leaves the decoder. Here the second sealed chunk's first record, so that the records
# of the chunks before it are read.
read -r chunk _ < <(sed -n 2p "$work/sealed")
first=$((chunk + 32))
flip "$work/t.mtr" "$work/z.mtr" "$first" "0x$(od -An -tx1 -j "$first" -N1 "$work/t.mtr" | tr -d ' ')"
readers "$work/z.mtr"
for name in info dump report convert export pack; do
    [ "$(cat "$work/rc.$name")" = 1 ] || fail "$name of a zeroed record in a sealed chunk: exit $(cat "$work/rc.$name"), expected 1"
    grep -q "z.mtr: offset $first: expected a record, found a zero byte" "$work/out.$name" ||
        fail "$name: no message naming the file and offset $first: $(head -c 600 "$work/out.$name")"
done
# dump prints the records before the damage: the first sealed chunk's (seq 0: thread order)
"$mtrace" dump "$work/t.mtr" >"$work/whole.txt" 2>/dev/null
"$mtrace" dump "$work/z.mtr" >"$work/z.txt" 2>/dev/null
before=$(grep -c . "$work/z.txt")
[ "$before" -gt 1000 ] || fail "dump printed $before records before the damage, expected a chunk's"
head -n "$before" "$work/whole.txt" | cmp -s - "$work/z.txt" || fail "dump's records before the damage differ from the whole trace's"

# The sweep: 4 bytes of each sealed chunk's records flipped (0xff). Each reader either fails with a
# message naming the file and an offset, or reads the chunk to its end: pack, which keeps the
# records a reader decodes, keeps each sealed chunk's `used` bytes. (Damage that still decodes as
# valid records, a time delta or a pointer changed into another value, reads without an error: a
# raw chunk has no checksum.)
errors=0 clean=0
while read -r chunk used; do
    for ((off = chunk + 32 + used / 8; off < chunk + 32 + used; off += used / 4)); do
        flip "$work/t.mtr" "$work/f.mtr" "$off" 0xff
        readers "$work/f.mtr"
        for name in info dump report convert export pack; do
            rc=$(cat "$work/rc.$name")
            if [ "$rc" != 0 ]; then
                grep -q "f.mtr: offset [0-9]*: " "$work/out.$name" ||
                    fail "$name of a flip at $off: exit $rc without the file and an offset: $(head -c 600 "$work/out.$name")"
            fi
        done
        if [ "$(cat "$work/rc.pack")" != 0 ]; then
            errors=$((errors + 1))
            continue
        fi
        clean=$((clean + 1))
        "$mtrace" pack "$work/f.mtr" -o "$work/f.mtz" --force >/dev/null 2>&1
        python3 - "$work/f.mtz" "$work/chunks" <<'PY' || fail "pack of a flip at $off dropped records"
import struct, sys
d = open(sys.argv[1], 'rb').read()
raw = [l.split() for l in open(sys.argv[2])]
off = struct.unpack_from('<Q', d, 112)[0]  # data_offset: the first frame
used = []  # frame i is the raw trace's record chunk i
while off < len(d):
    csize, = struct.unpack_from('<I', d, off + 4)
    used.append(struct.unpack_from('<I', d, off + 8 + 20)[0])
    off += 40 + csize
for (at, sealed, want), got in zip(raw, used):
    if sealed == '1' and int(want) != got:
        sys.exit("the chunk at %s holds %s bytes of records, its frame %d" % (at, want, got))
PY
    done
done <"$work/sealed"
echo "flips: $errors found, $clean read without an error"
[ "$errors" -gt 0 ] || fail "no flip was found to be damage"

finish
