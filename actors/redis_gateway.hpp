// redis_gateway: links this instance's actors to the other instances
// through Redis (cluster mode; docs/cluster.md).
//
// Spawned by app/server when --redis-url is set; owns the Redis backend
// (whose I/O runs on the network's event loop) and holds the policy:
// publishing runs the publish script and answers the publisher with the
// offsets Redis assigned (503 when Redis cannot store it); a channel actor
// that has local subscribers asks to watch its channel, and the gateway
// subscribes to it in Redis only then, hands every incoming publication to
// that channel actor, and tells it when the subscription is (re)confirmed
// so it can sync its history from the Redis stream and fill any gap. It
// tracks readiness for /readyz. Runs on CAF's scheduler; ends on an exit
// message.
#pragma once

#include "actors/messages.hpp"
#include "net/redis/backend.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace herald::actors {

/// A condition that holds or not, with the one-line reason it does not (or
/// the last word on it), written by the gateway and read by /readyz on other
/// threads. `ok()` is lock-free; the reason is copied under a mutex.
class status_condition {
public:
  explicit status_condition(bool ok, std::string why = {})
    : ok_(ok),
      reason_(std::move(why)) {}
  void set(bool ok, std::string why) {
    std::lock_guard<std::mutex> g{mtx_};
    reason_ = std::move(why);
    ok_ = ok;
  }
  bool ok() const noexcept { return ok_.load(); }
  std::string why() const {
    std::lock_guard<std::mutex> g{mtx_};
    return reason_;
  }

private:
  std::atomic<bool> ok_;
  mutable std::mutex mtx_;
  std::string reason_;
};

/// Readiness shared between the gateway (writer) and /readyz (reader).
struct cluster_status {
  /// The Redis connections are up ("ok"), or why not.
  status_condition ready{false, "connecting to Redis"};
  /// The last write Redis answered succeeded, or the refusal ("Redis refuses
  /// writes: ...").
  status_condition writable{true};
  /// --redis-wait-replicas: enough replicas in sync for a publish to be
  /// acknowledged (true without the requirement), or what is missing.
  status_condition replicas{true};
  std::atomic<std::uint64_t> reconnects{0};
};

struct gateway_state {
  std::shared_ptr<net::redis::backend> backend;
  std::shared_ptr<cluster_status> status;
  std::unordered_map<std::string, caf::actor> watchers; ///< channel -> channel actor
  std::unordered_set<std::string> confirmed;            ///< watches Redis confirmed
  bool probing = false; ///< a write probe is scheduled (Redis refuses writes)
};

using gateway_pointer = caf::stateful_actor<gateway_state>*;

/// Behavior of the gateway. Starts the backend.
caf::behavior redis_gateway(gateway_pointer self, std::shared_ptr<net::redis::backend> backend,
                            std::shared_ptr<cluster_status> status);

} // namespace herald::actors
