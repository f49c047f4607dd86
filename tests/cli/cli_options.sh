#!/usr/bin/env bash
# The command line itself (engine/cli/command.cpp, docs/cli.md): typed and
# range-checked options naming themselves, suggestions for misspelt options
# and commands, per-command --help, `--`. Commands of optional layers are
# checked where this build has them.
set -u
PW=$(realpath "$1"); SRC="$2"
. "$SRC/tests/cli_checks.sh"
lacks() {  # name, text, command...: the output does not contain text
  local name="$1" text="$2"; shift 2
  out=$("$@" 2>&1)
  if grep -qF -- "$text" <<<"$out"; then echo "FAIL $name: output has '$text'"; echo "$out" | head -20; fail=$((fail+1)); else passed=$((passed+1)); fi
}
J="$SRC/resources/jobs"; U="$J/uniform-8stage.json"; B="$J/bert24-4gpu.json"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# The command list, from `pipewright --help`: "  NAME   summary" lines under "commands:".
cmds=$("$PW" --help | awk '/^commands:/{on=1; next} on && /^$/{exit} on {print $1}')
[ "$(wc -w <<<"$cmds")" -ge 3 ] && passed=$((passed+1)) || { echo "FAIL command list: '$cmds'"; fail=$((fail+1)); }
has() { grep -qx "$1" <<<"$cmds"; }

# Every command's --help: exit 0 on stdout, its own usage line, every option it has.
for c in $cmds; do
  out=$("$PW" "$c" --help 2>/dev/null); rc=$?
  if [ "$rc" = 0 ] && grep -q "^usage: pipewright $c" <<<"$out" && grep -qF -- "-h, --help" <<<"$out"; then passed=$((passed+1))
  else echo "FAIL $c --help: exit $rc"; echo "$out" | head -5; fail=$((fail+1)); fi
  check "$c -h" 0 "$PW" "$c" -h
done
out=$("$PW" plan --help 2>&1)
for o in JOB.json --planner --profile --json "--set a.b=v"; do
  grep -qF -- "$o" <<<"$out" && passed=$((passed+1)) || { echo "FAIL plan --help lacks $o"; echo "$out"; fail=$((fail+1)); }
done
expect_text "help shows ranges" 0 "--port P" "$PW" launch --help
expect_text "help shows the range of --port" 0 "[1, 65535]" "$PW" launch --help
expect_text "help wins over a bad option" 0 "usage: pipewright plan" "$PW" plan --bogus --help
expect_text "pipewright help CMD" 0 "usage: pipewright simulate JOB.json" "$PW" help simulate
expect_text "launch says why --set is refused" 0 "refused: overrides would not reach the remote hosts" "$PW" launch --help
expect_text "launch --set refused" 2 "--set is not carried to remote hosts" "$PW" launch "$B" --hosts h1 --set pipeline.stages=2

# Numbers are checked in their own type and name the option; bounds are inclusive.
expect_text "launch --port 0" 2 '--port: must be an integer in [1, 65535], got "0"' "$PW" launch "$B" --hosts h1,h2 --port 0
expect_text "launch --port 65536" 2 '--port: must be an integer in [1, 65535], got "65536"' "$PW" launch "$B" --hosts h1,h2 --port 65536
expect_text "launch --port 65535" 0 "MASTER_PORT=65535" "$PW" launch "$B" --hosts h1,h2 --port 65535
expect_text "launch --port=29600" 0 "MASTER_PORT=29600" "$PW" launch "$B" --hosts h1,h2 --port=29600
expect_text "launch --port 1e3" 2 '--port: must be an integer in [1, 65535], got "1e3"' "$PW" launch "$B" --hosts h1,h2 --port 1e3
expect_text "launch --port 80x" 2 '--port: must be an integer in [1, 65535], got "80x"' "$PW" launch "$B" --hosts h1,h2 --port 80x
expect_text "launch --nproc-per-host -1" 2 '--nproc-per-host: must be an integer in [1, 4096], got "-1"' "$PW" launch "$B" --hosts h1 --nproc-per-host -1
expect_text "usage line after a range error" 2 "usage: pipewright launch JOB.json --hosts h1,h2,..." "$PW" launch "$B" --hosts h1 --port 0
expect_text "launch needs --hosts" 2 "--hosts is required" "$PW" launch "$B"
expect_text "--sbatch excludes --output" 2 "--sbatch excludes --output" "$PW" launch "$B" --hosts h1 --sbatch "$tmp/a" --output "$tmp/b"
if has run; then
  expect_text "run --threads 0" 2 '--threads: must be an integer in [1, 1024], got "0"' "$PW" run "$U" --threads 0
  expect_text "run --checkpoint-every abc" 2 '--checkpoint-every: must be an integer' "$PW" run "$U" --checkpoint-every abc
  expect_text "run --attach needs --port" 2 "--attach requires --port" "$PW" run "$U" --attach
fi
if has profile; then
  expect_text "profile --repeats -1" 2 '--repeats: must be an integer in [1, 1000000], got "-1"' "$PW" profile "$U" -o "$tmp/p.json" --repeats -1
  expect_text "profile --in-situ 1" 2 '--in-situ: must be an integer in [2, 1000000], got "1"' "$PW" profile "$U" -o "$tmp/p.json" --in-situ 1
  expect_text "profile needs -o" 2 "is required" "$PW" profile "$U"
  [ ! -e "$tmp/p.json" ] && passed=$((passed+1)) || { echo "FAIL a refused profile wrote its file"; fail=$((fail+1)); }
fi
if has watch; then
  expect_text "watch --timeout abc" 2 '--timeout: must be a number in [0, 86400], got "abc"' "$PW" watch tcp://127.0.0.1:9 --timeout abc
  expect_text "watch --timeout inf" 2 '--timeout: must be a number' "$PW" watch tcp://127.0.0.1:9 --timeout inf
  expect_text "watch --interval -0.5" 2 '--interval: must be a number in [0, 86400], got "-0.5"' "$PW" watch tcp://127.0.0.1:9 --interval -0.5
  expect_text "watch keys go together" 2 "--server-key requires --client-key" "$PW" watch tcp://127.0.0.1:9 --server-key "$tmp/s.pub"
fi
if has explain; then
  expect_text "explain --threshold-ms -1" 2 '--threshold-ms: must be a number in [0, 1e+09], got "-1"' "$PW" explain "$tmp/none.sqlite" --threshold-ms -1
fi
expect_text "simulate --linger needs --listen" 2 "--linger requires --listen" "$PW" simulate "$U" --linger 1
expect_text "--overwrite needs --db" 2 "--overwrite requires --trace or --db" "$PW" simulate "$U" --overwrite

# Misspelt options: the nearest option of that command; nothing for a word far from all of them.
expect_text "--plannr" 2 "unknown option --plannr; did you mean --planner?" "$PW" plan "$U" --plannr greedy
expect_text "--jsno (transposed)" 2 "did you mean --json?" "$PW" simulate "$U" --jsno
expect_text "--trace=x misspelt" 2 "unknown option --trce; did you mean --trace?" "$PW" simulate "$U" --trce=x.json
expect_text "--hots for launch" 2 "did you mean --hosts?" "$PW" launch "$B" --hots h1
expect_text "--zzzzzzzz unknown" 2 "unknown option --zzzzzzzz" "$PW" plan "$U" --zzzzzzzz
lacks "--zzzzzzzz no suggestion" "did you mean" "$PW" plan "$U" --zzzzzzzz
expect_text "extra argument" 2 "unexpected argument \"$U\"" "$PW" plan "$U" "$U"
expect_text "missing job" 2 "JOB.json is required" "$PW" plan
expect_text "--set without a value" 2 "--set needs a value (a.b=v)" "$PW" plan "$U" --set

# Unknown commands: the nearest command, and the list.
expect_text "simluate" 2 'unknown command "simluate"; did you mean "simulate"?' "$PW" simluate "$U"
expect_text "pln" 2 'did you mean "plan"?' "$PW" pln "$U"
expect_text "unknown command lists commands" 2 "commands:" "$PW" frobnicate
lacks "frobnicate no suggestion" "did you mean" "$PW" frobnicate

# --set repeats, one value each: a --set before the job does not take the job file.
expect_text "--set before the job" 0 '"microbatches": 32' "$PW" simulate --set training.batch_size=128 "$U" --json
expect_text "--set=a.b=v" 0 '"microbatches": 32' "$PW" simulate "$U" --json --set=training.batch_size=128
expect_text "two --set" 0 '"microbatches": 16' "$PW" simulate "$U" --json --set training.batch_size=128 --set training.microbatch_size=8

# `--` ends the options: a job file whose name starts with '-'.
cp "$U" "$tmp/-u.json"
(cd "$tmp" && expect_text "-- then -u.json" 0 '"throughput_samples_per_s"' "$PW" simulate --json -- -u.json
 expect_text "-u.json without --" 2 "unknown option -u.json" "$PW" simulate --json -u.json
 echo "$passed $fail" > counts)
read passed fail < "$tmp/counts"

checks_done
