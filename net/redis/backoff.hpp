// backoff: the reconnect delays of everything in net/redis that reconnects
// (connection.hpp, subscriber.hpp): `min` doubling after every attempt up
// to `max`, each delay drawn uniformly from [ceiling/2, ceiling] (jitter, so
// many instances that lost one Redis do not come back in step), and back to
// `min` only when a connection that stayed up at least `max` is lost. A
// server that accepts the handshake and then closes the connection at once
// (an ACL refusing the first command, a refused SUBSCRIBE) is thus retried
// with the same growing delay as a refused connect, not many times a second.
//
// Pure: no I/O, no timer. The owner passes the clock's readings in and arms
// its own timer with next(). Not thread-safe: one owner, one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace herald::net::redis {

class backoff {
public:
  using clock = std::chrono::steady_clock;

  /// Delays from `min` doubling to `max` (both >= 0; `max` below `min`
  /// counts as `min`). `seed` seeds the jitter (tests pass a fixed one).
  backoff(std::chrono::milliseconds min, std::chrono::milliseconds max,
          std::uint32_t seed = std::random_device{}());

  /// The delay before the next attempt, in [ceiling/2, ceiling] where the
  /// ceiling is the current step (at least 1 ms); then doubles the step, up
  /// to `max`. Never longer than max(`max`, 1 ms).
  std::chrono::milliseconds next();

  /// A connection completed its handshake at `now`.
  void up(clock::time_point now) noexcept { up_since_ = now; }

  /// The connection that came up last was lost at `now`: the steps start
  /// again at `min` if it stayed up at least `max`, else they keep growing.
  void lost(clock::time_point now) noexcept;

  /// The current step (the ceiling of the next delay), in milliseconds.
  std::chrono::milliseconds ceiling() const noexcept { return step_; }

private:
  std::chrono::milliseconds min_;
  std::chrono::milliseconds max_;
  std::chrono::milliseconds step_;
  clock::time_point up_since_{};
  std::mt19937 rng_;
};

} // namespace herald::net::redis
