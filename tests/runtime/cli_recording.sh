#!/bin/bash
# One recording path (cli/run_outputs.h): every command that records a run
# (simulate and run, of an ordinary job and of a supernet job) writes the
# same things with --db and --listen: the job, a profile, the first plan
# under the same reason, a control server beside the telemetry (its
# endpoint in the database), the endpoints file removed at the end, and a
# final status.
# usage: cli_recording.sh PIPEWRIGHT WORKER NAS_WORKER SOURCE_DIR
set -u
PW=$1; export PW_WORKER=$2; export PW_NAS_WORKER=$3; SRC=$4
PY=/usr/bin/python3
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

MLP=$SRC/tests/runtime/tiny-mlp.json
NAS=$SRC/resources/jobs/fmnist-supernet.json
NAS_SETS=(--set training.iterations=8 --set data.train_samples=256)

check() {  # name, db file, expected source
  local name=$1 db=$2 source=$3
  [ -e "${db%.sqlite}.endpoints.json" ] && fail "$name: the endpoints file outlived the run"
  $PY - "$db" "$source" "$name" <<'PYEOF' || fail "$name: see above"
import json, sqlite3, sys
db, source, name = sys.argv[1:4]
c = sqlite3.connect(db)
def one(q):
    r = c.execute(q).fetchone()
    return r[0] if r else None
problems = []
run = c.execute("SELECT source, status FROM run").fetchone()
if run is None: problems.append("no run row")
else:
    if run[0] != source: problems.append(f"source {run[0]!r}, want {source!r}")
    if run[1] != "finished": problems.append(f"status {run[1]!r}, want 'finished'")
plans = c.execute("SELECT version, reason FROM plans ORDER BY version").fetchall()
if not plans or plans[0] != (1, "initial plan"): problems.append(f"first plan {plans[:1]}, want (1, 'initial plan')")
eps = dict(c.execute("SELECT name, endpoint FROM endpoints"))
for e in ("telemetry", "control"):
    if not eps.get(e, "").startswith("tcp://127.0.0.1:"): problems.append(f"no {e} endpoint on loopback: {eps}")
if not one("SELECT count(*) FROM events"): problems.append("no events")
job, profile = c.execute("SELECT job_json, profile_json FROM run").fetchone()
if not job: problems.append("no job recorded")
if not profile or not json.loads(profile).get("layers"): problems.append("no profile recorded")
if problems:
    print(f"{name}: " + "; ".join(problems)); sys.exit(1)
PYEOF
}

L="tcp://127.0.0.1:*"
"$PW" simulate "$SRC/resources/jobs/bert24-4gpu.json" --db "$T/sim.sqlite" --listen "$L" > "$T/out" 2>&1 ||
  fail "simulate: $(cat "$T/out")"
check "simulate" "$T/sim.sqlite" simulate
"$PW" simulate "$NAS" "${NAS_SETS[@]}" --db "$T/nas-sim.sqlite" --listen "$L" > "$T/out" 2>&1 ||
  fail "simulate (supernet): $(cat "$T/out")"
check "simulate (supernet)" "$T/nas-sim.sqlite" simulate
"$PW" run "$MLP" --set training.iterations=3 --run-dir "$T/run" --db "$T/run.sqlite" --listen "$L" --quiet > "$T/out" 2>&1 ||
  fail "run: $(cat "$T/out")"
check "run" "$T/run.sqlite" run
# The same run directory and database again, a shorter run: the database
# holds this run's events, as many as its workers logged, none of the last
# run's (whose logs were still in the directory when it started).
"$PW" run "$MLP" --set training.iterations=8 --run-dir "$T/again" --db "$T/again.sqlite" --quiet > "$T/out" 2>&1 ||
  fail "run (first of two): $(cat "$T/out")"
"$PW" run "$MLP" --set training.iterations=2 --run-dir "$T/again" --db "$T/again.sqlite" --overwrite --quiet > "$T/out" 2>&1 ||
  fail "run (again, --overwrite): $(cat "$T/out")"
logged=$(cat "$T"/again/events/stage*.jsonl | wc -l)
recorded=$($PY -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM events').fetchone()[0])" "$T/again.sqlite")
[ "$logged" -gt 0 ] && [ "$recorded" -eq "$logged" ] ||
  fail "run again into the same directory: $recorded events recorded, its workers logged $logged"
"$PW" run "$NAS" "${NAS_SETS[@]}" --run-dir "$T/nas-run" --db "$T/nas-run.sqlite" --listen "$L" --quiet > "$T/out" 2>&1 ||
  fail "run (supernet): $(cat "$T/out")"
check "run (supernet)" "$T/nas-run.sqlite" run
echo "PASS: simulate, run and their supernet forms record alike"
