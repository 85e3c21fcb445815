#include "net/wire/errors.hpp"

#include <nlohmann/json.hpp>

#include <array>

namespace herald {

namespace {

// Order must follow the enum. Close codes: 1008 policy violation, 1003
// unsupported data, 1009 message too big, 1013 try again later, 1001 going
// away, 1011 internal error (RFC 6455 section 7.4.1). The last column is
// Centrifugo's code: 101 unauthorized, 102 unknown channel, 103 permission
// denied, 105 already subscribed, 106 limit exceeded, 107 bad request, 108
// not available, 109 token expired, 111 too many requests, 100 internal.
constexpr std::array<errc_info, errc_count> table{{
  {"none", 200, 1000, "ok", 107},
  {"invalid_json", 400, 1007, "the message is not a valid JSON object", 107},
  {"invalid_request", 400, 1008, "a required field is missing or has the wrong type", 107},
  {"unknown_op", 400, 1008, "unknown op", 107},
  {"invalid_channel", 400, 1008,
   "channel must be stream:<1-128 of [A-Za-z0-9_.-]> or user:<Stellar account G...>", 102},
  {"invalid_event", 400, 1008,
   "event must be 1-64 characters of [A-Za-z0-9_.:-] and must not start with 'herald.'", 107},
  {"invalid_cursor", 400, 1008, "the cursor (Last-Event-ID or last_event_id) is malformed", 107},
  {"invalid_since", 400, 1008, "since must be {\"epoch\":string,\"offset\":integer >= 0}", 107},
  {"payload_too_large", 413, 1009, "the body is larger than the configured limit", 107},
  {"too_many_channels", 400, 1008, "too many channels on one connection", 106},
  {"already_subscribed", 400, 1008, "already subscribed to this channel", 105},
  {"not_subscribed", 400, 1008, "not subscribed to this channel", 107},
  {"not_found", 404, 1008, "no such route", 107},
  {"method_not_allowed", 405, 1008, "method not allowed on this route", 107},
  {"unsupported_data", 400, 1003, "binary messages are not supported; send JSON text", 107},
  {"slow_client", 503, 1013, "client did not keep up: outbound buffer over its limit", 107},
  {"shutting_down", 503, 1012, "server is shutting down", 108},
  {"unavailable", 503, 1013, "temporarily unavailable; retry", 108},
  {"cancelled", 409, 1000, "cancelled by a later command", 107},
  // Application close codes (RFC 6455 §7.4.2, 4000-4999), docs/auth.md.
  {"unauthorized", 401, 4001, "a valid token is required", 101},
  {"forbidden", 403, 4003, "not allowed", 103},
  {"token_expired", 401, 4002, "the token expired and was not refreshed", 109},
  {"internal", 500, 1011, "internal error", 100},
  {"headers_too_large", 431, 1008, "the request head has too many or too large header fields", 107},
  {"header_timeout", 408, 1008, "the request head did not arrive in time", 107},
  {"rate_limited", 429, 1008, "too many commands per second on this connection", 111},
  {"too_many_connections", 429, 1008, "too many connections from this address", 107},
  {"too_many_subscribes", 429, 1008, "too many subscribe attempts on this connection", 106},
  {"upgrade_required", 426, 1002, "WebSocket version 13 is required", 107},
}};
static_assert(errc_count == static_cast<std::size_t>(errc::upgrade_required) + 1,
              "errc_count must follow the last errc value");

class category_impl : public std::error_category {
public:
  const char* name() const noexcept override { return "herald"; }
  std::string message(int ev) const override {
    return std::string{info(static_cast<errc>(ev)).message};
  }
};

} // namespace

const errc_info& info(errc e) noexcept {
  auto i = static_cast<std::size_t>(e);
  return i < table.size() ? table[i] : table[static_cast<std::size_t>(errc::internal)];
}

const std::error_category& herald_category() noexcept {
  static category_impl instance;
  return instance;
}

std::string error_body(errc e, std::string_view message) {
  const auto& row = info(e);
  nlohmann::json j;
  j["error"]["code"] = row.code;
  j["error"]["message"] = message.empty() ? row.message : message;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace herald
