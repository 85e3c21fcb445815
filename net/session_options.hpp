// Limits and timings every session needs. Filled from app/config.hpp, which
// documents each option; the defaults here are the documented defaults.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

namespace herald::net::auth {
struct policy;
}

namespace herald::net {

struct session_options {
  /// High-water mark of a connection's outbound queue (bytes); the low-water
  /// mark is half of it. The session closes the client by itself at twice
  /// the high-water mark (last line of defence if the actor is late).
  std::size_t client_max_buffer_bytes = 1024 * 1024;
  /// A write that makes no progress for this long closes the connection.
  std::chrono::milliseconds write_timeout{30'000};
  /// SSE: a comment line goes out after this much idle time.
  std::chrono::milliseconds sse_heartbeat{15'000};
  /// SSE: `retry:` hint sent at the start of the stream (ms).
  unsigned sse_retry_ms = 2'000;
  /// WebSocket: the server pings this often ...
  std::chrono::milliseconds ws_ping_interval{25'000};
  /// ... and closes the connection when the pong is this late.
  std::chrono::milliseconds ws_pong_timeout{10'000};
  /// WebSocket: largest client message (bytes, across fragments): 1009 above.
  std::size_t max_ws_message_bytes = 64 * 1024;
  /// WebSocket: time allowed for the upgrade handshake and for the close.
  std::chrono::milliseconds ws_handshake_timeout{10'000};
  /// HTTP: largest request head (request line and headers, bytes): 431 above.
  std::size_t max_header_bytes = 8 * 1024;
  /// HTTP: largest publish body (bytes): 413 above.
  std::size_t max_publish_bytes = 64 * 1024;
  /// HTTP: time allowed to receive a whole request (head and body).
  std::chrono::milliseconds request_timeout{10'000};
  /// Channels one connection may subscribe to.
  std::size_t max_channels_per_client = 64;
  /// Channels one publish request may name.
  std::size_t max_channels_per_publish = 64;
  /// Authentication and permissions (net/auth/policy.hpp). Never null once
  /// the server runs; null only in tests of code that does not look at it.
  std::shared_ptr<const auth::policy> auth;
};

} // namespace herald::net
