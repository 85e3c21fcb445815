#include "net/sse/sse_session.hpp"

#include "net/wire/sse/encoder.hpp"

namespace herald::net::sse {

sse_session::sse_session(tcp::socket socket, session_options_ptr opts, bool envelope)
  : sse_codec_holder(opts->shutdown_retry_ms, envelope),
    stream_session(std::move(socket), std::move(opts), metrics::transport::sse, sse_codec) {}

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

void sse_session::do_read() {
  // The client sends nothing after its request; the socket turns readable
  // when it closes the connection (or sends garbage, which is discarded).
  // No buffer is held while waiting: what arrives is read into the stack.
  socket_.async_wait(tcp::socket::wait_read,
                     [self = std::static_pointer_cast<sse_session>(shared_from_this())](
                       beast::error_code ec) { self->on_readable(ec); });
}

void sse_session::on_readable(beast::error_code ec) {
  if (closed_)
    return;
  if (!ec) {
    std::array<char, 512> discard; // one read per wake: a chatty client cannot hold the shard
    socket_.read_some(asio::buffer(discard), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again)
      ec = {};
  }
  if (ec) {
    finish(closing_ ? closing_reason_ : close_reason::client);
    return;
  }
  do_read();
}

void sse_session::arm_heartbeat() {
  // Writes only move write_started_; the deadline catches up when it passes.
  set_deadline(deadline::heartbeat, write_started_ + opts_.sse_heartbeat);
}

void sse_session::on_deadline(deadline which) {
  if (which != deadline::heartbeat)
    return;
  auto due = write_started_ + opts_.sse_heartbeat;
  if (due <= clock::now() && !write_busy()) {
    static const frame beat = make_frame(std::string{heartbeat});
    push({}, beat); // starts a write: moves write_started_
  }
  arm_heartbeat();
}

} // namespace herald::net::sse
