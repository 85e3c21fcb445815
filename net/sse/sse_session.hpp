// sse_session: one Server-Sent Events client (WHATWG HTML, "Server-sent
// events"). Created by http_session when GET /v1/sse validated; owns the TCP
// socket from then on. On top of net/core/stream_session (queue, writes, close,
// delivery state) it writes the response head, a comment heartbeat after
// --sse-heartbeat of silence, and watches the socket for the client's close.
// It ends when the client goes away, a write fails or times out, or close()
// is called; it reports that once through session_events::on_closed.
#pragma once

#include "net/core/stream_session.hpp"
#include "net/wire/sse/session_codec.hpp"

#include <array>
#include <memory>

namespace herald::net::sse {

/// Holds an SSE session's codec (its shutdown `retry:` hint comes from the
/// options, its channel envelope from the request); a base listed before
/// stream_session, so the codec exists before the session's subscription
/// table refers to it (base-from-member).
struct sse_codec_holder {
  sse_codec_holder(unsigned shutdown_retry_ms, bool envelope)
    : sse_codec(shutdown_retry_ms, envelope) {}
  session_codec sse_codec;
};

class sse_session final : private sse_codec_holder, public stream_session {
public:
  /// @param socket connected socket on an I/O shard's io_context.
  /// @param envelope write each publication with its channel envelope (the
  ///        request's `?envelope=1`; net/wire/sse/session_codec.hpp).
  sse_session(tcp::socket socket, session_options_ptr opts, bool envelope);

  /// Adds header lines (each ending in CRLF) to the response head, e.g.
  /// CORS. Call before start(), on the shard's thread.
  void add_header(std::string lines) { extra_head_ += std::move(lines); }

  /// Starts the stream: response head, heartbeat, close detection. Call once,
  /// on the shard's thread, after the connection actor exists.
  void start(std::shared_ptr<session_events> events);

private:
  // stream_session
  void push_message(std::string prefix, frame message, std::int64_t accepted_ns) override;
  void push_final(close_request& req) override;
  void on_deadline(deadline which) override;

  void do_read();
  void on_readable(beast::error_code ec);
  /// Sets the heartbeat deadline: --sse-heartbeat after the last write began.
  void arm_heartbeat();

  std::string extra_head_; ///< add_header() lines
};

} // namespace herald::net::sse
