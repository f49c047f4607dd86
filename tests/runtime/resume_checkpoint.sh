#!/bin/bash
# A resume trusts nothing in its checkpoint (issue 41, item 7): an index
# whose directory leads out of the run, a position that is not an integer,
# negative or past the run, an empty or deeply nested index, a truncated or
# altered stage file: each refused, exit 2, naming the file and what is
# wrong (no library text), before anything is started or written: the run
# directory is byte for byte as it was. The untouched checkpoint still
# resumes. Pipeline runs, and supernet runs where pw_nas_worker and
# Fashion-MNIST are there.
# usage: resume_checkpoint.sh PIPEWRIGHT WORKER NAS_WORKER|"" SOURCE_DIR
set -u
PW=$1; export PW_WORKER=$2; NASW=$3; SRC=$4
source "$SRC/tests/cli_checks.sh"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export TMPDIR=$T
JOB=$SRC/tests/runtime/tiny-mlp.json
NAS=$SRC/resources/jobs/fmnist-supernet.json
NAS_SETS=(--set data.train_samples=640 --set data.test_samples=100)

snapshot() { (cd "$1" && find . -print | LC_ALL=C sort && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum); }

# refused NAME PATTERN DAMAGE-COMMAND [resume options...]: a fresh copy of
# the recorded run, damaged; the resume exits 2 naming PATTERN, with no raw
# library text, and leaves the copy as it found it.
refused() {
  local name="$1" pattern="$2" damage="$3"; shift 3
  rm -rf "$T/run"; cp -a "$T/orig" "$T/run"
  (cd "$T/run" && eval "$damage") || { echo "FAIL $name: the damage did not apply"; fail=$((fail+1)); return; }
  local before after
  before=$(snapshot "$T/run")
  out=$(timeout 60 "$PW" run --resume "$T/run" "$@" --quiet 2>&1); rc=$?
  after=$(snapshot "$T/run")
  if [ "$rc" != 2 ]; then echo "FAIL $name: exit $rc, want 2"; echo "$out" | head -5; fail=$((fail+1))
  elif ! grep -qF -- "$pattern" <<<"$out"; then echo "FAIL $name: lacks '$pattern'"; echo "$out" | head -5; fail=$((fail+1))
  elif grep -qE 'json\.exception|central directory|PytorchStreamReader|Exception raised from' <<<"$out"; then
    echo "FAIL $name: library text"; echo "$out" | head -5; fail=$((fail+1))
  elif [ "$before" != "$after" ]; then
    echo "FAIL $name: the refused resume changed the run directory"; diff <(echo "$before") <(echo "$after") | head; fail=$((fail+1))
  else passed=$((passed+1)); fi
}
# meta.json with one field replaced by a JSON value: set_field KEY JSON.
cat > "$T/set_field.py" <<'PY'
import json, sys
m = json.load(open("checkpoint/meta.json"))
m[sys.argv[1]] = json.loads(sys.argv[2])
open("checkpoint/meta.json", "w").write(json.dumps(m))
PY
set_field() { $PY "$T/set_field.py" "$1" "$2"; }
deep() { $PY -c "open('checkpoint/meta.json','w').write('['*100000 + ']'*100000)"; }

# Both kinds: KEY (iteration or subnet) and the stage file to damage.
damage_cases() {  # KEY STATE-FILE
  local key=$1 state=$2 k
  k=$($PY -c "import json; print(json.load(open('$T/orig/checkpoint/meta.json'))['$key'])")
  refused "$key: dir outside the run" "checkpoint/meta.json: \"dir\" is \"../../../../etc\", not \"checkpoint/$k\"" \
    "set_field dir '\"../../../../etc\"'"
  refused "$key: not an integer" "checkpoint/meta.json: \"$key\" is \"abc\", not an integer" \
    "set_field $key '\"abc\"'"
  refused "$key: negative" "checkpoint/meta.json: \"$key\" is -1" "set_field $key -1"
  refused "$key: 2^62" "checkpoint/meta.json: \"dir\" is \"checkpoint/$k\", not \"checkpoint/4611686018427387904\"" \
    "set_field $key 4611686018427387904"
  refused "$key: 2^62, forged alike" "checkpoint/meta.json: names $T/run/checkpoint/4611686018427387904" \
    "set_field $key 4611686018427387904 && set_field dir '\"checkpoint/4611686018427387904\"'"
  refused "$key: empty index" "checkpoint/meta.json: not a checkpoint index" ": > checkpoint/meta.json"
  refused "$key: 100k-deep index" "checkpoint/meta.json: not a checkpoint index: " deep
  refused "$key: no file records" "checkpoint/meta.json: no \"files\"" "set_field files null"
  refused "$key: truncated $state" "checkpoint/$k/$state: " "truncate -s 100 checkpoint/$k/$state"
  refused "$key: altered $state" "checkpoint/$k/$state: its content differs from the digest" \
    "$PY -c \"f='checkpoint/$k/$state'; b=bytearray(open(f,'rb').read()); b[len(b)//2]^=1; open(f,'wb').write(b)\""
  refused "$key: $state a link out of the run" "checkpoint/$k/$state: a link" \
    "cp checkpoint/$k/$state $T/elsewhere && rm checkpoint/$k/$state && ln -s $T/elsewhere checkpoint/$k/$state"
}

# Pipeline: checkpoints at 3 and 6 of 6.
check "pipeline run with checkpoints" 0 "$PW" run "$JOB" --run-dir "$T/orig" --set training.iterations=6 \
  --checkpoint-every 3 --quiet
damage_cases iteration stage0.pt --set training.iterations=8
refused "iteration: nothing left to train" "training.iterations: 6 iterations, the checkpoint" true
rm -rf "$T/run"; cp -a "$T/orig" "$T/run"
out=$("$PW" run --resume "$T/run" --set training.iterations=8 --json 2>&1); rc=$?
if [ "$rc" = 0 ] && grep -q '"start_iteration": 6' "$T/run/result.json"; then passed=$((passed+1))
else echo "FAIL the untouched checkpoint resumes: exit $rc"; echo "$out" | tail -5; fail=$((fail+1)); fi

if [ -n "$NASW" ] && [ -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  export PW_NAS_WORKER=$NASW
  rm -rf "$T/orig" "$T/run"
  check "supernet run with checkpoints" 0 "$PW" run "$NAS" --run-dir "$T/orig" --set training.iterations=20 \
    "${NAS_SETS[@]}" --checkpoint-every 8 --quiet
  # The kinds of damage the pipeline cases above take through the same reader, one of each here.
  k=16
  refused "subnet: dir outside the run" "checkpoint/meta.json: \"dir\" is \"../../../../etc\", not \"checkpoint/$k\"" \
    "set_field dir '\"../../../../etc\"'" "${NAS_SETS[@]}"
  refused "subnet: not an integer" "checkpoint/meta.json: \"subnet\" is \"abc\", not an integer" \
    "set_field subnet '\"abc\"'" "${NAS_SETS[@]}"
  refused "subnet: 100k-deep index" "checkpoint/meta.json: not a checkpoint index: " deep "${NAS_SETS[@]}"
  refused "subnet: truncated stage0.bin" "checkpoint/$k/stage0.bin: " "truncate -s 100 checkpoint/$k/stage0.bin" \
    "${NAS_SETS[@]}"
  refused "subnet: a stage part altered" "checkpoint/16/stage1.json: " \
    "$PY -c \"f='checkpoint/16/stage1.json'; open(f,'a').write(' ')\"" "${NAS_SETS[@]}"
  rm -rf "$T/run"; cp -a "$T/orig" "$T/run"
  check "the untouched supernet checkpoint resumes" 0 "$PW" run --resume "$T/run" --set training.iterations=24 \
    "${NAS_SETS[@]}" --quiet
else
  echo "note: supernet part skipped (no pw_nas_worker or no Fashion-MNIST)"
fi
checks_done
