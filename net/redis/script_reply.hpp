// script_reply: the arguments of the publish and sync scripts and the
// reading of their replies, shared by the standalone client (client.hpp)
// and the Redis Cluster client (cluster_client.hpp). Pure code.
#pragma once

#include "net/redis/backend.hpp"
#include "net/redis/connection.hpp"
#include "net/redis/reply.hpp"
#include "net/wire/history_bounds.hpp"

#include "net/wire/channel_class.hpp"

#include <chrono>
#include <memory>
#include <string_view>
#include <utility>
#include <string>
#include <vector>

namespace herald::net::redis {

/// The settings every publish and sync script call carries.
struct script_settings {
  std::string prefix = "herald:";                         ///< --redis-prefix
  std::size_t history_size = history_bounds::size;        ///< stream MAXLEN per channel
  std::chrono::seconds history_ttl = history_bounds::ttl; ///< key expiry after the last publication
  std::chrono::seconds idempotency_window = history_bounds::idempotency_window; ///< keys' expiry
  /// Publish with SPUBLISH (Redis 7 sharded pub/sub; ARGV[9] of the publish
  /// script) instead of PUBLISH. The Redis Cluster client sets it; the
  /// standalone client leaves it false (classic PUBLISH, as before).
  bool sharded = false;
  /// The channel classes (--channel-classes): a channel's history size and
  /// ttl come from its class; null: history_size and history_ttl above.
  std::shared_ptr<const channel_classes> classes;

  /// The history size and ttl of `channel`.
  std::pair<std::size_t, std::chrono::seconds> history_of(std::string_view channel) const;
};

/// KEYS and ARGV of the publish script (net/redis/publish.lua) for one
/// publication; `idempotency_key` empty: none. `new_epoch` is the epoch the
/// channel starts when it has none. KEYS[0] names the channel's slot.
void publish_call(const script_settings& s, const std::string& channel,
                  const backend::publish_args& pub, const std::string& new_epoch,
                  std::vector<std::string>& keys, std::vector<std::string>& args);

/// KEYS and ARGV of the sync script (net/redis/sync.lua).
void sync_call(const script_settings& s, const std::string& channel, std::uint64_t after,
               const std::string& epoch, std::uint64_t delivered, const std::string& new_epoch,
               std::vector<std::string>& keys, std::vector<std::string>& args);

/// The write probe (docs/cluster.md, "Readiness"): EVAL of this text with
/// two keys of one hash tag sets both for 1 s, like a publish's two writes.
extern const std::string probe_script;

/// The probe's reply as a result: ok, or the error (`refused` as below).
backend::publish_result to_probe_result(const reply& r);

/// True for an error reply that Redis gives before it runs a command
/// (NOSCRIPT, MOVED, ASK, TRYAGAIN, CLUSTERDOWN, READONLY, LOADING,
/// MASTERDOWN, BUSY, NOAUTH, CROSSSLOT): a script so answered wrote nothing.
bool refused_before_running(const reply& r);

/// The publish script's reply as a result: ok with {epoch, offset[, 1]} and
/// outcome stored; otherwise the error text and the outcome: not_replicated
/// for wait_for_replicas()'s "not replicated"; not_stored for
/// reply::not_sent() and refused_before_running() replies; unknown for a
/// reply::disconnected() that was sent and every other error (a script
/// error may come after some of its writes). `refused` when Redis itself
/// answered an error (not for a disconnected reply, nor for "not
/// replicated", since the master did take that write).
backend::publish_result to_publish_result(reply r);

/// The sync script's reply {epoch, head, entries} as a result.
backend::sync_result to_sync_result(reply r);

/// --redis-wait-replicas: after a publish script's reply `r` on `conn`, runs
/// Redis `WAIT <replicas> <timeout ms>` on the same connection (so it covers
/// the script's writes) and calls `done` with `r` once at least `replicas`
/// replicas confirmed; otherwise with an error reply starting "not
/// replicated: " ("K of N replicas confirmed the write within T ms (WAIT)",
/// or, when WAIT itself failed, got an error or no reply, the reason and the
/// offset the master stored): the master stored it, so it is never reported
/// as not stored, and a publisher's retry should carry an idempotency key.
/// `r` itself is passed on at once when it is not a success or `replicas`
/// is 0. Executor of `conn` only; `done` runs there.
void wait_for_replicas(connection& conn, std::size_t replicas, std::chrono::milliseconds timeout,
                       reply r, reply_fn done);

} // namespace herald::net::redis
