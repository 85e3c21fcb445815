#include "net/ws/ws_session.hpp"

#include "net/errors.hpp"
#include "net/metrics.hpp"
#include "net/service.hpp"
#include "net/ws/protocol.hpp"

namespace herald::net::ws {

namespace {
std::string endpoint_text(beast::tcp_stream& s) {
  beast::error_code ec;
  auto ep = s.socket().remote_endpoint(ec);
  return ec ? std::string{"?"} : ep.address().to_string() + ":" + std::to_string(ep.port());
}

// Maps a failed read to why the connection ended. Beast has already sent
// the matching close frame for protocol violations.
close_reason reason_of(const beast::error_code& ec) {
  if (ec == websocket::error::closed || ec == asio::error::eof
      || ec == asio::error::connection_reset || ec == asio::error::operation_aborted
      || ec == asio::error::broken_pipe)
    return close_reason::client;
  // Framing violations (RFC 6455): Beast failed the connection with 1002,
  // 1007 or 1009 before reporting them here.
  if (ec == websocket::condition::protocol_violation || ec == websocket::error::message_too_big
      || ec == websocket::error::bad_frame_payload)
    return close_reason::protocol_error;
  return close_reason::client;
}
} // namespace

ws_session::ws_session(beast::tcp_stream stream, const session_options& opts, service& svc)
  : ws_(std::move(stream)),
    opts_(opts),
    service_(svc),
    queue_(opts.client_max_buffer_bytes),
    heartbeat_timer_(ws_.get_executor()),
    write_timer_(ws_.get_executor()),
    peer_(endpoint_text(ws_.next_layer())),
    commands_(opts.ws_commands_per_second, opts.ws_commands_burst,
              std::chrono::steady_clock::now()) {
  auto& batch = asio::use_service<delivery_service>(
    asio::query(ws_.get_executor(), asio::execution::context));
  if (batch.enabled())
    batch_ = &batch;
}

void ws_session::run(bhttp::request<bhttp::string_body> req) {
  // The websocket stream has its own timeouts; the TCP-level one is off.
  beast::get_lowest_layer(ws_).expires_never();
  websocket::stream_base::timeout t{};
  t.handshake_timeout = opts_.ws_handshake_timeout;
  t.idle_timeout = websocket::stream_base::none(); // we ping ourselves
  t.keep_alive_pings = false;
  ws_.set_option(t);
  ws_.read_message_max(opts_.max_ws_message_bytes);
  ws_.auto_fragment(false);
  ws_.set_option(websocket::stream_base::decorator([](websocket::response_type& res) {
    res.set(bhttp::field::server, "herald");
  }));
  ws_.control_callback([this](websocket::frame_type kind, beast::string_view) {
    if (kind == websocket::frame_type::pong)
      awaiting_pong_ = false;
  });
  ws_.async_accept(req, [self = shared_from_this()](beast::error_code ec) { self->on_accept(ec); });
}

void ws_session::on_accept(beast::error_code ec) {
  if (ec) {
    closed_ = true; // never opened: nobody to tell
    return;
  }
  service_.open_ws(shared_from_this());
}

void ws_session::start(std::shared_ptr<session_events> events) {
  events_ = std::move(events);
  arm_heartbeat();
  do_read();
}

void ws_session::do_read() {
  // A message is read in parts of at most read_chunk bytes, so a pending read
  // on an idle connection holds a small buffer rather than one sized for a
  // whole frame (Beast's async_read prepares a few KiB per connection).
  // Beast still enforces read_message_max over the whole message.
  constexpr std::size_t read_chunk = 512;
  ws_.async_read_some(read_buf_, read_chunk,
                      [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                        if (!ec && !self->closed_ && !self->ws_.is_message_done()) {
                          self->do_read(); // more of the same message
                          return;
                        }
                        self->on_read(ec, n);
                      });
}

void ws_session::on_read(beast::error_code ec, std::size_t) {
  if (closed_)
    return;
  if (ec) {
    finish(closing_ ? closing_reason_ : reason_of(ec));
    return;
  }
  if (!ws_.got_text()) {
    read_buf_.consume(read_buf_.size());
    const auto& row = info(errc::unsupported_data);
    on_close({close_reason::protocol_error, row.close_code, "binary messages are not supported", {}});
    return;
  }
  if (!commands_.take(std::chrono::steady_clock::now())) {
    read_buf_.consume(read_buf_.size()); // dropped unread
    read_buf_.shrink_to_fit();
    const auto& row = info(errc::rate_limited);
    if (++refused_in_row_ >= opts_.ws_commands_burst) {
      close_request req{close_reason::policy, row.close_code, "rate limited", {}};
      req.flush_queued = true; // the rate_limited errors already queued go out first
      on_close(std::move(req));
      return;
    }
    on_deliver(std::make_shared<const std::string>(encode_error(
      nlohmann::json{}, errc::rate_limited,
      "over " + std::to_string(static_cast<long long>(opts_.ws_commands_per_second))
        + " commands per second: command dropped")),
               0);
    do_read();
    return;
  }
  refused_in_row_ = 0;
  if (!closing_ && events_)
    events_->on_text(beast::buffers_to_string(read_buf_.data()));
  read_buf_.consume(read_buf_.size());
  // Commands are rare: an idle connection keeps no read buffer (Beast sizes
  // it for a whole frame, a few KiB per connection otherwise).
  read_buf_.shrink_to_fit();
  do_read();
}

void ws_session::deliver(std::string, frame body, std::int64_t accepted_ns) {
  if (batch_ != nullptr) {
    batch_->post(shared_from_this(), {}, std::move(body), accepted_ns);
    return;
  }
  asio::post(ws_.get_executor(),
             [self = shared_from_this(), b = std::move(body), accepted_ns]() mutable {
               self->on_deliver(std::move(b), accepted_ns);
             });
}

void ws_session::close(close_request req) {
  asio::post(ws_.get_executor(), [self = shared_from_this(), r = std::move(req)]() mutable {
    self->on_close(std::move(r));
  });
}

void ws_session::on_deliver(frame body, std::int64_t accepted_ns) {
  if (closing_ || closed_)
    return;
  auto mark = queue_.push({}, std::move(body), accepted_ns);
  if (mark == outbound_queue::watermark::crossed_high && events_)
    events_->on_watermark(true, queue_.bytes());
  if (queue_.bytes() > 2 * queue_.high_water_mark()) {
    on_close({close_reason::slow_client, 1008, "slow client: outbound buffer full", {}});
    return;
  }
  if (!queue_.writing())
    do_write();
}

void ws_session::do_write() {
  views_.clear();
  queue_.begin_write(views_, 1, SIZE_MAX); // one WebSocket message per write
  write_started_ = std::chrono::steady_clock::now();
  arm_write_timer();
  ws_.text(true);
  ws_.async_write(asio::buffer(views_.front().data(), views_.front().size()),
                  [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                    self->on_write(ec, n);
                  });
}

void ws_session::on_write(beast::error_code ec, std::size_t bytes) {
  if (closed_)
    return;
  if (ec) {
    finish(closing_ ? closing_reason_ : close_reason::client);
    return;
  }
  metrics::written(metrics::transport::ws, 1, bytes); // one message per write
  auto mark = queue_.complete_write(metrics::now_ns());
  if (mark == outbound_queue::watermark::back_to_low && events_ && !closing_)
    events_->on_watermark(false, queue_.bytes());
  if (!queue_.empty()) // when closing, only what flush_queued kept
    do_write();
  else if (closing_)
    do_close();
}

void ws_session::on_close(close_request req) {
  if (closing_ || closed_)
    return;
  closing_ = true;
  closing_reason_ = req.reason;
  if (!req.flush_queued)
    queue_.drop_pending();
  if (req.ws_text.size() > 123) // RFC 6455 section 5.5: control payload <= 125 bytes
    req.ws_text.resize(123);
  close_frame_ = websocket::close_reason(static_cast<websocket::close_code>(req.ws_code), req.ws_text);
  // A peer that does not read never lets the close frame out: end it anyway.
  heartbeat_timer_.expires_after(req.grace);
  heartbeat_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec)
      self->finish(self->closing_reason_);
  });
  if (!queue_.writing())
    do_close();
}

void ws_session::do_close() {
  if (close_sent_ || closed_)
    return;
  close_sent_ = true;
  // Completes once the peer answered the close (or the stream failed).
  ws_.async_close(close_frame_, [self = shared_from_this()](beast::error_code) {
    self->finish(self->closing_reason_);
  });
}

void ws_session::arm_heartbeat() {
  auto wait = awaiting_pong_ ? opts_.ws_pong_timeout : opts_.ws_ping_interval;
  heartbeat_timer_.expires_after(wait);
  heartbeat_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec || self->closed_ || self->closing_)
      return;
    if (self->awaiting_pong_) {
      self->finish(close_reason::heartbeat_timeout);
      return;
    }
    self->awaiting_pong_ = true;
    self->ws_.async_ping({}, [](beast::error_code) {});
    self->arm_heartbeat();
  });
}

void ws_session::arm_write_timer() {
  if (write_timer_armed_)
    return;
  write_timer_armed_ = true;
  write_timer_.expires_at(write_started_ + opts_.write_timeout);
  write_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    self->write_timer_armed_ = false;
    if (ec || self->closed_ || !self->queue_.writing())
      return;
    if (std::chrono::steady_clock::now() - self->write_started_ < self->opts_.write_timeout) {
      self->arm_write_timer();
      return;
    }
    self->finish(close_reason::write_timeout);
  });
}

void ws_session::finish(close_reason reason) {
  if (closed_)
    return;
  closed_ = true;
  beast::error_code ignored;
  auto& sock = beast::get_lowest_layer(ws_).socket();
  sock.shutdown(tcp::socket::shutdown_both, ignored);
  sock.close(ignored);
  heartbeat_timer_.cancel();
  write_timer_.cancel();
  if (auto ev = std::move(events_))
    ev->on_closed(reason);
}

} // namespace herald::net::ws
