// A check for fuzz targets: aborts (so libFuzzer records the input as a
// crash) when an invariant does not hold. Used instead of assert(), which
// Release builds compile out.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);            \
      std::abort();                                                                                \
    }                                                                                              \
  } while (0)
