#!/usr/bin/env bash
# Supernet commands are ordinary commands (issue 30): `simulate` of a supernet job (one with a
# search_space) has the pipeline simulate's outputs and control (engine/cli/sim_control.h): --trace
# under the output rule, --pace and --linger, pause / resume / stop over --listen's control server,
# SIGINT/SIGTERM recorded "interrupted" (exit 128 + signal); the supernet `run` answers the same
# control server (stop, agreed at a subnet: exit 0 with the weights of a run that long; pause and
# checkpoint refused saying why). One schedule name: pipedream.
# Parts needing a layer this build lacks (ZeroMQ, SQLite, the runtime) are checked where built.
set -u
PW=$(realpath "$1"); SRC="$2"
. "$SRC/tests/cli_checks.sh"
J="$SRC/resources/jobs"
NAS="$J/fmnist-supernet.json"  # 150 subnets, 3.08 simulated seconds
T=$(mktemp -d); pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT

# The same options mean the same as for a pipeline job.
expect_text "supernet simulate: --pace needs --listen" 2 "--pace requires --listen" "$PW" simulate "$NAS" --pace 1
expect_text "supernet simulate: --linger needs --listen" 2 "--linger requires --listen" "$PW" simulate "$NAS" --linger 1
printf 'notes the user keeps\n' > "$T/notes.json"
refused_output "supernet simulate: --trace onto an existing file" --trace "$T/notes.json" \
  "$PW" simulate "$NAS" --trace "$T/notes.json"
check "supernet simulate: --trace --overwrite" 0 "$PW" simulate "$NAS" --trace "$T/notes.json" --overwrite
py_check "supernet simulate: the trace is a Chrome trace" "import json; assert json.load(open('$T/notes.json'))['traceEvents']"
# One name per schedule: pipedream, as in every other job.
expect_text "async-1f1b is refused naming pipedream" 2 'pipeline.schedule: "async-1f1b" is called "pipedream"' \
  "$PW" simulate "$NAS" --set pipeline.schedule=async-1f1b
expect_text "the pipedream baseline" 0 '"mode": "pipedream"' "$PW" simulate "$NAS" --set pipeline.schedule=pipedream --json

if "$PW" replay --help > /dev/null 2>&1; then
  "$PW" simulate "$NAS" --db "$T/rec.sqlite" > /dev/null || { echo "FAIL: cannot record a supernet simulation"; fail=$((fail+1)); }
  refused_output "supernet simulate: --trace onto a run database, even with --overwrite" --trace "$T/rec.sqlite" \
    "$PW" simulate "$NAS" --trace "$T/rec.sqlite" --overwrite
fi

if "$PW" control --help > /dev/null 2>&1 && "$PW" replay --help > /dev/null 2>&1; then
  port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
  wait_file() { for _ in $(seq 100); do [ -e "$1" ] && return 0; sleep 0.1; done; return 1; }

  # Control: pause, status, resume, checkpoint refused, stop -> exit 1, recorded "stopped".
  P=$(port); EP="tcp://127.0.0.1:$P"
  "$PW" simulate "$NAS" --db "$T/stop.sqlite" --listen "$EP" --pace 0.5 > "$T/stop.out" 2>&1 &
  sim=$!; pids+=($sim)
  wait_file "$T/stop.endpoints.json"
  expect_text "supernet simulate: pause" 0 "paused" "$PW" control "$EP" pause
  expect_text "supernet simulate: status says paused" 0 "paused" "$PW" control "$EP" status
  expect_text "supernet simulate: a second pause" 1 "already paused" "$PW" control "$EP" pause
  expect_text "supernet simulate: resume" 0 "ok" "$PW" control "$EP" resume
  expect_text "supernet simulate: checkpoint refused" 1 "no training state" "$PW" control "$EP" checkpoint
  expect_text "supernet simulate: stop" 0 "ok" "$PW" control "$EP" stop
  wait $sim; rc=$?
  [ "$rc" = 1 ] && passed=$((passed+1)) || { echo "FAIL supernet simulate: stopped exits $rc, want 1"; cat "$T/stop.out"; fail=$((fail+1)); }
  expect_text "supernet simulate: stop recorded" 0 "stopped (stopped by control request)" "$PW" replay "$T/stop.sqlite"

  # --pace paces it (3.08 simulated s at 1 s per s), --linger keeps answering after the printout.
  P=$(port); EP="tcp://127.0.0.1:$P"
  t0=$(date +%s%N)
  "$PW" simulate "$NAS" --json --listen "$EP" --pace 1 --linger 30 > "$T/linger.json" 2> "$T/linger.err" &
  sim=$!; pids+=($sim)
  for _ in $(seq 300); do grep -q speedup_over_sequential "$T/linger.json" 2>/dev/null && break; sleep 0.05; done
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ "$ms" -ge 2900 ] && passed=$((passed+1)) || { echo "FAIL supernet simulate: --pace 1 printed after $ms ms, want >= 3 s"; fail=$((fail+1)); }
  expect_text "supernet simulate: a late joiner's status (--linger)" 0 "finished" "$PW" control "$EP" status
  kill -INT $sim; wait $sim

  # SIGINT / SIGTERM: recorded "interrupted", the endpoints file removed, exit 128 + signal.
  for sig in INT TERM; do
    P=$(port)
    "$PW" simulate "$NAS" --db "$T/sig$sig.sqlite" --listen "tcp://127.0.0.1:$P" --pace 0.2 > "$T/sig.out" 2>&1 &
    sim=$!; pids+=($sim)
    wait_file "$T/sig$sig.endpoints.json"
    sleep 0.3
    kill -$sig $sim; wait $sim; rc=$?
    want=$([ $sig = INT ] && echo 130 || echo 143)
    [ "$rc" = "$want" ] && passed=$((passed+1)) || { echo "FAIL supernet simulate: SIG$sig exits $rc, want $want"; cat "$T/sig.out"; fail=$((fail+1)); }
    [ ! -e "$T/sig$sig.endpoints.json" ] && passed=$((passed+1)) || { echo "FAIL supernet simulate: endpoints file left after SIG$sig"; fail=$((fail+1)); }
    expect_text "supernet simulate: SIG$sig recorded" 0 "interrupted by SIG$sig" "$PW" replay "$T/sig$sig.sqlite"
  done

  # The supernet run: the same control server; stop ends the CSP workers, recorded "stopped".
  if "$PW" run --help > /dev/null 2>&1; then  # pw_nas_worker beside it, Fashion-MNIST installed (scripts/common.sh)
    P=$(port); EP="tcp://127.0.0.1:$P"
    "$PW" run "$NAS" --run-dir "$T/srun" --db "$T/srun.sqlite" --listen "$EP" --quiet > "$T/srun.out" 2>&1 &
    run=$!; pids+=($run)
    wait_file "$T/srun.endpoints.json"
    expect_text "supernet run: pause refused saying why" 1 "take stop only" "$PW" control "$EP" pause
    expect_text "supernet run: checkpoint refused" 1 "take stop only" "$PW" control "$EP" checkpoint
    # Under way first (a subnet finished), so the stop falls inside the run.
    for _ in $(seq 600); do grep -q '"state":"done"' "$T/srun/stage0.records.jsonl" 2>/dev/null && break; sleep 0.1; done
    expect_text "supernet run: stop" 0 "ok" "$PW" control "$EP" stop
    wait $run; rc=$?
    # Stopped at an agreed subnet: a complete, shorter run, exit 0 as a pipeline run's stop.
    [ "$rc" = 0 ] && grep -q "stopped on request: " "$T/srun.out" && passed=$((passed+1)) ||
      { echo "FAIL supernet run: stopped exits $rc (want 0, 'stopped on request')"; cat "$T/srun.out"; fail=$((fail+1)); }
    expect_text "supernet run: stop recorded" 0 "stopped (stopped by control request)" "$PW" replay "$T/srun.sqlite"
    # Every stage stopped at the same subnet, and the weights are those of a run given that many.
    py_check "supernet run: every stage stopped at one subnet, fewer than the job's" "
import json
st = [json.load(open('$T/srun/stage%d.json' % r)) for r in range(2)]
assert all(s['stopped'] for s in st), st
assert st[0]['subnets'] == st[1]['subnets'] < 150, [s['subnets'] for s in st]
assert len(st[1]['losses']) == st[1]['subnets']"
    K=$("$PY" -c "import json; print(json.load(open('$T/srun/stage0.json'))['subnets'])")
    "$PW" run "$NAS" --set training.iterations=$K --run-dir "$T/srun-k" --json > "$T/srun-k.json" 2> "$T/srun-k.err"
    py_check "supernet run: the stopped weights are those of a run of $K subnets" "
import json
a = [json.load(open('$T/srun/stage%d.json' % r))['hash'] for r in range(2)]
b = json.load(open('$T/srun-k.json'))['stage_hashes']
assert a == b, (a, b)"
  fi
fi
checks_done
