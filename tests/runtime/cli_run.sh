#!/bin/sh
# `pipewright run` and `pipewright profile` as users call them: exit codes,
# messages naming fields and stages, files written.
# usage: cli_run.sh PIPEWRIGHT WORKER JOB.json
set -u
PW=$1; export PW_WORKER=$2; JOB=$3
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$PW" run "$JOB" --run-dir "$T/run" --quiet > "$T/out" 2> "$T/err" || fail "run exited $?: $(cat "$T/err")"
grep -q "done: 20 iterations" "$T/out" || fail "no summary: $(cat "$T/out")"
for f in job.json plan.json result.json weights/stage0.pt weights/stage1.pt events/stage1.jsonl; do
  [ -s "$T/run/$f" ] || fail "missing $f"
done
grep -q '"kind":"forward"' "$T/run/events/stage0.jsonl" || fail "no forward events"

"$PW" run "$JOB" --run-dir "$T/bad" --set data.kind=mnist > /dev/null 2> "$T/err"
[ $? -eq 2 ] || fail "bad data.kind should exit 2"
grep -q "data.kind" "$T/err" || fail "error should name data.kind: $(cat "$T/err")"
# Nothing accepted and ignored: workers train in fp32, so fp16 is refused
# before anything starts; supernet stages run one thread each, so --threads is too.
"$PW" run "$JOB" --run-dir "$T/fp16" --set model.precision=fp16 > /dev/null 2> "$T/err"
[ $? -eq 2 ] || fail "an fp16 run should exit 2"
grep -q "model.precision: .run. trains in fp32" "$T/err" || fail "error should name model.precision: $(cat "$T/err")"
[ ! -e "$T/fp16" ] || fail "a refused run should leave no run directory"
SUPERNET="$(dirname "$JOB")/../../resources/jobs/fmnist-supernet.json"
"$PW" run "$SUPERNET" --run-dir "$T/nas" --threads 2 > /dev/null 2> "$T/err"
[ $? -eq 2 ] || fail "--threads on a supernet job should exit 2"
grep -q -- "--threads is not supported for a supernet job" "$T/err" || fail "error should name --threads: $(cat "$T/err")"

"$PW" run "$JOB" --run-dir "$T/oom" --set cluster.memory_gb=0.001 --set "model.widths=[2048,2048]" > /dev/null 2> "$T/err"
[ $? -eq 1 ] || fail "over budget should exit 1"
grep -q "stage [01]: memory budget exceeded" "$T/err" || fail "error should name the stage: $(cat "$T/err")"

"$PW" profile "$JOB" -o "$T/prof.json" --repeats 2 > /dev/null 2> "$T/err" || fail "profile: $(cat "$T/err")"
grep -q '"measured"' "$T/prof.json" || fail "profile source should be measured"
"$PW" run "$JOB" --profile "$T/prof.json" --run-dir "$T/prof-run" --quiet > /dev/null 2> "$T/err" || fail "run from profile: $(cat "$T/err")"
# In situ: the profile's compute rescaled by a short run of the job, and every later plan says so.
"$PW" profile "$JOB" -o "$T/cal.json" --repeats 2 --in-situ 3 > "$T/out" 2> "$T/err" || fail "profile --in-situ: $(cat "$T/err")"
grep -q "calibrated profile written" "$T/out" || fail "no calibration summary: $(cat "$T/out")"
grep -q "cluster.send_cpu_us=.*cluster.action_overhead_us=" "$T/out" || fail "in-situ send cost and action overhead not printed: $(cat "$T/out")"
"$PW" plan "$JOB" --profile "$T/cal.json" > /dev/null 2> "$T/err" || fail "plan from a calibrated profile: $(cat "$T/err")"
grep -q "note: compute calibrated in situ" "$T/err" || fail "plan should say the profile is calibrated: $(cat "$T/err")"
# At several sizes the host time per action is a table by size, printed as shell words to paste
# (quoted: the JSON's braces and commas are shell syntax), which plan then reads at the job's size.
# Two runs of each size, in turns: each size's row shows their mean and both runs.
"$PW" profile "$JOB" -o "$T/sizes.json" --repeats 2 --microbatch-sizes 2,4 --in-situ 3 --in-situ-runs 2 > "$T/out" 2> "$T/err" ||
  fail "profile --microbatch-sizes --in-situ --in-situ-runs: $(cat "$T/err")"
[ "$(grep -c "calibrating in situ at microbatch" "$T/err")" -eq 4 ] || fail "want 2 runs of 2 sizes: $(cat "$T/err")"
grep -Eq '^ +2 +[0-9.]+ \([0-9.]+, [0-9.]+\)' "$T/out" || fail "size 2's row should show both runs: $(cat "$T/out")"
SETS=$(sed -n 's/^  plan with//p' "$T/out")
echo "$SETS" | grep -q "'cluster.action_overhead_us={\"2\":[0-9.]*,\"4\":[0-9.]*" ||
  fail "the host time per size not printed as a quoted table: $SETS"
eval "set -- $SETS"
"$PW" plan "$JOB" --profile "$T/sizes.json" --set training.microbatch_size=2 "$@" > /dev/null 2> "$T/err" ||
  fail "plan with the printed table: $(cat "$T/err")"
# The host time is closed on each size's runs: planned with the printed costs, every calibrated size
# predicts the mean iteration its runs measured (the coordinator's clock against the simulator), to 1%,
# unless the compute and sends alone already predict it slower (the host time then 0, its floor).
for b in 2 4; do
  "$PW" plan "$JOB" --profile "$T/sizes.json" --set training.microbatch_size=$b "$@" --json > "$T/plan$b.json" 2> "$T/err" ||
    fail "plan at $b: $(cat "$T/err")"
  python3 - "$T/out" "$T/plan$b.json" "$b" <<'PY' || fail "size $b: the calibration's costs should reproduce its runs: $(cat "$T/out")"
import json, re, sys
out, plan, b = open(sys.argv[1]).read(), json.load(open(sys.argv[2])), sys.argv[3]
rows = out.split("ms/iteration\n", 1)[1]
measured = float(re.search(r"^ +%s +([0-9.]+)" % b, rows, re.M).group(1))
table = json.loads(re.search(r"cluster\.action_overhead_us=(\{[^']*\})", out).group(1))
predicted = plan["iteration_time_ms"]
print("size", b, "measured", measured, "predicted", predicted, "host time", table[b])
sys.exit(0 if abs(predicted - measured) <= 0.01 * measured or (table[b] == 0 and predicted > measured) else 1)
PY
  # The same costs travel in the profile: planning with the file alone is planning with the printed line.
  "$PW" plan "$JOB" --profile "$T/sizes.json" --set training.microbatch_size=$b --json > "$T/alone$b.json" 2> "$T/err" ||
    fail "plan at $b with the profile alone: $(cat "$T/err")"
  python3 - "$T/plan$b.json" "$T/alone$b.json" <<'PY' || fail "size $b: the profile's stored host costs should plan as the printed line"
import json, sys
a, b = (json.load(open(f))["iteration_time_ms"] for f in sys.argv[1:])
print("with the line", a, "with the profile alone", b)
sys.exit(0 if a == b else 1)
PY
done
grep -q '"host_costs"' "$T/sizes.json" || fail "the calibrated profile should carry its host costs"
# A job field still wins over the profile's: no host time at all plans faster than the stored one.
"$PW" plan "$JOB" --profile "$T/sizes.json" --set training.microbatch_size=2 --set cluster.action_overhead_us=0 \
  --set cluster.send_cpu_us=0 --json > "$T/zero.json" 2> "$T/err" || fail "plan with the host costs overridden: $(cat "$T/err")"
python3 - "$T/zero.json" "$T/alone2.json" <<'PY' || fail "cluster fields set by the job should override the profile's host costs"
import json, sys
zero, stored = (json.load(open(f))["iteration_time_ms"] for f in sys.argv[1:])
sys.exit(0 if zero < stored else 1)
PY
# A measured profile without host costs choosing the microbatch says what it lacks.
"$PW" plan "$JOB" --profile "$T/prof.json" --set training.microbatch_size=auto > /dev/null 2> "$T/err" ||
  fail "plan, microbatch auto, profile without host costs: $(cat "$T/err")"
grep -q "note: the measured profile carries no host costs" "$T/err" || fail "plan should say the profile has no host costs: $(cat "$T/err")"
"$PW" profile "$JOB" -o "$T/cal1.json" --in-situ 1 > /dev/null 2> "$T/err"
[ $? -eq 2 ] || fail "--in-situ 1 should exit 2"
"$PW" profile "$JOB" -o "$T/runs.json" --in-situ-runs 2 > /dev/null 2> "$T/err"
[ $? -eq 2 ] || fail "--in-situ-runs without --in-situ should exit 2"
grep -q -- "--in-situ-runs" "$T/err" || fail "error should name --in-situ-runs: $(cat "$T/err")"
[ ! -e "$T/runs.json" ] || fail "a refused profile should write nothing"
# The device: an unknown one, or a GPU where libtorch sees none (CI), is
# refused by the option's name before anything is measured; the profile
# says where it was measured.
"$PW" profile "$JOB" -o "$T/dev.json" --device tpu > /dev/null 2> "$T/err"
[ $? -eq 2 ] || fail "--device tpu should exit 2"
grep -q -- "--device: profile device 'tpu': one of auto, cpu, cuda" "$T/err" || fail "error should name --device: $(cat "$T/err")"
[ ! -e "$T/dev.json" ] || fail "a refused profile should write nothing"
if ! /usr/bin/python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  "$PW" profile "$JOB" -o "$T/dev.json" --device cuda > /dev/null 2> "$T/err"
  [ $? -eq 2 ] || fail "--device cuda without a GPU should exit 2"
  grep -q "no CUDA device" "$T/err" || fail "error should say there is no CUDA device: $(cat "$T/err")"
fi
"$PW" profile "$JOB" -o "$T/dev.json" --device cpu --repeats 2 > /dev/null 2> "$T/err" || fail "profile --device cpu: $(cat "$T/err")"
grep -q "measured on cpu (cpu counting allocator)" "$T/dev.json" || fail "the profile should say where it was measured"
# Recorded: the run database holds the job, the events, one throughput sample per iteration, status finished.
"$PW" run "$JOB" --run-dir "$T/rec" --db "$T/rec.pwrun.sqlite" --quiet > /dev/null 2> "$T/err" || fail "run --db: $(cat "$T/err")"
"$PW" replay "$T/rec.pwrun.sqlite" --json > "$T/replay.json" 2> "$T/err" || fail "replay of a real run: $(cat "$T/err")"
grep -q '"status": "finished"' "$T/replay.json" || fail "recorded run not finished: $(grep status "$T/replay.json")"
grep -q '"source": "run"' "$T/replay.json" || fail "recorded run source should be run"
grep -q '"throughput_samples": 20' "$T/replay.json" || fail "want 20 throughput samples: $(grep throughput_samples "$T/replay.json")"
grep -q '"forward": ' "$T/replay.json" || fail "no forward events recorded"
python3 - "$T/replay.json" "$T/rec.pwrun.sqlite" <<'PY' || fail "replay's iteration time should be the mean of the recorded samples: $(grep iteration_time "$T/replay.json")"
import json, sqlite3, sys
f = json.load(open(sys.argv[1]))
ms = [r[0] for r in sqlite3.connect(sys.argv[2]).execute("SELECT iteration_ms FROM throughput WHERE iteration_ms > 0")]
mean = sum(ms) / len(ms)
sys.exit(0 if abs(f["iteration_time_ms"] - mean) <= 1e-6 * mean and ms[-1] != mean else 1)
PY
grep -q '"microbatches": 4' "$T/replay.json" || fail "replay should derive 16 / 4 = 4 microbatches: $(grep microbatches "$T/replay.json")"
echo "cli_run: ok"
