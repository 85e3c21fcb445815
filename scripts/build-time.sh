#!/usr/bin/env bash
# Measures a cold Release build with the tests (what ./scripts/test.sh's normal
# stage compiles) against a reference compile: one source file that includes
# Boost.Asio/Beast, CAF, nlohmann/json and spdlog, at -O2. The ratio (build
# seconds / reference seconds) is the figure to compare across machines and
# runs; README.md's Tests section quotes it.
#   scripts/build-time.sh              this checkout
#   scripts/build-time.sh DIR [DIR...] other checkouts too (e.g. a clone of an
#                                      older commit), measured in the same run
# Builds into a temporary directory (removed afterwards), -j2 unless
# HERALD_BUILD_JOBS is set. Needs what scripts/install-deps.sh --test installs.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=("$here")
jobs=${HERALD_BUILD_JOBS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/reference.cpp" <<'CPP'
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
int main() {
  boost::asio::io_context io;
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  boost::beast::http::request<boost::beast::http::string_body> req;
  spdlog::info("{}", nlohmann::json{{"a", 1}}.dump());
  io.run();
}
CPP

reference() { # seconds for one reference compile
  local start end
  start=$(date +%s.%N)
  g++ -std=c++17 -O2 -DNDEBUG -c "$tmp/reference.cpp" -o "$tmp/reference.o"
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

build() { # seconds for a cold Release build with the tests of checkout $1
  local start end
  rm -rf "$tmp/build"
  start=$(date +%s.%N)
  cmake -S "$1" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DHERALD_BUILD_TESTS=ON >/dev/null
  cmake --build "$tmp/build" -j"$jobs" >"$tmp/build.log" 2>&1 || { tail -30 "$tmp/build.log"; exit 1; }
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

for d in "${dirs[@]}"; do
  r1=$(reference)
  b=$(build "$d")
  r2=$(reference)
  r=$(echo "($r1 + $r2) / 2" | bc -l)
  printf '%s (%s): build %.0f s, reference compile %.1f s (%.1f, %.1f), ratio %.1f\n' \
    "$d" "$(git -C "$d" rev-parse --short HEAD 2>/dev/null || echo '?')" "$b" "$r" "$r1" "$r2" \
    "$(echo "$b / $r" | bc -l)"
done
