#!/usr/bin/env bash
# Installs what Herald needs on Debian 12 (apt-get, as root or through sudo).
# Safe to run again: it installs only what is missing.
#   scripts/install-deps.sh             build and run (the demo included)
#   scripts/install-deps.sh --cluster   also Redis and HAProxy (scripts/cluster.sh)
#   scripts/install-deps.sh --test      also what the tests use (cluster tools included)
set -euo pipefail

packages=(
  g++ cmake make pkg-config git curl ca-certificates ccache
  libcaf-dev libboost1.81-dev libhiredis-dev nlohmann-json3-dev libspdlog-dev
  libjwt-dev libssl-dev openssl zlib1g-dev
  libprotobuf-dev protobuf-compiler
)
case "${1:-}" in
  --cluster) packages+=(redis-server haproxy) ;;
  # catch2: protocol suites; redis-server and haproxy: cluster tests;
  # chromium: the demo and status pages are tested in headless Chromium (tests/e2e);
  # prometheus: its promtool checks GET /metrics (tests/e2e/metrics);
  # clang + libclang-rt-14-dev: the libFuzzer targets (tests/fuzz; libclang-rt
  # holds libFuzzer and the sanitizer runtimes, libfuzzer-14-dev is not needed);
# python3: loadtest.baseline_ws checks the benchmark baseline's WebSocket side.
  --test) packages+=(catch2 redis-server haproxy chromium prometheus clang libclang-rt-14-dev python3) ;;
  "") ;;
  *) echo "usage: $0 [--cluster|--test]" >&2; exit 2 ;;
esac

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js (the demo publisher, and the end-to-end clients): Debian's, unless
# the machine already has a node and npm.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
