#!/bin/bash
# A run directory is one run's while it lasts (issue 41, item 5): a second
# run, a resume, a supernet search into a directory a run holds is refused,
# exit 2, naming the holder's pid and command (RUN_DIR/run.lock); the lock
# goes with the run, and the directory then takes the next run. Pipeline
# and supernet runs alike (the supernet part needs pw_nas_worker and
# Fashion-MNIST).
# usage: run_dir_lock.sh PIPEWRIGHT WORKER NAS_WORKER|"" SOURCE_DIR
set -u
PW=$1; export PW_WORKER=$2; NASW=$3; SRC=$4
source "$SRC/tests/cli_checks.sh"
T=$(mktemp -d)
HOLDER=
trap '[ -n "$HOLDER" ] && kill -9 "$HOLDER" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
export TMPDIR=$T  # the runs' rendezvous directories too: removed with it
JOB=$SRC/tests/runtime/tiny-mlp.json
NAS=$SRC/resources/jobs/fmnist-supernet.json
NAS_SETS=(--set data.train_samples=640 --set data.test_samples=100)

# Waits until the holder's note is in DIR/run.lock.
held_by() {  # PID DIR
  for _ in $(seq 600); do
    grep -q "^pid $1: " "$2/run.lock" 2>/dev/null && return 0
    kill -0 "$1" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
# Ends the holder (SIGINT, as a user would) and checks it took its lock file along.
release() {  # DIR
  kill -INT "$HOLDER"; wait "$HOLDER" 2>/dev/null; HOLDER=
  if [ -e "$1/run.lock" ]; then echo "FAIL: $1/run.lock outlived its run"; fail=$((fail+1)); else passed=$((passed+1)); fi
}

# A pipeline run holds its directory.
"$PW" run "$JOB" --run-dir "$T/run" --set training.iterations=1000000 --quiet > /dev/null 2> "$T/holder.err" &
HOLDER=$!
if held_by $HOLDER "$T/run"; then
  passed=$((passed+1))
  expect_text "a second run into a held directory" 2 "is in use by pid $HOLDER: " \
    "$PW" run "$JOB" --run-dir "$T/run" --set training.iterations=2 --quiet
  expect_text "the holder's command is named" 2 "--run-dir $T/run" \
    "$PW" run "$JOB" --run-dir "$T/run" --set training.iterations=2 --quiet
  expect_text "a resume of a held directory" 2 "is in use by pid $HOLDER: " "$PW" run --resume "$T/run" --quiet
  expect_text "a resume from elsewhere into a held directory" 2 "is in use by pid $HOLDER: " \
    "$PW" run --resume "$T/run" --run-dir "$T/other" --quiet
  release "$T/run"
else
  echo "FAIL: the holder never locked $T/run"; cat "$T/holder.err"; fail=$((fail+1))
fi
check "the directory takes a run once the holder ended" 0 \
  "$PW" run "$JOB" --run-dir "$T/run" --set training.iterations=2 --quiet

if [ -n "$NASW" ] && [ -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  export PW_NAS_WORKER=$NASW
  "$PW" run "$NAS" --run-dir "$T/nas" --set training.iterations=100000 "${NAS_SETS[@]}" --quiet \
    > /dev/null 2> "$T/nas-holder.err" &
  HOLDER=$!
  if held_by $HOLDER "$T/nas"; then
    passed=$((passed+1))
    expect_text "a second supernet run into a held directory" 2 "is in use by pid $HOLDER: " \
      "$PW" run "$NAS" --run-dir "$T/nas" --set training.iterations=8 "${NAS_SETS[@]}" --quiet
    expect_text "a pipeline run into a supernet run's directory" 2 "is in use by pid $HOLDER: " \
      "$PW" run "$JOB" --run-dir "$T/nas" --set training.iterations=2 --quiet
    expect_text "a search of a held supernet directory" 2 "is in use by pid $HOLDER: " "$PW" search "$T/nas"
    release "$T/nas"
  else
    echo "FAIL: the supernet holder never locked $T/nas"; cat "$T/nas-holder.err"; fail=$((fail+1))
  fi
else
  echo "note: supernet part skipped (no pw_nas_worker or no Fashion-MNIST)"
fi
checks_done
