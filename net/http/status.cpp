#include "net/http/status.hpp"

#include "net/metrics.hpp"

#include <nlohmann/json.hpp>

namespace herald::net::http {

bool wants_json(std::string_view accept) noexcept {
  return accept.find("application/json") != std::string_view::npos
         && accept.find("text/html") == std::string_view::npos;
}

std::string status_json() {
  auto s = metrics::snapshot();
  auto sse = static_cast<std::size_t>(metrics::transport::sse);
  auto ws = static_cast<std::size_t>(metrics::transport::ws);
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
    {"redis", s.redis_up < 0 ? nlohmann::json(nullptr) : nlohmann::json(s.redis_up ? "up" : "down")},
    {"redis_reconnects", s.redis_reconnects},
  };
  return j.dump();
}

} // namespace herald::net::http
