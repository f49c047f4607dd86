#!/usr/bin/env bash
# End-to-end checks of the pipewright command as a user runs it.
set -u
PW="$1"; SRC="$2"
. "$SRC/tests/cli_checks.sh"
J="$SRC/resources/jobs"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

for job in "$J"/*.json; do check "simulate $(basename "$job")" 0 "$PW" simulate "$job"; done
check "version" 0 "$PW" --version
check "no args" 2 "$PW"
check "unknown command" 2 "$PW" frobnicate
check "missing file" 2 "$PW" simulate "$tmp/none.json"
expect_text "stages 0 names field" 2 "pipeline.stages: must be in [1, 4096], got 0" "$PW" simulate "$J/uniform-8stage.json" --set pipeline.stages=0
check "stages 0 exit 2" 2 "$PW" simulate "$J/uniform-8stage.json" --set pipeline.stages=0
expect_text "typo names field" 2 "model.layer: unknown field" "$PW" simulate "$J/uniform-8stage.json" --set model.layer=3
expect_text "bad schedule" 2 "pipeline.schedule: must be one of" "$PW" simulate "$J/uniform-8stage.json" --set pipeline.schedule=zigzag
echo '{"name": "x", "model": ' > "$tmp/broken.json"
check "broken json exit 2" 2 "$PW" simulate "$tmp/broken.json"

# Numbers are range-checked in their own type, naming the path (issues 20, 22).
U="$J/uniform-8stage.json"; B="$J/bert24-4gpu.json"
for cmd in plan simulate; do
  expect_text "$cmd microbatches 1e12" 2 "pipeline.microbatches: must be in [1, 65536], got 1000000000000" "$PW" $cmd "$U" --set pipeline.microbatches=1e12
  expect_text "$cmd hidden 1e30" 2 "model.hidden: must be in [1, 131072]" "$PW" $cmd "$B" --set model.hidden=1e30
  expect_text "$cmd layers 1e8" 2 "model.layers: must be in [1, 10000], got 100000000" "$PW" $cmd "$U" --set model.layers=100000000
  expect_text "$cmd heads 2^32" 2 "model.heads: must be in [1, 1024], got 4294967296" "$PW" $cmd "$B" --set model.heads=4294967296
  expect_text "$cmd microbatch_size 2^32" 2 "training.microbatch_size: must be in [1, 65536], got 4294967296" "$PW" $cmd "$B" --set training.microbatch_size=4294967296
  expect_text "$cmd seq_len 2^31" 2 "model.seq_len: must be in [1, 131072], got 2147483648" "$PW" $cmd "$B" --set model.seq_len=2147483648
  expect_text "$cmd --set 1e400" 2 "model.fwd_ms: number out of range" "$PW" $cmd "$U" --set model.fwd_ms=1e400
done
sed 's/"fwd_ms": 1.0/"fwd_ms": 1e400/' "$U" > "$tmp/huge.json"
expect_text "1e400 in a file names the path" 2 "model.fwd_ms: number out of range" "$PW" simulate "$tmp/huge.json"
python3 -c 'import sys; sys.stdout.write("{\"name\": \"x\", \"model\": " + "[" * 200000 + "]" * 200000 + "}")' > "$tmp/deep.json"
expect_text "200000-deep nesting refused" 2 "nested deeper than 64 levels" "$PW" simulate "$tmp/deep.json"
expect_text "a directory as JOB" 2 "is not a regular file" "$PW" simulate "$tmp"
expect_text "/dev/zero as JOB" 2 "is not a regular file" "$PW" plan /dev/zero
head -c $((17 << 20)) /dev/zero | tr '\0' ' ' > "$tmp/big.json"
expect_text "a 17 MiB job file" 2 "over the bound of 16 MiB" "$PW" simulate "$tmp/big.json"
# The data and runtime sections are checked by every command, not only run.
expect_text "plan checks data" 2 "data.kind: must be one of" "$PW" plan "$U" --set data.kind=video
expect_text "simulate checks runtime" 2 "runtime.slowdown: must be an array of 8" "$PW" simulate "$U" --set 'runtime.slowdown=[1,2]'
expect_text "simulate checks runtime layers" 2 "runtime.migrate[0].policy: must list one memory policy per layer (32)" \
  "$PW" simulate "$U" --set 'runtime.migrate=[{"iteration": 1, "policy": ["keep"]}]'
# A profile the job names is read by its own reader; errors still exit 2.
printf 'garbage\n' > "$tmp/bad.graph.txt"
expect_text "bad profile exits 2" 2 "model.profile:" "$PW" plan "$J/tiny-resnet-profile.json" --profile "$tmp/bad.graph.txt"
expect_text "json output" 0 '"throughput_samples_per_s"' "$PW" simulate "$J/uniform-8stage.json" --json
check "trace" 0 "$PW" simulate "$J/bert24-4gpu.json" --trace "$tmp/t.json"
python3 -c "import json,sys; d=json.load(open('$tmp/t.json')); assert len(d['traceEvents'])>100" 2>/dev/null \
  && passed=$((passed+1)) || { echo "FAIL trace is not valid JSON with events"; fail=$((fail+1)); }
expect_text "override sweeps" 0 '"microbatches": 32' "$PW" simulate "$J/uniform-8stage.json" --json --set training.batch_size=128
expect_text "oom reported" 0 '"feasible": false' "$PW" simulate "$J/uniform-8stage.json" --json --set cluster.memory_gb=1
expect_text "oom names stage" 0 'out of memory: stage 0' "$PW" simulate "$J/uniform-8stage.json" --set cluster.memory_gb=1

expect_text "launch shell" 0 "MASTER_ADDR=h1 MASTER_PORT=29500 WORLD_SIZE=4 RANK=3 LOCAL_RANK=1" "$PW" launch "$J/bert24-4gpu.json" --hosts h1,h2
expect_text "launch coordinator" 0 "--attach --port 29500" "$PW" launch "$J/bert24-4gpu.json" --hosts h1,h2
check "launch too few slots" 2 "$PW" launch "$J/bert24-4gpu.json" --hosts h1,h2 --nproc-per-host 1
check "launch sbatch" 0 "$PW" launch "$J/bert24-4gpu.json" --hosts n1,n2 --sbatch "$tmp/run.sbatch"
grep -q "#SBATCH --nodes=2" "$tmp/run.sbatch" && bash -n "$tmp/run.sbatch" && passed=$((passed+1)) || { echo "FAIL sbatch script"; fail=$((fail+1)); }

# Output files are checked to the last byte: a full disk is an error.
# A write that fails part way (a file-size limit, as a full disk): exit 1
# naming the option, the file and the reason; the old file is left whole and
# no temporary file stays (the output rule: docs/cli.md "Output files").
echo "the old trace" > "$tmp/big.json"
out=$( (trap '' XFSZ; ulimit -f 4; exec "$PW" simulate "$J/uniform-8stage.json" --trace "$tmp/big.json" --overwrite) 2>&1); rc=$?
[ "$rc" = 1 ] && grep -qF "writing --trace $tmp/big.json: File too large" <<<"$out" && [ "$(cat "$tmp/big.json")" = "the old trace" ] &&
  [ -z "$(find "$tmp" -name '*.tmp')" ] && passed=$((passed+1)) || { echo "FAIL --trace past a file-size limit: exit $rc"; echo "$out" | head -5; fail=$((fail+1)); }
# A 10 MB field value is named, not echoed in full.
/usr/bin/python3 -c "
import json, sys
j = json.load(open('$J/uniform-8stage.json')); j['pipeline']['schedule'] = 'z' * 10000000
json.dump(j, open('$tmp/huge.json', 'w'))"
out=$("$PW" simulate "$tmp/huge.json" 2>&1); rc=$?
[ "$rc" = 2 ] && [ "${#out}" -lt 2000 ] && grep -q 'pipeline.schedule: must be one of' <<<"$out" && grep -Eq 'clipped: 100[0-9]{5} bytes in all' <<<"$out" && passed=$((passed+1)) || { echo "FAIL 10 MB value: exit $rc, ${#out} chars"; echo "${out:0:300}"; fail=$((fail+1)); }

# simulate --json reports both iteration times and both bubble figures
# (issue 28): the window is within the span, the window bubble within the
# span's, and every stage's window within the iteration.
"$PW" simulate "$U" --set 'pipeline.schedule="zb-h2"' --json > "$tmp/zb.json" 2>/dev/null
py_check "simulate --json windows" "
import json
d = json.load(open('$tmp/zb.json'))
assert 0 < d['overlapped_iteration_ms'] <= d['iteration_time_ms'] + 1e-9, d
assert 0 <= d['window_bubble_fraction'] <= d['bubble_fraction'] + 1e-12, d
for s in d['stages']:
    assert 0 <= s['first_start_ms'] < s['last_end_ms'] <= d['iteration_time_ms'] + 1e-9, s
assert max(s['last_end_ms'] - s['first_start_ms'] for s in d['stages']) == d['overlapped_iteration_ms']
"

# plan --export-schedule (issue 28): torch.distributed.pipelining's action
# CSV, one row per rank, every cell {stage}{F|I|W|B}{microbatch} (PyTorch's
# pattern), each stage's forwards 0..m-1 on its own rank; an existing file
# is kept unless --overwrite; PipeDream (no flush) is refused.
check "export generated" 0 "$PW" plan "$U" --set 'pipeline.schedule="generated"' --export-schedule "$tmp/s.csv"
py_check "export csv cells" "
import csv, re
rows = list(csv.reader(open('$tmp/s.csv', newline='')))
assert len(rows) == 8, len(rows)
for rank, row in enumerate(rows):
    cells = [re.fullmatch(r'(\d+)(F|I|B|W)(\d+)', c) for c in row]
    assert all(cells), row
    assert {int(c.group(1)) for c in cells} == {rank}, row
    fwd = [int(c.group(3)) for c in cells if c.group(2) == 'F']
    assert fwd == list(range(len(fwd))) and len(fwd) > 0, fwd
    assert sorted(int(c.group(3)) for c in cells if c.group(2) == 'W') == fwd
"
refused "export keeps a file" "s.csv exists (give --overwrite to replace it)" "$PW" plan "$U" --export-schedule "$tmp/s.csv"
check "export --overwrite" 0 "$PW" plan "$U" --export-schedule "$tmp/s.csv" --overwrite
refused "export pipedream" "pipedream has no flush" "$PW" plan "$U" --set 'pipeline.schedule="pipedream"' --export-schedule "$tmp/p.csv"
refused "--overwrite needs --export-schedule" "--overwrite requires --export-schedule" "$PW" plan "$U" --overwrite

checks_done
