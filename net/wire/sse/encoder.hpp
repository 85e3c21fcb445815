// SSE encoder: pure functions from publications to event blocks
// (WHATWG HTML, "Server-sent events", section "Parsing an event stream").
//
// Every field value written here is single-line by construction: event names
// are validated ([A-Za-z0-9_.:-]), data is compact JSON (nlohmann's dump
// escapes every control character, CR and LF included), ids are cursors
// ([0-9a-z_-]). So data can never break a frame or inject a field.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace herald::net::sse {

/// Event block without the id line: `event: <event>\ndata: <json>\n\n`.
/// @param event a validated event name; @param json compact JSON text.
std::string encode_event(std::string_view event, std::string_view json);

/// Event block of a publication for a connection that asked for the channel
/// envelope (`?envelope=1`, docs/protocol.md "Subscribe over SSE"):
/// `event: <event>\ndata: {"channel":"<channel>","data":<json>}\n\n`.
/// EventSource gives the event name as `MessageEvent.type` and the envelope as
/// `MessageEvent.data` (WHATWG HTML "Server-sent events", "dispatch the
/// event"), so a client reading several channels on one stream can tell
/// which one a publication belongs to.
/// @param event a validated event name; @param channel a channel name
///        (written as a JSON string, so any text stays on one line);
/// @param json compact JSON text (the publication's data, nested as is).
std::string encode_enveloped_event(std::string_view event, std::string_view channel,
                                   std::string_view json);

/// The id line that precedes an event block: `id: <cursor>\n`.
std::string encode_id_line(std::string_view cursor);

/// A `herald.gap` event block:
/// `event: herald.gap\ndata: {"channel":"...","reason":"..."}\n\n`;
/// `channel` is left out when empty (a notice about the whole connection).
std::string encode_gap(std::string_view channel, std::string_view reason);

/// The last block of a stream whose token expired (docs/protocol.md "Tokens"):
/// `event: herald.token_expired\ndata: {"reason":"token_expired"}\n\n`.
inline std::string encode_token_expired() {
  return "event: herald.token_expired\ndata: {\"reason\":\"token_expired\"}\n\n";
}

/// The event that gives a new stream its cursor when the channels' answers
/// brought no replay and no gap, or that names the `conflated` channels of
/// the request (net/core/subscription_table.hpp):
/// `event: herald.cursor\ndata: {}\n\n`, or with conflated channels
/// `data: {"conflated":["stream:1",...]}`, after the id line of every
/// channel. Named, so EventSource's onmessage never sees it.
std::string encode_cursor_event(const std::vector<std::string_view>& conflated = {});

/// The last block of a stream at server shutdown: a `retry: <retry_ms>` hint
/// (the client reconnects that soon, WHATWG HTML "Server-sent events",
/// "retry" field) and `event: herald.shutdown\ndata: {"reason":"shutdown",
/// "retry_ms":<retry_ms>}\n\n`. It has no `id:` line, so the client's last
/// event id (its cursor) stays that of the last publication it received.
std::string encode_shutdown(unsigned retry_ms);

/// A comment line used as a heartbeat: `:\n\n` (ignored by EventSource).
inline constexpr std::string_view heartbeat = ":\n\n";

/// Response head of an SSE stream (HTTP/1.1 200, text/event-stream,
/// no-cache, X-Accel-Buffering: no; the body is delimited by the close of
/// the connection, RFC 9112 section 6.3), with a `retry:` hint in ms.
std::string encode_response_head(unsigned retry_ms);

} // namespace herald::net::sse
