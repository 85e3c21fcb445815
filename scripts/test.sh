#!/usr/bin/env bash
# The README's second command: installs what is missing, builds everything
# (server and tests, Release), installs the end-to-end clients from npm, and
# runs every test with ctest. Exit status 0 only if all pass.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh --test
./scripts/build.sh -DHERALD_BUILD_TESTS=ON
npm ci --prefix tests/e2e --no-audit --no-fund --loglevel=error
cd build
ctest --output-on-failure --timeout 300 -j2 "$@"
