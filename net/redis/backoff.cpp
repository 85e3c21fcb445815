#include "net/redis/backoff.hpp"

#include <algorithm>

namespace herald::net::redis {

backoff::backoff(std::chrono::milliseconds min, std::chrono::milliseconds max, std::uint32_t seed)
  : min_(std::max(min, std::chrono::milliseconds(0))),
    max_(std::max(max, min_)),
    step_(min_),
    rng_(seed) {}

std::chrono::milliseconds backoff::next() {
  auto ceiling = std::max(step_, std::chrono::milliseconds(1));
  std::uniform_int_distribution<long long> pick(ceiling.count() / 2, ceiling.count());
  std::chrono::milliseconds delay(pick(rng_));
  // A `min` of 0 would never grow: the step after it is 1 ms.
  step_ = std::min(std::max(step_ * 2, std::chrono::milliseconds(1)), max_);
  return delay;
}

void backoff::lost(clock::time_point now) noexcept {
  // Only a connection that stayed up a while proves the server healthy.
  if (now - up_since_ >= max_)
    step_ = min_;
}

} // namespace herald::net::redis
