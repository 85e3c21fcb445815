// token_bucket: a rate limit (pure: the caller passes the time). Holds at
// most `burst` tokens, refilled at `rate_per_second`; each command takes one.
// Used for --ws-commands-per-second / --ws-commands-burst.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>

namespace herald::net {

class token_bucket {
public:
  using clock = std::chrono::steady_clock;

  /// @param rate_per_second tokens added per second; 0 or less: no limit.
  /// @param burst bucket size (at least 1); the bucket starts full.
  token_bucket(double rate_per_second, std::size_t burst, clock::time_point now)
    : rate_(rate_per_second),
      burst_(static_cast<double>(std::max<std::size_t>(burst, 1))),
      tokens_(burst_),
      last_(now) {}

  /// Takes one token at time `now` (monotonic, never earlier than the last
  /// call's). @returns false, taking nothing, when the bucket is empty.
  bool take(clock::time_point now) noexcept {
    if (rate_ <= 0)
      return true;
    if (now > last_) {
      std::chrono::duration<double> dt = now - last_;
      tokens_ = std::min(burst_, tokens_ + dt.count() * rate_);
      last_ = now;
    }
    if (tokens_ < 1.0)
      return false;
    tokens_ -= 1.0;
    return true;
  }

  /// Tokens available now (fractional), for tests.
  double tokens() const noexcept { return tokens_; }

private:
  double rate_;
  double burst_;
  double tokens_;
  clock::time_point last_;
};

} // namespace herald::net
