#!/bin/bash
# Controlling a real run over ipc, as the studio and `pipewright control` do:
# pause (every stage stops at one agreed iteration and stays there), a
# checkpoint requested while paused, resume, stop (ends early, cleanly, with
# weights). A stopped run's weights must equal those of a run that was simply
# given that many iterations, and a run resumed from the requested
# checkpoint must finish like an uninterrupted one.
# usage: cli_control.sh PIPEWRIGHT WORKER JOB.json
set -u
PW=$1; export PW_WORKER=$2; JOB=$3
T=$(mktemp -d)
trap '[ -n "${RUN:-}" ] && kill $RUN 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; echo "--- run stderr"; tail -20 "$T/err"; exit 1; }
PY=/usr/bin/python3
ITER=3000
"$PW" run "$JOB" --set training.iterations=$ITER --run-dir "$T/run" --listen tcp://127.0.0.1:0 \
  --db "$T/run.pwrun.sqlite" --quiet > "$T/out" 2> "$T/err" &
RUN=$!
for _ in $(seq 100); do grep -q "^telemetry " "$T/err" && break; sleep 0.1; done
EP=$(sed -n 's/^telemetry \([^ ]*\).*/\1/p' "$T/err")
[ -n "$EP" ] || fail "no telemetry endpoint on stderr"
grep -q "control tcp://127.0.0.1:" "$T/err" || fail "no loopback control endpoint advertised"
ctl() { "$PW" control "$EP" "$@" --timeout 5; }

sleep 1
ctl pause > "$T/c" 2>&1 || fail "pause refused: $(cat "$T/c")"
ctl pause > "$T/c" 2>&1 && fail "a second pause should be refused (already paused)"
for _ in $(seq 50); do ctl status 2>/dev/null | grep -q paused && break; sleep 0.1; done
ctl status | grep -q paused || fail "the run never reported paused"
n1=$(ls "$T/run/events" > /dev/null && cat "$T/run/events/"*.jsonl | wc -l)
sleep 1.5
n2=$(cat "$T/run/events/"*.jsonl | wc -l)
[ "$n1" = "$n2" ] || fail "stages kept working while paused ($n1 -> $n2 events)"
ctl status | grep -q paused || fail "the run left the pause on its own"
ctl checkpoint > "$T/c" 2>&1 || fail "checkpoint refused: $(cat "$T/c")"
ctl resume > "$T/c" 2>&1 || fail "resume refused: $(cat "$T/c")"
ctl rebalance > "$T/c" 2>&1 && fail "rebalance should be refused: this job has no runtime.replan"
grep -q "replan" "$T/c" || fail "the refusal should say why: $(cat "$T/c")"
for _ in $(seq 100); do [ -s "$T/run/checkpoint/meta.json" ] && break; sleep 0.1; done
[ -s "$T/run/checkpoint/meta.json" ] || fail "no checkpoint after the request"
ctl stop > "$T/c" 2>&1 || fail "stop refused: $(cat "$T/c")"
wait $RUN; rc=$?; RUN=""
[ $rc = 0 ] || fail "a stopped run should exit 0, got $rc"
grep -q "stopped on request" "$T/out" || fail "no 'stopped on request' summary: $(cat "$T/out")"
DONE=$($PY -c "import json,sys; r=json.load(open('$T/run/result.json')); print(r['stopped'] and r['stages'][0]['iterations'])")
[ "$DONE" -gt 0 ] && [ "$DONE" -lt $ITER ] || fail "stopped after $DONE of $ITER iterations"
for r in 0 1; do
  [ "$($PY -c "import json; print(json.load(open('$T/run/result.json'))['stages'][$r]['iterations'])")" = "$DONE" ] ||
    fail "stage $r stopped at another iteration than stage 0"
done
"$PW" replay "$T/run.pwrun.sqlite" --json > "$T/replay.json" 2>/dev/null || fail "replay of the stopped run"
grep -q '"stopped"' "$T/replay.json" || fail "the database should say stopped"
# The requested checkpoint is in the recording's log (replay --json only counts logs).
$PY -c "
import sqlite3, sys
n = sqlite3.connect(sys.argv[1]).execute(\"SELECT count(*) FROM logs WHERE message LIKE 'checkpoint complete at iteration %'\").fetchone()[0]
sys.exit(0 if n >= 1 else 1)" "$T/run.pwrun.sqlite" || fail "the database's log has no 'checkpoint complete at iteration N'"

# The stopped run equals a run given exactly that many iterations.
"$PW" run "$JOB" --set training.iterations=$DONE --run-dir "$T/short" --quiet > /dev/null 2>&1 || fail "short run"
$PY "$(dirname "$0")/compare_weights.py" "$T/run" "$T/short" 2 || fail "stopped run's weights differ from a $DONE-iteration run"

# Resuming from the requested checkpoint finishes like the uninterrupted run.
CK=$($PY -c "import json; print(json.load(open('$T/run/checkpoint/meta.json'))['iteration'])")
"$PW" run --resume "$T/run" --set training.iterations=$DONE --run-dir "$T/resumed" --quiet > /dev/null 2>&1 ||
  fail "resume from the checkpoint at $CK"
$PY "$(dirname "$0")/compare_weights.py" "$T/resumed" "$T/short" 2 || fail "resumed run's weights differ"
echo "PASS: paused, checkpointed at $CK, stopped after $DONE iterations; weights equal"
