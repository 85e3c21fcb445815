// Why a client connection ended. Feeds logs and metrics (herald_disconnects_total).
#pragma once

#include <cstdint>
#include <string_view>

namespace herald::net {

/// Why a session closed. Reported exactly once per session.
enum class close_reason : std::uint8_t {
  client,            ///< the peer closed, or the socket failed on its side
  slow_client,       ///< outbound buffer stayed over the high-water mark
  heartbeat_timeout, ///< WebSocket pong not received within --ws-pong-timeout
  write_timeout,     ///< a write made no progress for --write-timeout
  protocol_error,    ///< the peer broke the protocol (RFC 6455 framing, ...)
  policy,            ///< the server refused the client (limits, bad input)
  shutdown,          ///< the server is stopping
  auth, ///< credentials missing, invalid or expired (#4); keep last: metrics size by it
};

/// Stable lower-case name, for logs and the metrics label `reason`.
constexpr std::string_view to_string(close_reason r) noexcept {
  switch (r) {
  case close_reason::client:
    return "client";
  case close_reason::slow_client:
    return "slow_client";
  case close_reason::heartbeat_timeout:
    return "heartbeat_timeout";
  case close_reason::write_timeout:
    return "write_timeout";
  case close_reason::protocol_error:
    return "protocol_error";
  case close_reason::policy:
    return "policy";
  case close_reason::shutdown:
    return "shutdown";
  case close_reason::auth:
    return "auth";
  }
  return "unknown";
}

} // namespace herald::net
