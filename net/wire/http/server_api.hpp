// Centrifugo's HTTP server API (pure codec): the request bodies of
// POST /api/publish, /api/broadcast, /api/history and /api/info and their
// replies, as Centrifugo v5+ shapes them (`{"result":{...}}` or
// `{"error":{"code":N,"message":"..."}}`, codes as in its client protocol:
// net/wire/centrifugo/protocol.hpp). docs/centrifugo.md ("Server API") is the
// contract; a publish goes through the same path as POST /v1/publish.
#pragma once

#include "net/wire/errors.hpp"
#include "net/wire/http/publish_request.hpp"
#include "net/wire/publication.hpp"
#include "net/wire/stream_position.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace herald::net::http {

/// The event name of a publication published through the server API
/// without a `tags.event` (Herald's publications always have one).
inline constexpr std::string_view default_api_event = "publication";

/// The most publications /api/history returns at once.
inline constexpr std::size_t max_history_limit = 1000;

/// Parses a /api/publish body `{"channel":"..","data":<JSON>,"tags":{"event":".."},
/// "idempotency_key":".."}` (or, `broadcast` true, a /api/broadcast body with
/// `"channels":[...]` instead of `channel`) into a publish request, validated
/// as POST /v1/publish validates (docs/protocol.md "Publish"). The event name
/// is `tags.event` (default: default_api_event); the other tags (bounded as
/// net/wire/tags.hpp read_tags() says) travel with the publication, for
/// subscribers' filters and Centrifugo pushes. The fields are those of
/// api_publish_fields / api_broadcast_fields; any other is refused
/// (check_known_fields: a typo must not drop a check, where Centrifugo
/// ignores it). Centrifugo fields Herald has no use for are refused when
/// they would change the meaning (`b64data`, `skip_history` true) and
/// ignored otherwise (`delta`); every tag must be a string. A channel listed
/// twice in `channels` is published twice, one response each, in order (as
/// Centrifugo does). Never throws.
/// @returns `{}` or errc::invalid_json (HTTP 400, body not JSON), or
///          invalid_request, invalid_channel, invalid_event, too_many_channels
///          with `detail`.
/// The fields of a /api/publish body.
inline constexpr std::string_view api_publish_fields[] = {
  "channel", "data",         "tags",         "idempotency_key", "version",
  "version_epoch", "b64data", "skip_history", "delta"};

/// The fields of a /api/broadcast body.
inline constexpr std::string_view api_broadcast_fields[] = {
  "channels", "data",         "tags",         "idempotency_key", "version",
  "version_epoch", "b64data", "skip_history", "delta"};

/// The fields of a /api/history body.
inline constexpr std::string_view api_history_fields[] = {
  "channel", "limit", "since", "reverse"};

std::error_code parse_api_publish(std::string_view body, bool broadcast, std::size_t max_channels,
                                  publish_request& out, std::string& detail);

/// A /api/history body `{"channel":"..","limit":N}`: `limit` 0 (or absent)
/// asks only for the channel's current position.
struct history_request {
  std::string channel;
  std::size_t limit = 0;
};

/// Parses a /api/history body. `since` and `reverse` are refused
/// (errc::invalid_request): Herald returns the latest publications, oldest
/// first; so is any field not in api_history_fields.
/// @returns `{}` or errc::invalid_json, invalid_request, invalid_channel.
std::error_code parse_api_history(std::string_view body, history_request& out, std::string& detail);

/// `{"error":{"code":C,"message":".."}}` for a Herald error (code mapped by
/// centrifugo::error_for).
std::string encode_api_error(errc code, std::string_view message);

/// `{"result":{"offset":N,"epoch":".."}}` (`epoch` left out when empty), plus
/// `"suppressed":true,"suppress_reason":".."` when `suppressed` (the reason)
/// is not empty: the publication was neither stored nor delivered, the
/// position is the channel's unchanged one.
std::string encode_api_publish(const stream_position& position,
                               std::string_view suppressed = {});

/// `{"result":{"responses":[{"result":{"offset":N,"epoch":".."}},...]}}`, in
/// request order, each with `suppressed` as encode_api_publish() says
/// (`suppressed` empty or one reason per position).
std::string encode_api_broadcast(const std::vector<stream_position>& positions,
                                 const std::vector<std::string>& suppressed = {});

/// `{"result":{"publications":[{"data":..,"offset":N,"tags":{"event":".."}},...],
/// "epoch":"..","offset":N}}`: the latest publications, oldest first.
std::string encode_api_history(const stream_position& position,
                               const std::vector<publication_ptr>& latest);

/// GET /v1/channels/{name}: `{"channel":"..","epoch":"..","offset":N}`.
std::string encode_channel_position(std::string_view channel, const stream_position& position);

} // namespace herald::net::http
