// session_codec: everything a streaming session and its subscription table
// write to one client, in the encoding the connection speaks, chosen once
// when the stream opens: Server-Sent Events (net/wire/sse/session_codec.hpp,
// WHATWG HTML "Server-sent events"), or one of the WebSocket dialects
// (net/wire/ws/session_codec.hpp: Herald's /v1/ws JSON, Centrifugo's client
// protocol in JSON or Protobuf). net/core (stream_session,
// subscription_table) and the actors call it and never ask which one it is;
// where the encodings differ in what happens, not only in bytes (SSE events
// carry the connection's cursor; a live gap ends a Centrifugo subscription;
// Centrifugo carries the replay inside the subscribe reply), the codec says
// so as a property. Pure: no Asio, no clock; every function is const and
// thread-safe. A function returning an empty string means "nothing to write
// in this encoding" (SSE has no command ids to answer, for example).
#pragma once

#include "net/wire/errors.hpp"
#include "net/wire/frame.hpp"
#include "net/wire/publication.hpp"
#include "net/wire/stream_position.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace herald::net {

/// A publication's bytes in one encoding: encoded once per publication and
/// encoding, shared by every subscriber. `header` precedes `body` on the
/// wire (WebSocket: the RFC 6455 section 5.2 frame header; SSE: empty, the
/// session's `id:` line goes there instead).
struct publication_bytes {
  const std::string& header;
  const frame& body;
};

class session_codec {
public:
  virtual ~session_codec() = default;

  /// true (SSE): every message carries the connection's cursor of all its
  /// channels first (net/wire/sse/cursor.hpp, an `id:` line), so nothing is
  /// written until every channel of the request answered, and a request
  /// whose answers write nothing gets cursor_event(). false: messages stand
  /// alone.
  virtual bool carries_cursor() const noexcept = 0;

  /// The event that hands the client its cursor when nothing else did, or
  /// that names the request's `conflated` channels (overflow policy
  /// conflate, docs/protocol.md "Overflow policy"; may be empty) (SSE:
  /// `herald.cursor`); empty where there is no cursor.
  virtual std::string cursor_event(const std::vector<std::string_view>& conflated) const = 0;

  /// The publication's bytes, in one call (the delivery path).
  virtual publication_bytes publication_message(const publication& p) const = 0;
  /// The publication's bytes for a subscription that negotiated delta
  /// compression (Centrifugo's `delta: "fossil"`): with `as_delta` its
  /// Fossil delta p.delta against the previous publication, which the
  /// client holds (the caller checks that, and that p.delta is not empty);
  /// else in full, as such a subscription carries it. Encodings without
  /// delta compression: publication_message(p).
  virtual publication_bytes delta_message(const publication& p, bool as_delta) const {
    (void)as_delta;
    return publication_message(p);
  }
  /// This encoding can negotiate delta compression.
  virtual bool supports_delta() const noexcept { return false; }

  /// How a close with Herald's close `code` (docs/protocol.md "Close codes",
  /// RFC 6455 section 7.4.1 numbers) and `reason` reaches the client:
  /// WebSocket: the close frame's code and reason in the dialect (/v1/ws
  /// unchanged; Centrifugo docs/centrifugo.md); SSE: `code` unchanged and
  /// the final event block written before the stream ends (1013 slow client:
  /// a `herald.gap`; 4002 token expired: `herald.token_expired`; otherwise
  /// empty: the stream just ends).
  virtual std::pair<std::uint16_t, std::string> close(std::uint16_t code,
                                                      std::string_view reason) const = 0;

  /// The answer to a subscribe `id` to `channel` that ends unanswered by its
  /// channel: `cancelled` (superseded or unsubscribed) or `unavailable` (no
  /// answer in time: Centrifugo code 100 with `temporary`, which the SDK retries).
  virtual std::string pending_error(const nlohmann::json& id, std::string_view channel, errc code,
                                    std::string_view why) const = 0;

  /// The reply to an unsubscribe `id` of `channel`.
  virtual std::string unsubscribed(const nlohmann::json& id, std::string_view channel) const = 0;

  /// A live gap on `channel` (`missed_publications`, `epoch_changed`,
  /// `slow_client`; SSE also a failed recovery's reason).
  virtual std::string gap(std::string_view channel, std::string_view reason) const = 0;
  /// true: after a live gap the subscription delivers nothing more until the
  /// client subscribes again (Centrifugo's unsubscribe push 2500).
  virtual bool gap_ends_subscription() const noexcept = 0;

  /// true: the replay travels inside the subscribe reply (Centrifugo); false:
  /// the reply, then each replayed publication as its own message.
  virtual bool replay_in_reply() const noexcept = 0;

  /// The subscribe reply. `position` the channel's latest publication;
  /// `recovering` a position was given; `recovered` it was recovered;
  /// `reason` why not (may be empty); `replay` the publications inside the
  /// reply when replay_in_reply() (else empty), in offset order; `delta`
  /// the subscription negotiated delta compression (the reply says so, the
  /// replay's first publication is full, the next ones deltas where they
  /// can be); `cached` the answer is a cache recovery (the replay, or the
  /// publication after the reply, is the channel's latest one: /v1/ws says
  /// `"cache":true`); `conflated` the channel's overflow policy is conflate
  /// (/v1/ws: the reply says `"conflated":true`; Centrifugo's reply has no
  /// such field). SSE: no reply, but a failed recovery is a gap with
  /// `reason`.
  virtual std::string subscribed(const nlohmann::json& id, std::string_view channel,
                                 const stream_position& position, bool recovering, bool recovered,
                                 std::string_view reason,
                                 const std::vector<const publication*>& replay,
                                 bool delta = false, bool cached = false,
                                 bool conflated = false) const = 0;

  /// The notice that the connection's token expires soon (/v1/ws:
  /// `refresh_required` with `expires_at`, s since the Unix epoch), or empty
  /// when the client refreshes on its own (Centrifugo: after the connect
  /// reply's `ttl`) or cannot (SSE: it reconnects with a new token).
  virtual std::string refresh_required(std::int64_t expires_at) const = 0;

  /// The notice that `channel` was dropped because a refreshed token no
  /// longer allows it (/v1/ws: error `forbidden`; Centrifugo: an
  /// `unsubscribe` push with code 2000, which the SDK does not retry).
  virtual std::string revoked(std::string_view channel, std::string_view why) const = 0;

  /// The answer to a subscribe that asked for an exact recovery or nothing
  /// (Centrifugo flag bit 2) when it failed: error 112 with `reason`.
  virtual std::string unrecoverable(const nlohmann::json& id, std::string_view reason) const = 0;
};

} // namespace herald::net
