#!/bin/sh
# A resume that cannot proceed says why (exit 2, naming the field) and leaves
# the run directory byte for byte as it was; a correct resume still works
# after it (issue 22, item 6).
# usage: resume_refusal.sh PIPEWRIGHT WORKER JOB.json
set -u
PW=$1; export PW_WORKER=$2; JOB=$3
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
snapshot() { (cd "$1" && find . -type f -print | LC_ALL=C sort | xargs sha256sum) > "$2"; }

"$PW" run "$JOB" --run-dir "$T/run" --set training.iterations=6 --checkpoint-every 3 --quiet > /dev/null 2> "$T/err" ||
  fail "recording run: $(cat "$T/err")"
[ -s "$T/run/checkpoint/meta.json" ] || fail "no checkpoint recorded"
snapshot "$T/run" "$T/before"

# Each refused change: the model's shape, its depth, the stage count, the optimizer.
refuse() {  # FIELD MESSAGE-PATTERN --set ...
  field=$1; pattern=$2; shift 2
  "$PW" run --resume "$T/run" "$@" --quiet > /dev/null 2> "$T/err"
  rc=$?
  [ $rc -eq 2 ] || fail "resume with $* should exit 2, got $rc: $(cat "$T/err")"
  grep -q "$field: $pattern" "$T/err" || fail "error should name $field: $(cat "$T/err")"
  snapshot "$T/run" "$T/after"
  cmp -s "$T/before" "$T/after" || fail "resume with $* changed the run directory: $(diff "$T/before" "$T/after")"
}
refuse model.widths "differs from the checkpoint's \[32,32\] (now \[16,32\]); a resume cannot change the model" \
  --set 'model.widths=[16,32]'
refuse model.widths "differs from the checkpoint's \[32,32\]" --set 'model.widths=[32,32,32]'
refuse model.input "differs from the checkpoint's 20" --set model.input=21
refuse pipeline.stages "differs from the checkpoint's 2" --set pipeline.stages=1 --set cluster.devices=1
refuse training.optimizer "differs from the checkpoint's \"adam\"" --set training.optimizer=sgd

# The refusals left the run resumable: the same job continues from iteration 6.
"$PW" run --resume "$T/run" --set training.iterations=8 --json > "$T/out" 2> "$T/err" || fail "correct resume: $(cat "$T/err")"
python3 - "$T/out" <<'PY' || fail "the resumed run should start at 6 and train 2 iterations: $(cat "$T/out")"
import json, sys
j = json.load(open(sys.argv[1]))
sys.exit(0 if j["exit_code"] == 0 and len(j["losses"]) == 2 else 1)
PY
grep -q '"start_iteration": 6' "$T/run/result.json" || fail "result.json should say the run started at 6"
echo ok
