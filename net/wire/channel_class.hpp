// channel_class: what a class of channels (matched by name pattern, issue 22
// §1, docs/protocol.md "Channel classes") sets for its channels besides the
// history bounds: how a subscriber without an exact position is answered
// (recovery mode) and what happens to a subscriber whose outbound queue
// passes the high-water mark (overflow policy). Plain values shared by the
// actors (which pick the class of a channel) and the sessions (which apply
// the overflow policy per subscription).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

/// One class: the channels its pattern matches and what it sets for them.
struct channel_class {
  /// `stream:*`, `user:*`, a longer prefix ending in `*` (`stream:vip-*`),
  /// or one exact channel name; `*` alone is the default class.
  std::string pattern;
  std::size_t history_size = 0;      ///< publications kept (>= 1)
  std::chrono::seconds history_ttl{}; ///< age after which they expire (>= 1 s)
  recovery_mode recovery = recovery_mode::stream;
  overflow_policy overflow = overflow_policy::close;
  bool delta = true; ///< subscribers may negotiate delta compression
};

/// The classes of a server (--channel-classes), and the default class every
/// other channel belongs to (today's behaviour with --history-size and
/// --history-ttl).
class channel_classes {
public:
  /// Only the default class.
  channel_classes(std::size_t history_size, std::chrono::seconds history_ttl);

  /// Parses --channel-classes. `text`: classes separated by `;`, each a
  /// pattern followed by space-separated `key=value` settings, e.g.
  /// `stream:* history-size=1 recovery=cache; user:* overflow=conflate`.
  /// Keys: `history-size` (publications, >= 1), `history-ttl` (seconds,
  /// >= 1), `recovery` (`stream` | `cache`), `overflow` (`close` |
  /// `conflate`), `delta` (`allowed` | `refused`); a key not given takes
  /// the default class's value (the `*` class if listed, else
  /// `history_size`/`history_ttl` and today's behaviour). A pattern is `*`, a
  /// channel name, or a prefix of one ending in `*` that starts with
  /// `stream:` or `user:` and uses only the characters that shape allows
  /// (net/wire/channel_name.hpp). Empty text: no classes.
  /// @returns the classes, or nullopt with `error` naming the bad part
  ///          (unknown key, bad value, bad or repeated pattern, a key
  ///          repeated inside one class).
  static std::optional<channel_classes> parse(std::string_view text, std::size_t history_size,
                                              std::chrono::seconds history_ttl,
                                              std::string& error);

  /// The class of a valid channel name: an exact pattern, else the longest
  /// matching prefix, else the default class.
  const channel_class& of(std::string_view channel) const noexcept;

  /// The default class (pattern `*`).
  const channel_class& fallback() const noexcept { return default_; }

  /// The classes as listed, without the default one.
  const std::vector<channel_class>& listed() const noexcept { return classes_; }

private:
  channel_class default_;
  std::vector<channel_class> classes_;
};

} // namespace herald::net
