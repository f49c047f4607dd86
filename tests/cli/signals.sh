#!/usr/bin/env bash
# SIGTERM and SIGINT end every recording command alike (cli/interrupt.h, issue 42): a pipeline `run`, a
# supernet `run` and a `simulate`, each under way (records already in its database), get the signal and
# exit 128 + signal (143 for SIGTERM, 130 for SIGINT), their database still opens (replay), marked
# "interrupted by SIGTERM" with the records taken before the signal kept, and no worker process outlives
# the command. Parts needing a layer this build lacks (SQLite, ZeroMQ, the runtime, pw_nas_worker) are
# checked where built.
# usage: signals.sh PIPEWRIGHT SOURCE_DIR [PIPEWRIGHT_WORKER] [PW_NAS_WORKER]
set -u
PW=$(realpath "$1"); SRC="$2"
[ -n "${3:-}" ] && export PW_WORKER="$3"
[ -n "${4:-}" ] && export PW_NAS_WORKER="$4"
. "$SRC/tests/cli_checks.sh"
T=$(mktemp -d); pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$T"' EXIT

"$PW" replay --help > /dev/null 2>&1 || { echo "no database layer in this build: nothing to check"; exit 77; }

# rows DB TABLE: how many rows the table holds now (the writer commits as it goes; WAL lets us read).
rows() { "$PY" - "$1" "$2" <<'PYEOF' 2>/dev/null || echo 0
import sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, timeout=5)
print(c.execute(f"SELECT COUNT(*) FROM {sys.argv[2]}").fetchone()[0])
PYEOF
}
# under_way DB TABLE: waits (up to 60 s) until the run has committed some rows of TABLE.
under_way() {
  for _ in $(seq 600); do [ "$(rows "$1" "$2")" -gt 0 ] && return 0; sleep 0.1; done
  return 1
}
# children PID: the live processes whose parent is PID.
children() { ps -o pid= --ppid "$1" 2>/dev/null | tr -d ' '; }

# interrupt NAME SIG TABLE DB OUT command...: starts the command, waits until TABLE has rows in DB,
# sends SIG, and checks the exit code, the recorded status and reason, the records kept, no orphans.
interrupt() {
  local name="$1" sig="$2" table="$3" db="$4" out="$5"; shift 5
  local want=$([ "$sig" = INT ] && echo 130 || echo 143)
  "$@" > "$out" 2>&1 &
  local cmd=$!; pids+=($cmd)
  if ! under_way "$db" "$table"; then
    echo "FAIL $name: no $table recorded within 60 s"; tail -5 "$out"; fail=$((fail+1)); kill -9 $cmd; return
  fi
  local kids; kids=$(children $cmd)
  local before; before=$(rows "$db" "$table")
  kill -$sig $cmd; wait $cmd; local rc=$?
  [ "$rc" = "$want" ] && passed=$((passed+1)) ||
    { echo "FAIL $name: SIG$sig exits $rc, want $want"; tail -5 "$out"; fail=$((fail+1)); }
  expect_text "$name: the database opens and says why it ended" 0 "interrupted by SIG$sig" "$PW" replay "$db"
  py_check "$name: recorded \"interrupted\", the $before $table rows taken before the signal kept" "
import sqlite3
c = sqlite3.connect('file:$db?mode=ro', uri=True)
status, reason = c.execute('SELECT status, reason FROM run').fetchone()
assert status == 'interrupted', (status, reason)
assert reason == 'interrupted by SIG$sig', reason
n = c.execute('SELECT COUNT(*) FROM $table').fetchone()[0]
assert n >= $before, (n, $before)
assert c.execute('PRAGMA integrity_check').fetchone()[0] == 'ok'"
  sleep 0.5
  local left=""
  for k in $kids; do kill -0 "$k" 2>/dev/null && left="$left $k"; done
  [ -z "$left" ] && passed=$((passed+1)) || { echo "FAIL $name: worker processes$left outlived the command"; fail=$((fail+1)); }
}

# simulate: a supernet job paced against the wall clock (the simulation is milliseconds otherwise).
NAS="$SRC/resources/jobs/fmnist-supernet.json"
if "$PW" control --help > /dev/null 2>&1; then
  for sig in TERM INT; do
    interrupt "simulate (SIG$sig)" $sig events "$T/sim$sig.sqlite" "$T/sim.out" \
      "$PW" simulate "$NAS" --db "$T/sim$sig.sqlite" --listen tcp://127.0.0.1:0 --pace 0.2
  done
else
  echo "no ipc layer in this build: simulate is not long enough to interrupt; skipped"
fi

if "$PW" run --help > /dev/null 2>&1; then
  # A pipeline run, long enough never to finish first.
  interrupt "pipeline run (SIGTERM)" TERM throughput "$T/pipe.sqlite" "$T/pipe.out" \
    "$PW" run "$SRC/tests/runtime/tiny-mlp.json" --set training.iterations=1000000 --run-dir "$T/pipe" \
    --db "$T/pipe.sqlite" --quiet
  # A supernet run (CSP workers): its memory samples are what arrive first.
  interrupt "supernet run (SIGTERM)" TERM events "$T/nas.sqlite" "$T/nas.out" \
    "$PW" run "$NAS" --set training.iterations=3000 --run-dir "$T/nas" --db "$T/nas.sqlite" --quiet
fi
checks_done
