// session_codec: everything a WebSocket session and its subscription table
// write, in the dialect the connection speaks, chosen once at the upgrade
// (net/wire/ws/dialect.hpp): Herald's JSON protocol on /v1/ws
// (docs/protocol.md), or Centrifugo's client protocol in JSON or Protobuf on
// /connection/websocket (docs/centrifugo.md, net/wire/centrifugo/codec.hpp).
// net/ws/ws_session and net/core/subscription_table call it and never ask
// which dialect it is; where the dialects differ in what happens, not only in
// bytes (a live gap ends a Centrifugo subscription; Centrifugo carries the
// replay inside the subscribe reply, and answers a failed recovery with 112
// when asked to), the codec says so as a property. Pure: no Asio, no clock;
// every function is const and thread-safe.
#pragma once

#include "net/wire/errors.hpp"
#include "net/wire/frame.hpp"
#include "net/wire/publication.hpp"
#include "net/wire/stream_position.hpp"
#include "net/wire/ws/dialect.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace herald::net::ws {

class session_codec {
public:
  virtual ~session_codec() = default;

  // -- reading ---------------------------------------------------------------

  /// true: messages are binary (RFC 6455 opcode 2) both ways; false: text.
  /// A message of the other kind is closed with 1003 (section 7.4.1).
  virtual bool binary() const noexcept = 0;

  /// The end offset of each command of one client message, for the rate
  /// limit (/v1/ws: the message is one command; Centrifugo: each line or
  /// delimited Command). Empty when the message holds none.
  virtual std::vector<std::size_t> command_ends(std::string_view message) const = 0;

  /// The ids of the commands in `rest` (the part of a message the rate limit
  /// refused), each to be answered rate_limited(); null where none is readable.
  virtual std::vector<nlohmann::json> command_ids(std::string_view rest) const = 0;

  // -- writing: one message each ------------------------------------------------

  /// The error that answers a command refused by the rate limit (`id` null: none).
  virtual std::string rate_limited(const nlohmann::json& id, std::string_view why) const = 0;

  /// The publication's message and the RFC 6455 header of its frame: encoded
  /// once per publication and dialect, shared by every subscriber.
  virtual const frame& publication_message(const publication& p) const = 0;
  virtual const std::string& publication_header(const publication& p) const = 0;

  /// An application-level ping sent with each WebSocket ping (a whole frame),
  /// or nullptr when the dialect has none (/v1/ws).
  virtual const frame* ping_frame() const noexcept = 0;

  /// The close code and reason the client gets for Herald's close `code`
  /// (docs/protocol.md "Close codes"); /v1/ws: unchanged.
  virtual std::pair<std::uint16_t, std::string> close(std::uint16_t code,
                                                      std::string_view reason) const = 0;

  /// The answer to a subscribe `id` to `channel` that ends unanswered by its
  /// channel: `cancelled` (superseded or unsubscribed) or `unavailable` (no
  /// answer in time: Centrifugo code 100 with `temporary`, which the SDK retries).
  virtual std::string pending_error(const nlohmann::json& id, std::string_view channel, errc code,
                                    std::string_view why) const = 0;

  /// The reply to an unsubscribe `id` of `channel`.
  virtual std::string unsubscribed(const nlohmann::json& id, std::string_view channel) const = 0;

  /// A live gap on `channel` (`missed_publications`, `epoch_changed`).
  virtual std::string gap(std::string_view channel, std::string_view reason) const = 0;
  /// true: after a live gap the subscription delivers nothing more until the
  /// client subscribes again (Centrifugo's unsubscribe push 2500).
  virtual bool gap_ends_subscription() const noexcept = 0;

  /// true: the replay travels inside the subscribe reply (Centrifugo); false:
  /// the reply, then each replayed publication as its own message (/v1/ws).
  virtual bool replay_in_reply() const noexcept = 0;

  /// The subscribe reply. `position` the channel's latest publication;
  /// `recovering` a position was given; `recovered` it was recovered;
  /// `reason` why not (may be empty); `replay` the publications inside the
  /// reply when replay_in_reply() (else empty), in offset order.
  virtual std::string subscribed(const nlohmann::json& id, std::string_view channel,
                                 const stream_position& position, bool recovering, bool recovered,
                                 std::string_view reason,
                                 const std::vector<const publication*>& replay) const = 0;

  /// The notice that the connection's token expires soon (/v1/ws:
  /// `refresh_required` with `expires_at`, s since the Unix epoch), or empty
  /// when the dialect's client refreshes on its own (Centrifugo: after the
  /// connect reply's `ttl`).
  virtual std::string refresh_required(std::int64_t expires_at) const = 0;

  /// The notice that `channel` was dropped because a refreshed token no
  /// longer allows it (/v1/ws: error `forbidden`; Centrifugo: an
  /// `unsubscribe` push with code 2000, which the SDK does not retry).
  virtual std::string revoked(std::string_view channel, std::string_view why) const = 0;

  /// The answer to a subscribe that asked for an exact recovery or nothing
  /// (Centrifugo flag bit 2) when it failed: error 112 with `reason`.
  virtual std::string unrecoverable(const nlohmann::json& id, std::string_view reason) const = 0;
};

/// The codec of dialect `d` (a static instance).
const session_codec& session_codec_for(dialect d) noexcept;

} // namespace herald::net::ws
