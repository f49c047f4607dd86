#!/usr/bin/env bash
# `pipewright explain` on simulate --db recordings: causes add up to the wall
# time per stage (checked against the exported events), the critical path
# names the busiest stage, a simulated recording matches its prediction
# exactly, each suggestion's figures are what `simulate --set` gives, and
# the Chrome export carries the attribution.
set -u
PW="$1"; SRC="$2"
. "$SRC/tests/cli_checks.sh"
J="$SRC/resources/jobs"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$PW" simulate "$J/gpt32-8gpu.json" --db "$tmp/a.sqlite" --json > "$tmp/sim.json"
check "explain" 0 "$PW" explain "$tmp/a.sqlite"
expect_text "explain prints the critical path" 0 "critical path:" "$PW" explain "$tmp/a.sqlite"
check "explain --json" 0 "$PW" explain "$tmp/a.sqlite" --json
"$PW" explain "$tmp/a.sqlite" --json > "$tmp/x.json"
"$PW" export "$tmp/a.sqlite" --csv "$tmp/csv" --chrome-trace "$tmp/t.json" > /dev/null

py_check "causes add up to the wall time; compute is the events' forward and backward time" "
import csv, json
x = json.load(open('$tmp/x.json')); sim = json.load(open('$tmp/sim.json'))
ev = list(csv.DictReader(open('$tmp/csv/events.csv')))
assert len(x['stages']) == sim['stages_count'] == 8, len(x['stages'])
end = max(int(e['end_ns']) for e in ev); start = min(int(e['start_ns']) for e in ev)
for s in x['stages']:
    for k in ('stage', 'wall_ns', 'compute_ns', 'causes'): assert k in s, k
    assert s['compute_ns'] + sum(s['causes'].values()) == s['wall_ns'], s
    # One simulated iteration: every stage's window is the whole run.
    assert s['wall_ns'] == end - start, (s['wall_ns'], end - start)
    # The simulator's recomputes are apart from the backward: compute is the
    # forward and backward events' time, recompute its own cause.
    own = [e for e in ev if int(e['stage']) == s['stage']]
    fb = sum(int(e['end_ns']) - int(e['start_ns']) for e in own if e['kind'] in ('forward', 'backward'))
    rc = sum(int(e['end_ns']) - int(e['start_ns']) for e in own if e['kind'] == 'recompute')
    op = sum(int(e['end_ns']) - int(e['start_ns']) for e in own if e['kind'] == 'optimizer')
    assert s['compute_ns'] == fb, (s['stage'], s['compute_ns'], fb)
    assert s['causes']['recompute'] == rc, (s['causes']['recompute'], rc)
    assert s['causes']['optimizer'] >= op
    # The replayed bubble is what is not busy; here: everything but compute, recompute and the step.
"
py_check "critical path: shares add to 1 and name the busiest stage" "
import json
x = json.load(open('$tmp/x.json')); cp = x['critical_path']
assert abs(sum(s['share'] for s in cp['stages']) - 1) < 1e-9
assert cp['length_ns'] == x['stages'][0]['wall_ns']
# The busiest stages: gpt32's plan has two of equal compute (3 and 5), and the path may run through either.
most = max(s['compute_ns'] for s in x['stages'])
busiest = [s['stage'] for s in x['stages'] if s['compute_ns'] == most]
top = max(cp['stages'], key=lambda s: s['share'])['stage']
assert top in busiest, (top, busiest)
assert sum(s['end_ns'] - s['start_ns'] for s in cp['steps']) == cp['length_ns']
"
py_check "a simulated run is its own prediction" "
import json
p = json.load(open('$tmp/x.json'))['predicted_vs_measured']
assert p is not None and p['first_divergence'] is None, p and p['first_divergence']
assert all(abs(k['ratio'] - 1) < 1e-12 for k in p['kinds']), p['kinds']
assert abs(p['ratio'] - 1) < 1e-12
sim = json.load(open('$tmp/sim.json'))
assert abs(p['predicted_iteration_ms'] - sim['iteration_time_ms']) < 1e-6, (p['predicted_iteration_ms'], sim['iteration_time_ms'])
"
# Each suggestion, re-simulated with the --set it names.
"$PY" - "$tmp/x.json" > "$tmp/sets.txt" <<'PYEOF'
import json, sys
for s in json.load(open(sys.argv[1]))['suggestions']:
    print('\t'.join([repr(s['iteration_ms_before']), repr(s['iteration_ms_after'])] + ['--set\t' + o for o in s['set']]))
PYEOF
n=0
while IFS=$'\t' read -r before after rest; do
  n=$((n+1))
  IFS=$'\t' read -r -a sets <<<"$rest"
  "$PW" simulate "$J/gpt32-8gpu.json" "${sets[@]}" --json > "$tmp/s$n.json"
  py_check "suggestion $n (${sets[*]}) is what simulate gives" "
import json
s = json.load(open('$tmp/s$n.json')); base = json.load(open('$tmp/sim.json'))
assert abs(s['iteration_time_ms'] - $after) <= 1e-9 * $after, (s['iteration_time_ms'], $after)
assert abs(base['iteration_time_ms'] - $before) <= 1e-9 * $before, (base['iteration_time_ms'], $before)
assert $after < $before and s['feasible']
"
done < "$tmp/sets.txt"
[ "$n" -gt 0 ] && passed=$((passed+1)) || { echo "FAIL gpt32-8gpu has no suggestion (its 33% bubble shrinks with more microbatches)"; fail=$((fail+1)); }

py_check "the Chrome trace carries the attribution, one track per stage" "
import json
d = json.load(open('$tmp/t.json')); x = json.load(open('$tmp/x.json'))
names = {e['tid']: e['args']['name'] for e in d['traceEvents'] if e.get('name') == 'thread_name'}
idle = [e for e in d['traceEvents'] if e.get('cat') == 'idle_cause']
assert all('stage %d idle' % s in names.values() for s in range(8)), names
for s in x['stages']:
    tid = [t for t, n in names.items() if n == 'stage %d idle' % s['stage']][0]
    mine = [e for e in idle if e['tid'] == tid]
    total_us = sum(e['dur'] for e in mine)
    assert abs(total_us * 1000 - (s['wall_ns'] - s['compute_ns'])) < 1 + len(mine), (s['stage'], total_us, s['wall_ns'] - s['compute_ns'])
    for name, ns in s['causes'].items():
        got = sum(e['dur'] for e in mine if e['name'] == name) * 1000
        assert abs(got - ns) < 1 + len(mine), (s['stage'], name, got, ns)
"

# A balanced job: GPipe on identical layers without transfers: fill + drain
# is each stage's closed-form bubble (p - 1)(f + b) (f, b: a stage's per-microbatch times).
"$PW" simulate "$J/uniform-8stage.json" --db "$tmp/u.sqlite" --set pipeline.schedule=gpipe --set cluster.link_gbps=1e9 --set cluster.link_latency_us=0 --json > "$tmp/u.json" 2> "$tmp/u.err"
if [ -s "$tmp/u.sqlite" ]; then
  "$PW" explain "$tmp/u.sqlite" --json --no-suggestions > "$tmp/ux.json"
  "$PW" export "$tmp/u.sqlite" --csv "$tmp/ucsv" > /dev/null
  py_check "balanced GPipe: fill + drain is the closed-form bubble" "
import csv, json
x = json.load(open('$tmp/ux.json')); sim = json.load(open('$tmp/u.json'))
ev = list(csv.DictReader(open('$tmp/ucsv/events.csv')))
p = sim['stages_count']; m = sim['microbatches']
for s in x['stages']:
    own = [e for e in ev if int(e['stage']) == s['stage']]
    f = [int(e['end_ns']) - int(e['start_ns']) for e in own if e['kind'] == 'forward']
    b = [int(e['end_ns']) - int(e['start_ns']) for e in own if e['kind'] in ('backward', 'recompute')]
    assert len(set(f)) == 1 and len(f) == m, 'uniform forwards expected'
    bubble = (p - 1) * (f[0] + sum(b) // m)
    c = s['causes']
    assert c['fill'] + c['drain'] == bubble, (s['stage'], c['fill'] + c['drain'], bubble, c)
"
else
  echo "FAIL uniform-8stage simulate --db"; cat "$tmp/u.err"; fail=$((fail+1))
fi

# Bad input: clear errors.
check "iteration out of range" 2 "$PW" explain "$tmp/a.sqlite" --iteration 3
expect_text "iteration range named" 2 "1 complete iteration" "$PW" explain "$tmp/a.sqlite" --iteration 3
check "iteration not a number" 2 "$PW" explain "$tmp/a.sqlite" --iteration x
check "explain needs a file" 2 "$PW" explain
check "explain missing file" 2 "$PW" explain "$tmp/none.sqlite"

checks_done
