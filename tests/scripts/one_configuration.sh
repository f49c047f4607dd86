#!/usr/bin/env bash
# The build does nothing when nothing changed: scripts/test, demo, bench, package
# and .ci/run configure build/ the same way, and configuring it again changes no
# command ninja would run (issue 30). Usage: one_configuration.sh SOURCE_DIR
#  1. every script builds build/ through pw_build with no arguments of its own, and
#     none but scripts/common.sh runs cmake on $BUILD_DIR;
#  2. scripts/common.sh's configuration, run twice on a scratch build folder, gives
#     the same commands (compile and link lines: ninja -t commands) both times. A
#     find module whose first configure differs from the next (CMake 3.25's
#     pkg_check_modules moved libzmq's -isystem) made the second script rebuild
#     everything that includes ipc/.
set -euo pipefail
SRC="$(cd "$1" && pwd)"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; passed=0
ok() { passed=$((passed+1)); }
bad() { echo "FAIL: $*"; fail=$((fail+1)); }

for s in "$SRC"/scripts/test "$SRC"/scripts/demo "$SRC"/scripts/bench "$SRC"/scripts/package; do
  n=$(grep -cE '^[[:space:]]*pw_build[[:space:]]*$' "$s" || true)
  [ "$n" = 1 ] && ok || bad "$(basename "$s") does not call pw_build exactly once without arguments"
  if grep -nE '^[^#]*pw_build[[:space:]]+[^[:space:]#]' "$s"; then bad "$(basename "$s") passes pw_build arguments"; else ok; fi
done
for s in "$SRC"/scripts/* "$SRC"/.ci/run; do
  [ "$(basename "$s")" = common.sh ] && continue
  if grep -nE '^[^#]*cmake[^#]*(-B|--build)[[:space:]]+"?\$\{?BUILD_DIR' "$s"; then
    bad "$(basename "$s") runs cmake on \$BUILD_DIR itself (use pw_build)"
  else ok; fi
done
grep -q 'bash scripts/test' "$SRC/.ci/run" && ok || bad ".ci/run no longer runs scripts/test"

# Configure twice through the scripts' own function, compare what ninja would run.
(
  export PW_BUILD_DIR="$tmp/build"
  # shellcheck source=/dev/null
  source "$SRC/scripts/common.sh"
  pw_configure >/dev/null
  ninja -C "$PW_BUILD_DIR" -t commands > "$tmp/first.txt"
  cp "$PW_BUILD_DIR/compile_commands.json" "$tmp/first.json"
  pw_configure >/dev/null
  ninja -C "$PW_BUILD_DIR" -t commands > "$tmp/second.txt"
  cp "$PW_BUILD_DIR/compile_commands.json" "$tmp/second.json"
)
[ -s "$tmp/first.txt" ] && ok || bad "no commands after configuring"
if diff "$tmp/first.txt" "$tmp/second.txt" > "$tmp/diff.txt" && cmp -s "$tmp/first.json" "$tmp/second.json"; then
  ok
else
  bad "configuring build/ a second time changes $(grep -c '^>' "$tmp/diff.txt" || true) commands (the next script rebuilds them):"
  head -4 "$tmp/diff.txt" | cut -c1-400
fi

echo "$passed passed, $fail failed"
[ $fail = 0 ]
