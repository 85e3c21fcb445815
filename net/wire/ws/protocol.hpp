// WebSocket protocol codec (pure): client commands in, server messages out.
// One JSON object per text message; docs/protocol.md "WebSocket" is the
// contract. No Asio, no clock: testable and fuzzable alone.
#pragma once

#include "net/wire/errors.hpp"
#include "net/wire/stream_position.hpp"
#include "net/wire/tags.hpp"
#include "net/wire/tags_filter.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace herald::net::ws {

/// Operations a client may send.
enum class op : std::uint8_t { subscribe, unsubscribe, ping, connect, refresh };

/// A parsed client command.
struct command {
  op kind = op::ping;
  /// The client's request id (a JSON number or string), echoed in replies;
  /// null when the client sent none.
  nlohmann::json id;
  std::string channel;                  ///< validated; subscribe/unsubscribe only
  std::optional<stream_position> since; ///< subscribe only, when given
  /// subscribe only: `"delta":"fossil"` asked for delta compression (the
  /// only format; another value is refused invalid_request)
  bool delta = false;
  /// subscribe only: `"filter":<FilterNode>` (net/wire/tags_filter.hpp),
  /// null when absent; an invalid tree is refused invalid_request
  tags_filter_ptr filter;
  std::string token;                    ///< connect/refresh only: the JWT (docs/auth.md)
};

/// Why a command was refused; `id` is the client's id when it could be read.
struct command_error {
  errc code = errc::invalid_json;
  nlohmann::json id;
  std::string message;
  std::string channel;    ///< the command's `channel` when it is a string (may be invalid)
  bool subscribe = false; ///< the message was a `subscribe` (refused ones count as attempts)
};

/// Parses one client message. Never throws.
/// @returns false and fills `err` (errc::invalid_json, invalid_request,
///          unknown_op, invalid_channel, invalid_since) when the message is
///          not a valid command (invalid_channel: the message is
///          channel_error_detail(), naming the rule broken; a bad subscribe `filter`: invalid_request,
///          the message says which node). `connect` and `refresh` need a string
///          `token` (checked later, by the connection actor).
bool parse_command(std::string_view text, command& out, command_error& err);

/// `{"op":"subscribed","id":..,"channel":..,"epoch":..,"offset":N,"recovered":bool}`,
/// plus `"reason"` when recovery was asked for and failed, `"delta":true`
/// when the subscription negotiated delta compression (`delta`),
/// `"cache":true` when the channel answered with its latest publication
/// (cache recovery, `cached`: docs/protocol.md "Channel classes"), and
/// `"conflated":true` when the channel's overflow policy is conflate
/// (`conflated`, docs/protocol.md "Overflow policy: close or conflate").
std::string encode_subscribed(const nlohmann::json& id, std::string_view channel,
                              const stream_position& pos, bool recovered, std::string_view reason,
                              bool delta = false, bool cached = false, bool conflated = false);

/// `{"op":"unsubscribed","id":..,"channel":..}`
std::string encode_unsubscribed(const nlohmann::json& id, std::string_view channel);

/// `{"op":"pong","id":..}`
std::string encode_pong(const nlohmann::json& id);

/// `{"op":"error","id":..,"code":"..","message":".."}`; `channel` added when not empty.
std::string encode_error(const nlohmann::json& id, errc code, std::string_view message,
                         std::string_view channel = {});

/// `{"op":"connected"|"refreshed","id":..,"sub":..,"expires_at":N}`: the answer
/// to `connect` (`refreshed`: to `refresh`). `id` left out when null; `sub`
/// and `expires_at` (s since the Unix epoch) are null without authentication
/// (`authenticated` false: --insecure without a key).
std::string encode_authenticated(const nlohmann::json& id, bool refreshed, bool authenticated,
                                 std::string_view sub, std::int64_t expires_at);

/// `{"op":"refresh_required","expires_at":N}`: the token expires within
/// --token-refresh-grace (docs/protocol.md "Tokens").
std::string encode_refresh_required(std::int64_t expires_at);

/// `{"op":"gap","channel":..,"reason":..}`: a live gap (docs/protocol.md "Gaps").
std::string encode_gap(std::string_view channel, std::string_view reason);

/// `{"op":"publication","channel":..,"offset":N,"event":..,"data":<data_json>}`,
/// with `"tags":{"k":"v",...}` before `data` when the publication has tags
/// besides its event (docs/protocol.md "Tags").
/// @param data_json compact JSON text, inserted as is.
std::string encode_publication(std::string_view channel, std::uint64_t offset,
                               std::string_view event, std::string_view data_json,
                               const publication_tags& tags = {});

/// A publication on a subscription that negotiated delta compression
/// (docs/protocol.md "Delta compression"): `{"op":"publication","channel":..,
/// "offset":N,"event":..,"data":"<data as a JSON string>"}`, or with
/// `as_delta` `{..,"data":"<delta as a JSON string>","delta":true}`, where the
/// delta is a Fossil delta (net/wire/fossil_delta.hpp) that turns the previous
/// publication's data text into this one's. Both are UTF-8 (the delta keeps
/// the data's characters whole), so they travel as JSON strings.
std::string encode_delta_publication(std::string_view channel, std::uint64_t offset,
                                     std::string_view event, std::string_view text, bool as_delta,
                                     const publication_tags& tags = {});

} // namespace herald::net::ws
