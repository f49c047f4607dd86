#!/bin/bash
# cluster.backend as `pipewright run` meets it (issue 18): on a machine
# without CUDA, "nccl" is refused naming the field (exit 2, nothing
# written), by the coordinator for its own workers and by attached workers
# for theirs; "auto" picks Gloo, every worker says so in the log and the
# run records it per stage, training exactly as "gloo" does (losses equal).
# usage: cli_backend.sh PIPEWRIGHT WORKER JOB.json
set -u
PW=$1; WORKER=$2; export PW_WORKER=$2; JOB=$3
T=$(mktemp -d); PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
  echo "SKIP: this machine has a GPU; the checks here are for one without CUDA"
  exit 77
fi

"$PW" run "$JOB" --run-dir "$T/nccl" --set cluster.backend=nccl > /dev/null 2> "$T/err"
rc=$?
[ $rc -eq 2 ] || fail "cluster.backend=nccl without CUDA should exit 2, got $rc: $(cat "$T/err")"
grep -q 'cluster.backend: "nccl" needs CUDA, and no stage sees a GPU (use "auto" or "gloo")' "$T/err" ||
  fail "the refusal should name cluster.backend and the way out: $(cat "$T/err")"
[ ! -e "$T/nccl" ] || fail "a refused run should leave no run directory"
grep -q "pipewright-worker" "$T/err" && fail "no worker should have started: $(cat "$T/err")"

"$PW" run "$JOB" --run-dir "$T/auto" --quiet > /dev/null 2> "$T/err" || fail "auto run exited $?: $(cat "$T/err")"
for r in 0 1; do
  grep -qx "pipewright-worker stage $r: gloo: no CUDA; stage on cpu" "$T/err" || fail "worker $r should log its transport: $(cat "$T/err")"
done
python3 - "$T/auto/result.json" <<'PY' || fail "result.json should record each stage's transport"
import json, sys
stages = json.load(open(sys.argv[1]))["stages"]
assert len(stages) == 2, stages
for s in stages:
    assert s["transport"] == {"backend": "gloo", "device": "cpu", "host_staged": False}, s
PY
"$PW" run "$JOB" --run-dir "$T/gloo" --quiet --set cluster.backend=gloo > /dev/null 2> "$T/err" || fail "gloo run: $(cat "$T/err")"
python3 - "$T/auto/result.json" "$T/gloo/result.json" <<'PY' || fail "auto and gloo should train alike"
import json, sys
a, b = (json.load(open(f))["losses"] for f in sys.argv[1:])
assert len(a) == 20 and a == b, (a, b)
PY

# Attached workers (a launcher's, here on this host) decide among
# themselves: the refusal comes back as the stages' error.
PORT=$(( 20000 + ($$ % 20000) ))
"$PW" run "$JOB" --set cluster.backend=nccl --attach --port $PORT --run-dir "$T/attached" --quiet > "$T/coord.log" 2>&1 &
COORD=$!; PIDS="$COORD"
sleep 1
for r in 0 1; do
  env MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r "$WORKER" > "$T/worker$r.log" 2>&1 &
  PIDS="$PIDS $!"
done
wait $COORD
rc=$?
[ $rc -ne 0 ] || fail "an attached nccl run without CUDA should fail"
grep -q 'stage [01]: cluster.backend: "nccl" needs CUDA' "$T/coord.log" || fail "the coordinator should report the stages' refusal: $(cat "$T/coord.log")"
echo "ok"
