#!/usr/bin/env python3
"""Deterministic load for memcached, the server of bench/fidelity.sh.

Connects to a memcached listening on a Unix socket (waiting for it to come up), then drives
CONNS connections in parallel, one Python thread each: memcached hands new connections to its
worker threads in turn, so with as many connections as worker threads every worker serves one.
Each connection makes OPS requests drawn from its own seeded generator: sets of values of varied
sizes (most of a few hundred bytes, some of KiBs, a few of hundreds of KiBs: many slab classes,
each taking 1 MiB pages as it fills), gets of keys it set (the value is checked), deletes and
overwrites (freed chunks reused within their class). The keys of a connection are its own, and
the requests go in rounds whose phases every connection ends before the next starts (see drive),
so that what memcached stores and mallocs does not depend on how the threads interleave; only
which worker asks for which slab page does. When all are done, one connection sends `shutdown`
(memcached must run with -A) and the server exits.

usage: memcached_load.py SOCKET [--conns N] [--ops N] [--seed N] [--timeout S]
Prints one line: the sets, gets, deletes made, the bytes of the values still stored, and memcached's
slab classes in use and slab pages (`stats slabs`: how the interleaving of the connections weighed).
"""
import argparse
import random
import socket
import sys
import threading
import time


def connect(path, timeout):
    """a socket connected to PATH, retried until TIMEOUT seconds have passed (the server starts)"""
    end = time.monotonic() + timeout
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except OSError:
            s.close()
            if time.monotonic() > end:
                raise
            time.sleep(0.05)


class Conn:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("memcached closed the connection")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n", 1)
        return head

    def exactly(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(max(1 << 16, n - len(self.buf)))
            if not chunk:
                raise ConnectionError("memcached closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def expect(self, want):
        got = self.line()
        if got != want:
            raise RuntimeError(f"memcached answered {got!r}, expected {want!r}")

    def set(self, key, value):
        self.sock.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value))
        self.expect(b"STORED")

    def get(self, key):
        self.sock.sendall(b"get %s\r\n" % key)
        head = self.line()
        if head == b"END":
            return None
        _, _, _, n = head.split()
        value = self.exactly(int(n) + 2)[:-2]
        self.expect(b"END")
        return value

    def stats(self, what):
        """memcached's `stats WHAT` as a dict of its lines' names and values"""
        self.sock.sendall(b"stats %s\r\n" % what if what else b"stats\r\n")
        out = {}
        while (line := self.line()) != b"END":
            _, name, value = line.split(b" ", 2)
            out[name.decode()] = value.decode()
        return out

    def delete(self, key):
        self.sock.sendall(b"delete %s\r\n" % key)
        self.expect(b"DELETED")


ROUND = 200  # requests of each connection between two barriers of the same phase


def value_size(r):
    """most values small, some of KiBs, a few of hundreds of KiBs (under the 512 KiB chunk)"""
    u = r.random()
    if u < 0.70:
        return r.randint(40, 1000)
    if u < 0.96:
        return int(2 ** r.uniform(10, 15))  # 1 to 32 KiB
    return int(2 ** r.uniform(15, 18.4))  # 32 to ~330 KiB


PHASES = ("set", "overwrite", "get", "delete")


def plan_round(r, index, first, n, stored, keys):
    """the next N requests of connection INDEX (numbered from FIRST), drawn from R and grouped by
    phase; STORED (key -> (size, filler)) and KEYS (the keys stored, in the order set) are brought
    up to the end of the round"""
    plan = {phase: [] for phase in PHASES}
    for k in range(first, first + n):
        u = r.random()
        if u < 0.55 or not keys:
            if keys and r.random() < 0.2:
                phase, key = "overwrite", r.choice(keys)  # a new item, the old one's chunk freed
            else:
                phase, key = "set", b"c%d:k%d" % (index, k)
                keys.append(key)
            stored[key] = (value_size(r), r.randrange(26))
            plan[phase].append((key, stored[key]))
        elif u < 0.85:
            plan["get"].append((r.choice(keys), None))
        else:
            key = keys.pop(r.randrange(len(keys)))
            plan["delete"].append((key, stored.pop(key)))
    return plan


def drive(conn, index, ops, seed, barrier, totals):
    """OPS requests in rounds of ROUND; within a round the new sets, then the overwrites, the gets
    and the deletes, each kind after every connection has done the one before (BARRIER). Slab
    chunks are only taken in a phase of sets and given back in one of deletes, so how many pages
    each slab class needs does not depend on how the connections interleave (interleaved freely,
    memcached's slab pages varied from 67 to 69 MiB from run to run)."""
    r = random.Random(seed * 1000 + index)
    stored, keys = {}, []
    count = dict.fromkeys(PHASES, 0)
    for first in range(0, ops, ROUND):
        plan = plan_round(r, index, first, min(ROUND, ops - first), stored, keys)
        dying = dict(plan["delete"])  # keys deleted in this round, with their last value
        for phase in PHASES:
            for key, value in plan[phase]:
                if phase == "get":
                    size, fill = stored[key] if key in stored else dying[key]  # the round's last set
                    got = conn.get(key)
                    if got != bytes([97 + fill]) * size:
                        raise RuntimeError(f"get {key!r}: wrong value ({len(got or b'')} bytes, expected {size})")
                elif phase == "delete":
                    conn.delete(key)
                else:
                    size, fill = value
                    conn.set(key, bytes([97 + fill]) * size)
            count[phase] += len(plan[phase])
            barrier.wait()
    totals[index] = (count["set"] + count["overwrite"], count["get"], count["delete"],
                     sum(size for size, _ in stored.values()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("socket")
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--ops", type=int, default=4000, help="requests per connection")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60, help="seconds to wait for the server")
    a = ap.parse_args()
    try:
        conns = [Conn(connect(a.socket, a.timeout)) for _ in range(a.conns)]
    except OSError as e:
        print(f"memcached_load.py: no server on {a.socket} after {a.timeout:g} s: {e}", file=sys.stderr)
        return 1
    totals = [None] * a.conns
    errors = []
    barrier = threading.Barrier(a.conns)

    def run(i):
        try:
            drive(conns[i], i, a.ops, a.seed, barrier, totals)
        except threading.BrokenBarrierError:
            pass  # another connection failed
        except Exception as e:  # reported below, after every thread has ended
            errors.append(f"connection {i}: {type(e).__name__}: {e}")
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(a.conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = conns[0].stats(b"slabs")
    moved = conns[0].stats(b"")["slabs_moved"]
    conns[0].sock.sendall(b"shutdown\r\n")
    # the server closes every connection as it stops; wait for it, so that it is gone when we are
    conns[0].sock.settimeout(a.timeout)
    try:
        while conns[0].sock.recv(4096):
            pass
    except OSError:
        pass
    for c in conns:
        c.sock.close()
    if errors:
        print("memcached_load.py: " + "; ".join(errors), file=sys.stderr)
        return 1
    sets, gets, deletes, live = (sum(t[i] for t in totals) for i in range(4))
    print(f"{sets} sets, {gets} gets, {deletes} deletes; {live} bytes of values stored; "
          f"{stats['active_slabs']} slab classes, {int(stats['total_malloced']) >> 20} MiB of slab pages, {moved} moved")
    return 0


if __name__ == "__main__":
    sys.exit(main())
