#!/usr/bin/env bash
# The pipeline after the recorder: converter (trace2wl) throughput and memory, replay fidelity
# (replay peak RSS against the traced program's), the replay's own costs (per op, per sync point,
# bookkeeping memory), and report throughput. Prints markdown and writes it to bench/out/pipeline.md.
#
# usage: bench/pipeline.sh [BUILD_DIR]          (default build-pb; relative to the repository root)
# environment (defaults finish in a few minutes; the figures in bench/RESULTS.md used
# BIG_N=100000000 FID_N=5000000 SYNC_N=20000000 PINGPONG_N=200000 PY_SCALE=10 PERF=1):
#   BIG_N       calls of the converter / report traces (churn -t 1 -n BIG_N; -t 2 -n BIG_N/2)
#               (default 10000000)
#   BIG_LIVE    live slots of the "large live set" converter trace (default 100000; the others 1024)
#   FID_N       calls per thread of the fidelity traces (default 1000000), FID_LIVE live slots per
#               thread (default 100000)
#   PY_SCALE    size of the Python script (default 3; 10 is about 5 M live blocks)
#   SYNC_N      ops of the synthetic loop / satisfied-wait workloads (default 5000000)
#   PINGPONG_N  round trips of the ping-pong workload (default 20000)
#   REPS        repetitions of each timed run (default 3); figures are medians
#   PERF=1      also profile the converter on the big trace with perf (top functions)
#   WORK        where traces and workloads go (default /tmp/mtrace-pipeline); traces already there
#               with the same parameters are reused (REUSE=0 records them again)
#   NO_JEMALLOC=1  skip the jemalloc fidelity runs
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export BUILD=${1:-build-pb}
export BIG_N=${BIG_N:-10000000} BIG_LIVE=${BIG_LIVE:-100000}
export FID_N=${FID_N:-1000000} FID_LIVE=${FID_LIVE:-100000}
export PY_SCALE=${PY_SCALE:-3} SYNC_N=${SYNC_N:-5000000} PINGPONG_N=${PINGPONG_N:-20000}
export REPS=${REPS:-3} PERF=${PERF:-0} WORK=${WORK:-/tmp/mtrace-pipeline} REUSE=${REUSE:-1}
export NO_JEMALLOC=${NO_JEMALLOC:-0}
for f in "$BUILD/bench/churn" "$BUILD/bench/syncbench" "$BUILD/libmtrace/libmtrace.so" "$BUILD/cli/mtrace" \
    "$BUILD/trace2wl/trace2wl" "$BUILD/simulator/mtrace-sim"; do
    [ -e "$f" ] || { echo "pipeline.sh: $f missing; build first: meson setup $BUILD --buildtype=release && ninja -C $BUILD" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "pipeline.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
mkdir -p "$WORK" bench/out

exec python3 - "$@" <<'PY'
import json, os, re, shutil, statistics, subprocess, sys, time

B = os.environ["BUILD"]; W = os.environ["WORK"]
BIG_N = int(os.environ["BIG_N"]); BIG_LIVE = int(os.environ["BIG_LIVE"])
FID_N = int(os.environ["FID_N"]); FID_LIVE = int(os.environ["FID_LIVE"])
PY_SCALE = int(os.environ["PY_SCALE"]); SYNC_N = int(os.environ["SYNC_N"]); PP_N = int(os.environ["PINGPONG_N"])
REPS = int(os.environ["REPS"]); PERF = os.environ["PERF"] == "1"; REUSE = os.environ["REUSE"] == "1"
NO_JE = os.environ["NO_JEMALLOC"] == "1"
CHURN = f"{B}/bench/churn"; SHIM = os.path.abspath(f"{B}/libmtrace/libmtrace.so"); CLI = f"{B}/cli/mtrace"
T2W = f"{B}/trace2wl/trace2wl"; SIM = f"{B}/simulator/mtrace-sim"; SYNCB = f"{B}/bench/syncbench"
JE = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
PYTHON = "/usr/bin/python3"
out = []  # markdown lines

def md(s=""):
    out.append(s)
    print(s, flush=True)

def log(s):
    print(f"[pipeline] {s}", file=sys.stderr, flush=True)

def loadavg():
    return open("/proc/loadavg").read().split()[:3]

def timed(cmd, env=None, stdout=subprocess.DEVNULL):
    """Runs cmd under /usr/bin/time: (wall s, user s, sys s, max RSS KB)."""
    tf = f"{W}/time.txt"
    e = dict(os.environ)
    if env:
        e.update(env)
    subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", tf] + cmd, env=e, stdout=stdout, check=True)
    wall, user, sys_, rss = open(tf).read().split()[-4:]
    return float(wall), float(user), float(sys_), int(rss)

def med(xs):
    return statistics.median(xs)

def info(path):
    return json.loads(subprocess.run([CLI, "info", "--json", path], capture_output=True, check=True, text=True).stdout)

def record_churn(name, threads, n, live, alloc="glibc", extra=()):
    path = f"{W}/{name}.mtr"
    if REUSE and os.path.exists(path):
        return path
    for f in os.listdir(W):
        if f.startswith(name + ".mtr"):
            os.unlink(f"{W}/{f}")
    pre = SHIM if alloc == "glibc" else f"{SHIM}:{JE}"
    log(f"recording {name}")
    subprocess.run([CHURN, "-t", str(threads), "-n", str(n), "-l", str(live), *extra], check=True, stdout=subprocess.DEVNULL,
                   env=dict(os.environ, LD_PRELOAD=pre, MTRACE_OUT=path, MTRACE_QUIET="1"))
    return path

PY_SCRIPT = f"""
import json, random
random.seed(1)
S = {PY_SCALE}
docs = [{{"id": i, "name": "item%d" % i, "tags": [str(j) for j in range(i % 7)], "v": random.random()}} for i in range(30000 * S)]
text = json.dumps(docs)
back = json.loads(text)
for r in range(3):
    for i in range(0, len(back), 3):
        back[i] = {{"id": i, "s": "x" * (i % 200), "l": list(range(i % 13))}}
del docs
text = None
d = {{}}
for i in range(40000 * S):
    d["k%d" % i] = (i, str(i) * (i % 5))
print("done", len(back), len(d))
"""

def record_python():
    path = f"{W}/python-s{PY_SCALE}.mtr"
    if not (REUSE and os.path.exists(path)):
        log("recording python")
        if os.path.exists(path):
            os.unlink(path)
        subprocess.run([CLI, "record", "-o", path, "--", PYTHON, "-c", PY_SCRIPT], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=dict(os.environ, PYTHONMALLOC="malloc"))
    return path

def untraced_peak(cmd, env=None):
    return timed(cmd, env)[3]

def convert(trace, wl, reps=REPS):
    runs = [timed([T2W, trace, "-o", wl, "--quiet", "--force"]) for _ in range(reps)]
    return runs

def replay(wl, alloc, touch, js, extra=()):
    subprocess.run([CLI, "replay", wl, "--allocator", alloc, "--touch", touch, "--json", js, "--quiet"] + list(extra),
                   check=True, stdout=subprocess.DEVNULL)
    return json.load(open(js))

def sim(wl, js, pin=None):
    cmd = [SIM, wl, "--quiet", "--touch", "none", "--json", js]
    if pin is not None:
        cmd = ["taskset", "-c", pin] + cmd
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.load(open(js))

def cpu_model():
    for l in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
        if l.startswith("Model name:"):
            return l.split(":", 1)[1].strip()
    return "?"

def trace_file_growth_kb(trace):
    """The traced program's RSS samples: (peak RSS KB, file-backed pages gained by that sample, KB).
    The recorder's trace mapping is file-backed: what it leaves resident shows up as growth of the
    'shared' field of statm between the first sample and the peak."""
    p = subprocess.Popen([CLI, "dump", trace], stdout=subprocess.PIPE, text=True)
    first_shared = None; best = (0, 0)
    page_kb = os.sysconf("SC_PAGESIZE") // 1024
    for line in p.stdout:
        f = line.split()
        if len(f) >= 6 and f[2] == "rss":
            rss, shared = int(f[4]), int(f[5])
            if first_shared is None or shared < first_shared:
                first_shared = shared
            if rss >= best[0]:
                best = (rss, shared)
    p.wait()
    if first_shared is None:
        return 0, 0
    return best[0] * page_kb, (best[1] - first_shared) * page_kb

# ------------------------------------------------------------------------------------------------
md("# Pipeline benchmarks: converter, replay, report")
md()
md(f"- date: {time.strftime('%Y-%m-%d %H:%M %Z')}; machine: {cpu_model()}, {os.cpu_count()} cores, "
   f"{os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') >> 30} GiB; kernel {os.uname().release}")
md(f"- build: `{B}` ({'release' if 'release' in open(f'{B}/meson-info/intro-buildoptions.json').read() else '?'}); "
   f"parameters: BIG_N={BIG_N} BIG_LIVE={BIG_LIVE} FID_N={FID_N} FID_LIVE={FID_LIVE} PY_SCALE={PY_SCALE} "
   f"SYNC_N={SYNC_N} PINGPONG_N={PP_N} REPS={REPS}")
md(f"- load average at start: {' '.join(loadavg())} (the machine is shared: throughput is given by CPU time, "
   f"user + sys from `/usr/bin/time -f '%e %U %S %M'`, medians of {REPS})")
md()

# ---- 1. converter ------------------------------------------------------------------------------
log("1. converter")
md("## 1. Converter (trace2wl) throughput and peak memory")
md()
md(f"Traces recorded with `LD_PRELOAD={B}/libmtrace/libmtrace.so MTRACE_OUT=T {B}/bench/churn ...`; converted with "
   f"`/usr/bin/time -f '%e %U %S %M' {B}/trace2wl/trace2wl T -o W --quiet --force`. Load average: {' '.join(loadavg())}.")
md()
conv_traces = [
    ("churn -t 1 -l 1024", record_churn(f"big-t1-n{BIG_N}-l1024", 1, BIG_N, 1024)),
    (f"churn -t 1 -l {BIG_LIVE}", record_churn(f"big-t1-n{BIG_N}-l{BIG_LIVE}", 1, BIG_N, BIG_LIVE)),
    ("churn -t 2 -l 1024", record_churn(f"big-t2-n{BIG_N // 2}-l1024", 2, BIG_N // 2, 1024)),
    (f"python3 (PY_SCALE={PY_SCALE})", record_python()),
]
if os.path.exists("out/demo/python.mtr"):
    shutil.copy("out/demo/python.mtr", f"{W}/demo-python.mtr")
    conv_traces.append(("scripts/demo.sh python.mtr", f"{W}/demo-python.mtr"))
md("| trace | records | MB | peak live blocks | CPU s | Mrec/s (CPU) | wall s | Mrec/s (wall) | peak RSS MB | RSS bytes / live block |")
md("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
conv_results = {}
for label, tr in conv_traces:
    wl = tr[:-4] + ".wl"
    runs = convert(tr, wl)
    ti = info(tr); wi = info(wl)
    cpu = med([u + s for _, u, s, _ in runs]); wall = med([w for w, _, _, _ in runs]); rss = med([r for *_, r in runs])
    recs = ti["records"]
    conv_results[label] = (tr, wl, ti, wi)
    md(f"| {label} | {recs:,} | {ti['file_bytes'] / 1e6:.0f} | {wi['slots']:,} | {cpu:.2f} | {recs / cpu / 1e6:.1f} | "
       f"{wall:.2f} | {recs / wall / 1e6:.1f} | {rss / 1024:.1f} | {rss * 1024 / max(wi['slots'], 1):.0f} |")
md()
md("Target: >= 20 M records/s on one core; memory proportional to the live set (rows 1 and 2: same length, "
   "1024 vs BIG_LIVE live slots).")
md()
if PERF and shutil.which("perf"):
    log("perf")
    tr, wl = conv_results["churn -t 1 -l 1024"][:2]
    pd = f"{W}/perf.data"
    subprocess.run(["perf", "record", "-q", "-o", pd, T2W, tr, "-o", wl, "--quiet", "--force"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rep = subprocess.run(["perf", "report", "-i", pd, "--no-children", "--stdio", "-q", "--sort", "dso,symbol"],
                         capture_output=True, text=True).stdout
    md(f"`perf record {T2W} <churn -t 1 -l 1024 trace> ...`, top functions (self time):")
    md()
    md("| share | object | function |")
    md("|---:|---|---|")
    k = 0
    for line in rep.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[.\]\s+(.*)", line)
        if m and k < 15:
            fn = re.sub(r"(\s+-)+\s*$", "", m.group(3)).strip()
            md(f"| {m.group(1)} % | {m.group(2)} | `{fn}` |")
            k += 1
    md()

# ---- 2. fidelity -------------------------------------------------------------------------------
log("2. fidelity")
md("## 2. Replay fidelity: replay peak RSS vs the traced program's")
md()
md(f"churn -n {FID_N} -l {FID_LIVE} per thread and python3 (PYTHONMALLOC=malloc, the script above), traced, "
   f"converted, replayed with `{CLI} replay WL --allocator A --touch T --json R.json`. "
   f"`src` = `source_peak_rss_kb` (the recorder's RSS samples), `untraced` = `/usr/bin/time` max RSS of the same "
   f"command without the recorder, `bk` = `bookkeeping_kb`. Load average: {' '.join(loadavg())}.")
md()
fid = []
allocs = ["glibc"] + ([] if NO_JE or not os.path.exists(JE) else ["jemalloc"])
# churn writes the first byte of each block; churn -w every byte, as a program that uses its blocks.
for alloc in allocs:
    for w in ((), ("-w",)):
        for t in (1, 2):
            name = f"fid-t{t}-n{FID_N}-l{FID_LIVE}{''.join(w)}-{alloc}"
            tr = record_churn(name, t, FID_N, FID_LIVE, alloc, w)
            unt = untraced_peak([CHURN, "-t", str(t), "-n", str(FID_N), "-l", str(FID_LIVE), *w],
                                None if alloc == "glibc" else {"LD_PRELOAD": JE})
            base = untraced_peak([CHURN, "-t", str(t), "-n", "1", "-l", "1"], None if alloc == "glibc" else {"LD_PRELOAD": JE})
            fid.append((f"churn {' '.join(w) + ' ' if w else ''}-t {t}", alloc, tr, unt, base))
pytr = conv_results[f"python3 (PY_SCALE={PY_SCALE})"][0]
fid.append(("python3", "glibc", pytr, untraced_peak([PYTHON, "-c", PY_SCRIPT], {"PYTHONMALLOC": "malloc"}),
            untraced_peak([PYTHON, "-c", "import json, random"], {"PYTHONMALLOC": "malloc"})))
if "jemalloc" in allocs:
    # the same script traced under jemalloc, replayed on jemalloc
    pyje = f"{W}/fid-python-jemalloc.mtr"
    if not (REUSE and os.path.exists(pyje)):
        for f in os.listdir(W):
            if f.startswith("fid-python-jemalloc.mtr"):
                os.unlink(f"{W}/{f}")
        log("recording fid-python-jemalloc")
        subprocess.run([PYTHON, "-c", PY_SCRIPT], check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, LD_PRELOAD=f"{SHIM}:{JE}", MTRACE_OUT=pyje, MTRACE_QUIET="1",
                                PYTHONMALLOC="malloc"))
    fid.append(("python3", "jemalloc", pyje,
                untraced_peak([PYTHON, "-c", PY_SCRIPT], {"PYTHONMALLOC": "malloc", "LD_PRELOAD": JE}),
                untraced_peak([PYTHON, "-c", "import json, random"], {"PYTHONMALLOC": "malloc", "LD_PRELOAD": JE})))
md("| workload | allocator | untraced KB | baseline KB | src KB | trace-file KB in src | touch | replay max_rss KB | vs src | (max_rss - bk) vs src | (max_rss - bk) vs untraced | heap vs heap | bk KB |")
md("|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
all_replays = []
best = {}
for label, alloc, tr, unt, base in fid:
    wl = tr[:-4] + ".wl"
    subprocess.run([T2W, tr, "-o", wl, "--quiet", "--force"], check=True)
    _, filekb = trace_file_growth_kb(tr)
    for touch in ("pages", "ends", "none"):
        js = f"{wl[:-3]}.{alloc}.{touch}.json"
        j = replay(wl, alloc, touch, js)
        all_replays.append((f"{label} {alloc} --touch {touch}", j, info(wl)["slots"]))
        m, s, bk, st = j["max_rss_kb"], j["source_peak_rss_kb"], j["bookkeeping_kb"], j["start_rss_kb"]
        pct = lambda a, b: f"{100.0 * (a - b) / b:+.1f} %" if b else "-"
        heap_r, heap_u = m - bk - st, unt - base
        md(f"| {label} | {alloc} | {unt:,} | {base:,} | {s:,} | {filekb:,} | {touch} | {m:,} | {pct(m, s)} | {pct(m - bk, s)} | "
           f"{pct(m - bk, unt)} | {pct(heap_r, heap_u)} | {bk:,} |")
        best.setdefault(touch, []).append(abs(heap_r - heap_u) / heap_u * 100)
md()
md("`heap vs heap`: (max_rss - bookkeeping - the replay's start_rss) against (untraced peak - baseline), the "
   "baseline being the same program doing (almost) nothing: `churn -n 1 -l 1`, `python3 -c 'import json, random'`; "
   "this compares the allocator's memory alone, without either process's code and libraries. "
   "`trace-file KB in src`: growth of the file-backed pages (statm `shared`) between the traced program's first RSS "
   "sample and its peak one: the recorder's trace mapping still resident, which `src` includes.")
md()
md("Mean |heap vs heap| per touch policy: " +
   ", ".join(f"{k} {sum(v) / len(v):.1f} %" for k, v in best.items()) + ".")
md()

# ---- 3. replay costs ---------------------------------------------------------------------------
log("3. replay costs")
md("## 3. The replay's own costs")
md()
md(f"Load average: {' '.join(loadavg())}.")
md()
md("### 3a. Cost per op outside the allocator")
md()
md("Churn workloads from section 1 replayed with `mtrace-sim WL --touch none --json R.json` (glibc). "
   "`formula`: (time * 1000 - sum over call kinds of `avg_cycles * calls` in ns at the TSC rate `cycles / wall_us`) / ops, "
   "time = `thread_us` (wall time of the replay threads); the call cycles are TSC (wall) time, so on a loaded machine "
   "a call that is preempted counts its wait: the formula is only meaningful on an idle machine. "
   "`perf`: CPU samples of one replay under `perf record`: the share in mtrace-sim and libzstd (the replay's own "
   "code) times `cpu_us` / ops; libc's malloc family and the kernel are the allocator's and the system's. "
   f"Medians of {REPS}. `syncbench marks`: ops that make no call (the loop alone: decode, dispatch, progress counter), "
   "`cpu_us` / ops.")
md()
md("| workload | ops | call ns / call (TSC) | formula ns / op | perf: replay code share | perf: libc share | perf: kernel share | perf: replay ns / op (CPU) |")
md("|---|---:|---:|---:|---:|---:|---:|---:|")

def perf_shares(wl):
    pd = f"{W}/sim.perf"
    js = f"{W}/sim.perf.json"
    subprocess.run(["perf", "record", "-q", "-o", pd, SIM, wl, "--quiet", "--touch", "none", "--json", js], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rep = subprocess.run(["perf", "report", "-i", pd, "--no-children", "--stdio", "-q", "--sort", "dso"],
                         capture_output=True, text=True).stdout
    sh = {"replay": 0.0, "libc": 0.0, "kernel": 0.0, "other": 0.0}
    for line in rep.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)", line)
        if not m:
            continue
        v, d = float(m.group(1)), m.group(2)
        k = "replay" if d in ("mtrace-sim",) or d.startswith("libzstd") else "libc" if d.startswith("libc") else \
            "kernel" if "kernel" in d else "other"
        sh[k] += v
    return sh, json.load(open(js))

for label in ("churn -t 1 -l 1024", "churn -t 2 -l 1024"):
    tr, wl, ti, wi = conv_results[label]
    rs = []
    for k in range(REPS):
        j = sim(wl, f"{wl[:-3]}.cost{k}.json")
        ghz = j["cycles"] / j["wall_us"] / 1000.0
        call_ns = sum(j["avg_cycles"][op] * j["calls"][op] for op in j["calls"]) / ghz
        calls = sum(j["calls"].values())
        ops = wi["ops"]
        rs.append(((j["thread_us"] * 1000 - call_ns) / ops, call_ns / calls))
        all_replays.append((f"{label} --touch none", j, wi["slots"]))
    pf = "| - | - | - | - |"
    if shutil.which("perf"):
        sh, jp = perf_shares(wl)
        pf = (f"| {sh['replay']:.1f} % | {sh['libc']:.1f} % | {sh['kernel']:.1f} % | "
              f"{jp['cpu_us'] * 1000 * sh['replay'] / 100 / wi['ops']:.1f} |")
    md(f"| {label} | {wi['ops']:,} | {med([r[1] for r in rs]):.1f} | {med([r[0] for r in rs]):.1f} " + pf)
syncw = {}
for mode, n in (("marks", SYNC_N), ("satisfied", SYNC_N), ("pingpong", PP_N), ("nosync", PP_N)):
    wl = f"{W}/sync-{mode}-{n}.wl"
    txt = subprocess.run([SYNCB, mode, str(n), wl], capture_output=True, text=True, check=True).stdout
    syncw[mode] = (wl, n, int(re.search(r"waits=(\d+)", txt).group(1)), int(re.search(r"ops=(\d+)", txt).group(1)))
marks = []
sat = []
for k in range(REPS):
    marks.append(sim(syncw["marks"][0], f"{W}/sync-marks.{k}.json"))
    sat.append(sim(syncw["satisfied"][0], f"{W}/sync-satisfied.{k}.json"))
mk_cpu = med([j["cpu_us"] * 1000 / SYNC_N for j in marks]); mk_wall = med([j["thread_us"] * 1000 / SYNC_N for j in marks])
md(f"| syncbench marks (no calls) | {SYNC_N:,} | - | {mk_wall:.1f} | - | - | - | {mk_cpu:.1f} |")
md()
md("### 3b. Cost of a sync point")
md()
st_cpu = med([j["cpu_us"] * 1000 / SYNC_N for j in sat]); st_wall = med([j["thread_us"] * 1000 / SYNC_N for j in sat])
md(f"- satisfied WAIT (`syncbench satisfied {SYNC_N}`: the other thread is already past the count): "
   f"{st_cpu:.1f} ns per op CPU, {st_wall:.1f} ns thread wall, against {mk_cpu:.1f} / {mk_wall:.1f} ns for an op "
   f"that makes no call: a met WAIT adds {st_cpu - mk_cpu:+.1f} ns (CPU).")
md(f"- handed-over WAIT (`syncbench pingpong {PP_N}`: thread 0 mallocs, thread 1 waits for it and frees, thread 0 "
   f"waits for that free; {syncw['pingpong'][2]:,} WAITs that each must wait for the other thread). "
   f"Per WAIT, medians of {REPS}; `call ns` (malloc + free, as measured by the replay) is subtracted:")
md()
md("| CPUs | wall µs / WAIT | CPU µs / WAIT | waits that slept | avg wait µs | nosync wall µs / round trip |")
md("|---|---:|---:|---:|---:|---:|")
for pin, label in ((None, f"{os.cpu_count()} (both threads free to run)"), ("0", "1 (`taskset -c 0`: threads > CPUs)")):
    rs = []; ns = []
    for k in range(REPS):
        j = sim(syncw["pingpong"][0], f"{W}/sync-pp.{pin}.{k}.json", pin)
        ghz = j["cycles"] / j["wall_us"] / 1000.0
        call_ns = sum(j["avg_cycles"][op] * j["calls"][op] for op in j["calls"]) / ghz
        nw = syncw["pingpong"][2]
        rs.append(((j["wall_us"] * 1000 - call_ns) / nw / 1000, (j["cpu_us"] * 1000 - call_ns) / nw / 1000,
                   j["sync_sleeps"] / max(j["sync_waits"], 1), j["avg_sync_wait_cycles"] / ghz / 1000))
        jn = sim(syncw["nosync"][0], f"{W}/sync-nosync.{pin}.{k}.json", pin)
        ns.append(jn["wall_us"] / PP_N)
    md(f"| {label} | {med([r[0] for r in rs]):.2f} | {med([r[1] for r in rs]):.2f} | {100 * med([r[2] for r in rs]):.0f} % | "
       f"{med([r[3] for r in rs]):.2f} | {med(ns):.3f} |")
md()
md("Target: < 1 µs per sync point.")
md()
md("### 3c. Bookkeeping memory")
md()
md("| replay | peak live blocks (slots) | bookkeeping KB | max_rss KB | share | bytes / slot |")
md("|---|---:|---:|---:|---:|---:|")
seen = set()
for label, j, slots in all_replays:
    if label in seen:
        continue
    seen.add(label)
    bk, m = j["bookkeeping_kb"], j["max_rss_kb"]
    md(f"| {label} | {slots:,} | {bk:,} | {m:,} | {100.0 * bk / m:.1f} % | {bk * 1024 / max(slots, 1):.0f} |")
md()
md("Target: < 5 % of peak RSS.")
md()

# ---- 4. report ---------------------------------------------------------------------------------
log("4. report")
md("## 4. Report throughput")
md()
md(f"`/usr/bin/time -f '%e %U %S %M' {CLI} report --json T > /dev/null`, medians of {REPS}. Load average: {' '.join(loadavg())}.")
md()
md("| trace | records | CPU s | Mrec/s (CPU) | wall s | Mrec/s (wall) | peak RSS MB |")
md("|---|---:|---:|---:|---:|---:|---:|")
for label in ("churn -t 1 -l 1024", f"churn -t 1 -l {BIG_LIVE}", f"python3 (PY_SCALE={PY_SCALE})"):
    tr, wl, ti, wi = conv_results[label]
    runs = [timed([CLI, "report", "--json", tr]) for _ in range(REPS)]
    cpu = med([u + s for _, u, s, _ in runs]); wall = med([w for w, *_ in runs]); rss = med([r for *_, r in runs])
    md(f"| {label} | {ti['records']:,} | {cpu:.2f} | {ti['records'] / cpu / 1e6:.1f} | {wall:.2f} | "
       f"{ti['records'] / wall / 1e6:.1f} | {rss / 1024:.1f} |")
md()
md(f"Load average at the end: {' '.join(loadavg())}.")
open("bench/out/pipeline.md", "w").write("\n".join(out) + "\n")
log("wrote bench/out/pipeline.md")
PY
