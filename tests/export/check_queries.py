#!/usr/bin/env python3
"""Loads mtrace exports into ClickHouse with doc/export.md's statements, runs its queries, and checks
every figure against mtrace report --json of the same traces.
  usage: check_queries.py HTTP_PORT DOC DISTRIBUTED_CLUSTER EXPORT_DIR:REPORT_JSON...
Queries and inserts go through the server's HTTP interface (one process for all, where
clickhouse-client would start one per query). Then the same through Distributed tables over the cluster (one shard: this server): the figures
must not change. Exit 1 with a line per difference."""
import json, re, sys, urllib.error, urllib.parse, urllib.request

port, doc, cluster = sys.argv[1], sys.argv[2], sys.argv[3]
pairs = [a.split(':', 1) for a in sys.argv[4:]]
TABLES = ['mtrace_traces', 'mtrace_records', 'mtrace_stacks', 'mtrace_threads', 'mtrace_rss']
problems = []
DB = 'mtrace_export_test' # made afresh: the tables' names are the documented ones


def ch(query, data=None, fmt=True, db=DB):
    """Runs one statement; with data, the statement is in the URL and data is its input."""
    q = query + ('\nFORMAT JSONCompact' if fmt else '')
    params = {'database': db} if db else {}
    if data is not None:
        params['query'] = q
    url = 'http://127.0.0.1:%s/?%s' % (port, urllib.parse.urlencode(params))
    try:
        with urllib.request.urlopen(url, data=data if data is not None else q.encode(), timeout=300) as r:
            out = r.read()
    except urllib.error.HTTPError as e:
        raise SystemExit('FAIL: ClickHouse: %s\n  query: %s' % (e.read().decode(errors='replace').strip(), query[:300]))
    if not fmt:
        return None
    j = json.loads(out)
    names = [m['name'] for m in j['meta']]
    return [dict(zip(names, row)) for row in j['data']]


def blocks(kind):
    text = open(doc).read()
    out = {}
    for body in re.findall(r'```sql\n(.*?)```', text, re.S):
        m = re.match(r'-- (table|view|query): (\w+)\n', body)
        if not m:
            raise SystemExit('FAIL: %s: an sql block without a "-- table|view|query: NAME" line' % doc)
        if m.group(1) == kind:
            out[m.group(2)] = body[m.end():]
    return out


def num(v):
    return int(v) if isinstance(v, str) and re.fullmatch(r'-?\d+', v) else v


def same(what, got, want):
    if got == want:
        return
    if isinstance(got, list) and isinstance(want, list):
        # only the rows that differ: a callsite list is long
        extra = [x for x in got if x not in want]
        missing = [x for x in want if x not in got]
        if extra or missing:
            problems.append('%s: only in ClickHouse %r; only in mtrace report %r' % (what, extra[:10], missing[:10]))
        else:
            problems.append('%s: the same rows in another order: ClickHouse %r, mtrace report %r' % (what, got[:10], want[:10]))
        return
    problems.append('%s: ClickHouse %r, mtrace report %r' % (what, got, want))


def rows_by_trace(rows):
    d = {}
    for r in rows:
        d.setdefault(num(r['trace_id']), []).append({k: num(v) for k, v in r.items()})
    return d


def callsite_key(c):
    return (c['function'], c['file'] or '', c['line'], c['module'], c.get('offset', 0))


def check(q, reports, label):
    """q: query name -> rows. reports: trace_id -> report json."""
    calls = rows_by_trace(q['calls_per_function'])
    totals = rows_by_trace(q['totals'])
    peak = rows_by_trace(q['peak'])
    over = rows_by_trace(q['live_over_time'])
    sizes = rows_by_trace(q['size_histogram'])
    lives = rows_by_trace(q['lifetime_histogram'])
    threads = rows_by_trace(q['threads'])
    top_bytes = rows_by_trace(q['top_callsites_by_bytes'])
    top_leaks = rows_by_trace(q['top_callsites_by_leaks'])
    temps = rows_by_trace(q['temporaries_by_callsite'])
    procs = rows_by_trace(q['per_process'])
    all_sites = rows_by_trace(q['all_callsites'])
    for tid, r in reports.items():
        f = '%s: %s' % (label, r['file'])
        by_op = {x['function']: x for x in calls.get(tid, [])}
        for op in r['calls']:
            x = by_op.get(op, {'calls': 0, 'bytes': 0, 'failures': 0})
            same('%s: calls of %s' % (f, op), x['calls'], r['calls'][op])
            same('%s: bytes of %s' % (f, op), x['bytes'], r['bytes'][op])
            same('%s: failures of %s' % (f, op), x['failures'], r['failures'][op])
        t = totals[tid][0]
        for k, rk in [('allocations', 'allocations'), ('leaked_blocks', 'leaked_blocks'), ('leaked_bytes', 'leaked_bytes'),
                      ('temporaries', 'temporary'), ('temporary_bytes', 'temporary_bytes'), ('unknown_frees', 'unknown_frees')]:
            same('%s: %s' % (f, rk), t[k], r[rk])
        p = peak[tid][0]
        same('%s: peak_live_bytes' % f, p['peak_live_bytes'], r['peak_live_bytes'])
        same('%s: peak_live_blocks' % f, p['peak_live_blocks'], r['peak_live_blocks'])
        # report --json prints 15 significant digits
        same('%s: peak_time_s' % f, float('%.15g' % p['peak_time_s']), float('%.15g' % r['peak_time_s']))
        w = over.get(tid, [])
        same('%s: highest of live_over_time' % f, max((x['peak_live_bytes'] for x in w), default=0), r['peak_live_bytes'])
        same('%s: live bytes at the end of live_over_time' % f, w[-1]['live_bytes_at_end'] if w else 0, r['leaked_bytes'])
        for name, got, want in [('size_histogram', sizes, r['size_histogram']), ('lifetime_histogram_ns', lives, r['lifetime_histogram_ns'])]:
            same('%s: %s' % (f, name), [(x['from'], x['to'], x['count']) for x in got.get(tid, [])],
                 [(x['from'], x['to'], x['count']) for x in want])
        th = {x['thread']: x for x in threads.get(tid, [])}
        for x in r['thread_list']:
            y = th.get(x['thread'], {'tid': x['tid'], 'calls': 0, 'allocations': 0, 'bytes': 0, 'frees': 0, 'temporaries': 0})
            same('%s: thread %d' % (f, x['thread']), (y['tid'], y['calls'], y['allocations'], y['bytes'], y['frees'], y['temporaries']),
                 (x['tid'], x['calls'], x['allocations'], x['bytes'], x['frees'], x['temporary']))
        sites = [(callsite_key(c), (c['calls'], c['bytes'], c['leaked_blocks'], c['leaked_bytes'], c['peak_bytes'])) for c in r['callsites']]
        def got_sites(rows):
            return [((x['site_function'], x['site_file'], x['site_line'], x['site_module'], x['site_offset']),
                     (x['calls'], x['bytes'], x['leaked_blocks'], x['leaked_bytes'], x['peak_bytes'])) for x in rows]
        same('%s: every callsite' % f, sorted(got_sites(all_sites.get(tid, []))), sorted(sites))
        want = sorted(sites, key=lambda s: (-s[1][1], -s[1][0], s[0]))[:20]
        same('%s: top callsites by bytes' % f, got_sites(top_bytes.get(tid, [])), want)
        want = sorted([s for s in sites if s[1][3] > 0], key=lambda s: (-s[1][3], -s[1][2], s[0]))[:20]
        same('%s: top callsites by leaks' % f, got_sites(top_leaks.get(tid, [])), want)
        if r['callsites'] and r['temporary'] and not temps.get(tid):
            problems.append('%s: temporaries_by_callsite has no row' % f)
        n = sum(x['temporaries'] for x in temps.get(tid, []))
        if n > r['temporary']:
            problems.append('%s: temporaries_by_callsite counts %d, more than the %d temporaries' % (f, n, r['temporary']))
        pp = procs[tid][0]
        same('%s: per_process' % f, (pp['pid'], pp['calls'], pp['allocations'], pp['bytes'], pp['leaked_bytes'], pp['peak_live_bytes']),
             (pp['pid'], sum(r['calls'].values()), r['allocations'], sum(r['bytes'].values()), r['leaked_bytes'], r['peak_live_bytes']))
    # across the fleet: leaks by callsite, added up over the processes
    fleet = {}
    for r in reports.values():
        for c in r['callsites']:
            if c['leaked_bytes'] > 0:
                k = callsite_key(c)
                a = fleet.setdefault(k, [0, 0, 0])
                a[0] += 1
                a[1] += c['leaked_blocks']
                a[2] += c['leaked_bytes']
    want = sorted(((k, tuple(v)) for k, v in fleet.items()), key=lambda s: (-s[1][2], s[0]))[:20]
    got = [((x['site_function'], x['site_file'], num(x['site_line']), x['site_module'], num(x['site_offset'])),
            (num(x['processes']), num(x['blocks']), num(x['bytes']))) for x in q['fleet_leaks']]
    same('%s: fleet_leaks' % label, got, want)


def run_all(suffix):
    def name(sql):
        return re.sub(r'\b(mtrace_(?:traces|records|stacks|threads|rss|peaks|callsites))\b', r'\1' + suffix, sql)
    for v, sql in blocks('view').items():
        ch(name(sql), fmt=False)
    q = {k: ch(name(sql)) for k, sql in blocks('query').items()}
    q['all_callsites'] = ch(name('SELECT * FROM mtrace_callsites'))
    return q


ch('DROP DATABASE IF EXISTS %s' % DB, fmt=False, db=None)
ch('CREATE DATABASE %s' % DB, fmt=False, db=None)
tables = blocks('table')
for t in TABLES:
    if t not in tables:
        raise SystemExit('FAIL: %s has no CREATE TABLE for %s' % (doc, t))
    ch(tables[t], fmt=False)
reports = {}
for d, rj in pairs:
    for t in TABLES:
        with open('%s/%s.rowbinary' % (d, t), 'rb') as f:
            data = f.read()
        if data: # an empty file is a table without rows: nothing to insert
            ch('INSERT INTO %s FORMAT RowBinary' % t, data=data, fmt=False)
for d, rj in pairs:
    r = json.load(open(rj))
    rows = ch("SELECT trace_id FROM mtrace_traces WHERE path = '%s'" % r['file'].replace("'", "\\'"))
    if len(rows) != 1:
        raise SystemExit('FAIL: %d rows of mtrace_traces for %s' % (len(rows), r['file']))
    reports[num(rows[0]['trace_id'])] = r
local = run_all('')
check(local, reports, 'local tables')
# the cluster path: Distributed tables over the same tables (doc/export.md, "Loading")
for t in TABLES:
    ch('CREATE TABLE %s_all AS %s ENGINE = Distributed(%s, currentDatabase(), %s, trace_id)' % (t, t, cluster, t), fmt=False)
dist = run_all('_all')
check(dist, reports, 'Distributed tables')
nq = len(blocks('query'))
if problems:
    for p in problems[:60]:
        print('FAIL: ' + p)
    print('%d difference(s)' % len(problems))
    sys.exit(1)
print('ok: %d queries of %s on %d trace(s), local and Distributed: every figure equals mtrace report --json' % (nq, doc, len(reports)))
