// codec: the bytes of Centrifugo's client protocol v2 in one of its two
// encodings, chosen once per connection at the upgrade (docs/centrifugo.md):
//  - JSON (net/wire/centrifugo/protocol.hpp): text WebSocket messages, one
//    command per '\n'-separated line, one reply or push per message;
//  - Protobuf (net/wire/centrifugo/protobuf.hpp): binary WebSocket messages,
//    each one or more varint-length-delimited `Command`s (client to server),
//    one length-delimited `Reply` per message from Herald; the messages and
//    field numbers of centrifugal/protocol `definitions/client.proto`.
// The session, the subscription table and the connection actor write every
// Centrifugo reply, push and ping through a codec and never ask which one it
// is. Pure: no Asio, no clock; every function is const and thread-safe.
#pragma once

#include "net/wire/centrifugo/protocol.hpp"
#include "net/wire/session_codec.hpp"
#include "net/wire/ws/dialect.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace herald::net::centrifugo {

class codec {
public:
  virtual ~codec() = default;

  /// true: Herald writes binary WebSocket messages (RFC 6455 opcode 2) and
  /// reads only binary ones; false: text (opcode 1) both ways. A message of
  /// the other kind is closed with 1003 (section 7.4.1) by the session.
  virtual bool binary() const noexcept = 0;

  /// The end (byte offset past it) of each command of one client message, in
  /// order, for counting commands against the rate limit before they are
  /// parsed. JSON: each non-blank line; Protobuf: each length-delimited
  /// command (a framing error makes the rest of the message one last command,
  /// which parse_commands() then refuses). Never throws.
  virtual std::vector<std::size_t> command_ends(std::string_view message) const = 0;

  /// Every command of one client message, in order (JSON: parse_commands()
  /// in protocol.hpp). A command that cannot be read is an entry with
  /// `ok == false`: id 0 when no id could be read (the connection is then
  /// closed with 3501), else its id and error 107. Never throws.
  virtual std::vector<parsed> parse_commands(std::string_view message) const = 0;

  /// Reply `error` {code, message (empty: message_of(code)), temporary}.
  virtual std::string encode_error(std::uint32_t id, error_code code,
                                   std::string_view message = {},
                                   bool temporary = false) const = 0;
  /// Reply `connect` (see protocol.hpp encode_connect(); ping in s, ttl in s, 0: none).
  virtual std::string encode_connect(std::uint32_t id, std::string_view client,
                                     std::string_view version, std::uint32_t ping_seconds,
                                     std::uint32_t ttl_seconds) const = 0;
  /// Reply `refresh` (ttl in s, 0: the token does not expire).
  virtual std::string encode_refresh(std::uint32_t id, std::string_view client,
                                     std::string_view version,
                                     std::uint32_t ttl_seconds) const = 0;
  /// Reply `subscribe` with the replay inside (protocol.hpp encode_subscribe());
  /// `delta`: the subscription negotiated delta compression (`delta: true`
  /// in the reply, the replay's first publication in full, the next ones as
  /// deltas where delta_follows()).
  virtual std::string encode_subscribe(std::uint32_t id, const stream_position& position,
                                       bool was_recovering, bool recovered,
                                       const std::vector<const publication*>& replay,
                                       bool delta = false) const = 0;
  /// Reply `unsubscribe` (empty result).
  virtual std::string encode_unsubscribe(std::uint32_t id) const = 0;
  /// Reply `ping` to the client's ping command.
  virtual std::string encode_ping(std::uint32_t id) const = 0;
  /// Push `unsubscribe` {code, reason} for `channel` (2500: resubscribe and recover).
  virtual std::string encode_unsubscribe_push(std::string_view channel, std::uint32_t code,
                                              std::string_view reason) const = 0;

  /// The server's application ping as a whole unmasked WebSocket frame
  /// (RFC 6455 section 5.2): an empty reply (JSON `{}` in a text frame,
  /// Protobuf the byte 0, an empty delimited Reply, in a binary frame).
  virtual const frame& ping_frame() const = 0;

  /// The publication push of `p` in this encoding and the RFC 6455 header
  /// of the frame carrying it, built on the first call and kept in `p` (the
  /// same bytes for every subscriber of this encoding, on every shard).
  virtual publication_bytes publication_push(const publication& p) const = 0;

  /// The push of `p` to a subscription that negotiated delta compression:
  /// with `as_delta` its Fossil delta p.delta (`delta: true`; the caller
  /// checks that the client holds the previous publication and that p.delta
  /// is not empty), else its full data as Centrifugo sends it on such
  /// subscriptions (JSON: a JSON string; Protobuf: the bytes, as
  /// publication_push). Built once per publication, kept in `p`.
  virtual publication_bytes delta_push(const publication& p, bool as_delta) const = 0;
};


/// The JSON codec (text frames).
const codec& json_codec() noexcept;
/// The Protobuf codec (binary frames).
const codec& protobuf_codec() noexcept;

/// The codec of a Centrifugo dialect; nullptr for Herald's own /v1/ws.
const codec* codec_for(ws::dialect d) noexcept;

} // namespace herald::net::centrifugo
