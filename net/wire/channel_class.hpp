// channel_class: what a class of channels (matched by name pattern, issue 22
// §1, docs/protocol.md "Channel classes") sets for its channels besides the
// history bounds: how a subscriber without an exact position is answered
// (recovery mode) and what happens to a subscriber whose outbound queue
// passes the high-water mark (overflow policy). Plain values shared by the
// actors (which pick the class of a channel) and the sessions (which apply
// the overflow policy per subscription).
#pragma once

#include <cstdint>
#include <string_view>

namespace herald::net {

/// How a channel answers a subscribe that cannot be an exact recovery.
enum class recovery_mode : std::uint8_t {
  /// Today's behaviour: replay what was missed from history; when that is
  /// impossible (trimmed, expired, new epoch) the subscriber is told of the
  /// gap.
  stream,
  /// Centrifugo's cache recovery: a subscribe without a position, or a
  /// recovery that cannot be exact, gets the channel's latest publication
  /// first (if it has one), then live publications.
  cache,
};

/// What happens when a subscriber's outbound queue passes the high-water mark
/// (--client-max-buffer).
enum class overflow_policy : std::uint8_t {
  /// Today's behaviour: the connection is closed as a slow client (SSE after
  /// a final `herald.gap`, WebSocket 1008/3008).
  close,
  /// Per channel only the newest pending publication is kept (older pending
  /// ones of that channel are dropped); the subscriber is not closed.
  conflate,
};

/// "stream", "cache".
constexpr std::string_view to_string(recovery_mode m) noexcept {
  return m == recovery_mode::cache ? "cache" : "stream";
}

/// "close", "conflate".
constexpr std::string_view to_string(overflow_policy p) noexcept {
  return p == overflow_policy::conflate ? "conflate" : "close";
}

} // namespace herald::net
