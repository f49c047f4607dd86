#!/usr/bin/env bash
# The CLI on recorded runs: simulate --db, replay, export, compare, and the
# errors a user sees for bad files. Figures from replay are checked against
# the CSV export recomputed here in Python, and against simulate's own output.
set -u
PW="$1"; SRC="$2"
. "$SRC/tests/cli_checks.sh"
J="$SRC/resources/jobs"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

check "simulate --db" 0 "$PW" simulate "$J/gpt32-8gpu.json" --db "$tmp/a.sqlite" --json
"$PW" simulate "$J/gpt32-8gpu.json" --db "$tmp/a.sqlite" --overwrite --json > "$tmp/sim.json"
check "replay" 0 "$PW" replay "$tmp/a.sqlite"
expect_text "replay names status" 0 "finished" "$PW" replay "$tmp/a.sqlite"
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
expect_text "compare shows ratios" 0 "B/A" "$PW" compare "$tmp/a.sqlite" "$tmp/b.sqlite"
"$PW" compare "$tmp/a.sqlite" "$tmp/b.sqlite" --json > "$tmp/cmp.json"
py_check "compare ratios are B/A" "
import json
c = json.load(open('$tmp/cmp.json'))
r = [x for x in c['rows'] if x['figure'] == 'throughput samples/s'][0]
assert abs(r['ratio'] - r['b'] / r['a']) < 1e-9 and r['a'] == c['a']['throughput_samples_per_s']
"

# An infeasible plan is recorded as failed, with the reason.
"$PW" simulate "$J/uniform-8stage.json" --db "$tmp/oom.sqlite" --set cluster.memory_gb=1 > /dev/null
expect_text "oom run is failed" 0 '"status": "failed"' "$PW" replay "$tmp/oom.sqlite" --json
expect_text "oom reason" 0 "out of memory" "$PW" replay "$tmp/oom.sqlite"

# Bad files: clear errors, exit 2 (a refusal), no crash.
check "replay missing" 2 "$PW" replay "$tmp/none.sqlite"
expect_text "missing says so" 2 "no such file" "$PW" replay "$tmp/none.sqlite"
head -c 5000 /dev/urandom > "$tmp/garbage.sqlite"
check "replay garbage" 2 "$PW" replay "$tmp/garbage.sqlite"
expect_text "garbage says so" 2 "not a Pipewright run database" "$PW" replay "$tmp/garbage.sqlite"
head -c 70000 "$tmp/a.sqlite" > "$tmp/cut.sqlite"
expect_text "truncated says so" 2 "truncated" "$PW" replay "$tmp/cut.sqlite"
check "export needs an output" 2 "$PW" export "$tmp/a.sqlite"
check "compare needs two" 2 "$PW" compare "$tmp/a.sqlite"

# No recording is ever lost (docs/database.md, "Failure behaviour").
sum_a=$(md5sum < "$tmp/a.sqlite")
check "existing --db refused" 2 "$PW" simulate "$J/gpt32-8gpu.json" --db "$tmp/a.sqlite"
expect_text "existing --db names --overwrite" 2 "give --overwrite" "$PW" simulate "$J/gpt32-8gpu.json" --db "$tmp/a.sqlite"
[ "$(md5sum < "$tmp/a.sqlite")" = "$sum_a" ] && passed=$((passed+1)) || { echo "FAIL refused --db left the recording as it was"; fail=$((fail+1)); }
echo "my notes" > "$tmp/notes.txt"
check "--overwrite of a text file refused" 2 "$PW" simulate "$J/gpt32-8gpu.json" --db "$tmp/notes.txt" --overwrite
expect_text "--overwrite of a text file says why" 2 "not a Pipewright run database" "$PW" simulate "$J/gpt32-8gpu.json" --db "$tmp/notes.txt" --overwrite
[ "$(cat "$tmp/notes.txt")" = "my notes" ] && passed=$((passed+1)) || { echo "FAIL text file changed"; fail=$((fail+1)); }
$PY -c "import sqlite3; c = sqlite3.connect('$tmp/other.db'); c.execute('create table t(x)'); c.execute('insert into t values (42)'); c.commit()"
check "--overwrite of another program's database refused" 2 "$PW" simulate "$J/gpt32-8gpu.json" --db "$tmp/other.db" --overwrite
py_check "the other database is intact" "
import sqlite3; assert sqlite3.connect('$tmp/other.db').execute('select x from t').fetchall() == [(42,)]"
cp "$tmp/a.sqlite" "$tmp/over.sqlite"
check "--overwrite of a run database" 0 "$PW" simulate "$J/gpt32-8gpu.json" --db "$tmp/over.sqlite" --overwrite
py_check "overwritten run is a new run" "
import json, subprocess
a = json.loads(subprocess.check_output(['$PW', 'replay', '$tmp/a.sqlite', '--json']))
b = json.loads(subprocess.check_output(['$PW', 'replay', '$tmp/over.sqlite', '--json']))
assert a['run_id'] != b['run_id'] and b['status'] == 'finished', (a['run_id'], b['run_id'])"
# A second writer: the lock (flock on the file) is held here by flock(1), as a live writer holds it.
# Held until killed (not for a fixed time: a loaded machine starts pipewright slowly).
$PY -c "import fcntl, sys, time; f = open(sys.argv[1], 'rb'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(300)" \
  "$tmp/over.sqlite" > "$tmp/holder.out" & holder=$!
for _ in $(seq 100); do grep -q held "$tmp/holder.out" 2>/dev/null && break; sleep 0.1; done
check "second writer refused" 2 "$PW" simulate "$J/gpt32-8gpu.json" --db "$tmp/over.sqlite" --overwrite
expect_text "second writer says why" 2 "another pipewright process is recording" "$PW" simulate "$J/gpt32-8gpu.json" --db "$tmp/over.sqlite" --overwrite
kill $holder 2>/dev/null; wait $holder 2>/dev/null
check "--db on a directory refused" 2 "$PW" simulate "$J/gpt32-8gpu.json" --db "$tmp" --overwrite

# Hostile or damaged run databases: refused on open (exit 2, naming what is
# wrong) before anything is allocated from them; never a hang.
craft() {  # name, SQL applied to a copy of a.sqlite
  cp "$tmp/a.sqlite" "$tmp/$1.sqlite"
  $PY -c "import sqlite3, sys; c = sqlite3.connect('$tmp/$1.sqlite'); c.executescript(sys.argv[1]); c.commit()" "$2"
}
hostile() {  # name, SQL, text the refusal names[, all: replay, export and compare]
  craft "$1" "$2"
  cmds=("replay $tmp/$1.sqlite")
  [ "${4:-}" = all ] && cmds+=("export $tmp/$1.sqlite --chrome-trace $tmp/$1.json" "compare $tmp/a.sqlite $tmp/$1.sqlite")
  for cmd in "${cmds[@]}"; do
    out=$(timeout 20 "$PW" $cmd 2>&1); rc=$?
    if [ "$rc" != 2 ] || ! grep -qF -- "$3" <<<"$out"; then echo "FAIL hostile $1 ($cmd): exit $rc, want 2 naming '$3'"; echo "$out" | head -5; fail=$((fail+1)); else passed=$((passed+1)); fi
  done
}
hostile stages2e9 "UPDATE run SET stages = 2000000000" "run.stages is 2000000000" all
hostile stagetext "UPDATE run SET stages = 'many'" "run.stages is text"
hostile eventstage "UPDATE events SET stage = 100000000 WHERE id = 1" "events.stage spans 0..100000000" all
hostile negstage "UPDATE events SET stage = -5 WHERE id = 1" "events.stage spans -5.."
hostile backwards "UPDATE events SET end_ns = start_ns - 1 WHERE id = 2" "events: 1 row(s) end before they start"
hostile farfuture "UPDATE events SET end_ns = 9223372036854775807 WHERE id = 3" "events times span"
hostile textstage "UPDATE events SET stage = 'abc' WHERE id = 3" "not an integer"
hostile memstage "UPDATE memory SET stage = 99999999 WHERE id = 1" "memory.stage spans"
hostile recursiveview "DROP TABLE events; CREATE VIEW events AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x AS id, 0 AS stage, 0 AS kind, x AS start_ns, x AS end_ns, 0 AS microbatch, 0 AS chunk, 0 AS first_layer, 0 AS last_layer, 0 AS bytes FROM c;" 'view "events"' all
hostile metaview "DROP TABLE meta; CREATE VIEW meta AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT 'format' AS key, 'pipewright-run' AS value FROM c;" 'view "meta"'
hostile trigger "CREATE TRIGGER t AFTER UPDATE ON run BEGIN SELECT 1; END;" 'trigger "t"'
hostile notable "DROP TABLE logs" 'table "logs" is missing'
check "a valid run still opens" 0 "$PW" replay "$tmp/a.sqlite"

checks_done
