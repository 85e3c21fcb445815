// request_check: the pure part of reading an HTTP request (no socket, no
// clock), shared by http_session and the fuzz targets in tests/fuzz/.
//
// Beast's parser (RFC 9112 message syntax) hands us a request head; these
// functions apply Herald's own limits and validation to it and say which
// route it names. Each returns an `errc` (errc::none when the request is
// acceptable) plus a detail message for the JSON error body; none throws.
#pragma once

#include "net/asio.hpp"
#include "net/wire/errors.hpp"
#include "net/service.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace herald::net::http {

/// The routes of docs/protocol.md ("Other routes", publish, SSE, WebSocket).
enum class route : std::uint8_t {
  publish,
  sse,
  ws,
  healthz,
  readyz,
  demo,
  metrics,
  status,
  info,
  root,
  centrifugo_ws, ///< GET /connection/websocket (Centrifugo client protocol, docs/centrifugo.md)
  api_publish,
  api_broadcast,
  api_history,
  api_info, ///< POST /api/... (Centrifugo server API)
  channel,  ///< GET /v1/channels/{name}: the channel's position
  unknown
};

/// Counts the header fields of a parsed request head. A repeated field
/// counts once per line, as it was sent.
std::size_t header_count(const bhttp::fields& fields) noexcept;

/// Checks a complete request head (before its body is read): at most
/// `max_fields` header fields (--max-header-count), and unambiguous framing
/// (RFC 9112 section 6): a Transfer-Encoding must be one field whose value is
/// exactly `chunked` (case-insensitive), and never comes with Content-Length.
/// Anything else could be read differently by a proxy in front of us (request
/// smuggling), so it is refused and the connection closed.
/// @returns errc::headers_too_large (HTTP 431) for too many fields;
///          errc::invalid_request (400) for ambiguous framing; `detail` says
///          which. errc::none otherwise. (The byte size is enforced earlier
///          by the parser's header_limit; Beast itself refuses conflicting
///          Content-Length values.)
errc check_head(const bhttp::fields& fields, std::size_t max_fields, std::string& detail);

/// Whether a request target (as sent, query included) is under the
/// Centrifugo server API: the path `/api` or `/api/...`. Refusals of such
/// requests use the API's error shape (docs/centrifugo.md). No decoding: a
/// target that is not origin-form is not the API.
bool is_api_target(std::string_view target) noexcept;

/// Parses the request target (RFC 9112 section 3.2.1 origin-form, via
/// Boost.URL) and maps its path to a route.
/// @param channel receives the (percent-decoded) name of GET /v1/channels/{name}.
/// @returns errc::invalid_request (400) when the target is not origin-form.
errc classify(std::string_view target, route& out, std::string& detail,
              std::string* channel = nullptr);

/// Refuses a request that gives a singular parameter more than once: the
/// header fields and query parameters `where` reads that take one value
/// (docs/protocol.md "Repeated parameters"). Herald would otherwise pick one
/// (the first header, the last query parameter) while a proxy or logger in
/// front of it may pick the other. Per route: /v1/sse: `Authorization`,
/// `Last-Event-ID`, `Origin`, `?token`, `?last_event_id`, `?envelope`
/// (`channel` and `event` repeat on purpose); /v1/ws and /connection/websocket: `Authorization`, `Origin`,
/// `Host`, `Sec-WebSocket-Key`, `Sec-WebSocket-Version`; /v1/publish:
/// `Authorization`, `Idempotency-Key`; /v1/channels/{name}: `Authorization`;
/// /api/*: `Authorization`, `X-API-Key`. Query keys are compared decoded, as
/// the routes read them. (Beast refuses differing `Content-Length` values;
/// check_head refuses a repeated `Transfer-Encoding`.)
/// @returns errc::invalid_request (400) with `detail` naming the parameter,
///          or errc::none.
errc check_singular(const bhttp::fields& fields, std::string_view target, route where,
                    std::string& detail);

/// Validates GET /v1/sse: `channel` parameters (1..max_channels distinct
/// valid names, docs/protocol.md "Channels"), and the cursor from the
/// `Last-Event-ID` header (`last_event_id`, if not empty) or the
/// `last_event_id` query parameter (the header wins), and the `event`
/// parameters (the connection's filter: valid event names, at most
/// max_sse_events distinct ones), and `envelope` (`0` or `1`: whether
/// publications carry their channel, docs/protocol.md "Subscribe over SSE").
/// @param last_event_id the header's value, or nullptr when there is none.
/// @returns errc::invalid_channel, too_many_channels, invalid_request (no
///          channel, bad target, too many events, an `envelope` other than
///          `0` or `1`), invalid_cursor,
///          invalid_event (an `event` that is no event name); errc::none and
///          `out` filled on success.
/// With errc::invalid_channel, `detail` is "?channel=: " and
/// channel_error_detail() (net/wire/channel_name.hpp): the name and the rule.
errc parse_sse_request(std::string_view target, const std::string_view* last_event_id,
                       std::size_t max_channels, sse_subscription& out, std::string& detail);

} // namespace herald::net::http
