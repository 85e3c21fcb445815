#!/usr/bin/env bash
# The README's second command: installs what is missing, builds everything
# (server and tests, Release), installs the end-to-end clients from npm, and
# runs every test with ctest; then the fuzz smoke run (tests/fuzz, clang,
# HERALD_FUZZ_SECONDS per target, default 15) and the whole ctest suite again
# in an AddressSanitizer + UndefinedBehaviorSanitizer build (./build-asan,
# UBSan findings abort). Exit status 0 only if all pass.
#
# Arguments go to both ctest runs (e.g. -R e2e). HERALD_TEST_STAGES picks the
# stages (default "normal fuzz asan"), e.g. HERALD_TEST_STAGES=normal.
set -euo pipefail
cd "$(dirname "$0")/.."
stages=" ${HERALD_TEST_STAGES:-normal fuzz asan} "
./scripts/install-deps.sh --test
npm ci --prefix tests/e2e --no-audit --no-fund --loglevel=error

timing=()
stage() { # stage NAME: records how long the previous command took
  timing+=("$1: $(( SECONDS - started )) s")
}

if [[ $stages == *" normal "* ]]; then
  started=$SECONDS
  ./scripts/build.sh -DHERALD_BUILD_TESTS=ON
  (cd build && ctest --output-on-failure --timeout 300 -j2 "$@")
  stage "build + ctest"
fi

if [[ $stages == *" fuzz "* ]]; then
  started=$SECONDS
  ./scripts/fuzz.sh "${HERALD_FUZZ_SECONDS:-15}"
  stage "fuzz build + smoke"
fi

if [[ $stages == *" asan "* ]]; then
  started=$SECONDS
  # -O1 -g1 (line tables, no variables): the sanitizers find the same faults and
  # report them with file:line, at about half the compile time of -O2 -g.
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHERALD_BUILD_TESTS=ON \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DHERALD_SANITIZE=address,undefined >/dev/null
  cmake --build build-asan -j2
  # detect_leaks: LeakSanitizer reports at exit; the e2e helpers fail a test
  # whose herald printed a sanitizer report.
  (cd build-asan &&
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    ctest --output-on-failure --timeout 600 -j2 "$@")
  stage "ASan+UBSan build + ctest"
fi

printf 'test.sh: %s\n' "${timing[@]}"
