#!/usr/bin/env bash
# End-to-end checks of the pipewright command as a user runs it.
set -u
PW="$1"; SRC="$2"
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
J="$SRC/resources/jobs"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

for job in "$J"/*.json; do check "simulate $(basename "$job")" 0 "$PW" simulate "$job"; done
check "version" 0 "$PW" --version
check "no args" 2 "$PW"
check "unknown command" 2 "$PW" frobnicate
check "missing file" 2 "$PW" simulate "$tmp/none.json"
expect_text "stages 0 names field" "pipeline.stages: must be >= 1, got 0" "$PW" simulate "$J/uniform-8stage.json" --set pipeline.stages=0
check "stages 0 exit 2" 2 "$PW" simulate "$J/uniform-8stage.json" --set pipeline.stages=0
expect_text "typo names field" "model.layer: unknown field" "$PW" simulate "$J/uniform-8stage.json" --set model.layer=3
expect_text "bad schedule" "pipeline.schedule: must be one of" "$PW" simulate "$J/uniform-8stage.json" --set pipeline.schedule=zigzag
echo '{"name": "x", "model": ' > "$tmp/broken.json"
check "broken json exit 2" 2 "$PW" simulate "$tmp/broken.json"
expect_text "json output" '"throughput_samples_per_s"' "$PW" simulate "$J/uniform-8stage.json" --json
check "trace" 0 "$PW" simulate "$J/bert24-4gpu.json" --trace "$tmp/t.json"
python3 -c "import json,sys; d=json.load(open('$tmp/t.json')); assert len(d['traceEvents'])>100" 2>/dev/null \
  && passed=$((passed+1)) || { echo "FAIL trace is not valid JSON with events"; fail=$((fail+1)); }
expect_text "override sweeps" '"microbatches": 32' "$PW" simulate "$J/uniform-8stage.json" --json --set training.batch_size=128
expect_text "oom reported" '"feasible": false' "$PW" simulate "$J/uniform-8stage.json" --json --set cluster.memory_gb=1
expect_text "oom names stage" 'out of memory: stage 0' "$PW" simulate "$J/uniform-8stage.json" --set cluster.memory_gb=1

expect_text "launch shell" "MASTER_ADDR=h1 MASTER_PORT=29500 WORLD_SIZE=4 RANK=3 LOCAL_RANK=1" "$PW" launch "$J/bert24-4gpu.json" --hosts h1,h2
expect_text "launch coordinator" "--attach --port 29500" "$PW" launch "$J/bert24-4gpu.json" --hosts h1,h2
check "launch too few slots" 2 "$PW" launch "$J/bert24-4gpu.json" --hosts h1,h2 --nproc-per-host 1
check "launch sbatch" 0 "$PW" launch "$J/bert24-4gpu.json" --hosts n1,n2 --sbatch "$tmp/run.sbatch"
grep -q "#SBATCH --nodes=2" "$tmp/run.sbatch" && bash -n "$tmp/run.sbatch" && passed=$((passed+1)) || { echo "FAIL sbatch script"; fail=$((fail+1)); }

# Output files are checked to the last byte: a full disk is an error.
out=$("$PW" simulate "$J/uniform-8stage.json" --trace /dev/full 2>&1); rc=$?
[ "$rc" = 1 ] && grep -q 'writing trace "/dev/full" failed: No space left on device' <<<"$out" && passed=$((passed+1)) || { echo "FAIL --trace /dev/full: exit $rc"; echo "$out" | head -5; fail=$((fail+1)); }
# A 10 MB field value is named, not echoed in full.
/usr/bin/python3 -c "
import json, sys
j = json.load(open('$J/uniform-8stage.json')); j['pipeline']['schedule'] = 'z' * 10000000
json.dump(j, open('$tmp/huge.json', 'w'))"
out=$("$PW" simulate "$tmp/huge.json" 2>&1); rc=$?
[ "$rc" = 2 ] && [ "${#out}" -lt 2000 ] && grep -q 'pipeline.schedule: must be one of' <<<"$out" && grep -q 'clipped: 100000[0-9][0-9] bytes in all' <<<"$out" && passed=$((passed+1)) || { echo "FAIL 10 MB value: exit $rc, ${#out} chars"; echo "${out:0:300}"; fail=$((fail+1)); }

echo "$passed passed, $fail failed"
[ "$fail" = 0 ]
