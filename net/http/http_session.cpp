#include "net/http/http_session.hpp"

#include "net/auth/gate.hpp"
#include "net/channel_name.hpp"
#include "net/http/publish_request.hpp"
#include "net/http/status.hpp"
#include "net/metrics.hpp"
#include "net/service.hpp"
#include "net/sse/cursor.hpp"
#include "net/sse/sse_session.hpp"
#include "net/ws/ws_session.hpp"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include <algorithm>

namespace herald::net::http {

namespace {
constexpr std::string_view json_type = "application/json";

// Authentication (docs/auth.md); a session without a policy checks nothing.
const auth::policy& policy_of(const session_options& o) {
  static const auth::policy none;
  return o.auth ? *o.auth : none;
}

std::string_view header(const bhttp::request<bhttp::string_body>& req, bhttp::field f) {
  auto it = req.find(f);
  return it == req.end() ? std::string_view{}
                         : std::string_view{it->value().data(), it->value().size()};
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}
} // namespace

http_session::http_session(tcp::socket socket, const session_options& opts, service& svc,
                           const static_pages& pages)
  : stream_(std::move(socket)), opts_(opts), service_(svc), pages_(pages) {
}

void http_session::run() {
  // Start on the connection's own strand (the caller runs on the acceptor's).
  asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->do_read(); });
}

void http_session::do_read() {
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(opts_.max_header_bytes));
  parser_->body_limit(opts_.max_publish_bytes);
  stream_.expires_after(opts_.request_timeout);
  bhttp::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                     self->on_read(ec, n);
                   });
}

void http_session::on_read(beast::error_code ec, std::size_t) {
  if (ec == bhttp::error::end_of_stream || ec == asio::error::eof
      || ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    return;
  }
  if (ec == beast::error::timeout)
    return; // tcp_stream closed the socket: a slow or idle client
  if (ec == bhttp::error::body_limit) {
    send_error(errc::payload_too_large,
               "body larger than " + std::to_string(opts_.max_publish_bytes) + " bytes", false, 11);
    return;
  }
  if (ec == bhttp::error::header_limit) {
    metrics::http_error(errc::invalid_request);
    send(431, std::string{json_type},
         error_body(errc::invalid_request, "request head larger than "
                                               + std::to_string(opts_.max_header_bytes) + " bytes"),
         false, 11);
    return;
  }
  if (ec) {
    send_error(errc::invalid_request, "malformed HTTP request: " + ec.message(), false, 11);
    return;
  }
  handle(parser_->release());
}

void http_session::handle(request req) {
  cors_.clear();
  auto target = boost::urls::parse_origin_form(
    boost::core::string_view{req.target().data(), req.target().size()});
  if (!target) {
    send_error(errc::invalid_request, "malformed request target", false, req.version());
    return;
  }
  auto path = std::string{target->path()};
  auto method = req.method();
  auto keep = req.keep_alive();
  auto version = req.version();
  if (service_.draining()) {
    // Clients come back to another instance (or to this one, restarted).
    send_error(errc::shutting_down, {}, false, version);
    return;
  }
  auto only = [&](bhttp::verb allowed) {
    if (method == allowed)
      return true;
    allow_ = allowed == bhttp::verb::post ? "POST" : "GET";
    send_error(errc::method_not_allowed, {}, keep, version);
    return false;
  };
  if (path == "/v1/publish") {
    if (only(bhttp::verb::post))
      handle_publish(req);
  } else if (path == "/v1/sse") {
    // CORS for the listed browser origins (docs/auth.md), errors included.
    cors_ = auth::cors_origin(policy_of(opts_), header(req, bhttp::field::origin));
    if (method == bhttp::verb::options) {
      send(204, std::string{json_type}, {}, keep, version);
      return;
    }
    if (only(bhttp::verb::get))
      handle_sse(req);
  } else if (path == "/v1/ws") {
    if (!only(bhttp::verb::get))
      return;
    if (!websocket::is_upgrade(req)) {
      send_error(errc::invalid_request, "this route needs a WebSocket upgrade", keep, version);
      return;
    }
    auto gate = auth::check_ws_upgrade(policy_of(opts_), header(req, bhttp::field::origin),
                                       header(req, bhttp::field::host),
                                       header(req, bhttp::field::authorization), unix_now());
    if (gate.code != errc::none) {
      send_error(gate.code, gate.message, false, version);
      return;
    }
    stream_.expires_never();
    auto session = std::make_shared<ws::ws_session>(std::move(stream_), opts_, service_);
    session->set_principal(std::move(gate.who));
    session->run(std::move(req));
  } else if (path == "/healthz") {
    if (only(bhttp::verb::get))
      send(200, std::string{json_type}, service_.health(), keep, version);
  } else if (path == "/readyz") {
    if (!only(bhttp::verb::get))
      return;
    std::string reason;
    if (service_.ready(reason))
      send(200, std::string{json_type}, R"({"status":"ready"})", keep, version);
    else
      send_error(errc::unavailable, reason, keep, version);
  } else if (path == "/demo") {
    if (only(bhttp::verb::get))
      send(200, "text/html; charset=utf-8", pages_.demo_html, keep, version);
  } else if (path == "/metrics") {
    if (only(bhttp::verb::get))
      send(200, std::string{metrics_content_type}, metrics::render(), keep, version);
  } else if (path == "/v1/status") {
    if (only(bhttp::verb::get))
      send(200, std::string{json_type}, status_json(), keep, version);
  } else if (path == "/v1/info") {
    if (only(bhttp::verb::get))
      send(200, std::string{json_type}, std::string{info_json}, keep, version);
  } else if (path == "/") {
    if (!only(bhttp::verb::get))
      return;
    if (wants_json(req[bhttp::field::accept]))
      send(200, std::string{json_type}, std::string{info_json}, keep, version);
    else
      send(200, "text/html; charset=utf-8", pages_.status_html, keep, version);
  } else {
    send_error(errc::not_found, {}, keep, version);
  }
}

void http_session::handle_publish(request& req) {
  auto gate = auth::check_publish(policy_of(opts_), header(req, bhttp::field::authorization));
  if (gate.code != errc::none) {
    send_error(gate.code, gate.message, false, req.version());
    return;
  }
  publish_request pub;
  std::string detail;
  if (auto ec = parse_publish_request(req.body(), opts_.max_channels_per_publish, pub, detail)) {
    send_error(static_cast<errc>(ec.value()), detail, req.keep_alive(), req.version());
    return;
  }
  auto keep = req.keep_alive();
  auto version = req.version();
  service_.publish(std::move(pub), [self = shared_from_this(), keep, version](unsigned status,
                                                                               std::string body) {
    asio::post(self->stream_.get_executor(), [self, keep, version, status, b = std::move(body)]() mutable {
      self->send(status, std::string{json_type}, std::move(b), keep, version);
    });
  });
}

void http_session::handle_sse(request& req) {
  auto target = boost::urls::parse_origin_form(
    boost::core::string_view{req.target().data(), req.target().size()});
  sse_subscription sub;
  std::string cursor_text;
  std::string query_token;
  bool has_query_cursor = false;
  for (auto param : target->params()) {
    if (param.key == "channel") {
      if (validate_channel(param.value)) {
        send_error(errc::invalid_channel, {}, false, req.version());
        return;
      }
      if (std::find(sub.channels.begin(), sub.channels.end(), param.value) == sub.channels.end())
        sub.channels.push_back(param.value);
      if (sub.channels.size() > opts_.max_channels_per_client) {
        send_error(errc::too_many_channels,
                   "at most " + std::to_string(opts_.max_channels_per_client)
                     + " channels per connection",
                   false, req.version());
        return;
      }
    } else if (param.key == "token") {
      query_token = param.value;
    } else if (param.key == "last_event_id") {
      cursor_text = param.value;
      has_query_cursor = true;
    }
  }
  if (sub.channels.empty()) {
    send_error(errc::invalid_request, "give at least one ?channel=", false, req.version());
    return;
  }
  // The header is what EventSource sends when it reconnects, so it is newer
  // than a last_event_id left in the URL.
  if (auto it = req.find("Last-Event-ID"); it != req.end()) {
    cursor_text = std::string{it->value()};
    has_query_cursor = true;
  }
  auto gate = auth::check_sse(policy_of(opts_), header(req, bhttp::field::authorization),
                              query_token, sub.channels, unix_now());
  if (gate.code != errc::none) {
    send_error(gate.code, gate.message, false, req.version());
    return;
  }
  sub.who = std::move(gate.who);
  if (has_query_cursor) {
    sub.has_cursor = true;
    if (!sse::parse_cursor(cursor_text, opts_.max_channels_per_client, sub.cursor)) {
      send_error(errc::invalid_cursor, {}, false, req.version());
      return;
    }
  }
  stream_.expires_never();
  auto session = std::make_shared<sse::sse_session>(stream_.release_socket(), opts_);
  if (!cors_.empty())
    session->add_header("Access-Control-Allow-Origin: " + cors_ + "\r\nVary: Origin\r\n");
  service_.open_sse(std::move(session), std::move(sub));
}

void http_session::send_error(errc code, std::string_view message, bool keep_alive,
                              unsigned version) {
  metrics::http_error(code);
  beast::error_code ec;
  auto ep = stream_.socket().remote_endpoint(ec);
  service_.request_refused(code, message,
                           ec ? std::string{"?"}
                              : ep.address().to_string() + ":" + std::to_string(ep.port()));
  send(info(code).http_status, std::string{json_type}, error_body(code, message), keep_alive,
       version);
}

void http_session::send(unsigned status, std::string content_type, std::string body,
                        bool keep_alive, unsigned version) {
  response_ = std::make_shared<bhttp::response<bhttp::string_body>>(
    static_cast<bhttp::status>(status), version);
  response_->set(bhttp::field::server, "herald");
  response_->set(bhttp::field::content_type, content_type);
  response_->set(bhttp::field::cache_control, "no-store");
  if (status == 405)
    response_->set(bhttp::field::allow, allow_);
  if (status == 401)
    response_->set(bhttp::field::www_authenticate, "Bearer");
  if (!cors_.empty()) {
    response_->set(bhttp::field::access_control_allow_origin, cors_);
    response_->set(bhttp::field::vary, "Origin");
    if (status == 204) { // preflight of GET /v1/sse (Fetch standard, CORS protocol)
      response_->set(bhttp::field::access_control_allow_methods, "GET");
      response_->set(bhttp::field::access_control_allow_headers, "Authorization, Last-Event-ID");
      response_->set(bhttp::field::access_control_max_age, "600");
    }
  }
  response_->keep_alive(keep_alive);
  response_->body() = std::move(body);
  response_->prepare_payload();
  stream_.expires_after(opts_.request_timeout);
  bhttp::async_write(stream_, *response_,
                    [self = shared_from_this(), close = !keep_alive](beast::error_code ec,
                                                                     std::size_t) {
                      self->on_sent(close, ec);
                    });
}

void http_session::on_sent(bool close, beast::error_code ec) {
  response_.reset();
  if (ec)
    return;
  if (close) {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    return;
  }
  do_read();
}

} // namespace herald::net::http
