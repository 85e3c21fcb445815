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
// history; the channel's log mirrors it through a cluster_mirror
// (cluster_mirror.hpp: watch, sync, held publications, retired epochs).
// Subscribers that come before the mirror is ready wait for it; a
// publication is not applied here but published through the gateway and
// comes back as a remote one. With its last subscriber gone it stops
// watching and forgets the history.
#pragma once

#include "actors/messages.hpp"
#include "actors/channel_log.hpp"
#include "actors/cluster_mirror.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <chrono>
#include <cstddef>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace herald::actors {

/// A channel actor's state: its log (epoch, offset, history, bounds), its
/// subscribers, and in in-process mode the publishers' idempotency keys; in
/// cluster mode the gateway and the mirror.
struct channel_state : channel_log {
  std::string name;
  /// In-process mode: idempotency key -> the offset its publication got, and
  /// the keys in the order they came, with when (expiry after the window).
  std::unordered_map<std::string, std::uint64_t> keys;
  std::deque<std::pair<caf::actor_clock::time_point, std::string>> key_order;
  /// In-process mode: the version of the last publication that carried one
  /// (0: none yet) and its version epoch; a publication whose version is
  /// not above it in the same version epoch is suppressed. Kept as long as
  /// the channel (its metadata), like the epoch.
  std::uint64_t version = 0;
  std::string version_epoch;
  /// connection actor -> its session (where publications go)
  std::unordered_map<caf::actor, std::shared_ptr<net::delivery_sink>> subscribers;
  /// A subscriber negotiated delta compression on this channel: from then
  /// on each publication gets a Fossil delta against the one before (once,
  /// for all subscribers: publication::delta), also while no such
  /// subscriber is connected, so one that comes back recovers with deltas.
  bool deltas = false;
  /// The publication fanned out last, the base of the next one's delta
  /// whatever the history keeps (a class with history-size=1 holds only the
  /// newest, which would leave no base: deltas negotiated, none sent).
  publication_ptr delta_base;
  /// The channel's class (net/wire/channel_class.hpp): its recovery mode,
  /// overflow policy and whether deltas are allowed (its history bounds are
  /// in `limits`).
  net::channel_class cls;
  /// The subscribers' sessions grouped by shard, as handed to the shards;
  /// rebuilt before a publication when `subscribers` changed.
  std::vector<std::pair<net::shard*, net::subscriber_list_ptr>> fanout_lists;
  bool fanout_dirty = false;
  caf::actor registry;
  std::uint64_t ops_received = 0; ///< messages forwarded by the registry so far
  bool prune_scheduled = false;

  // -- cluster mode ---------------------------------------------------------
  caf::actor gateway;                     ///< null in in-process mode
  cluster_mirror mirror;                  ///< keeps the log equal to Redis
  std::vector<subscribe_request> waiting; ///< subscribers waiting for the mirror

  /// Drops history entries older than the TTL, and idempotency keys older
  /// than the window, at `now`.
  void prune(caf::actor_clock::time_point now);

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
/// @param cls the channel's class: recovery mode, overflow policy and delta
///        (its history bounds are given in `limits`).
caf::behavior channel_actor(channel_pointer self, std::string name, std::string epoch,
                            history_options limits, caf::actor registry, caf::actor gateway,
                            const net::channel_class& cls);

} // namespace herald::actors
