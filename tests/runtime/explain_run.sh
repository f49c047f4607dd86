#!/bin/sh
# `pipewright explain` on a real 2-stage run (issue 21): per stage the causes
# add up to the wall time; the critical path's largest share is the busier
# stage (stage 1 holds the 1024x1024 layer, about 4x stage 0's work); a
# suggestion's figures are what `simulate --set` gives for the recorded job.
# usage: explain_run.sh PIPEWRIGHT WORKER JOB.json
set -u
PW=$1; export PW_WORKER=$2; JOB=$3
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
PY=/usr/bin/python3

"$PW" run "$JOB" --set 'model.widths=[256,1024,1024]' --set training.iterations=6 --run-dir "$T/run" \
  --db "$T/r.sqlite" --quiet > /dev/null 2> "$T/err" || fail "run --db: $(cat "$T/err")"
"$PW" explain "$T/r.sqlite" --json > "$T/x.json" 2> "$T/err" || fail "explain: $(cat "$T/err")"
"$PW" explain "$T/r.sqlite" --json --iteration 1 > "$T/x1.json" 2> "$T/err" || fail "explain --iteration 1: $(cat "$T/err")"
"$PW" explain "$T/r.sqlite" > "$T/x.txt" 2> "$T/err" || fail "explain (text): $(cat "$T/err")"
"$PW" export "$T/r.sqlite" --csv "$T/csv" > /dev/null || fail "export"
$PY - "$T" <<'PYEOF' || fail "checks above"
import csv, json, sys
T = sys.argv[1]
COMPUTE = ('forward', 'backward', 'backward_input', 'backward_weight')
ev = list(csv.DictReader(open(T + '/csv/events.csv')))
for f in ('x.json', 'x1.json'):
    x = json.load(open(T + '/' + f))
    assert x['iterations'] == 6, x['iterations']
    assert len(x['stages']) == 2
    for s in x['stages']:
        assert s['compute_ns'] + sum(s['causes'].values()) == s['wall_ns'], (f, s)
        # Compute: the stage's forward and backward events inside its window.
        own = [e for e in ev if int(e['stage']) == s['stage'] and e['kind'] in COMPUTE
               and s['start_ns'] <= int(e['start_ns']) < s['end_ns']]
        assert s['compute_ns'] == sum(int(e['end_ns']) - int(e['start_ns']) for e in own), (f, s['stage'])
        # The engine receives in Recv events: every wait on the peer names it.
        for k in s['causes']:
            if k.startswith('wait_'): assert k.endswith('_%d' % (1 - s['stage'])), k
    cp = x['critical_path']
    assert abs(sum(s['share'] for s in cp['stages']) - 1) < 1e-9
    busy = {s: sum(int(e['end_ns']) - int(e['start_ns']) for e in ev
                   if int(e['stage']) == s and e['kind'] in ('forward', 'backward', 'optimizer')) for s in (0, 1)}
    assert busy[1] > busy[0], busy
    top = max(cp['stages'], key=lambda s: s['share'])['stage']
    assert top == 1, (cp['stages'], busy)
    p = x['predicted_vs_measured']
    assert p is not None and p['measured_iteration_ms'] > 0 and p['predicted_iteration_ms'] > 0, p
print('ok')
PYEOF
# The model's error advice must beat is over the plan's iterations (the
# first, a warm-up, left out): their mean is the mean of each iteration
# explained alone.
for k in 1 2 3 4 5; do
  "$PW" explain "$T/r.sqlite" --json --iteration $k > "$T/it$k.json" 2> "$T/err" || fail "explain --iteration $k: $(cat "$T/err")"
done
$PY - "$T" <<'PYEOF' || fail "pooled iterations above"
import json, sys
T = sys.argv[1]
x = json.load(open(T + '/x.json'))['predicted_vs_measured']
assert x['plan_iterations'] == 5, x['plan_iterations']
one = [json.load(open('%s/it%d.json' % (T, k)))['predicted_vs_measured'] for k in range(1, 6)]
mean = sum(p['measured_iteration_ms'] for p in one) / 5
assert abs(x['plan_measured_iteration_ms'] - mean) < 1e-5, (x['plan_measured_iteration_ms'], mean)
assert abs(x['plan_predicted_iteration_ms'] - one[0]['predicted_iteration_ms']) < 1e-5
assert x['model_error'] >= abs(mean / x['plan_predicted_iteration_ms'] - 1) - 1e-6, x  # the pooled mean is rounded to 1 ns
# Each stage's and kind's plan mean: over the actions of the five iterations.
for k in x['kinds']:
    rows = [r for p in one for r in p['kinds'] if r['stage'] == k['stage'] and r['kind'] == k['kind']]
    want = sum(r['measured_ms'] * r['measured_count'] for r in rows) / sum(r['measured_count'] for r in rows)
    assert abs(k['plan_measured_ms'] - want) < 1e-9 * max(1, want), (k, want)
print('ok')
PYEOF
grep -q "over 5 iteration(s) of plan 1" "$T/x.txt" || fail "explain's text names the pooled iterations: $(cat "$T/x.txt")"
# The recorded job, re-simulated with each suggestion's --set.
$PY -c "
import sqlite3, json, sys
c = sqlite3.connect('$T/r.sqlite')
json.dump(json.loads(c.execute('SELECT job_json FROM run').fetchone()[0]), open('$T/job.json', 'w'))
x = json.load(open('$T/x.json'))
for s in x['suggestions']:
    print('\t'.join([repr(s['iteration_ms_before']), repr(s['iteration_ms_after'])] + ['--set\t' + o for o in s['set']]))
" > "$T/sets.txt" || fail "reading the recorded job"
"$PW" simulate "$T/job.json" --json > "$T/base.json" || fail "simulate the recorded job"
while IFS="$(printf '\t')" read -r before after rest; do
  # shellcheck disable=SC2086
  sets=$(printf '%s' "$rest" | tr '\t' ' ')
  "$PW" simulate "$T/job.json" $sets --json > "$T/s.json" || fail "simulate $sets"
  $PY -c "
import json
s = json.load(open('$T/s.json')); b = json.load(open('$T/base.json'))
assert abs(s['iteration_time_ms'] - $after) <= 1e-9 * $after, (s['iteration_time_ms'], $after)
assert abs(b['iteration_time_ms'] - $before) <= 1e-9 * $before, (b['iteration_time_ms'], $before)
" || fail "suggestion $sets"
done < "$T/sets.txt"
# The same job under ZB-H1 (B and W apart): each stage's compute is its
# forward, B and W events, the causes fill the rest (explain counted only
# forward and full backward as compute, and found no producer for B).
"$PW" run "$JOB" --set 'model.widths=[256,1024,1024]' --set training.iterations=4 --set pipeline.schedule=zb-h1 \
  --run-dir "$T/zb" --db "$T/zb.sqlite" --quiet > /dev/null 2> "$T/err" || fail "run zb-h1: $(cat "$T/err")"
"$PW" explain "$T/zb.sqlite" --json > "$T/zb.json" 2> "$T/err" || fail "explain zb-h1: $(cat "$T/err")"
"$PW" export "$T/zb.sqlite" --csv "$T/zbcsv" > /dev/null || fail "export zb-h1"
$PY - "$T" <<'PYEOF' || fail "zb-h1 checks above"
import csv, json, sys
T = sys.argv[1]
ev = list(csv.DictReader(open(T + '/zbcsv/events.csv')))
kinds = {e['kind'] for e in ev}
assert {'backward_input', 'backward_weight'} <= kinds and 'backward' not in kinds, kinds
x = json.load(open(T + '/zb.json'))
assert x['iterations'] == 4, x['iterations']
for s in x['stages']:
    assert s['compute_ns'] + sum(s['causes'].values()) == s['wall_ns'], s
    own = [e for e in ev if int(e['stage']) == s['stage'] and e['kind'] in ('forward', 'backward_input', 'backward_weight')
           and s['start_ns'] <= int(e['start_ns']) < s['end_ns']]
    assert s['compute_ns'] == sum(int(e['end_ns']) - int(e['start_ns']) for e in own), (s['stage'], s['compute_ns'])
    for k in s['causes']:
        if k.startswith('wait_'): assert k.endswith('_%d' % (1 - s['stage'])), k
print('zb-h1 ok')
PYEOF
echo "explain on a real run: ok ($(wc -l < "$T/sets.txt") suggestions re-simulated; zb-h1 compute is F + B + W)"
