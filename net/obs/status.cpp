#include "net/obs/status.hpp"

#include "net/wire/errors.hpp"
#include "net/obs/metrics.hpp"

#include <nlohmann/json.hpp>

namespace herald::net::obs {

bool wants_json(std::string_view accept) noexcept {
  return accept.find("application/json") != std::string_view::npos &&
         accept.find("text/html") == std::string_view::npos;
}

std::string status_json() {
  auto s = metrics::snapshot();
  auto sse = static_cast<std::size_t>(metrics::transport::sse);
  auto ws = static_cast<std::size_t>(metrics::transport::ws);
  // The latency histogram as Prometheus has it (cumulative counts per upper
  // bound, seconds; +Inf as null), so the page computes quantiles of the
  // observations between two samples.
  auto le = nlohmann::json::array();
  auto counts = nlohmann::json::array();
  std::uint64_t cumulative = 0;
  for (std::size_t b = 0; b <= metrics::bucket_count; ++b) {
    cumulative += s.publish_to_write[b];
    le.push_back(b < metrics::bucket_count
                   ? nlohmann::json(static_cast<double>(metrics::bucket_bounds_ns[b]) / 1e9)
                   : nlohmann::json(nullptr));
    counts.push_back(cumulative);
  }
  nlohmann::json j{
    {"version", metrics::version()},
    {"mode", s.redis_up < 0 ? "in-process" : "cluster"},
    {"uptime_seconds", s.uptime_seconds},
    {"connections",
     {{"sse", s.connections[sse]},
      {"ws", s.connections[ws]},
      {"total", s.connections[sse] + s.connections[ws]}}},
    {"channels", s.channels},
    {"publications_received",
     {{"http", s.publications_received[static_cast<std::size_t>(metrics::source::http)]},
      {"redis", s.publications_received[static_cast<std::size_t>(metrics::source::redis)]}}},
    {"deliveries", s.deliveries[sse] + s.deliveries[ws]},
    {"frames_written", s.frames_written[sse] + s.frames_written[ws]},
    {"bytes_written", s.bytes_written[sse] + s.bytes_written[ws]},
    {"outbound_buffer_bytes", s.outbound_bytes},
    {"redis",
     s.redis_up < 0 ? nlohmann::json(nullptr) : nlohmann::json(s.redis_up ? "up" : "down")},
    {"redis_reconnects", s.redis_reconnects},
    {"publish_to_write_seconds", {{"le", le}, {"counts", counts}}},
  };
  return j.dump();
}

nlohmann::json redis_nodes_json(const std::vector<metrics::redis_node>& nodes) {
  auto list = nlohmann::json::array();
  for (const auto& n : nodes)
    list.push_back({{"node", n.node},
                    {"role", n.slots > 0 ? "master" : "other"},
                    {"connected", n.connected},
                    {"slots", n.slots},
                    {"subscriptions", n.subscriptions},
                    {"reconnects", n.reconnects}});
  return list;
}

std::string readyz_body(bool ready, std::string_view reason,
                        const std::vector<metrics::redis_node>& nodes) {
  auto j = ready ? nlohmann::json{{"status", "ready"}}
                 : nlohmann::json::parse(error_body(errc::unavailable, reason));
  if (!nodes.empty())
    j["redis_nodes"] = redis_nodes_json(nodes);
  // A reason quotes Redis's error text, which need not be valid UTF-8.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace herald::net::obs
