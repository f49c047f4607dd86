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
py_check() {  # name, python code (exit 0 = pass)
  local name="$1"; shift
  if out=$("$PY" -c "$1" 2>&1); then passed=$((passed+1)); else echo "FAIL $name"; echo "$out" | tail -20; fail=$((fail+1)); fi
}
checks_done() {
  echo "$passed passed, $fail failed"
  [ "$fail" = 0 ]
}
