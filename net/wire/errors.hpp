// Client-facing errors: one enum, one table.
//
// Every error Herald reports to a client is one `errc` value. The table in
// errors.cpp maps each value to its HTTP status, its WebSocket close code
// (RFC 6455 section 7.4.1), its JSON `code` string and a default message, so
// a new error is one new row. See docs/protocol.md, "Errors".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace herald {

/// A client mistake (or a client-visible refusal). Values are stable.
enum class errc : std::uint8_t {
  none = 0,
  invalid_json,       ///< body or WS message is not valid JSON (or not an object)
  invalid_request,    ///< a required field is missing or has the wrong type
  unknown_op,         ///< WS message with an `op` we do not know
  invalid_channel,    ///< channel name fails docs/protocol.md "Channel names"
  invalid_event,      ///< publication event name empty, too long or reserved
  invalid_cursor,     ///< SSE Last-Event-ID / last_event_id cannot be parsed
  invalid_since,      ///< WS `since` object malformed
  payload_too_large,  ///< publish body over --max-publish-bytes
  too_many_channels,  ///< over --max-channels-per-client
  already_subscribed, ///< WS subscribe for a channel the connection has
  not_subscribed,     ///< WS unsubscribe for a channel it does not have
  not_found,          ///< HTTP route unknown
  method_not_allowed, ///< HTTP method not allowed on the route
  unsupported_data,   ///< WS binary message (we speak text frames only)
  slow_client,        ///< outbound buffer over --client-max-buffer
  shutting_down,      ///< server is stopping
  unavailable,        ///< cluster mode: Redis cannot store the publication now
  cancelled,          ///< WS subscribe ended by an unsubscribe before it completed
  unauthorized,       ///< no valid token / API key (docs/auth.md)
  forbidden,          ///< the token may not read that channel, or Origin refused
  token_expired,      ///< WS: the token expired and no valid refresh came (docs/auth.md)
  internal,           ///< a bug on our side; never the client's fault
  // Abuse limits (docs/protocol.md "Limits"); appended so values stay stable.
  headers_too_large,    ///< request head over --max-header-bytes or --max-header-count (431)
  header_timeout,       ///< request head not complete within --header-timeout (408)
  rate_limited,         ///< WS commands over --ws-commands-per-second (+ burst)
  too_many_connections, ///< over --max-connections-per-ip from one address (429)
  too_many_subscribes,  ///< WS subscribe attempts over --max-subscribe-attempts
  upgrade_required,     ///< WebSocket upgrade with a version other than 13 (426)
};

/// Number of `errc` values (one past the last); the table has this many rows.
inline constexpr std::size_t errc_count = 29;

/// One row of the error table.
struct errc_info {
  std::string_view code;    ///< JSON `code`, e.g. "invalid_channel"
  unsigned http_status;     ///< HTTP status for the same fault
  std::uint16_t close_code; ///< WS close code when the fault ends a connection
  std::string_view message; ///< default human-readable message
  /// Centrifugo's client error code for the same fault (100-112,
  /// net/wire/centrifugo/protocol.hpp error_code; 107 bad request for a
  /// request Centrifugo has no own code for).
  std::uint16_t centrifugo_code;
};

/// Returns the table row for `e`. Never fails: unknown values map to `internal`.
const errc_info& info(errc e) noexcept;

/// The std::error_category of `errc` (name "herald").
const std::error_category& herald_category() noexcept;

/// Makes a std::error_code from an `errc`.
inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), herald_category()};
}

/// JSON body for HTTP errors: `{"error":{"code":"...","message":"..."}}`.
/// @param message overrides the table's default message when not empty.
std::string error_body(errc e, std::string_view message = {});

} // namespace herald

namespace std {
template <>
struct is_error_code_enum<herald::errc> : true_type {};
} // namespace std
