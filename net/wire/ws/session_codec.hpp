// ws::session_codec: what a WebSocket session reads and writes, in the
// dialect the connection speaks, chosen once at the upgrade
// (net/wire/ws/dialect.hpp): Herald's JSON protocol on /v1/ws
// (docs/protocol.md), or Centrifugo's client protocol in JSON or Protobuf on
// /connection/websocket (docs/centrifugo.md, net/wire/centrifugo/codec.hpp).
// What every streaming session writes is net::session_codec
// (net/wire/session_codec.hpp); this adds what only a WebSocket has: the
// frame kind, splitting a message into commands for the rate limit, the
// rate-limit error and an application ping. net/ws/ws_session and
// net/core/subscription_table call it and never ask which dialect it is.
// Pure: no Asio, no clock; every function is const and thread-safe.
#pragma once

#include "net/wire/session_codec.hpp"
#include "net/wire/ws/dialect.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace herald::net::ws {

class session_codec : public net::session_codec {
public:
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

  /// The error that answers a command refused by the rate limit (`id` null: none).
  virtual std::string rate_limited(const nlohmann::json& id, std::string_view why) const = 0;

  /// An application-level ping sent with each WebSocket ping (a whole frame),
  /// or nullptr when the dialect has none (/v1/ws).
  virtual const frame* ping_frame() const noexcept = 0;

  // net::session_codec: a WebSocket message stands alone.
  bool carries_cursor() const noexcept final { return false; }
  std::string cursor_event(const std::vector<std::string_view>&) const final { return {}; }
};

/// The codec of dialect `d` (a static instance).
const session_codec& session_codec_for(dialect d) noexcept;

} // namespace herald::net::ws
