// ws_session: one WebSocket client (RFC 6455) speaking the JSON protocol of
// docs/protocol.md.
//
// The opening handshake's answer (section 4.2.2) is Herald's own
// (accept_upgrade below; the 101 goes out first when the session starts);
// the open connection's framing is Herald's own (net/wire/ws/frame_codec.hpp): a
// publication's frame header and payload are encoded once and shared by
// every subscriber, and queued frames go out in one gathered write with the
// rest of net/core/stream_session (queue, high-water mark, write timeout, close).
// This class adds: the read loop (client frames: masked, fragments, control
// frames between fragments, UTF-8 text, the message size limit: 1002, 1007,
// 1009 per section 7.4.1), refusal of the message kind its dialect does not
// read (1003: binary on the JSON dialects, text on Protobuf), answering pings,
// the server's ping/pong heartbeat, the message timeout (a frame or a
// fragmented message must arrive whole within --ws-message-timeout, else 1008
// and the partial message is freed), the close handshake (section 7.1.2:
// after sending its close frame the server waits up to the close's grace for
// the client's, then closes TCP), and the command rate limit: a message that
// finds the token bucket empty is not handed on but answered with an `error`
// `rate_limited`; --ws-commands-burst such refusals in a row close with 1008.
// The same session speaks Centrifugo's client protocol on
// /connection/websocket (docs/centrifugo.md) in JSON (dialect::centrifugo,
// text messages) or Protobuf (dialect::centrifugo_protobuf, binary messages,
// chosen by the subprotocol `centrifuge-protobuf` or `?format=protobuf`),
// through the encoding's centrifugo::codec chosen at the upgrade: the
// connection actor parses its commands; the session writes Centrifugo
// publication pushes (encoded once per publication and encoding), counts
// each command against the rate limit, adds the codec's application ping to
// each heartbeat, and maps Herald's close codes to Centrifugo's
// (centrifugo::close_for). Limits, heartbeat, backpressure and metrics are
// the same for every dialect.
// permessage-deflate (RFC 7692), when the client offers it and
// --ws-deflate-min-bytes is not 0, with no context takeover either way:
// messages of at least that size go compressed (RSV1), a publication's
// compressed frame made once and kept in the publication for every
// compressing subscriber (net/ws/deflate.hpp); compressed client messages
// are inflated within --max-ws-message-bytes (1009 past it, 1007 for bytes
// that are not DEFLATE or text that is not UTF-8 once inflated).
// While idle a session holds no read buffer: it waits for readability and
// reads into a buffer on the stack. Runs on its shard's thread; reports
// on_closed exactly once.
#pragma once

#include "net/auth/policy.hpp"
#include "net/core/stream_session.hpp"
#include "net/core/token_bucket.hpp"
#include "net/ws/accept_key.hpp"
#include "net/wire/ws/dialect.hpp"
#include "net/wire/ws/frame_codec.hpp"
#include "net/wire/ws/session_codec.hpp"

#include <memory>

namespace herald::net {
class service;
}

namespace herald::net::ws {

/// Answers the opening handshake (RFC 6455 section 4.2.2) of the upgrade
/// request `req`, which http_session checked already (GET, `Upgrade` and
/// `Connection`, version 13, a well-formed key: net/wire/ws/upgrade.hpp; the
/// token and Origin): chooses the dialect (Centrifugo's subprotocol
/// `centrifuge-protobuf` or `?format=protobuf` selects Protobuf), makes a
/// ws_session of the socket whose first bytes are the 101 answer, gives it
/// `who` (the upgrade's authentication) and `slot`, and hands it to
/// service::open_ws. `d`: the command layer of the route (/v1/ws: Herald's,
/// /connection/websocket: Centrifugo's). Call on the stream's shard thread.
void accept_upgrade(beast::tcp_stream stream, bhttp::request<bhttp::string_body> req,
                    session_options_ptr opts, service& svc, auth::principal who,
                    std::shared_ptr<void> slot, dialect d = dialect::herald);


class ws_session final : public stream_session {
public:
  /// @param socket a connected socket whose upgrade request was accepted
  ///        (answer_upgrade() gives the 101 that start() writes first), on a shard.
  /// @param d the command layer the client speaks.
  ws_session(tcp::socket socket, session_options_ptr opts, dialect d = dialect::herald);

  /// The command layer this client speaks (fixed for the connection's life).
  dialect protocol() const noexcept { return dialect_; }

  /// Starts the connection: writes the upgrade's 101 answer (given to
  /// answer_upgrade()) first, then reads client messages and pings. Call
  /// once, on the shard's thread, after the connection actor exists.
  void start(std::shared_ptr<session_events> events);

  /// The opening handshake's answer (net/wire/ws/upgrade.hpp
  /// encode_upgrade_response), the first bytes start() writes.
  void answer_upgrade(std::string response) { upgrade_response_ = std::move(response); }

  /// permessage-deflate was negotiated (the 101 says so): compress messages
  /// of at least --ws-deflate-min-bytes, accept RSV1 on the client's. Call
  /// before start().
  void enable_deflate() noexcept {
    deflate_ = true;
    parser_.allow_compression();
  }

  /// Who the upgrade request authenticated as (docs/auth.md); read by
  /// service::open_ws.
  void set_principal(auth::principal who) { principal_ = std::move(who); }
  const auth::principal& principal() const noexcept { return principal_; }

private:
  // stream_session
  void write_publication(const publication& p, std::string prefix, const frame& body,
                         std::int64_t accepted_ns, conflation_key key) override;
  void push_message(std::string prefix, frame message, std::int64_t accepted_ns) override;
  void push_final(close_request& req) override;
  void on_final_written() override;
  void on_deadline(deadline which) override;

  void do_read();
  void on_readable(beast::error_code ec);
  /// Handles one parsed event; false when reading must stop.
  bool on_event(frame_parser::result r);
  /// Rate-limits and hands on one client message: each command takes a token
  /// of `commands_` (/v1/ws: the message; Centrifugo: each command of it,
  /// centrifugo::codec::command_ends()).
  void on_message(std::string message);
  /// Answers one command refused for the rate limit (`id`: its id, null or
  /// 0: none), or closes with 1008 after --ws-commands-burst refusals in a
  /// row. @returns false when it closed.
  bool refuse_command(const nlohmann::json& id);
  /// Sets the heartbeat deadline: the next ping, or the pong's timeout.
  void arm_heartbeat();
  /// The heartbeat deadline passed: a ping, or the close when no pong came
  /// (on a connection with a conflated subscription, only when the peer also
  /// acknowledged no byte since the ping: see ws_session.cpp).
  void on_heartbeat();
  /// Sets the message deadline when the parser holds a partial frame or
  /// message, stops it when it is at rest again.
  void watch_message();
  /// Queues a control frame (ping, pong) with `payload` (<= 125 bytes).
  void push_control(opcode op, std::string_view payload);

  dialect dialect_;
  /// What this dialect writes (net/wire/ws/session_codec.hpp).
  const session_codec& codec_;
  /// The opcode of the messages Herald writes, and the only one it reads
  /// (binary for Protobuf, text otherwise).
  opcode message_opcode_;
  frame_parser parser_;
  auth::principal principal_;
  std::string upgrade_response_; ///< the 101 answer, until start() queues it
  token_bucket commands_;          ///< --ws-commands-per-second, --ws-commands-burst
  std::size_t refused_in_row_ = 0; ///< commands refused as rate_limited in a row
  bool awaiting_pong_ = false;
  std::uint64_t acked_at_ping_ = 0; ///< bytes_acked() when the ping went out (or last checked)
  bool peer_closed_ = false; ///< the client's close frame arrived
  bool reading_ = true;      ///< false once the client's close arrived
  bool draining_ = false;    ///< a framing error: read and drop until the client ends
  bool deflate_ = false;     ///< permessage-deflate negotiated
};

} // namespace herald::net::ws
