#!/usr/bin/env bash
# The CLI on recorded runs: simulate --db, replay, export, compare, and the
# errors a user sees for bad files. Figures from replay are checked against
# the CSV export recomputed here in Python, and against simulate's own output.
set -u
PW="$1"; SRC="$2"
PY=/usr/bin/python3
fail=0; passed=0
check() {  # name, expected exit, command...
  local name="$1" want="$2"; shift 2
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$want" ]; then echo "FAIL $name: exit $rc, want $want"; echo "$out" | head -20; fail=$((fail+1)); else passed=$((passed+1)); fi
}
expect_text() {  # name, text, command...
  local name="$1" text="$2"; shift 2
  out=$("$@" 2>&1)
  if ! grep -qF -- "$text" <<<"$out"; then echo "FAIL $name: output lacks '$text'"; echo "$out" | head -20; fail=$((fail+1)); else passed=$((passed+1)); fi
}
py_check() {  # name, python code (exit 0 = pass)
  local name="$1"; shift
  if out=$("$PY" -c "$1" 2>&1); then passed=$((passed+1)); else echo "FAIL $name"; echo "$out" | tail -20; fail=$((fail+1)); fi
}
J="$SRC/resources/jobs"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

check "simulate --db" 0 "$PW" simulate "$J/gpt32-8gpu.json" --db "$tmp/a.sqlite" --json
"$PW" simulate "$J/gpt32-8gpu.json" --db "$tmp/a.sqlite" --json > "$tmp/sim.json"
check "replay" 0 "$PW" replay "$tmp/a.sqlite"
expect_text "replay names status" "finished" "$PW" replay "$tmp/a.sqlite"
"$PW" replay "$tmp/a.sqlite" --json > "$tmp/replay.json"
check "export" 0 "$PW" export "$tmp/a.sqlite" --chrome-trace "$tmp/t.json" --csv "$tmp/csv"

# Round trip: simulate's figures == database == replay, recomputed from the CSV.
py_check "replay matches simulate and the exported events" "
import csv, json
sim = json.load(open('$tmp/sim.json')); rep = json.load(open('$tmp/replay.json'))
ev = list(csv.DictReader(open('$tmp/csv/events.csv')))
assert rep['events'] == sim['events'] == len(ev), (rep['events'], sim['events'], len(ev))
assert rep['first_start_ns'] == min(int(e['start_ns']) for e in ev)
assert rep['last_end_ns'] == max(int(e['end_ns']) for e in ev)
assert rep['duration_sum_ns'] == sum(int(e['end_ns']) - int(e['start_ns']) for e in ev)
assert rep['bytes'] == sum(int(e['bytes']) for e in ev)
busy = {}
for e in ev:
    if e['kind'] in ('forward', 'backward', 'recompute', 'optimizer'):
        busy[int(e['stage'])] = busy.get(int(e['stage']), 0) + int(e['end_ns']) - int(e['start_ns'])
mem = {}
for m in csv.DictReader(open('$tmp/csv/memory.csv')):
    mem[int(m['stage'])] = max(mem.get(int(m['stage']), 0), int(m['bytes']))
for s in rep['stages']:
    assert s['busy_ns'] == busy[s['stage']], s
    assert s['peak_memory_bytes'] == mem[s['stage']] == sim['stages'][s['stage']]['peak_memory_bytes'], s
assert abs(rep['throughput_samples_per_s'] - sim['throughput_samples_per_s']) < 1e-6 * sim['throughput_samples_per_s']
assert rep['status'] == 'finished' and rep['planner'] == sim['planner']
"
py_check "chrome trace is valid, one track per stage" "
import json
d = json.load(open('$tmp/t.json')); sim = json.load(open('$tmp/sim.json'))
x = [e for e in d['traceEvents'] if e['ph'] == 'X' and e.get('cat') != 'idle_cause']
assert len(x) == sim['events'], (len(x), sim['events'])
names = {e['args']['name'] for e in d['traceEvents'] if e.get('name') == 'thread_name'}
assert all('stage %d compute' % s in names for s in range(sim['stages_count'])), names
"
for f in events memory throughput migrations subnet_states subnet_edges logs plans; do
  [ -s "$tmp/csv/$f.csv" ] && passed=$((passed+1)) || { echo "FAIL csv $f.csv missing"; fail=$((fail+1)); }
done

"$PW" simulate "$J/gpt32-8gpu.json" --db "$tmp/b.sqlite" --set pipeline.schedule=gpipe > /dev/null
check "compare" 0 "$PW" compare "$tmp/a.sqlite" "$tmp/b.sqlite"
expect_text "compare shows ratios" "B/A" "$PW" compare "$tmp/a.sqlite" "$tmp/b.sqlite"
"$PW" compare "$tmp/a.sqlite" "$tmp/b.sqlite" --json > "$tmp/cmp.json"
py_check "compare ratios are B/A" "
import json
c = json.load(open('$tmp/cmp.json'))
r = [x for x in c['rows'] if x['figure'] == 'throughput samples/s'][0]
assert abs(r['ratio'] - r['b'] / r['a']) < 1e-9 and r['a'] == c['a']['throughput_samples_per_s']
"

# An infeasible plan is recorded as failed, with the reason.
"$PW" simulate "$J/uniform-8stage.json" --db "$tmp/oom.sqlite" --set cluster.memory_gb=1 > /dev/null
expect_text "oom run is failed" '"status": "failed"' "$PW" replay "$tmp/oom.sqlite" --json
expect_text "oom reason" "out of memory" "$PW" replay "$tmp/oom.sqlite"

# Bad files: clear errors, exit 1, no crash.
check "replay missing" 1 "$PW" replay "$tmp/none.sqlite"
expect_text "missing says so" "no such file" "$PW" replay "$tmp/none.sqlite"
head -c 5000 /dev/urandom > "$tmp/garbage.sqlite"
check "replay garbage" 1 "$PW" replay "$tmp/garbage.sqlite"
expect_text "garbage says so" "not a Pipewright run database" "$PW" replay "$tmp/garbage.sqlite"
head -c 70000 "$tmp/a.sqlite" > "$tmp/cut.sqlite"
expect_text "truncated says so" "truncated" "$PW" replay "$tmp/cut.sqlite"
check "export needs an output" 2 "$PW" export "$tmp/a.sqlite"
check "compare needs two" 2 "$PW" compare "$tmp/a.sqlite"

echo "$passed passed, $fail failed"
[ "$fail" = 0 ]
