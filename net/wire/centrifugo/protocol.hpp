// Centrifugo client protocol v2, JSON encoding (pure codec: no Asio, no
// clock). The wire shapes follow centrifugal/protocol `definitions/client.proto`
// (Command, Reply, Push and their request/result messages) as the
// `centrifuge` JavaScript SDK speaks them; docs/centrifugo.md says what Herald
// supports and how each Herald error and close maps to Centrifugo's codes.
//
// A WebSocket text message holds one or more commands separated by '\n'
// (RFC 8259 JSON each); every command but the empty `{}` (the client's pong)
// carries a positive `id` that its reply echoes. Herald writes one reply or
// push per WebSocket message, which the protocol allows.
#pragma once

#include "net/wire/errors.hpp"
#include "net/wire/frame.hpp"
#include "net/wire/publication.hpp"
#include "net/wire/session_codec.hpp"
#include "net/wire/stream_position.hpp"
#include "net/wire/tags_filter.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace herald::net::centrifugo {

/// Centrifugo's client error codes (client.proto `Error.code`; the numbers
/// are Centrifugo's, 100-112, in this order without holes: message_of()
/// names them from one table).
enum class error_code : std::uint32_t {
  internal = 100,
  unauthorized,           ///< 101
  unknown_channel,        ///< 102
  permission_denied,      ///< 103
  method_not_found,       ///< 104
  already_subscribed,     ///< 105
  limit_exceeded,         ///< 106
  bad_request,            ///< 107
  not_available,          ///< 108
  token_expired,          ///< 109
  expired,                ///< 110
  too_many_requests,      ///< 111
  unrecoverable_position, ///< 112
};
static_assert(static_cast<std::uint32_t>(error_code::bad_request) == 107 &&
              static_cast<std::uint32_t>(error_code::unrecoverable_position) == 112);

/// Centrifugo's text for `c` ("permission denied", ...).
std::string_view message_of(error_code c) noexcept;

/// The Centrifugo error a Herald client error becomes (invalid_channel ->
/// unknown_channel, forbidden -> permission_denied, too_many_channels ->
/// limit_exceeded, rate_limited -> too_many_requests, ...).
error_code error_for(errc e) noexcept;

/// Subscribe flag bits (client.proto `SubscribeRequest.flag`).
inline constexpr std::uint32_t flag_channel_compaction = 1; ///< ignored by Herald
inline constexpr std::uint32_t flag_reject_unrecovered = 2; ///< answer 112, not recovered:false

/// The command methods Herald reads; `unsupported` is any other
/// (publish, presence, presence_stats, history, rpc, send, sub_refresh):
/// answered with error 104.
enum class method : std::uint8_t {
  pong,
  ping,
  connect,
  subscribe,
  unsubscribe,
  refresh,
  unsupported
};

/// One parsed command.
struct command {
  std::uint32_t id = 0; ///< 0 only for the empty pong command `{}`
  method kind = method::pong;
  std::string channel;     ///< subscribe/unsubscribe (not validated here)
  std::string token;       ///< connect/refresh (may be empty)
  bool recover = false;    ///< subscribe: recover from `epoch`/`offset`
  stream_position since;   ///< subscribe with recover
  std::uint32_t flag = 0;  ///< subscribe flag bits
  /// subscribe: `delta: "fossil"` asked for Fossil delta compression (the
  /// only format; another non-empty value is refused 107)
  bool delta = false;
  /// subscribe: the tags filter `tf` (Centrifugo's FilterNode,
  /// net/wire/tags_filter.hpp), null when absent. An invalid tree, or one
  /// together with `delta` (Centrifugo keeps the two apart), is refused 107.
  tags_filter_ptr filter;
  std::string unsupported; ///< the method's name when kind == unsupported
};

/// A command that could not be read. `id` is 0 when the line has none (then
/// no reply can be correlated and the connection is closed with 3501).
struct command_error {
  std::uint32_t id = 0;
  error_code code = error_code::bad_request;
  std::string message;
};

/// The outcome of one line of a message: a command, or why it was refused.
struct parsed {
  bool ok = false;
  command cmd;
  command_error err;
};

/// Splits `text` (one WebSocket text message) at '\n' and parses each
/// non-empty line (a trailing '\r' is dropped) with Herald's strict JSON
/// reader (net/wire/json_input.hpp: duplicate keys refused, depth <= 64). Never
/// throws. A line that is not an object, or names several methods, or has a
/// field of the wrong type (`id` not a positive integer < 2^32, `offset`
/// over 2^53-1, ...) is an error with code bad_request (107).
/// @returns one entry per non-empty line, in order.
std::vector<parsed> parse_commands(std::string_view text);

// -- replies (one JSON object each, `{"id":N,"<method>":{...}}`) -------------

/// `{"id":N,"error":{"code":C,"message":"..."}}`; `message` empty: message_of(code).
/// @param temporary adds `"temporary":true`: the SDK retries the command
///        (a subscribe: it resubscribes with backoff) instead of giving up.
std::string encode_error(std::uint32_t id, error_code code, std::string_view message = {},
                         bool temporary = false);

/// `{"id":N,"connect":{"client":..,"version":..,"ping":S,"pong":true[,"expires":true,"ttl":T]}}`.
/// @param ping_seconds the period of the server's `{}` pings (s), 0: none.
/// @param ttl_seconds > 0: the token expires, refresh within this many seconds;
///        0: it does not expire (no `expires`).
std::string encode_connect(std::uint32_t id, std::string_view client, std::string_view version,
                           std::uint32_t ping_seconds, std::uint32_t ttl_seconds);

/// `{"id":N,"refresh":{"client":..,"version":..[,"expires":true,"ttl":T]}}`.
std::string encode_refresh(std::uint32_t id, std::string_view client, std::string_view version,
                           std::uint32_t ttl_seconds);

/// `{"id":N,"subscribe":{"recoverable":true,"positioned":true,"epoch":..,
/// "offset":N,"was_recovering":b,"recovered":b[,"publications":[...]]
/// [,"delta":true]}}`. `position` is the channel's latest publication;
/// `replay` the publications the client missed, in offset order (each as in
/// encode_publication_object; with `delta`, as encode_delta_object: the
/// first in full, each next one as a delta where delta_follows()).
std::string encode_subscribe(std::uint32_t id, const stream_position& position, bool was_recovering,
                             bool recovered, const std::vector<const publication*>& replay,
                             bool delta = false);

/// `{"id":N,"unsubscribe":{}}`
std::string encode_unsubscribe(std::uint32_t id);

/// `{"id":N,"ping":{}}` (the answer to an explicit ping command).
std::string encode_ping(std::uint32_t id);

// -- pushes ------------------------------------------------------------------

/// `{"data":<data>,"offset":N,"tags":{"event":"<event>",...}}` (client.proto
/// Publication; Herald's data is JSON, sent as is; `tags` holds the event
/// name and the publication's other tags, net/wire/tags.hpp).
std::string encode_publication_object(const publication& p);

/// On a subscription that negotiated delta compression, Centrifugo sends the
/// data as a JSON string (the SDK decodes it, or applies the delta to the
/// previous value's bytes): `{"data":"<data as a JSON string>","offset":N,
/// "tags":{..}}`, or with `as_delta` `{"data":"<p.delta as a JSON string>",
/// "offset":N,"tags":{..},"delta":true}` (the Fossil delta is UTF-8 text,
/// net/wire/fossil_delta.hpp).
std::string encode_delta_object(const publication& p, bool as_delta);

/// `p` can travel as a delta after `prev` (the publication the client
/// holds): it has a delta, and it is the next one in the same epoch.
inline bool delta_follows(const publication& prev, const publication& p) noexcept {
  return !p.delta.empty() && prev.epoch == p.epoch && prev.offset + 1 == p.offset;
}

/// The push of encode_delta_object(p, as_delta) and its RFC 6455 header,
/// built on the first call for `p` and kept in it (thread-safe).
publication_bytes delta_push_bytes(const publication& p, bool as_delta);

/// `{"push":{"channel":"..","pub":{...}}}`, built on the first call for `p`
/// and kept in `p` (the same bytes for every subscriber; thread-safe).
const frame& publication_push(const publication& p);

/// RFC 6455 header of the text frame carrying publication_push(p).
const std::string& publication_push_header(const publication& p);
/// Both at once (one look at the publication's once-flag).
publication_bytes publication_push_bytes(const publication& p);

/// `{"push":{"channel":"..","unsubscribe":{"code":C,"reason":".."}}}`; a code
/// of 2500 or more makes the SDK resubscribe (and recover).
std::string encode_unsubscribe_push(std::string_view channel, std::uint32_t code,
                                    std::string_view reason);

/// The unsubscribe push code of a live gap: 2500 ("insufficient state"),
/// which the SDK answers with a resubscribe that recovers.
inline constexpr std::uint32_t gap_unsubscribe_code = 2500;

/// The server's ping: an empty command `{}`.
inline constexpr std::string_view ping_message = "{}";

// -- closes ------------------------------------------------------------------

/// The close code and reason a Centrifugo client gets for Herald's WebSocket
/// close `code` (docs/protocol.md "Close codes"): 1012 shutdown -> 3001
/// "shutdown", 1013 slow client -> 3008 "slow", 4001 -> 3500 "invalid token: <why>",
/// 4002 -> 3005 "expired", 4003 -> 3500, 1008 -> 3501 "bad request" (the
/// SDK does not reconnect), 1001 -> 3001. Codes 3000-4999 are kept, and so
/// are the RFC 6455 framing codes (1002, 1003, 1007, 1009) and 1000, 1005.
std::pair<std::uint16_t, std::string> close_for(std::uint16_t herald_code,
                                                std::string_view herald_reason);

} // namespace herald::net::centrifugo
