// The one clock the load generator uses: CLOCK_MONOTONIC in nanoseconds.
// Publisher and subscribers run on the same machine, so the send time a
// publication carries can be compared with the time a subscriber receives
// it, across processes.
#pragma once

#include <cstdint>
#include <ctime>

namespace herald::loadtest {

/// CLOCK_MONOTONIC now, in nanoseconds.
inline std::int64_t mono_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// Seconds as nanoseconds.
inline std::int64_t seconds_ns(double s) noexcept {
  return static_cast<std::int64_t>(s * 1e9);
}

} // namespace herald::loadtest
