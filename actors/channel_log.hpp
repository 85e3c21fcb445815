// channel_log: what both modes of a channel keep of its publications: the
// epoch, the offset of the latest publication and a history of the latest
// ones bounded by count (--history-size) and age (--history-ttl); and the
// recovery decision for a subscriber that names a position
// (docs/protocol.md "Recovery"). A plain value: no actor, no I/O. The
// channel actor (channel_actor.hpp) owns one; in cluster mode the
// cluster_mirror (cluster_mirror.hpp) fills it from Redis.
#pragma once

#include "actors/publication.hpp"
#include "net/wire/channel_class.hpp"
#include "net/wire/history_bounds.hpp"
#include "net/wire/stream_position.hpp"
#include "net/wire/tags_filter.hpp"

#include <caf/actor_clock.hpp>
#include <caf/timestamp.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace herald::actors {

/// Per-channel history bounds.
struct history_options {
  std::size_t size = net::history_bounds::size; ///< publications kept (>= 1)
  caf::timespan ttl = net::history_bounds::ttl; ///< age after which they expire
  /// How long a publisher's idempotency key is remembered (--idempotency-window).
  caf::timespan idempotency_window = net::history_bounds::idempotency_window;
};

/// The recovery decision for one subscribe.
struct recovery {
  bool recovered = false;
  std::string reason; ///< "epoch_changed", "offset_in_future", "history_expired" or empty
  std::vector<publication_ptr> replay;
  /// Cache recovery: `replay` is the latest publication alone, standing in
  /// for a recovery that could not be exact (or for no position at all).
  bool cached = false;
};

struct channel_log {
  std::string epoch;
  std::uint64_t offset = 0; ///< offset of the latest publication; 0 before the first
  /// The latest publications, oldest first; offsets contiguous, ending at `offset`.
  std::deque<publication_ptr> history;
  history_options limits;

  /// Takes `p` as the latest publication: `offset` becomes p->offset (the
  /// caller guarantees it is above the current one, in this epoch), the
  /// history keeps at most limits.size entries.
  void append(publication_ptr p);

  /// Drops history entries at least limits.ttl old at `now`.
  void expire(caf::actor_clock::time_point now);

  /// Starts `new_epoch` at offset 0 with an empty history.
  void restart(std::string new_epoch);

  /// What a subscriber at `since` receives: see docs/protocol.md "Recovery".
  /// Call expire() first so that expired entries are not replayed.
  /// @param epoch_history with `since` in another epoch (epoch_changed): the
  ///        replay holds the retained history of the current epoch, oldest
  ///        first, and `recovered` stays false.
  /// @param mode recovery_mode::cache: when the history holds a publication,
  ///        a subscribe without `since`, or one whose recovery cannot be
  ///        exact (another epoch, an offset ahead of the channel's, history
  ///        trimmed or expired past it), gets the latest publication alone
  ///        (`cached`; `recovered` true when `since` was given, `reason`
  ///        says why the exact recovery failed). An exact recovery stays
  ///        exact; an empty history falls back to the stream answer.
  /// @param filter with recovery_mode::cache (may be null: none): the cached
  ///        publication is the newest one `filter` matches, and the replay
  ///        runs from it to the latest, so that the session's filter drops
  ///        the ones after it and the position still reaches the head; none
  ///        matching: an empty replay (`cached`, no publication).
  recovery decide(const std::optional<net::stream_position>& since, bool epoch_history = false,
                  net::recovery_mode mode = net::recovery_mode::stream,
                  const net::tags_filter* filter = nullptr) const;

  /// decide() in recovery_mode::stream.
  recovery decide_stream(const std::optional<net::stream_position>& since,
                         bool epoch_history) const;

  /// The history holds `p` (same epoch assumed): the same event and data at
  /// its offset.
  bool holds(const publication& p) const;
};

} // namespace herald::actors
