// ws_session: one WebSocket client (RFC 6455) speaking the JSON protocol of
// docs/protocol.md. Created by http_session on an upgrade request to /v1/ws;
// owns the websocket::stream from then on. Beast enforces the framing rules
// and answers violations with their close codes (1002 protocol error, 1007
// invalid UTF-8, 1009 message too big: section 7.4.1); this class adds
// binary-message refusal (1003), the ping/pong heartbeat, the write timeout
// and the bounded outbound queue, and the command rate limit: a message that
// finds the token bucket empty is not handed on but answered with an `error`
// `rate_limited`; --ws-commands-burst such refusals in a row close with 1008. Runs on the socket's strand; deliver() and
// close() may be called from any thread. It reports on_closed exactly once.
#pragma once

#include "net/asio.hpp"
#include "net/auth/policy.hpp"
#include "net/delivery_service.hpp"
#include "net/frame_sink.hpp"
#include "net/outbound_queue.hpp"
#include "net/session_events.hpp"
#include "net/session_options.hpp"
#include "net/token_bucket.hpp"

#include <chrono>
#include <memory>
#include <vector>

namespace herald::net {
class service;
}

namespace herald::net::ws {

class ws_session : public frame_sink,
                    public delivery_target, public std::enable_shared_from_this<ws_session> {
public:
  /// @param stream a connected stream whose executor is a strand.
  ws_session(beast::tcp_stream stream, const session_options& opts, service& svc);

  /// Performs the upgrade handshake for `req`, then hands the session to
  /// service::open_ws. Call once, on the strand.
  void run(bhttp::request<bhttp::string_body> req);

  /// Starts reading client messages and pinging. Call once, on the strand,
  /// after the connection actor exists.
  void start(std::shared_ptr<session_events> events);

  /// Keeps `token` (the connection's per-address slot, net/connection_limit.hpp)
  /// until this session is destroyed.
  void hold(std::shared_ptr<void> token) { slot_ = std::move(token); }

  // -- frame_sink (any thread); the prefix is ignored for WebSocket --------

  void deliver(std::string prefix, frame body, std::int64_t accepted_ns = 0) override;
  void close(close_request req) override;

  const std::string& peer() const noexcept { return peer_; }

  /// delivery_target: a batched delivery, on the I/O thread.
  void on_batched_delivery(std::string, frame body, std::int64_t accepted_ns) override {
    on_deliver(std::move(body), accepted_ns);
  }

  /// Who the upgrade request authenticated as (docs/auth.md); set by
  /// http_session before run(), read by service::open_ws.
  void set_principal(auth::principal who) { principal_ = std::move(who); }
  const auth::principal& principal() const noexcept { return principal_; }

private:
  void on_accept(beast::error_code ec);
  void do_read();
  void on_read(beast::error_code ec, std::size_t bytes);
  void on_deliver(frame body, std::int64_t accepted_ns);
  void on_close(close_request req);
  void do_write();
  void on_write(beast::error_code ec, std::size_t bytes);
  void do_close();
  void arm_heartbeat();
  void arm_write_timer();
  void finish(close_reason reason);

  websocket::stream<beast::tcp_stream> ws_;
  delivery_service* batch_ = nullptr; ///< set when the io_context batches deliveries
  session_options opts_;
  service& service_;
  outbound_queue queue_;
  std::vector<std::string_view> views_;
  std::shared_ptr<session_events> events_;
  beast::flat_buffer read_buf_;
  asio::steady_timer heartbeat_timer_;
  asio::steady_timer write_timer_;
  std::chrono::steady_clock::time_point write_started_;
  std::string peer_;
  auth::principal principal_;
  websocket::close_reason close_frame_;
  close_reason closing_reason_ = close_reason::client;
  bool awaiting_pong_ = false;
  bool write_timer_armed_ = false;
  bool closing_ = false;
  bool close_sent_ = false;
  bool closed_ = false;
  std::shared_ptr<void> slot_; ///< per-address connection count
  token_bucket commands_;      ///< --ws-commands-per-second, --ws-commands-burst
  std::size_t refused_in_row_ = 0; ///< commands refused as rate_limited in a row
};

} // namespace herald::net::ws
