#!/usr/bin/env bash
# `pipewright run` with 2 stages x 2 replicas and a scripted live migration
# (issue 39): the run records the migration (one row per moved layer, from
# the partition in force to the scripted one, recomputed here from the
# recorded plans), both replicas' events, and each worker's memory samples
# stamped with its replica; migration.json and the workers agree.
# usage: replicas_migration.sh PIPEWRIGHT WORKER SOURCE_DIR
set -u
PW="$1"; export PW_WORKER="$2"; SRC="$3"
. "$SRC/tests/cli_checks.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# The tiny MLP (3 layers) as 2 x 2; layer 1 goes to stage 1 at iteration 2, back to stage 0 at 4.
$PY - "$SRC/tests/runtime/tiny-mlp-2x2.json" "$tmp/job.json" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
j["training"]["iterations"] = 6
j["pipeline"]["planner"] = "uniform"
j["runtime"] = {"migrate": [{"iteration": 2, "stages": [[0, 0], [1, 2]]},
                            {"iteration": 4, "stages": [[0, 1], [2, 2]]}]}
json.dump(j, open(sys.argv[2], "w"))
PYEOF
check "run 2 x 2 with a migration" 0 "$PW" run "$tmp/job.json" --run-dir "$tmp/run" --db "$tmp/run.sqlite" --quiet
expect_text "a replicated run with runtime is no longer refused" 0 "migration v" \
  "$PW" run "$tmp/job.json" --run-dir "$tmp/run2" --set training.iterations=3

py_check "the migrations recorded: every moved layer, from the plan in force to the scripted one" "
import json, sqlite3
c = sqlite3.connect('$tmp/run.sqlite')
plans = [json.loads(p) for (p,) in c.execute('SELECT plan_json FROM plans ORDER BY version')]
assert plans, 'no plan recorded'
def owner(stages, l):
    return next(s for s, (a, b) in enumerate(stages) if a <= l <= b)
cur = [[s['first_layer'], s['last_layer']] if isinstance(s, dict) else s for s in plans[0]['stages']]
want = []
for v, to in enumerate([[[0, 0], [1, 2]], [[0, 1], [2, 2]]], start=1):
    for l in range(3):
        if owner(cur, l) != owner(to, l): want.append((l, owner(cur, l), owner(to, l), v))
    cur = to
got = [tuple(r) for r in c.execute('SELECT layer, from_stage, to_stage, plan_version FROM migrations ORDER BY id')]
assert got == want, (got, want)
assert len(got) >= 1
rep = json.load(open('$tmp/run/migration.json'))
assert [m['iteration'] for m in rep['migrations']] == [2, 4], rep['migrations']
assert rep['final_plan']['data_parallel'] == 2 if 'data_parallel' in rep['final_plan'] else True
# Both replicas trained and were recorded, and agreed at the end.
reps = {r for (r,) in c.execute('SELECT DISTINCT replica FROM events')}
assert reps == {0, 1}, reps
summary = json.loads(c.execute('SELECT summary_json FROM run').fetchone()[0])
h = {}
for w in summary['stages']:
    h.setdefault(w['stage'], set()).add(w['weights_fnv1a'])
assert all(len(v) == 1 for v in h.values()), h
"
py_check "memory samples: every worker's, stamped with its stage and replica, one per iteration" "
import sqlite3
c = sqlite3.connect('$tmp/run.sqlite')
rows = list(c.execute('SELECT stage, replica, count(*), min(bytes), min(parameters) FROM memory GROUP BY stage, replica'))
assert [(s, r) for s, r, *_ in rows] == [(0, 0), (0, 1), (1, 0), (1, 1)], rows
for s, r, n, b, p in rows:
    assert n == 6, (s, r, n)  # one per iteration
    assert b > 0 and p > 0, (s, r, b, p)
# The replicas hold the same model: the same parameter bytes, stage by stage, at each iteration.
for s in (0, 1):
    a = [p for (p,) in c.execute('SELECT parameters FROM memory WHERE stage = ? AND replica = 0 ORDER BY t_ns', (s,))]
    b = [p for (p,) in c.execute('SELECT parameters FROM memory WHERE stage = ? AND replica = 1 ORDER BY t_ns', (s,))]
    assert a == b, (s, a, b)
# The migration moved layer 1 and back: stage 1's parameters changed with it.
p1 = [p for (p,) in c.execute('SELECT parameters FROM memory WHERE stage = 1 AND replica = 0 ORDER BY t_ns')]
assert len(set(p1)) > 1, p1
"
checks_done
