#!/bin/bash
# A real run's recorded stage peak (run database 1.4, memory.peak) is the
# iteration's high-water mark of the engine's memory account, not the
# iteration-end sample, when the activations are already freed. Under GPipe
# stage 0 holds every microbatch's activations before its first backward,
# so its peak is at least its weights plus m microbatches of layer 0's ReLU
# output (b x w fp32 values each: the tensor ReLU saves for its backward),
# counted here by hand from the job's shape. compare's run-side "peak GiB"
# is that recorded peak.
# usage: memory_peak.sh PIPEWRIGHT WORKER SOURCE_DIR
set -u
PW=$1; export PW_WORKER=$2; SRC=$3
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
J=$SRC/tests/runtime/tiny-mlp.json  # input 20, fp32
# layers: Linear(20, 1024) + ReLU on stage 0, Linear(1024, 5) on stage 1; 8 microbatches of 64
SETS=(--set 'model.widths=[1024]' --set pipeline.schedule=gpipe --set training.batch_size=512
      --set training.microbatch_size=64 --set training.iterations=3 --set data.samples=1024)
"$PW" run "$J" "${SETS[@]}" --run-dir "$T/run" --db "$T/run.sqlite" --threads 1 --quiet > "$T/run.log" 2>&1 ||
  { echo "FAIL: the run"; cat "$T/run.log"; exit 1; }
"$PW" simulate "$J" "${SETS[@]}" --db "$T/sim.sqlite" > /dev/null || { echo "FAIL: simulate"; exit 1; }
"$PW" compare "$T/run.sqlite" "$T/sim.sqlite" --json > "$T/compare.json" || { echo "FAIL: compare"; exit 1; }
python3 - "$T/run.sqlite" "$T/compare.json" <<'PYEOF' || exit 1
import json, sqlite3, sys
run, compare = sys.argv[1:3]
inputs, width, b, m = 20, 1024, 64, 8
weights = (inputs * width + width) * 4  # layer 0's Linear
held = m * b * width * 4                # the ReLU outputs in flight before the first backward
rows = sqlite3.connect(run).execute("SELECT bytes, peak FROM memory WHERE stage = 0").fetchall()
assert len(rows) == 3, rows  # one per iteration end
assert all(p is not None and p >= s for s, p in rows), rows
peak = max(p for _, p in rows)
assert peak >= weights + held, (peak, weights + held)
# Why the peak is recorded: every iteration-end sample is below the hand count.
assert max(s for s, _ in rows) < weights + held, (rows, weights + held)
c = {r['figure']: r for r in json.load(open(compare))['rows']}
got = c['stage 0 peak GiB']['a'] * 2**30
assert abs(got - peak) <= 1e-6 * peak, (got, peak)
print("stage 0: peak %d B >= %d B by hand; iteration-end samples %s" % (peak, weights + held, [s for s, _ in rows]))
PYEOF
echo "PASS"
