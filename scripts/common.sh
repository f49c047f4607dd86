# Shared by scripts/demo, scripts/test, scripts/bench, scripts/package.
# Installs the Debian 12 packages Pipewright builds against (only when
# something is missing), then configures and builds with the release preset.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${PW_BUILD_DIR:-$ROOT/build}"

# Only what a build, a test or a benchmark uses: the benchmarks print ratios
# of their own (no Google Benchmark), tests read databases with Python's
# sqlite3 module and draw the studio offscreen (no sqlite3 tool, no Xvfb).
PW_PACKAGES=(
  build-essential cmake ninja-build pkg-config git python3 bc
  nlohmann-json3-dev libgtest-dev libcli11-dev
  libsqlite3-dev
  libzmq3-dev cppzmq-dev libprotobuf-dev protobuf-compiler
  libtorch-dev libgloo-dev
  qt6-base-dev qt6-svg-dev libqcustomplot-dev libgraphviz-dev libgl-dev
  dataset-fashion-mnist fortunes
  python3-torch python3-torchvision python3-zmq python3-protobuf
  librapidcheck-dev
)
# scripts/fuzz and the CI fuzz smoke: libFuzzer comes with clang.
PW_FUZZ_PACKAGES=(clang-14 libfuzzer-14-dev)

pw_install_packages() {
  local missing=()
  for p in "${PW_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then return 0; fi
  echo "==> installing ${#missing[@]} missing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The one configuration of build/ every script uses (test, demo, bench, package,
# .ci/run): same folder, same cache arguments, so the second script to run finds
# nothing to do. No script passes arguments of its own (tests/build checks it):
# an argument one script adds and another lacks reconfigures and rebuilds.
PW_CMAKE_ARGS=(-G Ninja -DCMAKE_BUILD_TYPE=Release)
# ccache where it is installed (not a package we install: a clean CI machine
# has no cache to hit). Through `cmake -E env` so the settings live in the
# build's configuration and hold for a plain `cmake --build` too: base_dir
# hashes paths under the checkout relative to it, so a fresh clone in another
# folder hits the same entries; the sloppiness lets the precompiled headers
# (target_precompile_headers: libtorch in engine/runtime, Qt in gui) be cached.
if command -v ccache >/dev/null 2>&1; then
  PW_CMAKE_ARGS+=("-DCMAKE_CXX_COMPILER_LAUNCHER=$(command -v cmake);-E;env;CCACHE_BASEDIR=$ROOT;CCACHE_NOHASHDIR=1;CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime;ccache")
fi

pw_configure() {
  echo "==> configuring ($BUILD_DIR)"
  cmake -S "$ROOT" -B "$BUILD_DIR" "${PW_CMAKE_ARGS[@]}" >/dev/null
}

pw_build() {
  if [ $# -ne 0 ]; then
    echo "pw_build takes no arguments (one configuration for every script: PW_CMAKE_ARGS)" >&2
    return 2
  fi
  pw_configure
  echo "==> building"
  cmake --build "$BUILD_DIR" --parallel "$(nproc)"
}
