#include "net/ws/ws_session.hpp"

#include "net/wire/ws/session_codec.hpp"
#include "net/wire/errors.hpp"
#include "net/obs/metrics.hpp"
#include "net/service.hpp"
#include "net/wire/ws/protocol.hpp"
#include "net/wire/ws/upgrade.hpp"
#include "net/wire/ws/utf8.hpp"
#include "net/ws/deflate.hpp"

#include <array>
#include <utility>

namespace herald::net::ws {

namespace {

constexpr std::string_view centrifuge_protobuf = "centrifuge-protobuf";

// `format=protobuf` among the query parameters of `target` (Centrifugo's
// older way to ask for Protobuf, for clients that cannot set a subprotocol).
bool query_asks_protobuf(std::string_view target) {
  auto q = target.find('?');
  if (q == std::string_view::npos)
    return false;
  auto query = target.substr(q + 1);
  while (!query.empty()) {
    auto amp = query.find('&');
    if (query.substr(0, amp) == "format=protobuf")
      return true;
    query.remove_prefix(amp == std::string_view::npos ? query.size() : amp + 1);
  }
  return false;
}

std::string header_for(opcode op, std::size_t payload_bytes, bool compressed = false) {
  char buf[10];
  const auto n = encode_header(op, payload_bytes, buf);
  if (compressed)
    buf[0] = static_cast<char>(buf[0] | 0x40); // RSV1: a compressed message (RFC 7692 section 6)
  return std::string(buf, n);
}

// Every Sec-WebSocket-Extensions field of the request, joined with ','
// (RFC 7230 section 3.2.2: the same as one field listing them all).
std::string extension_offers(const bhttp::request<bhttp::string_body>& req) {
  std::string all;
  for (auto [it, end] = req.equal_range(bhttp::field::sec_websocket_extensions); it != end; ++it) {
    if (!all.empty())
      all += ',';
    all.append(it->value().data(), it->value().size());
  }
  return all;
}

// The publication's frame `body` compressed (its header, its payload),
// made by the first compressing subscriber that writes it and kept in the
// publication for the others. Copied out under the lock: another shard may
// add an entry (and move the vector) as soon as it is released.
std::pair<std::string, frame> deflated(const publication& p, const frame& body, opcode op) {
  std::lock_guard lock{p.deflated_mutex};
  for (const auto& d : p.deflated)
    if (d.of == body.get())
      return {d.header, d.body};
  auto compressed = deflate_message(*body);
  auto header = header_for(op, compressed.size(), true);
  const auto& d = p.deflated.emplace_back(
    deflated_frame{body.get(), make_frame(std::move(compressed)), std::move(header)});
  return {d.header, d.body};
}

} // namespace

void accept_upgrade(beast::tcp_stream stream, bhttp::request<bhttp::string_body> req,
                    session_options_ptr opts, service& svc, auth::principal who,
                    std::shared_ptr<void> slot, dialect d) {
  // Centrifugo's Protobuf SDKs ask for this subprotocol (and, refused one,
  // reconnect forever with no reason given); `?format=protobuf` asks for the
  // same encoding without it. The dialect is chosen here, once.
  const bool subprotocol =
    d == dialect::centrifugo &&
    offers_subprotocol(req[bhttp::field::sec_websocket_protocol], centrifuge_protobuf);
  if (d == dialect::centrifugo && (subprotocol || query_asks_protobuf(req.target())))
    d = dialect::centrifugo_protobuf;
  const bool deflate = opts->ws_deflate_min_bytes > 0 && accepts_deflate(extension_offers(req));
  beast::get_lowest_layer(stream).expires_never();
  auto session = std::make_shared<ws_session>(stream.release_socket(), std::move(opts), d);
  session->answer_upgrade(
    encode_upgrade_response(accept_key(req[bhttp::field::sec_websocket_key]),
                            subprotocol ? centrifuge_protobuf : std::string_view{}, deflate));
  if (deflate)
    session->enable_deflate();
  session->set_principal(std::move(who));
  session->hold(std::move(slot));
  svc.open_ws(std::move(session));
}

ws_session::ws_session(tcp::socket socket, session_options_ptr opts, dialect d)
  : stream_session(std::move(socket), std::move(opts), metrics::transport::ws, session_codec_for(d)),
    dialect_(d),
    codec_(session_codec_for(d)),
    message_opcode_(codec_.binary() ? opcode::binary : opcode::text),
    parser_(opts_.max_ws_message_bytes),
    commands_(opts_.ws_commands_per_second, opts_.ws_commands_burst,
              std::chrono::steady_clock::now()) {
  beast::error_code ignored;
  socket_.non_blocking(true, ignored);
}

void ws_session::start(std::shared_ptr<session_events> events) {
  events_ = std::move(events);
  if (!upgrade_response_.empty()) {
    // The 101 answer goes out before anything else, straight to the fresh
    // socket (its send buffer is empty: it takes the ~130 bytes at once), so
    // the stream's metrics count what follows the handshake, as documented.
    auto answer = std::exchange(upgrade_response_, {});
    beast::error_code ec;
    auto n = socket_.write_some(asio::buffer(answer), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      ec = {};
      n = 0;
    }
    if (ec) {
      finish(close_reason::client); // the client is gone; the actor is told
      return;
    }
    if (n < answer.size()) // the rest with the stream's first write
      push(answer.substr(n), make_frame(std::string{}));
  }
  arm_heartbeat();
  do_read();
}

// -- writing -----------------------------------------------------------------

void ws_session::write_publication(const publication& p, std::string prefix, const frame& body,
                                   std::int64_t accepted_ns, conflation_key key) {
  if (!deflate_ || body->size() < opts_.ws_deflate_min_bytes) {
    stream_session::write_publication(p, std::move(prefix), body, accepted_ns, key);
    return;
  }
  if (closing_ || closed_)
    return;
  // One whole compressed message per item, compressed with no context
  // takeover (net/ws/deflate.hpp): conflation may drop it and the client's
  // inflater never misses it.
  auto [header, compressed] = deflated(p, body, message_opcode_);
  push(std::move(header), std::move(compressed), accepted_ns, key);
}

void ws_session::push_message(std::string, frame message, std::int64_t accepted_ns) {
  if (deflate_ && message->size() >= opts_.ws_deflate_min_bytes) {
    // A reply of this connection's own (a subscribe reply with its replay,
    // an error): compressed for it alone.
    auto compressed = deflate_message(*message);
    auto header = header_for(message_opcode_, compressed.size(), true);
    push(std::move(header), make_frame(std::move(compressed)), accepted_ns);
    return;
  }
  auto header = header_for(message_opcode_, message->size());
  push(std::move(header), std::move(message), accepted_ns);
}

void ws_session::push_control(opcode op, std::string_view payload) {
  push({}, make_frame(encode_frame(op, payload)));
}

void ws_session::push_final(close_request& req) {
  // A close answering the client's close without a code carries none
  // (section 5.5.1: 1005 is never sent).
  if (req.code != 1005 && req.reason != close_reason::client) {
    // The dialect's code for Herald's (Centrifugo: the SDK decides from it
    // whether to reconnect, 3000-3499, or stop, 3500-3999; docs/centrifugo.md
    // has the table). An answer to the client's own close echoes its code.
    auto [code, text] = codec_.close(req.code, req.text);
    req.code = code;
    req.text = std::move(text); // cut to 123 bytes on a UTF-8 boundary when encoded
  }
  auto payload =
    req.code == 1005 ? std::string{} : encode_close_payload(req.code, req.text);
  push_control(opcode::close, payload);
}

void ws_session::on_final_written() {
  // Our close frame is out. Section 7.1.1: the server closes TCP once the
  // client answered (or at once when the client closed first, or broke the
  // framing); otherwise the grace timer does.
  if (peer_closed_ || !reading_) {
    finish(closing_reason_);
    return;
  }
  if (draining_) {
    // After a framing error nothing more is parsed: end our side (FIN after
    // the close frame) and finish when the client's side ends too, or when
    // the close's grace runs out.
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
  }
}

// -- reading -----------------------------------------------------------------

void ws_session::do_read() {
  socket_.async_wait(tcp::socket::wait_read,
                     [self = std::static_pointer_cast<ws_session>(shared_from_this())](
                       beast::error_code ec) { self->on_readable(ec); });
}

void ws_session::on_readable(beast::error_code ec) {
  if (closed_ || !reading_)
    return;
  if (ec) {
    finish(closing_ ? closing_reason_ : close_reason::client);
    return;
  }
  std::array<char, 4096> buf;
  for (;;) {
    auto n = socket_.read_some(asio::buffer(buf), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again)
      break;
    if (ec) {
      finish(closing_ ? closing_reason_ : close_reason::client);
      return;
    }
    std::string_view in{buf.data(), n};
    if (draining_)
      in = {}; // after a framing error: read to the end, unparsed
    while (!in.empty()) {
      std::size_t used = 0;
      auto r = parser_.parse(in, used);
      in.remove_prefix(used);
      if (r == frame_parser::result::need_more)
        break;
      if (!on_event(r) || closed_) {
        reading_ = false;
        return;
      }
      if (draining_)
        break; // the rest of this read is dropped too
    }
    if (n < buf.size())
      break; // drained: wait again rather than pay a read that would block
  }
  watch_message();
  do_read();
}

void ws_session::watch_message() {
  if (parser_.at_rest()) {
    clear_deadline(deadline::message);
    return;
  }
  if (deadline_set(deadline::message))
    return; // the bound counts from the message's first byte
  set_deadline(deadline::message, clock::now() + opts_.ws_message_timeout);
}

void ws_session::on_deadline(deadline which) {
  if (which == deadline::heartbeat) {
    on_heartbeat();
    return;
  }
  if (which != deadline::message || parser_.at_rest())
    return;
  // The message did not complete in time: stop reading, free what it held,
  // and close with 1008 (the rest of it is never parsed, so the connection
  // ends once our close frame is out).
  reading_ = false;
  parser_ = frame_parser{opts_.max_ws_message_bytes};
  on_close({close_reason::policy, close_policy_violation,
            "message not completed within " +
              std::to_string(opts_.ws_message_timeout.count() / 1000) + " s"});
}

bool ws_session::on_event(frame_parser::result r) {
  using result = frame_parser::result;
  switch (r) {
  case result::text:
  case result::binary: {
    // Each dialect reads one kind of message (section 5.6): Protobuf binary,
    // the JSON ones text; the other kind is closed with 1003 (section 7.4.1).
    const bool binary = r == result::binary;
    if (binary != (message_opcode_ == opcode::binary)) {
      const auto& row = info(errc::unsupported_data);
      on_close({close_reason::protocol_error, row.close_code,
                binary ? "binary messages are not supported"
                       : "text messages are not supported on a Protobuf connection"});
      return true; // wait for the client's close
    }
    if (parser_.compressed()) {
      // RFC 7692 section 7.2.2; the size bound applies to what comes out.
      std::string plain;
      const auto st = inflate_message(parser_.message(), opts_.max_ws_message_bytes, plain);
      if (st != inflate_status::ok || (!binary && !is_valid_utf8(plain))) {
        draining_ = true; // nothing more of this client is parsed
        on_close({close_reason::protocol_error,
                  st == inflate_status::too_big ? close_too_big : close_invalid_payload,
                  st == inflate_status::too_big   ? "message too big once inflated"
                  : st == inflate_status::corrupt ? "invalid compressed data"
                                                  : "invalid UTF-8 in text message"});
        return true;
      }
      on_message(std::move(plain));
      return true;
    }
    on_message(parser_.take_message());
    return true;
  }
  case result::ping:
    if (!closing_)
      push_control(opcode::pong, parser_.control_payload());
    return true;
  case result::pong:
    awaiting_pong_ = false;
    return true;
  case result::close:
    peer_closed_ = true;
    if (closing_) {
      finish(closing_reason_); // the answer to our close
    } else {
      close_request req{close_reason::client, parser_.close_code(), {}};
      on_close(std::move(req)); // echo it, then end
    }
    return false;
  case result::error: {
    // The client broke the framing (section 7.1.7): fail the connection
    // with the matching code. What the client sends after it is read and
    // dropped unparsed: closing a socket with unread input sends a TCP
    // reset, which can destroy the close frame before the client reads it.
    draining_ = true;
    on_close(
      {close_reason::protocol_error, parser_.error_code(), std::string{parser_.error_text()}});
    return true;
  }
  case result::need_more:
    return true;
  }
  return true;
}

bool ws_session::refuse_command(const nlohmann::json& id) {
  const auto& row = info(errc::rate_limited);
  if (++refused_in_row_ >= opts_.ws_commands_burst) {
    close_request req{close_reason::policy, row.close_code, "rate limited"};
    req.flush_queued = true; // the rate_limited errors already queued go out first
    on_close(std::move(req));
    return false;
  }
  auto why = "over " + std::to_string(static_cast<long long>(opts_.ws_commands_per_second)) +
             " commands per second: command dropped";
  write_message({}, codec_.rate_limited(id, why));
  return true;
}

void ws_session::on_message(std::string message) {
  if (closing_)
    return;
  const auto now = std::chrono::steady_clock::now();
  // Each command of the message (/v1/ws: the message; Centrifugo: a
  // non-blank line or a length-delimited Command) takes a token; a message
  // with none still costs one. The commands that found one go on (the
  // message up to the end of the last of them); each later one is answered
  // rate_limited with its id, as if sent alone.
  std::size_t admitted = 0; // bytes of `message` whose commands go on
  std::size_t refused_at = std::string::npos;
  bool pass = false; // hand (the admitted part of) the message on
  const auto ends = codec_.command_ends(message);
  for (auto end : ends) {
    if (!commands_.take(now)) {
      refused_at = admitted;
      break;
    }
    refused_in_row_ = 0;
    admitted = end;
    pass = true;
  }
  if (ends.empty()) {
    if (!commands_.take(now)) {
      refuse_command(nlohmann::json{});
      return;
    }
    refused_in_row_ = 0;
    admitted = message.size();
    pass = admitted > 0;
  }
  std::string rest;
  if (refused_at != std::string::npos)
    rest = message.substr(refused_at);
  if (pass && events_) {
    message.resize(admitted);
    events_->on_text(std::move(message));
  }
  if (refused_at == std::string::npos)
    return;
  // Read only for their ids (an unreadable command: none).
  for (const auto& id : codec_.command_ids(rest))
    if (!refuse_command(id) || closing_)
      return;
}

void ws_session::arm_heartbeat() {
  auto wait = awaiting_pong_ ? opts_.ws_pong_timeout : opts_.ws_ping_interval;
  set_deadline(deadline::heartbeat, clock::now() + wait);
}

void ws_session::on_heartbeat() {
  if (awaiting_pong_) {
    // A conflated subscriber on a slow link: its pong waits behind what the
    // link still carries (the kernel's buffers and the network's, which
    // conflation does not reach), which may take longer than the pong
    // timeout. A peer whose TCP acknowledged bytes since the ping is
    // reading, so alive: wait another pong timeout. A peer that reads
    // nothing is closed as before (and by --write-timeout when writes stall).
    if (unsent_capped_) {
      const auto acked = bytes_acked();
      if (acked > acked_at_ping_) {
        acked_at_ping_ = acked;
        arm_heartbeat();
        return;
      }
    }
    finish(close_reason::heartbeat_timeout);
    return;
  }
  awaiting_pong_ = true;
  if (unsent_capped_)
    acked_at_ping_ = bytes_acked();
  static const frame ping = make_frame(encode_frame(opcode::ping, {}));
  push({}, ping);
  if (const frame* app_ping = codec_.ping_frame()) {
    // The dialect's application ping (Centrifugo's, which the SDK watches: it
    // reconnects when none came within the connect reply's `ping` plus its
    // delay).
    push({}, *app_ping);
  }
  arm_heartbeat();
}

} // namespace herald::net::ws
