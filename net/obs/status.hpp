// status: the bodies of Herald's operational routes, built from
// net/obs/metrics.hpp (docs/metrics.md): GET /metrics (Prometheus text format
// 0.0.4, written by metrics::render()), GET /v1/status (this instance's
// figures as JSON, read by the status page at GET /) and GET /v1/info (the
// route index, also GET / for clients that ask for JSON), and the bodies of
// GET /readyz and the Redis Cluster node list GET /healthz shares with it.
// Pure functions: any thread.
#pragma once

#include "net/obs/metrics_redis.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace herald::net::obs {

/// Content-Type of GET /metrics (Prometheus text exposition format 0.0.4).
inline constexpr std::string_view metrics_content_type = "text/plain; version=0.0.4; charset=utf-8";

/// Body of GET /v1/info: the service name and its routes.
inline constexpr std::string_view info_json =
  R"({"name":"herald","routes":["GET /","GET /v1/info","GET /v1/status","GET /metrics","GET /v1/sse","OPTIONS /v1/sse","GET /v1/ws","POST /v1/publish","GET /v1/channels/{name}","GET /connection/websocket","POST /api/publish","POST /api/broadcast","POST /api/history","POST /api/info","GET /healthz","GET /readyz","GET /demo"]})";

/// Whether a GET / with this `Accept` header value (RFC 9110 section 12.5.1)
/// gets the JSON index rather than the HTML status page: when it names
/// `application/json` and not `text/html` (browsers name text/html; `*/*`
/// and no header get the page).
bool wants_json(std::string_view accept) noexcept;

/// Body of GET /v1/status: version, mode ("in-process" or "cluster"),
/// uptime_seconds, connections {sse, ws, total}, channels,
/// publications_received {http, redis}, deliveries, frames_written,
/// bytes_written, outbound_buffer_bytes, redis ("up", "down", or null in
/// in-process mode), redis_reconnects and publish_to_write_seconds (the
/// latency histogram: `le`, bucket upper bounds in seconds with null for
/// +Inf, and `counts`, cumulative). Counters are totals since start;
/// rates are for the reader to compute from two samples.
std::string status_json();

/// The Redis Cluster nodes as GET /healthz and GET /readyz list them
/// (`redis_nodes`, docs/metrics.md): one object per node of `nodes` (pass
/// metrics::redis_nodes(), the figures /metrics reports), in that order,
/// with `node` ("host:port"), `role` ("master" for a node serving slots in
/// this instance's slot map, "other" for the row of the subscriber's node
/// when the map does not name it so: a replica, a master left without
/// slots, or a node reached by a seed's name rather than the address the
/// cluster announces), `connected`, `slots`, `subscriptions` and
/// `reconnects`. An empty array outside Redis Cluster mode.
nlohmann::json redis_nodes_json(const std::vector<metrics::redis_node>& nodes);

/// Body of GET /readyz: `{"status":"ready"}` when `ready`, else the error
/// body of errc::unavailable (`{"error":{"code":"unavailable","message":
/// <reason>}}`, docs/cluster.md); in Redis Cluster mode (`nodes` not empty)
/// both carry `redis_nodes` as redis_nodes_json() writes it.
std::string readyz_body(bool ready, std::string_view reason,
                        const std::vector<metrics::redis_node>& nodes);

} // namespace herald::net::obs
