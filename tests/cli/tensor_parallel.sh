#!/usr/bin/env bash
# `pipewright run` and `launch` with tensor parallelism (issue 40, the
# engine): the shipped 2 stages x t 2 tiny GPT runs as four workers, each
# tensor rank saving its shard, tensor rank 0 recording the group's
# all-reduces as tensor_allreduce events that explain counts as tensor
# synchronisation; launch lays out WORLD_SIZE = stages x replicas x t with
# the tensor rank fastest; a model that cannot be split is refused naming
# parallel.tensor, and a t not dividing the vocabulary is refused by simulate as by run. Figures are
# recomputed here from the run's own files.
# usage: tensor_parallel.sh PIPEWRIGHT WORKER SOURCE_DIR
set -u
PW="$1"; export PW_WORKER="$2"; SRC="$3"
. "$SRC/tests/cli_checks.sh"
J="$SRC/resources/jobs/tiny-gpt-tp2.json"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

check "run 2 stages x t 2 (4 iterations)" 0 "$PW" run "$J" --run-dir "$tmp/run" --db "$tmp/run.sqlite" \
  --set training.iterations=4 --threads 1 --quiet
py_check "four workers, rank = (stage x 1 + 0) x 2 + tensor, a shard file each, rank 0's events only" "
import json, os
r = json.load(open('$tmp/run/result.json'))
ws = sorted((w['stage'], w['tensor'], w['rank']) for w in r['stages'])
assert ws == [(0, 0, 0), (0, 1, 1), (1, 0, 2), (1, 1, 3)], ws
for f in ['stage0.pt', 'stage0.tensor1.pt', 'stage1.pt', 'stage1.tensor1.pt']:
    assert os.path.getsize('$tmp/run/weights/' + f) > 0, f
ev = sorted(os.listdir('$tmp/run/events'))
assert ev == ['stage0.jsonl', 'stage1.jsonl'], ev
n = 0
for f in ev:
    kinds = [json.loads(l)['kind'] for l in open('$tmp/run/events/' + f) if l.strip()]
    t = kinds.count('tensor_allreduce')
    # 8 microbatches x (forward + backward) x 4 iterations
    assert t == 64, (f, t)
    n += t
assert len(r['losses']) == 4
"
"$PW" explain "$tmp/run.sqlite" --json --no-suggestions > "$tmp/explain.json"
py_check "explain: the tensor all-reduces are their own cause, from the recorded events" "
import json
x = json.load(open('$tmp/explain.json'))
for st in x['stages']:
    assert st['compute_ns'] + sum(st['causes'].values()) == st['wall_ns'], st
    assert st['causes'].get('tensor_sync', 0) > 0, st['causes']
"

# compare: the split with its tensor size, and each stage's tensor all-reduce time (communication, apart
# from busy), recomputed here from the events table of each file.
check "simulate the same job into a recording" 0 "$PW" simulate "$J" --db "$tmp/sim.sqlite" --set training.iterations=4
expect_text "compare names the tensor ranks" 0 "2 stages x 1 replica x 2 tensor ranks" \
  "$PW" compare "$tmp/run.sqlite" "$tmp/sim.sqlite"
"$PW" compare "$tmp/run.sqlite" "$tmp/sim.sqlite" --json > "$tmp/compare.json"
py_check "compare: each stage's tensor all-reduce ms is its events' sum, apart from busy" "
import json, sqlite3
c = json.load(open('$tmp/compare.json'))
rows = {r['figure']: r for r in c['rows']}
assert rows['tensor']['a'] == 2 and rows['tensor']['b'] == 2, rows['tensor']
for side, f in (('a', '$tmp/run.sqlite'), ('b', '$tmp/sim.sqlite')):
    db = sqlite3.connect(f)
    for s in (0, 1):
        ns = db.execute('SELECT sum(end_ns - start_ns) FROM events WHERE stage = ? AND kind = 13', (s,)).fetchone()[0]
        assert ns and ns > 0, (side, s)
        got = rows['stage %d tensor all-reduce ms' % s][side]
        assert abs(got - ns / 1e6) <= 1e-9 * max(1.0, ns / 1e6), (side, s, got, ns)
        busy = db.execute('SELECT sum(end_ns - start_ns) FROM events WHERE stage = ? AND kind IN (0, 1, 2, 10, 11, 7)', (s,)).fetchone()[0] or 0
        assert abs(rows['stage %d busy ms' % s][side] - busy / 1e6) <= 1e-6 * max(1.0, busy / 1e6), (side, s)
"

expect_text "launch: WORLD_SIZE = 2 stages x 1 replica x 2 tensor ranks" 0 "WORLD_SIZE=4 RANK=3" \
  "$PW" launch "$J" --hosts a,b
expect_text "launch: the tensor rank fastest" 0 "RANK = (stage x replicas + replica) x 2 + tensor rank" \
  "$PW" launch "$J" --hosts a,b
expect_text "a CNN cannot be split" 2 "parallel.tensor" \
  "$PW" run "$SRC/resources/jobs/demo-fmnist-cnn.json" --set parallel.tensor=2 --set cluster.devices=4 \
  --run-dir "$tmp/cnn"
# One rule for the planner and the engine (core/spec/tensor_split.h): GPT-2's vocabulary of 50257 splits
# over no t > 1, so simulate refuses a pinned t = 2 exactly as run does, naming both fields.
G="$SRC/resources/jobs/gpt32-8gpu.json"
vocab_refusal="parallel.tensor: 2 tensor ranks do not divide the vocabulary of 50257 tokens (model.vocab)"
expect_text "simulate: t 2 does not divide the vocabulary" 2 "$vocab_refusal" \
  "$PW" simulate "$G" --set parallel.tensor=2 --set pipeline.stages=4
sim_says=$out
expect_text "run: t 2 does not divide the vocabulary" 2 "$vocab_refusal" \
  "$PW" run "$G" --set parallel.tensor=2 --set pipeline.stages=4 --run-dir "$tmp/vocab"
if [ "$out" = "$sim_says" ]; then passed=$((passed+1))
else echo "FAIL run and simulate refuse in different words:"; echo "$out"; echo "$sim_says"; fail=$((fail+1)); fi
checks_done
