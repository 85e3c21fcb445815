// sse_session: one Server-Sent Events client (WHATWG HTML, "Server-sent
// events"). Created by http_session when GET /v1/sse validated; owns the TCP
// socket from then on. It writes the response head, then every frame the
// connection actor delivers, coalescing queued frames into one gathered
// write; it sends a comment heartbeat after --sse-heartbeat of silence,
// watches the socket for the client's close, and closes a connection whose
// writes make no progress for --write-timeout. Everything runs on the
// socket's strand; deliver() and close() may be called from any thread.
// It ends when the client goes away, a write fails or times out, or close()
// is called; it reports that once through session_events::on_closed.
#pragma once

#include "net/asio.hpp"
#include "net/delivery_service.hpp"
#include "net/frame_sink.hpp"
#include "net/outbound_queue.hpp"
#include "net/session_events.hpp"
#include "net/session_options.hpp"

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <vector>

namespace herald::net::sse {

class sse_session : public frame_sink,
                    public delivery_target, public std::enable_shared_from_this<sse_session> {
public:
  /// @param socket connected socket whose executor is a strand.
  sse_session(tcp::socket socket, const session_options& opts);

  /// Adds header lines (each ending in CRLF) to the response head, e.g.
  /// CORS. Call before start(), on the strand.
  void add_header(std::string lines) { extra_head_ += std::move(lines); }

  /// Starts the stream: response head, heartbeat, close detection. Call once,
  /// on the strand, after the connection actor exists.
  void start(std::shared_ptr<session_events> events);

  /// Keeps `token` (the connection's per-address slot, net/connection_limit.hpp)
  /// until this session is destroyed.
  void hold(std::shared_ptr<void> token) { slot_ = std::move(token); }

  // -- frame_sink (any thread) --------------------------------------------

  void deliver(std::string prefix, frame body, std::int64_t accepted_ns = 0) override;
  void close(close_request req) override;

  /// Remote endpoint as text, for logs.
  const std::string& peer() const noexcept { return peer_; }

  /// delivery_target: a batched delivery, on the I/O thread.
  void on_batched_delivery(std::string prefix, frame body, std::int64_t accepted_ns) override {
    on_deliver(std::move(prefix), std::move(body), accepted_ns);
  }

private:
  void on_deliver(std::string prefix, frame body, std::int64_t accepted_ns = 0);
  void on_close(close_request req);
  void do_write();
  void on_write(beast::error_code ec, std::size_t bytes);
  void do_read();
  void arm_heartbeat();
  void arm_write_timer();
  void finish(close_reason reason);

  tcp::socket socket_;
  delivery_service* batch_ = nullptr; ///< set when the io_context batches deliveries
  session_options opts_;
  outbound_queue queue_;
  std::vector<std::string_view> views_;
  std::vector<asio::const_buffer> buffers_;
  std::shared_ptr<session_events> events_;
  asio::steady_timer heartbeat_timer_;
  asio::steady_timer write_timer_;
  std::chrono::steady_clock::time_point write_started_; ///< start of the last write
  std::array<char, 512> read_buf_{};
  std::string peer_;
  std::string extra_head_; ///< add_header() lines
  bool write_timer_armed_ = false;
  bool closing_ = false;
  bool closed_ = false;
  std::size_t write_items_ = 0; ///< items in the write in flight (metrics)
  close_reason closing_reason_ = close_reason::client;
  std::shared_ptr<void> slot_; ///< per-address connection count
};

} // namespace herald::net::sse
