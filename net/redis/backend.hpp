// backend: what the Redis gateway actor asks of Redis, as an interface.
//
// The real implementation (client.hpp) runs hiredis on an Asio strand; the
// actor tests use a recording stand-in. Methods may be called from any
// thread and return at once; completions and events run on the backend's
// own thread (never an actor's), so implementations of the callbacks must
// only hand the data on (the gateway sends itself a message).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace herald::net::redis {

/// Defaults both backends (client, cluster_client) start from:
/// --redis-command-timeout-ms and --redis-wait-replicas.
inline constexpr std::chrono::milliseconds default_command_timeout{2000};
inline constexpr std::size_t default_wait_replicas = 0;

class backend {
public:
  virtual ~backend() = default;

  /// What a publish did in Redis, as far as this instance can know
  /// (docs/protocol.md "Publish outcomes"). Only `stored` is ok.
  enum class outcome : std::uint8_t {
    /// The script ran and answered (and --redis-wait-replicas replicas
    /// confirmed it): epoch and offset are set.
    stored,
    /// --redis-wait-replicas: the master stored it (and published it), but
    /// fewer replicas than asked confirmed it, or WAIT itself failed (an
    /// error, the connection lost or timed out after the script's reply). A
    /// retry without the same idempotency key stores it twice.
    not_replicated,
    /// Certainly not stored: never sent (not connected, the connection went
    /// before the command's bytes left), or refused by Redis before the
    /// script ran (NOSCRIPT, MOVED, ASK, TRYAGAIN, CLUSTERDOWN, READONLY,
    /// LOADING, BUSY, MASTERDOWN, NOAUTH, CROSSSLOT).
    not_stored,
    /// Sent, and no answer says what happened: the connection was lost or
    /// timed out before the script's reply, or the script failed with
    /// another error (it may have written part of its work). It may be
    /// stored and delivered: retry with the same idempotency key.
    unknown,
  };

  struct publish_result {
    bool ok = false;
    std::string error;        ///< why it failed (not connected, timeout, Redis error)
    std::string epoch;        ///< the channel's epoch in Redis
    std::uint64_t offset = 0; ///< the offset Redis gave the publication
    bool duplicate = false;   ///< the idempotency key was seen: the first publication's offset
    /// The version was not above the channel's last (same version epoch):
    /// nothing stored or published; `epoch`/`offset` are the channel's.
    bool stale_version = false;
    /// Redis answered with an error reply (READONLY, OOM, script error...),
    /// not a WAIT that fell short: the instance does not take writes.
    bool refused = false;
    outcome what = outcome::not_stored; ///< stored when ok
  };

  struct sync_result {
    bool ok = false;
    std::string error;
    std::string epoch;                  ///< the channel's epoch in Redis
    std::uint64_t head = 0;             ///< offset of its latest publication
    std::vector<std::string> envelopes; ///< history entries after the asked offset, in order
  };

  /// What one publication carries into the publish script.
  struct publish_args {
    std::string event;
    std::string data;              ///< compact JSON text
    std::string idempotency_key{}; ///< empty: none
    /// 0: none; else the guard of docs/protocol.md "Versioned publishing",
    /// kept in the channel's meta hash (`version`, `version_epoch`).
    std::uint64_t version = 0;
    std::string version_epoch{};
    /// The publication's tags besides the event as a JSON object text
    /// (net/wire/tags.hpp tags_json()), "" when none.
    std::string tags{};
  };

  /// Runs the publish script for one channel (docs/cluster.md). `done` is
  /// called exactly once, with ok true and `what` stored, or ok false and
  /// `what` saying whether the publication is stored but not replicated,
  /// certainly not stored, or unknown (see outcome); the publisher gets 503.
  /// `idempotency_key` (may be empty): a key already stored for the channel
  /// within the window is answered with its publication's epoch and offset
  /// (duplicate true) and nothing is stored or published; decided inside the
  /// script, so instances that receive the same retry agree. A `version`
  /// not above the channel's last in the same version epoch is answered
  /// with the channel's position (stale_version true), nothing stored or
  /// published; decided inside the script too.
  virtual void publish(const std::string& channel, const publish_args& args,
                       std::function<void(publish_result)> done) = 0;

  /// Tries a write like a publish's (two keys, in a script) that stores
  /// nothing lasting, to learn whether Redis takes writes again. `done` once.
  virtual void probe_write(std::function<void(publish_result)> done) = 0;

  /// Reads a channel's epoch, head offset and history after `after`
  /// (starting an epoch when the channel has none). `epoch` and `delivered`
  /// are the caller's position: the epoch it knows (empty: none) and the
  /// highest offset it delivered in it. When Redis has that epoch with a head
  /// below `delivered` (its history went backwards: a restore, a failover to
  /// a replica that missed the tail), the channel moves to a new epoch in
  /// the same atomic step, so offsets already delivered are never issued
  /// again (docs/cluster.md "History that went backwards"). `done` called once.
  virtual void sync(const std::string& channel, std::uint64_t after, const std::string& epoch,
                    std::uint64_t delivered, std::function<void(sync_result)> done) = 0;

  /// Starts / stops receiving a channel's publications (SUBSCRIBE /
  /// UNSUBSCRIBE of its pub/sub channel, batched by the implementation).
  virtual void watch(const std::string& channel) = 0;
  virtual void unwatch(const std::string& channel) = 0;

  /// Events, set before start(): a publication envelope of a watched
  /// channel; a watch confirmed by Redis (also after every reconnect); the
  /// connections up (every watch confirmed again) or down (with a reason).
  std::function<void(const std::string& channel, std::string envelope)> on_message;
  std::function<void(const std::string& channel)> on_watching;
  std::function<void()> on_up;
  std::function<void(const std::string& reason)> on_down;
  /// Optional: while not up (before the first on_up, or after on_down), why,
  /// whenever that reason changes ("no Redis Cluster seed answers: ...").
  /// For readiness texts only: no state change, may be left unset.
  std::function<void(const std::string& reason)> on_still_down;
  /// Optional, with a replica requirement (--redis-wait-replicas N > 0):
  /// whether a publish can be acknowledged now, i.e. the master has N
  /// replicas connected and in sync (INFO replication, `state=online`) and a
  /// probe write passed `WAIT N`; `why` says what is missing. Called on each
  /// change (the first time with false, before the first check). A backend
  /// that does not check replicas never calls it.
  std::function<void(bool ok, const std::string& why)> on_replicas;

  /// Connects (and keeps reconnecting) in the background.
  virtual void start() = 0;
  /// Closes the connections. No event follows.
  virtual void stop() = 0;
};

} // namespace herald::net::redis
