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

/// Readiness shared between the gateway (writer) and /readyz (reader).
struct cluster_status {
  std::atomic<bool> ready{false};   ///< the Redis connections are up
  std::atomic<bool> writable{true}; ///< the last write Redis answered succeeded
  std::atomic<std::uint64_t> reconnects{0};
  mutable std::mutex mtx;
  std::string reason = "connecting to Redis";

  void set(bool up, std::string why) {
    std::lock_guard<std::mutex> g{mtx};
    reason = std::move(why);
    ready = up;
  }
  std::string why() const {
    std::lock_guard<std::mutex> g{mtx};
    return reason;
  }
  /// Redis refused a write (`why`: its error), or stored one (`why` empty).
  void set_writable(bool ok, std::string why) {
    std::lock_guard<std::mutex> g{mtx};
    write_reason = std::move(why);
    writable = ok;
  }
  std::string write_why() const {
    std::lock_guard<std::mutex> g{mtx};
    return write_reason;
  }
  /// --redis-wait-replicas: enough replicas in sync for a publish to be
  /// acknowledged (true without the requirement), or what is missing.
  std::atomic<bool> replicas{true};
  void set_replicas(bool ok, std::string why) {
    std::lock_guard<std::mutex> g{mtx};
    replicas_reason = std::move(why);
    replicas = ok;
  }
  std::string replicas_why() const {
    std::lock_guard<std::mutex> g{mtx};
    return replicas_reason;
  }

private:
  std::string write_reason;
  std::string replicas_reason;
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
