// channel_actor: one channel (`stream:{id}` or `user:{address}`).
//
// Spawned by the channel registry on first use, linked to it. Holds the
// channel's subscribers (connection actors, monitored: a dead subscriber is
// dropped on its down message, each with its session), its epoch, the offset
// of its latest publication and a history of the latest publications bounded
// by count (--history-size) and age (--history-ttl). For each publication it
// assigns the next offset, encodes the frames once, appends to the history
// and hands it to its subscribers' sessions with one post per I/O shard
// (net/fanout.hpp): no actor message per delivery, and it never waits for a
// subscriber. A subscribe is answered with the recovery decision and the
// missed publications through the same shard queue, before any live
// publication fanned out afterwards, which makes the seam between history
// and live delivery exact; the connection actor is told separately whom to
// unsubscribe from. When it has no subscribers and its history has expired
// it tells the registry, which stops it. Runs on CAF's scheduler.
//
// Cluster mode (a gateway is given): Redis assigns offsets and holds the
// history; the channel mirrors it. With its first subscriber it asks the
// gateway to watch the channel; once Redis confirms the watch it syncs its
// epoch, head and history from the Redis stream, then answers the waiting
// subscribers. Publications arrive from the gateway; one whose offset jumps
// ahead (a message lost while Redis was away) is held while the channel
// fills the gap from the stream. Every (re)confirmed watch, e.g. after a
// Redis reconnect, syncs again, so live subscribers lose nothing that Redis
// stored. With its last subscriber gone it stops watching and forgets.
#pragma once

#include "actors/messages.hpp"
#include "net/wire/history_bounds.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
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
};

struct channel_state {
  std::string name;
  std::string epoch;
  std::uint64_t offset = 0; ///< offset of the latest publication; 0 before the first
  std::deque<publication_ptr> history;
  /// In-process mode: idempotency key -> the offset its publication got, and
  /// the keys in the order they came, with when (expiry after the window).
  std::unordered_map<std::string, std::uint64_t> keys;
  std::deque<std::pair<caf::actor_clock::time_point, std::string>> key_order;
  /// connection actor -> its session (where publications go)
  std::unordered_map<caf::actor, std::shared_ptr<net::delivery_sink>> subscribers;
  /// The subscribers' sessions grouped by shard, as handed to the shards;
  /// rebuilt before a publication when `subscribers` changed.
  std::vector<std::pair<net::shard*, net::subscriber_list_ptr>> fanout_lists;
  bool fanout_dirty = false;
  history_options limits;
  caf::actor registry;
  std::uint64_t ops_received = 0; ///< messages forwarded by the registry so far
  bool prune_scheduled = false;

  // -- cluster mode ---------------------------------------------------------
  caf::actor gateway;                            ///< null in in-process mode
  bool watching = false;                         ///< asked the gateway to watch
  bool synced = false;                           ///< mirror matches Redis (up to live traffic)
  bool syncing = false;                          ///< a sync is on its way
  bool sync_again = false;                       ///< another sync was asked for meanwhile
  std::uint64_t sync_after = 0;                  ///< the offset the sync on its way reads after
  std::vector<subscribe_request> waiting;        ///< subscribers waiting for the first sync
  std::map<std::uint64_t, publication_ptr> held; ///< live publications held during a sync
  /// Epochs this channel left, with the highest offset it delivered in each
  /// (newest last, at most max_retired_epochs). Redis naming one again means
  /// its state was restored from an older snapshot: those offsets were issued
  /// already, so the channel is moved to a new epoch instead of reissuing
  /// them (docs/cluster.md "History that went backwards").
  std::vector<std::pair<std::string, std::uint64_t>> retired;
  static constexpr std::size_t max_retired_epochs = 16;
  /// A sync that must retire `stale_epoch` (Redis brought it back): sent with
  /// it as the caller's epoch and `stale_delivered` as what was delivered.
  std::string stale_epoch;
  std::uint64_t stale_delivered = 0;

  /// Drops history entries older than the TTL, and idempotency keys older
  /// than the window, at `now`.
  void prune(caf::actor_clock::time_point now);

  /// Appends `p` (whose offset is offset + 1), trimming to the size bound.
  void append(publication_ptr p);

  /// What a subscriber at `since` receives: see docs/protocol.md "Recovery".
  /// Call prune() first so that expired entries are not replayed.
  /// @param epoch_history with `since` in another epoch (epoch_changed): the
  ///        replay holds the retained history of the current epoch, oldest
  ///        first, and `recovered` stays false.
  recovery decide(const std::optional<net::stream_position>& since,
                  bool epoch_history = false) const;

  /// The history holds `p` (same epoch assumed): the same event and data at
  /// its offset.
  bool holds(const publication& p) const;

  /// Rebuilds fanout_lists from subscribers if they changed.
  void refresh_fanout();

  /// In-process mode: when the last subscriber left. The channel (and its
  /// epoch) stays until `limits.ttl` after, even with no history: a cursor
  /// taken before the first publication ({epoch, 0}) must resume exactly, not
  /// meet a new epoch, when its client reconnects soon (docs/protocol.md).
  caf::actor_clock::time_point vacated{};

  /// No subscribers, nothing left to recover, and no recent subscriber's
  /// cursor that could name this epoch at offset 0 (in-process mode).
  bool idle(caf::actor_clock::time_point now) const noexcept {
    return subscribers.empty() && waiting.empty() && history.empty() && keys.empty() &&
           (gateway || vacated == caf::actor_clock::time_point{} || now - vacated >= limits.ttl);
  }
};

using channel_pointer = caf::stateful_actor<channel_state>*;

/// Behavior of a channel actor.
/// @param epoch identifier of this history generation ([a-z0-9], 1-32
///        chars); ignored in cluster mode, where Redis holds the epoch.
/// @param gateway the Redis gateway in cluster mode, null otherwise.
caf::behavior channel_actor(channel_pointer self, std::string name, std::string epoch,
                            history_options limits, caf::actor registry, caf::actor gateway);

} // namespace herald::actors
