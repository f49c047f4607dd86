#!/usr/bin/env bash
# Builds the Debian package from this build tree, checks its contents and
# dependencies, unpacks it into a fresh prefix and runs the installed binary
# on a shipped example job.
set -euo pipefail
BUILD="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$BUILD"
cpack -G DEB -B "$tmp/pkg" >/dev/null
deb=$(ls "$tmp"/pkg/pipewright_*_amd64.deb)
fail=0; passed=0
ok() { passed=$((passed+1)); }
bad() { echo "FAIL: $*"; fail=$((fail+1)); }

contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/pipewright ./usr/bin/pipewright-split ./usr/share/applications/pipewright-studio.desktop \
         ./usr/share/mime/packages/pipewright.xml ./usr/share/pipewright/jobs/bert24-4gpu.json \
         ./usr/share/pipewright/profiles/pipedream/vgg16/graph.txt ./usr/share/pipewright/profiles/pipedream/LICENSE.txt \
         ./usr/share/doc/pipewright/ARCHITECTURE.md; do
  grep -qF " $f" <<<"$contents" && ok || bad "package lacks $f"
done
[ -f "$BUILD/gui/pipewright-studio" ] || [ -f "$BUILD/gui/app/pipewright-studio" ] && {
  grep -qF "./usr/bin/pipewright-studio" <<<"$contents" && ok || bad "package lacks the studio"; }
depends=$(dpkg-deb -f "$deb" Depends)
grep -q "libstdc++6" <<<"$depends" && ok || bad "Depends lacks libstdc++6: $depends"
if ldd "$BUILD/engine/cli/pipewright" | grep -q libsqlite3; then
  grep -q "libsqlite3-0" <<<"$depends" && ok || bad "Depends lacks libsqlite3-0: $depends"
fi
if ldd "$BUILD/engine/cli/pipewright" | grep -q libtorch; then
  grep -q "libtorch1.13" <<<"$depends" && ok || bad "Depends lacks libtorch1.13: $depends"
fi
[ "$(dpkg-deb -f "$deb" Architecture)" = amd64 ] && ok || bad "architecture is not amd64"

dpkg-deb -x "$deb" "$tmp/root"
out=$("$tmp/root/usr/bin/pipewright" simulate "$tmp/root/usr/share/pipewright/jobs/uniform-8stage.json" --json)
grep -q '"throughput_samples_per_s"' <<<"$out" && ok || bad "installed binary did not simulate"
out=$("$tmp/root/usr/bin/pipewright" plan "$tmp/root/usr/share/pipewright/jobs/pipedream/vgg16-profile-4gpu.json" --json)
grep -q '"planner": "pipedream"' <<<"$out" && ok || bad "installed binary did not plan on the installed PipeDream profile"
"$tmp/root/usr/bin/pipewright-split" --help | grep -q "MODULE:FACTORY" && ok || bad "installed pipewright-split does not run"
"$tmp/root/usr/bin/pipewright" --version | grep -q "^pipewright [0-9]" && ok || bad "--version"

echo "$passed passed, $fail failed"
[ $fail = 0 ]
