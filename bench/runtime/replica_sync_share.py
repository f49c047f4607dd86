#!/usr/bin/env python3
"""The gradient synchronisation's share of a data-parallel run (parallel.data),
from its event files (docs/engine.md, "Data parallelism").

usage: replica_sync_share.py RUN_DIR...
Per run: the mean iteration time after the first (result.json), and per
worker (events/stage<s>[.replica<r>].jsonl) and iteration, the first left
out: the time its `allreduce` events took, and how long the last bucket
ended after the stage's last backward ("exposed": what the optimizer step
waited for, the other replica's lateness included).
"""
import json, sys, glob, os, statistics
for run in sys.argv[1:]:
    res = json.load(open(os.path.join(run, 'result.json')))
    it_ms = res['iteration_ms']
    rows = []
    for f in sorted(glob.glob(os.path.join(run, 'events', 'stage*.jsonl'))):
        ev = [json.loads(l) for l in open(f) if l.strip()]
        ev.sort(key=lambda e: e['start_ns'])
        its, cur = [], []
        for e in ev:
            cur.append(e)
            if e['kind'] == 'optimizer':
                its.append(cur); cur = []
        for k, it in enumerate(its[1:], 1):  # the first iteration is warm-up
            ar = [e for e in it if e['kind'] == 'allreduce']
            bw = [e for e in it if e['kind'] in ('backward', 'backward_weight')]
            opt = [e for e in it if e['kind'] == 'optimizer'][0]
            busy = sum(e['end_ns'] - e['start_ns'] for e in ar) / 1e6
            exposed = max(0, max(e['end_ns'] for e in ar) - max(e['end_ns'] for e in bw)) / 1e6 if ar else 0
            rows.append((os.path.basename(f), busy, exposed))
    per = {}
    for f, b, x in rows: per.setdefault(f, []).append((b, x))
    print(run, 'iteration_ms %.1f' % it_ms)
    for f, v in per.items():
        b = statistics.mean(x[0] for x in v); x = statistics.mean(x[1] for x in v)
        print('  %-28s allreduce %.2f ms/it, exposed %.2f ms/it (%.1f%% of the iteration)' % (f, b, x, 100 * x / it_ms))
