#!/usr/bin/env bash
# pipewright and pipewright-train are one command (docs/ARCHITECTURE.md,
# "Executables"): pipewright links no libtorch, hands the train commands over
# with the same argv, answers usage alike, and says so when its sibling is missing.
set -u
PW="$1"; SRC="$2"
. "$SRC/tests/cli_checks.sh"
TRAIN="$(dirname "$PW")/pipewright-train"
U="$SRC/resources/jobs/uniform-8stage.json"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# No libtorch (nor what it drags in) among pipewright's libraries.
if command -v ldd >/dev/null; then
  if ldd "$PW" | grep -E 'libtorch|libc10|libgloo|libQt|libopencv'; then
    echo "FAIL pipewright links libtorch or what it drags in"; fail=$((fail+1))
  else passed=$((passed+1)); fi
fi
check "version" 0 "$PW" --version
check "plan" 0 "$PW" plan "$U"

if [ -x "$TRAIN" ]; then
  # One usage: the forwarded commands' names and summaries (cli/train_commands.cpp) are the train side's.
  py_check "usage alike" "import subprocess as s; a=s.run(['$PW','--help'],capture_output=True,text=True).stdout; b=s.run(['$TRAIN','--help'],capture_output=True,text=True).stdout; assert a==b and 'run ' in a, (a,b)"
  for cmd in run profile search export-subnet; do
    grep -q "^  $cmd " <("$TRAIN" --help) || continue
    py_check "$cmd --help forwarded" "import subprocess as s; a=s.run(['$PW','$cmd','--help'],capture_output=True,text=True); b=s.run(['$TRAIN','$cmd','--help'],capture_output=True,text=True); assert a.returncode==0 and (a.stdout,a.stderr)==(b.stdout,b.stderr), (a,b)"
  done
  expect_text "help run forwarded" 0 "train the job for real" "$PW" help run
  # Exit codes pass through the exec: a usage error is 2, a refused job file 2.
  expect_text "run usage error" 2 "pipewright run" "$PW" run "$U" --threads 0
  expect_text "run missing job" 2 "none.json" "$PW" run "$tmp/none.json"
  # The process is replaced, not wrapped: the pid the shell started is pipewright-train's.
  py_check "exec keeps the pid" "
import subprocess as s, time
p = s.Popen(['$PW', 'run', '--help'], stdout=s.PIPE)
exe = ''
for _ in range(200):
    try: exe = __import__('os').readlink('/proc/%d/exe' % p.pid)
    except OSError: break
    if exe.endswith('pipewright-train'): break
    time.sleep(0.005)
p.communicate()
assert exe.endswith('pipewright-train'), exe
"
  # Alone in a folder: what needs no libtorch still works; a train command names the missing file.
  cp "$PW" "$tmp/pipewright"
  check "alone: plan" 0 "$tmp/pipewright" plan "$U"
  expect_text "alone: run names the sibling" 127 "$tmp/pipewright-train" "$tmp/pipewright" run "$U"
  expect_text "alone: help profile names the sibling" 127 "pipewright-train" "$tmp/pipewright" help profile
fi
checks_done
