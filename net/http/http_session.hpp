// http_session: one HTTP/1.1 connection before it becomes a stream. Created
// for every accepted socket by the listener's callback (app/server). Reads
// requests (head at most
// --max-header-bytes, body at most --max-publish-bytes, whole request within
// --request-timeout), answers the plain routes itself (keep-alive), and on
// GET /v1/sse or a WebSocket upgrade on /v1/ws hands its socket to an
// sse_session or ws_session and ends. Runs on its socket's I/O shard thread.
// Routes and error bodies: docs/protocol.md.
#pragma once

#include "net/asio.hpp"
#include "net/wire/errors.hpp"
#include "net/http/request_check.hpp"
#include "net/core/session_options.hpp"

#include <memory>
#include <optional>
#include <string>

namespace herald::net {
class service;
}

namespace herald::net::http {

/// Static pages served by GET (path -> HTML), provided by app/.
struct static_pages {
  std::string demo_html;   ///< GET /demo
  std::string status_html; ///< GET / (browsers; JSON clients get the index)
};

class http_session : public std::enable_shared_from_this<http_session> {
public:
  /// @param slot the connection's place in the per-address count
  ///        (net/core/connection_limit.hpp); held until the connection ends, also
  ///        by the SSE or WebSocket session it becomes. May be null.
  /// @param opts shared with every session of the listener (never null).
  http_session(tcp::socket socket, session_options_ptr opts, service& svc,
               const static_pages& pages, std::shared_ptr<void> slot = {});

  /// Starts reading the first request. Call once, from any thread: it moves to the socket's shard.
  void run();

private:
  using request = bhttp::request<bhttp::string_body>;

  void do_read();
  void on_header(beast::error_code ec, std::size_t bytes);
  void on_read(beast::error_code ec, std::size_t bytes);
  void handle(request req);
  void handle_publish(request& req);
  /// POST /api/publish, /api/broadcast, /api/history, /api/info (Centrifugo
  /// server API, docs/centrifugo.md): X-API-Key or `Authorization: apikey`.
  void handle_api(request& req, route where);
  /// GET /v1/channels/{name}: the channel's position (API key as publish).
  void handle_channel(request& req, const std::string& channel);
  /// A Centrifugo API error: `status` with `{"error":{"code":N,"message":..}}`.
  void send_api_error(errc code, std::string_view message, bool keep_alive, unsigned version);
  /// Sends `status` and `body` from any thread (posted to the session's shard).
  void reply_later(unsigned status, std::string body, bool keep_alive, unsigned version);
  void handle_sse(request& req);
  void send_error(errc code, std::string_view message, bool keep_alive, unsigned version);
  /// Every refusal, whichever body shape (Herald's or Centrifugo's API):
  /// counts it in metrics, logs it with the peer address, sends `body` (JSON)
  /// with the status of `code` in the net/wire/errors table.
  void send_refusal(errc code, std::string_view message, std::string body, bool keep_alive,
                    unsigned version);
  void send(unsigned status, std::string content_type, std::string body, bool keep_alive,
            unsigned version);
  /// The client's "address:port", or "?" when the socket no longer knows it.
  std::string peer();
  void on_sent(bool close, beast::error_code ec);

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::shared_ptr<bhttp::response<bhttp::string_body>> response_;
  session_options_ptr opts_holder_;
  const session_options& opts_; ///< *opts_holder_
  service& service_;
  std::string allow_; ///< Allow header of the next 405
  std::string cors_;  ///< Access-Control-Allow-Origin of /v1/sse answers (docs/auth.md)
  const static_pages& pages_;
  std::shared_ptr<void> slot_;      ///< per-address connection count
  asio::steady_timer header_timer_; ///< --header-timeout (slow headers)
  bool header_timed_out_ = false;
  bool api_request_ = false; ///< the current request's target is the server API (/api...)
};

} // namespace herald::net::http
