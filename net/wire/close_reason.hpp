// Why a client connection ended. Feeds logs and metrics (herald_disconnects_total).
#pragma once

#include "net/wire/enum_names.hpp"

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
  return enum_name<close_reason::client, close_reason::auth>(
    r,
    {"client", "slow_client", "heartbeat_timeout", "write_timeout", "protocol_error", "policy",
     "shutdown", "auth"},
    "unknown");
}

} // namespace herald::net
