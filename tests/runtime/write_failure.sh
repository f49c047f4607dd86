#!/bin/sh
# A checkpoint the disk refuses (here a file-size limit, EFBIG: unprivileged
# and deterministic; a full disk, ENOSPC, takes the same path and is tried in
# fault_trials.py) fails the run naming the file and the reason, never
# "killed by signal 6" (libtorch's own writer aborts); no temporary file is
# left, no checkpoint index points at a partial checkpoint, and the database
# says failed with the reason (issue 22).
# usage: write_failure.sh PIPEWRIGHT WORKER JOB.json
set -u
PW=$1; export PW_WORKER=$2; JOB=$3
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Stage files of ~8 MB (1024x1024 weights and Adam's two moments) against a
# 2 MiB limit; the events, job and database stay far below it.
(
  ulimit -f 4096  # blocks of 512 (dash) or 1024 bytes (bash): 2-4 MiB
  exec "$PW" run "$JOB" --run-dir "$T/run" --db "$T/run.sqlite" --checkpoint-every 1 --quiet \
    --set 'model.widths=[1024,1024]' --set training.iterations=3
) > /dev/null 2> "$T/err"
rc=$?
[ $rc -eq 1 ] || fail "want exit 1, got $rc: $(cat "$T/err")"
grep -q "stage [01]: writing stage state $T/run/checkpoint/1/stage[01].pt: File too large" "$T/err" ||
  fail "the error should name the checkpoint file and EFBIG: $(cat "$T/err")"
grep -q "signal" "$T/err" && fail "a write failure reported as a signal: $(cat "$T/err")"
tmps=$(find "$T/run" -name '*.tmp')
[ -z "$tmps" ] || fail "temporary files left: $tmps"
[ ! -e "$T/run/checkpoint/meta.json" ] || fail "a checkpoint index points at a checkpoint no stage completed"
python3 - "$T/run.sqlite" <<'PY' || fail "the database should say failed, naming the file and the reason"
import sqlite3, sys
status, reason = sqlite3.connect(sys.argv[1]).execute("SELECT status, reason FROM run").fetchone()
print(status, reason)
sys.exit(0 if status == "failed" and "File too large" in reason and "stage state" in reason else 1)
PY
echo ok
