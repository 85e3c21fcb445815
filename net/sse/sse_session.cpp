#include "net/sse/sse_session.hpp"

#include "net/wire/sse/encoder.hpp"

namespace herald::net::sse {

sse_session::sse_session(tcp::socket socket, const session_options& opts)
  : sse_codec_holder(opts.shutdown_retry_ms),
    stream_session(std::move(socket), opts, metrics::transport::sse, sse_codec),
    heartbeat_timer_(socket_.get_executor()) {}

void sse_session::start(std::shared_ptr<session_events> events) {
  events_ = std::move(events);
  auto head = encode_response_head(opts_.sse_retry_ms);
  if (!extra_head_.empty())
    head.insert(head.find("\r\n\r\n") + 2, extra_head_);
  std::string{}.swap(extra_head_);
  push({}, make_frame(std::move(head))); // sets write_started_
  arm_heartbeat();
  do_read();
}

void sse_session::push_message(std::string prefix, frame message, std::int64_t accepted_ns) {
  push(std::move(prefix), std::move(message), accepted_ns);
}

void sse_session::push_final(close_request& req) {
  // The last event that says why, where the code has one (1013 slow
  // client, 4002 token expired, 1012 shutdown); otherwise the stream ends.
  if (auto last = sse_codec.close(req.code, req.text).second; !last.empty())
    push({}, make_frame(std::move(last)));
}

void sse_session::on_finished() {
  heartbeat_timer_.cancel();
}

void sse_session::do_read() {
  // The client sends nothing after its request; a read completes when it
  // closes the connection (or sends garbage, which we discard).
  socket_.async_read_some(
    asio::buffer(read_buf_), [self = std::static_pointer_cast<sse_session>(shared_from_this())](
                               beast::error_code ec, std::size_t) {
      if (self->closed_)
        return;
      if (ec) {
        self->finish(self->closing_ ? self->closing_reason_ : close_reason::client);
        return;
      }
      self->do_read();
    });
}

void sse_session::arm_heartbeat() {
  // Due --sse-heartbeat after the last write began; writes only move the
  // due time, the timer catches up when it fires.
  heartbeat_timer_.expires_at(write_started_ + opts_.sse_heartbeat);
  heartbeat_timer_.async_wait(
    [self = std::static_pointer_cast<sse_session>(shared_from_this())](beast::error_code ec) {
      if (ec || self->closed_ || self->closing_)
        return;
      auto due = self->write_started_ + self->opts_.sse_heartbeat;
      if (due <= std::chrono::steady_clock::now() && !self->queue_.writing()) {
        static const frame beat = make_frame(std::string{heartbeat});
        self->push({}, beat); // starts a write: moves write_started_
      }
      self->arm_heartbeat();
    });
}

} // namespace herald::net::sse
