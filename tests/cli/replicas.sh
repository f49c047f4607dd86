#!/usr/bin/env bash
# Recorded runs with data-parallel replicas (issue 39): compare across
# (stages, replicas) splits, explain's gradient sync against the
# simulator's own figure, replay and export of the all-reduce events.
# Every figure is checked against simulate's --json output of the same
# run, or recomputed here from the exported events.
set -u
PW="$1"; SRC="$2"
. "$SRC/tests/cli_checks.sh"
J="$SRC/resources/jobs/gpt32-8gpu.json"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# 8 stages x 4 replicas and 16 stages x 2 replicas of the same job on 32 devices, four to a node.
A=(--set parallel.data=4 --set cluster.devices=32 --set cluster.gpus_per_node=4)
B=(--set parallel.data=2 --set pipeline.stages=16 --set cluster.devices=32 --set cluster.gpus_per_node=4)
check "simulate 8 x 4 --db" 0 "$PW" simulate "$J" "${A[@]}" --db "$tmp/a.sqlite" --json
"$PW" simulate "$J" "${A[@]}" --json > "$tmp/sim_a.json"
check "simulate 16 x 2 --db" 0 "$PW" simulate "$J" "${B[@]}" --db "$tmp/b.sqlite"
"$PW" simulate "$J" "${B[@]}" --json > "$tmp/sim_b.json"

# compare: each run's split, samples/s over all replicas.
expect_text "compare names A's split" 0 "8 stages x 4 replicas" "$PW" compare "$tmp/a.sqlite" "$tmp/b.sqlite"
expect_text "compare names B's split" 0 "16 stages x 2 replicas" "$PW" compare "$tmp/a.sqlite" "$tmp/b.sqlite"
expect_text "compare has the all-replica throughput" 0 "samples/s (all replicas)" "$PW" compare "$tmp/a.sqlite" "$tmp/b.sqlite"
"$PW" compare "$tmp/a.sqlite" "$tmp/b.sqlite" --json > "$tmp/cmp.json"
py_check "compare: splits and samples/s over all replicas equal simulate's" "
import json
c = json.load(open('$tmp/cmp.json')); sa = json.load(open('$tmp/sim_a.json')); sb = json.load(open('$tmp/sim_b.json'))
assert c['a']['parallel'] == {'tensor': 1, 'stages': 8, 'replicas': 4, 'recorded_replicas': 1}, c['a']['parallel']
assert c['b']['parallel'] == {'tensor': 1, 'stages': 16, 'replicas': 2, 'recorded_replicas': 1}, c['b']['parallel']
assert sa['replicas'] == 4 and sb['replicas'] == 2, (sa['replicas'], sb['replicas'])
row = {r['figure']: r for r in c['rows']}
r = row['samples/s (all replicas)']
# simulate counts every replica's samples; so does compare (global batch / iteration).
assert abs(r['a'] - sa['throughput_samples_per_s']) < 1e-6 * r['a'], (r['a'], sa['throughput_samples_per_s'])
assert abs(r['b'] - sb['throughput_samples_per_s']) < 1e-6 * r['b'], (r['b'], sb['throughput_samples_per_s'])
assert abs(r['ratio'] - r['b'] / r['a']) < 1e-12
# 256 samples per iteration over the iteration time, recomputed here.
assert abs(r['a'] - 256 / (sa['iteration_time_ms'] / 1e3)) < 1e-6 * r['a']
d = row['samples/s per device']
assert abs(d['a'] - r['a'] / 32) < 1e-9 * r['a'] and abs(d['b'] - r['b'] / 32) < 1e-9 * r['b']
assert row['stages']['a'] == 8 and row['stages']['b'] == 16 and row['replicas']['a'] == 4 and row['replicas']['b'] == 2
"

# explain: gradient sync is a cause of its own, equal per stage to what the simulator computed.
"$PW" explain "$tmp/a.sqlite" --json --no-suggestions > "$tmp/explain.json"
py_check "explain: gradient_sync per stage equals the simulator's sync_exposed_ms" "
import json
x = json.load(open('$tmp/explain.json')); s = json.load(open('$tmp/sim_a.json'))
assert x['replicas'] == 4 and x['recorded_replicas'] == 1 and x['replica'] == 0
total = 0
for st in x['stages']:
    want = s['stages'][st['stage']]['sync_exposed_ms'] * 1e6
    got = st['causes']['gradient_sync']
    assert abs(got - want) <= 1, (st['stage'], got, want)
    assert st['compute_ns'] + sum(st['causes'].values()) == st['wall_ns']
    total += got
assert total > 0, 'the split should expose some sync'
g = x['gradient_sync']
assert g['ns'] == total and abs(g['share'] - total / x['totals']['wall_ns']) < 1e-12
assert g['critical_path_ns'] == x['critical_path']['causes'].get('gradient_sync', {}).get('ns', 0)
assert g['critical_path_ns'] > 0, 'the stage that ends last waits for its buckets before its step'
"
expect_text "explain names gradient sync" 0 "gradient sync (steps waiting for the replicas' all-reduce)" \
  "$PW" explain "$tmp/a.sqlite" --no-suggestions
expect_text "explain names the replica" 0 "replica 0's pipeline (4 replicas; 1 recorded)" "$PW" explain "$tmp/a.sqlite" --no-suggestions
expect_text "explain --replica beyond the recording" 2 "--replica 1: the run recorded 1 replica (0..0)" \
  "$PW" explain "$tmp/a.sqlite" --replica 1 --no-suggestions

# A suggestion against the gradient sync, simulated as `simulate --set` would: the same iteration time.
"$PW" explain "$tmp/a.sqlite" --json > "$tmp/explain_s.json"
py_check "a gradient-sync suggestion reproduces with simulate --set" "
import json, subprocess
x = json.load(open('$tmp/explain_s.json'))
sync = [s for s in x['suggestions'] if 'gradient sync' in s['addresses']]
assert sync, [s['change'] for s in x['suggestions']]
s = sync[0]
args = ['$PW', 'simulate', '$J'] + '${A[*]}'.split() + sum([['--set', o] for o in s['set']], []) + ['--json']
sim = json.loads(subprocess.check_output(args))
assert abs(sim['iteration_time_ms'] - s['iteration_ms_after']) <= 1e-9 * s['iteration_ms_after'], (s, sim['iteration_time_ms'])
assert s['iteration_ms_after'] < s['iteration_ms_before']
"

# replay and export: the all-reduce events, on a collective track of their own.
check "replay" 0 "$PW" replay "$tmp/a.sqlite"
expect_text "replay names the split" 0 "8 stages x 4 replicas (1 recorded)" "$PW" replay "$tmp/a.sqlite"
"$PW" replay "$tmp/a.sqlite" --json > "$tmp/replay.json"
check "export" 0 "$PW" export "$tmp/a.sqlite" --chrome-trace "$tmp/t.json" --csv "$tmp/csv"
py_check "export: allreduce events on the stages' allreduce tracks; replay counts them" "
import csv, json
rep = json.load(open('$tmp/replay.json')); sim = json.load(open('$tmp/sim_a.json'))
ev = list(csv.DictReader(open('$tmp/csv/events.csv')))
ar = [e for e in ev if e['kind'] == 'allreduce']
assert ar and rep['events_by_kind']['allreduce'] == len(ar), (len(ar), rep['events_by_kind'])
assert rep['events'] == sim['events'] == len(ev)
assert rep['parallel'] == {'tensor': 1, 'stages': 8, 'replicas': 4, 'recorded_replicas': 1}
d = json.load(open('$tmp/t.json'))
tracks = {e['tid']: e['args']['name'] for e in d['traceEvents'] if e.get('name') == 'thread_name'}
x = [e for e in d['traceEvents'] if e['ph'] == 'X' and e.get('cat') == 'allreduce']
assert len(x) == len(ar)
assert all(tracks[e['tid']].endswith(' allreduce') for e in x)
# The sync wait is on the idle tracks too, named by its cause.
assert any(e.get('cat') == 'idle_cause' and e['name'].startswith('gradient_sync') for e in d['traceEvents'])
"

# Two replicas recorded, as the engine's workers record them: replica 1's events are replica 0's, 1 us
# later. explain and export take the pipelines apart; replay's busy shares count both.
cp "$tmp/a.sqlite" "$tmp/two.sqlite"
$PY - "$tmp/two.sqlite" <<'PYEOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("INSERT INTO events(stage, kind, start_ns, end_ns, microbatch, chunk, first_layer, last_layer, bytes, replica) "
          "SELECT stage, kind, start_ns + 1000, end_ns + 1000, microbatch, chunk, first_layer, last_layer, bytes, 1 FROM events")
c.commit()
PYEOF
"$PW" explain "$tmp/two.sqlite" --replica 1 --json --no-suggestions > "$tmp/explain1.json"
py_check "explain --replica 1: its pipeline, the same causes as replica 0's" "
import json
x0 = json.load(open('$tmp/explain.json')); x1 = json.load(open('$tmp/explain1.json'))
assert x1['replica'] == 1 and x1['recorded_replicas'] == 2 and x1['events'] == x0['events']
for a, b in zip(x0['stages'], x1['stages']):
    assert a['causes'] == b['causes'] and a['compute_ns'] == b['compute_ns'], (a['stage'], a['causes'], b['causes'])
    assert b['start_ns'] == a['start_ns'] + 1000
"
"$PW" replay "$tmp/two.sqlite" --json > "$tmp/replay2.json"
check "export two replicas" 0 "$PW" export "$tmp/two.sqlite" --chrome-trace "$tmp/t2.json" --csv "$tmp/csv2"
py_check "two replicas: replay, CSV and trace keep them apart" "
import csv, json
r1 = json.load(open('$tmp/replay.json')); r2 = json.load(open('$tmp/replay2.json'))
assert r2['parallel']['recorded_replicas'] == 2 and r2['events'] == 2 * r1['events']
# Twice the busy time over twice the devices (and a span 1 us longer).
for a, b in zip(r1['stages'], r2['stages']):
    assert b['busy_ns'] == 2 * a['busy_ns']
    assert abs(b['busy_fraction'] - a['busy_fraction'] * r1['span_ns'] / r2['span_ns']) < 1e-9, (a, b)
ev = list(csv.DictReader(open('$tmp/csv2/events.csv')))
assert sorted({e['replica'] for e in ev}) == ['0', '1'] and sum(e['replica'] == '1' for e in ev) == r1['events']
d = json.load(open('$tmp/t2.json'))
procs = {e['pid']: e['args']['name'] for e in d['traceEvents'] if e.get('name') == 'process_name'}
assert set(procs) == {1, 2} and procs[2].endswith(' replica 1'), procs
x = [e for e in d['traceEvents'] if e['ph'] == 'X' and e.get('cat') != 'idle_cause']
assert sum(e['pid'] == 2 for e in x) == r1['events'] and sum(e['pid'] == 1 for e in x) == r1['events']
idle = [e for e in d['traceEvents'] if e.get('cat') == 'idle_cause']
i1 = sorted((e['tid'], e['name'], e['dur']) for e in idle if e['pid'] == 1)
i2 = sorted((e['tid'], e['name'], e['dur']) for e in idle if e['pid'] == 2)
assert i1 and i1 == i2, 'each replica attributed on its own pipeline'
"
checks_done
