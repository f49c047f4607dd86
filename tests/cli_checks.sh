# Sourced by the CLI test scripts (tests/cli, tests/db): checks that count
# passes and failures and print what failed, so a script runs every check
# and ends with `checks_done`, its exit status.
PY=/usr/bin/python3
fail=0; passed=0
check() {  # name, expected exit, command...
  local name="$1" want="$2"; shift 2
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$want" ]; then echo "FAIL $name: exit $rc, want $want"; echo "$out" | head -20; fail=$((fail+1)); else passed=$((passed+1)); fi
}
expect_text() {  # name, expected exit, text, command...: the exit status and the text
  local name="$1" want="$2" text="$3"; shift 3
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$want" ]; then echo "FAIL $name: exit $rc, want $want"; echo "$out" | head -20; fail=$((fail+1))
  elif ! grep -qF -- "$text" <<<"$out"; then echo "FAIL $name: output lacks '$text'"; echo "$out" | head -20; fail=$((fail+1))
  else passed=$((passed+1)); fi
}
# Root writes into any directory: a command that must meet an unwritable
# one runs as nobody there (prefix it with "${UNPRIVILEGED[@]}").
UNPRIVILEGED=()
if [ "$(id -u)" = 0 ]; then UNPRIVILEGED=(setpriv --reuid=65534 --regid=65534 --clear-groups); fi
# refused_output NAME OPTION FILE command...: exit 2, the message names OPTION,
# FILE unchanged (checksum), and no *.tmp beside it.
refused_output() {
  local name="$1" opt="$2" file="$3"; shift 3
  local before after leftovers
  before=$(sha256sum < "$file")
  out=$("$@" 2>&1); rc=$?
  after=$(sha256sum < "$file")
  leftovers=$(find "$(dirname "$file")" -maxdepth 1 -name '*.tmp' | wc -l)
  if [ "$rc" != 2 ] || ! grep -qF -- "$opt" <<<"$out" || [ "$before" != "$after" ] || [ "$leftovers" != 0 ]; then
    echo "FAIL $name: exit $rc (want 2), names '$opt': $(grep -cF -- "$opt" <<<"$out"), unchanged: $([ "$before" = "$after" ] && echo yes || echo no), temporary files: $leftovers"
    echo "$out" | head -10; fail=$((fail+1))
  else passed=$((passed+1)); fi
}

py_check() {  # name, python code (exit 0 = pass)
  local name="$1"; shift
  if out=$("$PY" -c "$1" 2>&1); then passed=$((passed+1)); else echo "FAIL $name"; echo "$out" | tail -20; fail=$((fail+1)); fi
}
checks_done() {
  echo "$passed passed, $fail failed"
  [ "$fail" = 0 ]
}
