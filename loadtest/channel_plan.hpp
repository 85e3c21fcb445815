// Which channels the load generator uses, which ones each connection
// subscribes to and which ones each publication goes to. Pure and
// deterministic, so the parent (publisher) and every worker (subscribers)
// agree without talking.
//
// Channel ids: 0..streams-1 are `stream:<prefix>-<i>`; with user channels,
// streams..2*streams-1 are `user:<G...>`, Stellar account ids (StrKey of 32
// pseudo-random bytes drawn from `seed`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace herald::loadtest {

/// How connections and publications map onto channels.
enum class channel_layout {
  /// Connection k subscribes stream k % streams; publication n goes to
  /// stream (n - 1) % streams. With streams = 1 this is a fan-out.
  streams,
  /// As the real app: connection k subscribes stream i = k % streams and
  /// user i (the account it logs in as); publication n goes to stream
  /// i = (n - 1) % streams and to user (i + 1) % streams (the other party of
  /// the payment stream), so a connection hears its own stream on one
  /// channel and its neighbour's stream on the other.
  streams_and_users,
};

struct channel_plan {
  std::string prefix = "lt"; ///< stream channel names: stream:<prefix>-<i>
  std::uint32_t streams = 1; ///< number of stream channels (>= 1)
  channel_layout layout = channel_layout::streams;
  std::uint64_t seed = 1; ///< draws the user accounts

  /// Number of channel ids.
  int total() const noexcept;
  /// The channel name of id `id` (0 <= id < total()).
  std::string name(int id) const;
  /// Every channel name, indexed by id.
  std::vector<std::string> names() const;
  /// Channel ids connection `k` (0-based, global) subscribes to.
  std::vector<int> channels_of_connection(std::uint64_t k) const;
  /// Channel ids publication `seq` (1-based) goes to.
  std::vector<int> channels_of_publication(std::uint64_t seq) const;
};

/// A Stellar account id ("G...", SEP-23 StrKey) made of 32 bytes drawn from
/// (seed, index) with splitmix64: deterministic, valid, distinct in practice.
std::string account_id_for(std::uint64_t seed, std::uint64_t index);

} // namespace herald::loadtest
