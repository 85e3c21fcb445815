// cluster_mirror: how a channel in cluster mode keeps its log (channel_log.hpp)
// equal to the channel's stream in Redis. A plain value: no actor, no I/O;
// the channel actor (channel_actor.hpp) feeds it the gateway's events and
// carries out the steps it answers (fan out what was applied, ask for a
// sync, retry later, answer the waiting subscribers).
//
// With its first subscriber the channel watches the channel in Redis
// (watch()); once Redis confirms the watch (on_watching()) it asks for a
// sync: the epoch, head and history after the offset it has. Live
// publications that arrive before the sync is in, or that jump ahead of the
// log (a message lost while Redis was away), are held and merged when the
// sync answers; every (re)confirmed watch, e.g. after a Redis reconnect,
// syncs again, so live subscribers lose nothing that Redis stored.
//
// Epochs: Redis naming an epoch this channel has not seen starts the log
// over in it (from its first entry); Redis naming an epoch the channel LEFT
// means its state was restored from an older snapshot and those offsets were
// issued already, so the next sync carries what was delivered in that epoch
// and the sync script moves the channel to a new epoch instead of reissuing
// them (docs/cluster.md "History that went backwards", net/redis/sync.lua).
#pragma once

#include "actors/channel_log.hpp"
#include "actors/messages.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace herald::actors {

/// A sync to ask the gateway for: the stream's entries after offset `after`
/// (0: from its start), sent with the position this channel delivered up to
/// (`epoch`, `delivered`) so that Redis can tell a history that went back.
struct sync_request {
  std::uint64_t after = 0;
  std::string epoch;
  std::uint64_t delivered = 0;
};

class cluster_mirror {
public:
  /// Epochs remembered as left (see retired()).
  static constexpr std::size_t max_retired_epochs = 16;

  /// What the channel does after an event, in this order.
  struct step {
    /// Appended to the log already, oldest first: fan them out.
    std::vector<publication_ptr> applied;
    /// The sync succeeded: answer the subscribers waiting for the mirror.
    bool became_ready = false;
    /// Ask the gateway for this sync now.
    std::optional<sync_request> sync;
    /// The sync failed (`error` says why): call on_watching() again after a pause.
    bool retry_later = false;
    std::string error;
    /// Redis brought back an epoch this channel had left (for the log; the
    /// step's sync moves the channel to a new epoch).
    std::string restored_epoch;
  };

  /// Asked the gateway to watch, and not yet told to stop.
  bool watching() const noexcept { return watching_; }
  /// The log matches Redis up to live traffic: subscribers and position
  /// queries can be answered from it.
  bool ready() const noexcept { return watching_ && synced_ && !syncing_; }
  /// Live publications held until a sync answers.
  std::size_t held() const noexcept { return held_.size(); }
  /// Epochs this channel left, with the highest offset it delivered in each
  /// (newest last, at most max_retired_epochs).
  const std::vector<std::pair<std::string, std::uint64_t>>& retired() const noexcept {
    return retired_;
  }

  /// A subscriber needs the mirror. @return true when the gateway must be
  /// asked to watch the channel now (it was not watching).
  bool watch();

  /// Nobody here listens any more: forgets the log's history and what is
  /// held (the log keeps its epoch and offset: the next sync sends them).
  /// The caller tells the gateway to stop watching. @return false when it was
  /// not watching (nothing to tell).
  bool unwatch(channel_log& log);

  /// Redis confirmed the watch (again), or the pause after a failed sync
  /// ended. @return the sync to ask for now; none while not watching or
  /// while a sync is on its way (another follows that one).
  std::optional<sync_request> on_watching(const channel_log& log);

  /// The gateway's answer to the last sync asked for; fills `log`.
  step on_synced(sync_result& res, channel_log& log);

  /// A live publication of the channel from Redis, in its order of arrival;
  /// appends it to `log` when it is the next one.
  step on_remote(const publication_ptr& p, channel_log& log);

private:
  std::optional<sync_request> request_sync(const channel_log& log);
  void retire(const channel_log& log);

  bool watching_ = false;
  bool synced_ = false;       ///< the log matched Redis after the last sync
  bool syncing_ = false;      ///< a sync is on its way
  bool sync_again_ = false;   ///< another sync was asked for meanwhile
  std::uint64_t sync_after_ = 0; ///< the offset the sync on its way reads after
  std::map<std::uint64_t, publication_ptr> held_;
  std::vector<std::pair<std::string, std::uint64_t>> retired_;
  /// A sync that must retire `stale_epoch_` (Redis brought it back): sent
  /// with it as the caller's epoch and `stale_delivered_` as what was delivered.
  std::string stale_epoch_;
  std::uint64_t stale_delivered_ = 0;
};

} // namespace herald::actors
