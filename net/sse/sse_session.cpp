#include "net/sse/sse_session.hpp"

#include "net/metrics.hpp"
#include "net/sse/encoder.hpp"

namespace herald::net::sse {

namespace {
// One gathered write takes at most this much, so a long queue still yields
// the strand to other work between writes.
constexpr std::size_t max_items_per_write = 256;
constexpr std::size_t max_bytes_per_write = 256 * 1024;

std::string endpoint_text(const tcp::socket& s) {
  beast::error_code ec;
  auto ep = s.remote_endpoint(ec);
  return ec ? std::string{"?"} : ep.address().to_string() + ":" + std::to_string(ep.port());
}
} // namespace

sse_session::sse_session(tcp::socket socket, const session_options& opts)
  : socket_(std::move(socket)),
    opts_(opts),
    queue_(opts.client_max_buffer_bytes),
    heartbeat_timer_(socket_.get_executor()),
    write_timer_(socket_.get_executor()),
    peer_(endpoint_text(socket_)) {
  auto& batch = asio::use_service<delivery_service>(
    asio::query(socket_.get_executor(), asio::execution::context));
  if (batch.enabled())
    batch_ = &batch;
}

void sse_session::start(std::shared_ptr<session_events> events) {
  events_ = std::move(events);
  auto head = encode_response_head(opts_.sse_retry_ms);
  if (!extra_head_.empty())
    head.insert(head.find("\r\n\r\n") + 2, extra_head_);
  on_deliver({}, make_frame(std::move(head))); // sets write_started_
  arm_heartbeat();
  do_read();
}

void sse_session::deliver(std::string prefix, frame body, std::int64_t accepted_ns) {
  if (batch_ != nullptr) {
    batch_->post(shared_from_this(), std::move(prefix), std::move(body), accepted_ns);
    return;
  }
  asio::post(socket_.get_executor(), [self = shared_from_this(), p = std::move(prefix),
                                      b = std::move(body), accepted_ns]() mutable {
    self->on_deliver(std::move(p), std::move(b), accepted_ns);
  });
}

void sse_session::close(close_request req) {
  asio::post(socket_.get_executor(), [self = shared_from_this(), r = std::move(req)]() mutable {
    self->on_close(std::move(r));
  });
}

void sse_session::on_deliver(std::string prefix, frame body, std::int64_t accepted_ns) {
  if (closing_ || closed_)
    return;
  auto mark = queue_.push(std::move(prefix), std::move(body), accepted_ns);
  if (mark == outbound_queue::watermark::crossed_high && events_)
    events_->on_watermark(true, queue_.bytes());
  if (queue_.bytes() > 2 * queue_.high_water_mark()) {
    // The actor's policy should have closed us already; do not grow further.
    on_close({close_reason::slow_client, 1008, "slow client",
              make_frame(encode_gap("", "slow_client"))});
    return;
  }
  if (!queue_.writing())
    do_write();
}

void sse_session::on_close(close_request req) {
  if (closing_ || closed_)
    return;
  closing_ = true;
  closing_reason_ = req.reason;
  if (!req.flush_queued)
    queue_.drop_pending();
  if (req.final_frame)
    queue_.push({}, std::move(req.final_frame));
  if (queue_.empty()) {
    finish(req.reason);
    return;
  }
  // Give the final bytes a short chance; a client that does not read gets
  // closed when the grace ends.
  heartbeat_timer_.expires_after(req.grace);
  heartbeat_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec)
      self->finish(self->closing_reason_);
  });
  if (!queue_.writing())
    do_write();
}

void sse_session::do_write() {
  views_.clear();
  write_items_ = queue_.begin_write(views_, max_items_per_write, max_bytes_per_write);
  buffers_.clear();
  for (auto v : views_)
    buffers_.emplace_back(v.data(), v.size());
  write_started_ = std::chrono::steady_clock::now();
  arm_write_timer();
  asio::async_write(socket_, buffers_,
                    [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                      self->on_write(ec, n);
                    });
}

void sse_session::on_write(beast::error_code ec, std::size_t bytes) {
  if (closed_)
    return;
  if (ec) {
    finish(closing_ ? closing_reason_ : close_reason::client);
    return;
  }
  metrics::written(metrics::transport::sse, write_items_, bytes);
  auto mark = queue_.complete_write(metrics::now_ns());
  if (mark == outbound_queue::watermark::back_to_low && events_ && !closing_)
    events_->on_watermark(false, queue_.bytes());
  if (!queue_.empty()) {
    do_write();
    return;
  }
  if (closing_)
    finish(closing_reason_);
}

void sse_session::do_read() {
  // The client sends nothing after its request; a read completes when it
  // closes the connection (or sends garbage, which we discard).
  socket_.async_read_some(asio::buffer(read_buf_),
                          [self = shared_from_this()](beast::error_code ec, std::size_t) {
                            if (self->closed_)
                              return;
                            if (ec) {
                              self->finish(self->closing_ ? self->closing_reason_
                                                          : close_reason::client);
                              return;
                            }
                            self->do_read();
                          });
}

void sse_session::arm_heartbeat() {
  // Due --sse-heartbeat after the last write began; writes only move the
  // due time, the timer catches up when it fires.
  heartbeat_timer_.expires_at(write_started_ + opts_.sse_heartbeat);
  heartbeat_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec || self->closed_ || self->closing_)
      return;
    auto due = self->write_started_ + self->opts_.sse_heartbeat;
    if (due <= std::chrono::steady_clock::now() && !self->queue_.writing()) {
      static const frame beat = make_frame(std::string{heartbeat});
      self->on_deliver({}, beat); // starts a write: moves write_started_
    }
    self->arm_heartbeat();
  });
}

void sse_session::arm_write_timer() {
  if (write_timer_armed_)
    return;
  write_timer_armed_ = true;
  write_timer_.expires_at(write_started_ + opts_.write_timeout);
  write_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    self->write_timer_armed_ = false;
    if (ec || self->closed_ || !self->queue_.writing())
      return;
    // The write in flight may have started after the timer was armed.
    if (std::chrono::steady_clock::now() - self->write_started_ < self->opts_.write_timeout) {
      self->arm_write_timer();
      return;
    }
    self->finish(close_reason::write_timeout);
  });
}

void sse_session::finish(close_reason reason) {
  if (closed_)
    return;
  closed_ = true;
  beast::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  heartbeat_timer_.cancel();
  write_timer_.cancel();
  if (auto ev = std::move(events_))
    ev->on_closed(reason);
}

} // namespace herald::net::sse
