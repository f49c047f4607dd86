#!/usr/bin/env bash
# Data-parallel replicas as a user plans and simulates them (issue 39): parallel.data and the topology
# fields refused naming the field (exit 2), `plan` with stages and replicas "auto" prints a row per
# split and marks the choice, `plan --json` carries parallel {stages, data} and each stage's replicas,
# `simulate` counts every replica's samples and shows each stage's all-reduce, the trace has the
# all-reduce on a track of its own. Figures are checked against what the job implies, not read back.
set -u
PW=$(realpath "$1"); SRC="$2"
. "$SRC/tests/cli_checks.sh"
J="$SRC/resources/jobs/uniform-8stage.json"  # 32 layers of 32 MB parameters, batch 64 of 4, v100-32g
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

expect_text "replicas beyond the devices" 2 "pipeline.stages: stages x parallel.data (8 x 2) must be <= cluster.devices (8)" \
  "$PW" plan "$J" --set parallel.data=2
expect_text "replicas that do not divide the batch" 2 "parallel.data: training.batch_size (64) must be a multiple of data x microbatch_size" \
  "$PW" plan "$J" --set parallel.data=3 --set cluster.devices=24
expect_text "an unknown parallel field" 2 "parallel.tensor" "$PW" plan "$J" --set parallel.tensor=2
expect_text "gpus_per_node out of range" 2 "cluster.gpus_per_node" "$PW" plan "$J" --set cluster.gpus_per_node=0
expect_text "stages auto with microbatches given" 2 "pipeline.microbatches" \
  "$PW" plan "$J" --set pipeline.stages=auto --set pipeline.microbatches=16

# 32 devices, both degrees auto: every split that uses all 32 and gives each replica whole
# microbatches of 4 (64 / (4 d) whole: d in 1, 2, 4, 8, 16), at most 32 stages.
expect_text "plan: the split table" 0 "stages x replicas (auto)" \
  "$PW" plan "$J" --set cluster.devices=32 --set parallel.data=auto --set pipeline.stages=auto
grep -c "<- chosen" <<<"$out" | grep -qx 1 || { echo "FAIL plan: one row chosen"; fail=$((fail+1)); }
"$PW" plan "$J" --set cluster.devices=32 --set parallel.data=auto --set pipeline.stages=auto --json > "$T/plan.json"
py_check "plan --json: the splits and the choice" "
import json; p = json.load(open('$T/plan.json'))
rows = p['parallel_search']
assert sorted((r['stages'], r['data']) for r in rows) == [(2, 16), (4, 8), (8, 4), (16, 2), (32, 1)], rows
s, d = p['parallel']['stages'], p['parallel']['data']
assert s * d == 32 and all(st['replicas'] == d for st in p['stages']), p['parallel']
best = min(r['iteration_time_ms'] for r in rows if r['feasible'] and r['iteration_time_ms'] > 0)
assert abs(p['iteration_time_ms'] - best) < 1e-9, (p['iteration_time_ms'], best)
for r in rows:
    if r['iteration_time_ms'] > 0:  # every replica's samples: the global batch per iteration
        assert abs(r['throughput_samples_per_s'] - 64 / (r['iteration_time_ms'] / 1e3)) < 1e-6 * r['throughput_samples_per_s'], r
"

# simulate 8 stages x 4 replicas on 32 v100s (8 per node): each replica 4 microbatches of 4; each stage's
# 4 layers x 32 MiB of gradients all-reduced inside its node (stage s on devices 4s..4s+3).
"$PW" simulate "$J" --set cluster.devices=32 --set parallel.data=4 --json > "$T/sim.json"
py_check "simulate: replicas, throughput and each stage's all-reduce" "
import json; r = json.load(open('$T/sim.json'))
assert r['replicas'] == 4 and r['microbatches'] == 4, (r['replicas'], r['microbatches'])
assert abs(r['throughput_samples_per_s'] - 64 / (r['iteration_time_ms'] / 1e3)) < 1e-6 * r['throughput_samples_per_s']
for st in r['stages']:
    buckets = 4  # each layer's 32 MiB closes a bucket
    # a ring of 4 over NVLink 2 one way: 150 GB/s (the datasheet's 300 is both directions) = 1200 Gbit/s
    one = 2 * 3 / 4 * 32 * 2**20 * 8 / 1200e9 * 1e3 + 2 * 3 * 8e-3
    assert abs(st['sync_ms'] - buckets * one) <= buckets * 1e-6, (st['sync_ms'], buckets * one)  # whole ns each
    assert 0 <= st['sync_exposed_ms'] <= st['sync_ms'] + 1e-9
"
expect_text "simulate: the human table says replicas" 0 "4 replicas" "$PW" simulate "$J" --set cluster.devices=32 --set parallel.data=4
"$PW" simulate "$J" --set cluster.devices=32 --set parallel.data=4 --trace "$T/t.json" > /dev/null
py_check "trace: all-reduce events on their own track" "
import json; t = json.load(open('$T/t.json'))['traceEvents']
names = {e['tid']: e['args']['name'] for e in t if e.get('ph') == 'M' and e.get('name') == 'thread_name'}
ar = [e for e in t if e.get('cat') == 'allreduce']
assert len(ar) == 8 * 4, len(ar)
assert all(names[e['tid']].endswith('allreduce') for e in ar), set(names[e['tid']] for e in ar)
assert all(e['args']['bytes'] == 32 * 2**20 for e in ar)
"
checks_done
