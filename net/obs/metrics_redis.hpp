// metrics_redis: per-node figures of a Redis Cluster for GET /metrics,
// /healthz and /readyz (docs/metrics.md). Kept apart from net/obs/metrics.hpp so
// that only the Redis Cluster client, the renderer and net/obs/status
// include it; rendered by metrics::render() (net/obs/metrics.cpp) inside the
// cluster-mode block, and by net/obs/status as JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace herald::net::metrics {

/// One Redis node as this instance uses it.
struct redis_node {
  std::string node;              ///< "host:port" as the cluster announces it
  bool connected = false;        ///< our command connection to it is up (masters), or our
                                 ///< subscriber connection (the subscriber's node)
  std::size_t slots = 0;         ///< hash slots it serves in our slot map (0: not a master)
  std::size_t subscriptions = 0; ///< pub/sub channels our subscriber holds on it
  std::uint64_t reconnects = 0;  ///< connections to it re-established (command and subscriber)
};

/// Replaces the per-node figures (a Redis Cluster client calls it when its
/// map or a connection changes). Thread-safe; an empty list removes them.
void set_redis_nodes(std::vector<redis_node> nodes);

/// A copy of the per-node figures. Thread-safe.
std::vector<redis_node> redis_nodes();

/// A MOVED (`ask` false) or ASK (`ask` true) redirection was followed.
/// Thread-safe, lock-free.
void redis_redirect(bool ask) noexcept;

} // namespace herald::net::metrics
