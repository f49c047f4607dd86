#!/bin/bash
# Rendezvous directories ($TMPDIR/pipewright-run-*) do not outlive their run
# (issue 41, item 9): kill -9 of the coordinator leaves none (its watcher
# removes it), and a run removes those a dead owner left (pid gone, or the
# pid reused: another start time), keeping a live owner's and one without
# an owner record. Pipeline and supernet runs alike (the supernet part
# needs pw_nas_worker and Fashion-MNIST).
# usage: rendezvous_cleanup.sh PIPEWRIGHT WORKER NAS_WORKER|"" SOURCE_DIR
set -u
PW=$1; export PW_WORKER=$2; NASW=$3; SRC=$4
source "$SRC/tests/cli_checks.sh"
T=$(mktemp -d)
RUN=
trap '[ -n "$RUN" ] && kill -9 "$RUN" 2>/dev/null; rm -rf "$T"' EXIT
export TMPDIR=$T/tmp
mkdir -p "$TMPDIR"
JOB=$SRC/tests/runtime/tiny-mlp.json
NAS=$SRC/resources/jobs/fmnist-supernet.json
NAS_SETS=(--set data.train_samples=640 --set data.test_samples=100)

stores() { find "$TMPDIR" -maxdepth 1 -name 'pipewright-run-*' | LC_ALL=C sort; }
fake() {  # NAME OWNER-LINE|"": a store directory as a run leaves it
  mkdir -p "$TMPDIR/pipewright-run-$1"; : > "$TMPDIR/pipewright-run-$1/store"
  [ -n "$2" ] && echo "$2" > "$TMPDIR/pipewright-run-$1/owner"
}

# Stale ones: the owner gone; the owner's pid now another process's.
sleep 0 & gone=$!; wait $gone
self_start=$(awk '{print $22}' /proc/$$/stat)
fake dead "pid $gone start 12345"
fake reused "pid $$ start $((self_start + 1))"
fake live "pid $$ start $self_start"
fake unowned ""
check "a run on a host with stale rendezvous directories" 0 \
  "$PW" run "$JOB" --run-dir "$T/r1" --set training.iterations=2 --quiet
left=$(stores | xargs -n1 basename | tr '\n' ' ')
if [ "$left" = "pipewright-run-live pipewright-run-unowned " ]; then passed=$((passed+1))
else echo "FAIL the stale directories (dead, reused) go, the others stay: left $left"; fail=$((fail+1)); fi
rm -rf "$TMPDIR"/pipewright-run-*

# kill -9 of the coordinator: its directory goes within a few seconds.
killed() {  # NAME command...
  local name=$1; shift
  "$@" > /dev/null 2> "$T/killed.err" &
  RUN=$!
  for _ in $(seq 600); do [ -n "$(stores)" ] && [ -e "$(stores | head -1)/store" ] && break; sleep 0.05; done
  sleep 0.5
  if [ -z "$(stores)" ]; then echo "FAIL $name: no rendezvous directory appeared"; cat "$T/killed.err"; fail=$((fail+1)); return; fi
  kill -9 $RUN; wait $RUN 2>/dev/null; RUN=
  for _ in $(seq 100); do [ -z "$(stores)" ] && break; sleep 0.05; done
  if [ -z "$(stores)" ]; then passed=$((passed+1))
  else echo "FAIL $name: left $(stores)"; fail=$((fail+1)); rm -rf "$TMPDIR"/pipewright-run-*; fi
}
killed "pipeline coordinator killed" "$PW" run "$JOB" --run-dir "$T/r2" --set training.iterations=1000000 --quiet

if [ -n "$NASW" ] && [ -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  export PW_NAS_WORKER=$NASW
  killed "supernet launcher killed" "$PW" run "$NAS" --run-dir "$T/n1" --set training.iterations=100000 \
    "${NAS_SETS[@]}" --quiet
else
  echo "note: supernet part skipped (no pw_nas_worker or no Fashion-MNIST)"
fi
checks_done
