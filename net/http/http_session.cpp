#include "net/http/http_session.hpp"

#include <boost/url/parse.hpp>

#include "net/auth/gate.hpp"
#include "net/wire/channel_name.hpp"
#include "net/wire/http/publish_request.hpp"
#include "net/wire/http/server_api.hpp"
#include "net/obs/status.hpp"
#include "net/obs/metrics.hpp"
#include "net/http/request_check.hpp"
#include "net/service.hpp"
#include "net/wire/sse/cursor.hpp"
#include "net/sse/sse_session.hpp"
#include "net/wire/tags_filter.hpp"
#include "net/wire/ws/upgrade.hpp"
#include "net/ws/ws_session.hpp"

namespace herald::net::http {

using obs::info_json;
using obs::metrics_content_type;
using obs::readyz_body;
using obs::status_json;
using obs::wants_json;

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

http_session::http_session(tcp::socket socket, session_options_ptr opts, service& svc,
                           const static_pages& pages, std::shared_ptr<void> slot)
  : stream_(std::move(socket)),
    opts_holder_(std::move(opts)),
    opts_(*opts_holder_),
    service_(svc),
    pages_(pages),
    slot_(std::move(slot)),
    header_timer_(stream_.get_executor()) {}

void http_session::run() {
  // Start on the connection's shard (the caller runs on the acceptor's strand).
  asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->do_read(); });
}

void http_session::do_read() {
  parser_.emplace();
  api_request_ = false;
  parser_->header_limit(static_cast<std::uint32_t>(opts_.max_header_bytes));
  parser_->body_limit(opts_.max_publish_bytes);
  stream_.expires_after(opts_.request_timeout);
  // Slow headers: the head has its own, shorter deadline. On expiry the read
  // is cancelled so that on_header can still answer 408.
  header_timed_out_ = false;
  header_timer_.expires_after(opts_.header_timeout);
  header_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec)
      return;
    self->header_timed_out_ = true;
    beast::error_code ignored;
    self->stream_.socket().cancel(ignored);
  });
  bhttp::async_read_header(
    stream_, buffer_, *parser_,
    [self = shared_from_this()](beast::error_code ec, std::size_t n) { self->on_header(ec, n); });
}

void http_session::on_header(beast::error_code ec, std::size_t n) {
  header_timer_.cancel();
  if (header_timed_out_ && (ec || !parser_->is_header_done())) {
    if (buffer_.size() == 0) {
      // Nothing of a request came (an idle kept-alive or silent connection).
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
      stream_.socket().close(ignored);
      return;
    }
    send_error(errc::header_timeout,
               "request head not complete within " + std::to_string(opts_.header_timeout.count()) +
                 " ms",
               false, 11);
    return;
  }
  if (ec) {
    on_read(ec, n);
    return;
  }
  std::string detail;
  if (auto e = check_head(parser_->get(), opts_.max_header_count, detail); e != errc::none) {
    send_error(e, detail, false, parser_->get().version());
    return;
  }
  if (parser_->is_done()) {
    on_read({}, n);
    return;
  }
  bhttp::async_read(
    stream_, buffer_, *parser_,
    [self = shared_from_this()](beast::error_code ec, std::size_t n) { self->on_read(ec, n); });
}

void http_session::on_read(beast::error_code ec, std::size_t) {
  if (ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
      ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
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
    send_error(errc::headers_too_large,
               "request head larger than " + std::to_string(opts_.max_header_bytes) + " bytes",
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
  api_request_ = is_api_target(req.target());
  route where = route::unknown;
  std::string detail;
  std::string channel;
  if (classify(req.target(), where, detail, &channel) != errc::none) {
    send_error(errc::invalid_request, detail, false, req.version());
    return;
  }
  auto method = req.method();
  auto keep = req.keep_alive();
  auto version = req.version();
  if (service_.draining()) {
    // Clients come back to another instance (or to this one, restarted).
    send_error(errc::shutting_down, {}, false, version);
    return;
  }
  // A singular header or query parameter given twice: refused, never
  // resolved one way or the other (docs/protocol.md "Repeated parameters").
  if (check_singular(req, req.target(), where, detail) != errc::none) {
    send_error(errc::invalid_request, detail, false, version);
    return;
  }
  auto only = [&](bhttp::verb allowed) {
    if (method == allowed)
      return true;
    allow_ = allowed == bhttp::verb::post ? "POST" : "GET";
    send_error(errc::method_not_allowed, {}, keep, version);
    return false;
  };
  if (where == route::publish) {
    if (only(bhttp::verb::post))
      handle_publish(req);
  } else if (where == route::api_publish || where == route::api_broadcast ||
             where == route::api_history || where == route::api_info) {
    if (only(bhttp::verb::post))
      handle_api(req, where);
  } else if (where == route::channel) {
    if (only(bhttp::verb::get))
      handle_channel(req, channel);
  } else if (where == route::sse) {
    // CORS for the listed browser origins (docs/auth.md), errors included.
    const auto origin = header(req, bhttp::field::origin);
    cors_ = auth::cors_origin(policy_of(opts_), origin);
    // Another site's page (not listed, not this server) gets an answer
    // without CORS that its browser refuses, which the server would not see:
    // say so (the WebSocket upgrade's rule, auth::origin_allowed).
    if (cors_.empty() &&
        !auth::origin_allowed(policy_of(opts_), origin, header(req, bhttp::field::host))) {
      metrics::sse_cors_denied();
      service_.sse_origin_denied(origin, peer());
    }
    if (method == bhttp::verb::options) {
      send(204, std::string{json_type}, {}, keep, version);
      return;
    }
    if (only(bhttp::verb::get))
      handle_sse(req);
  } else if (where == route::ws || where == route::centrifugo_ws) {
    if (!only(bhttp::verb::get))
      return;
    if (!websocket::is_upgrade(req)) {
      send_error(errc::invalid_request, "this route needs a WebSocket upgrade", keep, version);
      return;
    }
    // What Beast would refuse in plain text, refused here in JSON.
    if (auto e = ws::check_upgrade(header(req, bhttp::field::host),
                                   header(req, bhttp::field::sec_websocket_version),
                                   header(req, bhttp::field::sec_websocket_key), detail);
        e != errc::none) {
      send_error(e, detail, false, version);
      return;
    }
    auto gate = auth::check_ws_upgrade(policy_of(opts_), header(req, bhttp::field::origin),
                                       header(req, bhttp::field::host),
                                       header(req, bhttp::field::authorization), unix_now());
    if (gate.code != errc::none) {
      send_error(gate.code, gate.message, false, version);
      return;
    }
    ws::accept_upgrade(std::move(stream_), std::move(req), opts_holder_, service_, std::move(gate.who),
                       std::move(slot_),
                       where == route::ws ? ws::dialect::herald : ws::dialect::centrifugo);
  } else if (where == route::healthz) {
    if (only(bhttp::verb::get))
      send(200, std::string{json_type}, service_.health(), keep, version);
  } else if (where == route::readyz) {
    if (!only(bhttp::verb::get))
      return;
    // In Redis Cluster mode both answers list the nodes, as /healthz does.
    std::string reason;
    auto nodes = metrics::redis_nodes();
    if (service_.ready(reason))
      send(200, std::string{json_type}, readyz_body(true, {}, nodes), keep, version);
    else
      send_refusal(errc::unavailable, reason, readyz_body(false, reason, nodes), keep, version);
  } else if (where == route::demo) {
    if (only(bhttp::verb::get))
      send(200, "text/html; charset=utf-8", pages_.demo_html, keep, version);
  } else if (where == route::metrics) {
    if (only(bhttp::verb::get))
      send(200, std::string{metrics_content_type}, metrics::render(), keep, version);
  } else if (where == route::status) {
    if (only(bhttp::verb::get))
      send(200, std::string{json_type}, status_json(), keep, version);
  } else if (where == route::info) {
    if (only(bhttp::verb::get))
      send(200, std::string{json_type}, std::string{info_json}, keep, version);
  } else if (where == route::root) {
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
  if (auto it = req.find("Idempotency-Key"); it != req.end()) {
    if (auto ec = apply_idempotency_header(it->value(), pub, detail)) {
      send_error(static_cast<errc>(ec.value()), detail, req.keep_alive(), req.version());
      return;
    }
  }
  auto keep = req.keep_alive();
  auto version = req.version();
  auto channels = pub.channels;
  service_.publish(std::move(pub), [self = shared_from_this(), keep, version,
                                    channels = std::move(channels)](publish_outcome outcome) {
    // POST /v1/publish's shape: the offsets by channel, or Herald's error body.
    if (!outcome.stored()) {
      self->reply_later(info(outcome.code).http_status, error_body(outcome.code, outcome.message),
                        keep, version);
      return;
    }
    std::vector<std::uint64_t> offsets(outcome.positions.size());
    for (std::size_t i = 0; i < offsets.size(); ++i)
      offsets[i] = outcome.positions[i].offset;
    self->reply_later(200, encode_publish_response(channels, offsets, outcome.suppressed), keep,
                      version);
  });
}

void http_session::reply_later(unsigned status, std::string body, bool keep_alive,
                               unsigned version) {
  asio::post(stream_.get_executor(), [self = shared_from_this(), status, b = std::move(body),
                                      keep_alive, version]() mutable {
    self->send(status, std::string{json_type}, std::move(b), keep_alive, version);
  });
}

void http_session::send_api_error(errc code, std::string_view message, bool keep_alive,
                                  unsigned version) {
  send_refusal(code, message, encode_api_error(code, message), keep_alive, version);
}

void http_session::handle_api(request& req, route where) {
  auto keep = req.keep_alive();
  auto version = req.version();
  std::string_view x_api_key;
  if (auto it = req.find("X-API-Key"); it != req.end())
    x_api_key = {it->value().data(), it->value().size()};
  if (auto gate = auth::check_server_api(policy_of(opts_), x_api_key,
                                         header(req, bhttp::field::authorization));
      gate.code != errc::none) {
    send_api_error(gate.code, gate.message, false, version);
    return;
  }
  std::string detail;
  if (where == route::api_info) {
    const auto now = service_.current();
    nlohmann::json node{{"name", "herald"},
                        {"num_clients", now.connections},
                        {"mode", now.cluster ? "cluster" : "in-process"}};
    send(200, std::string{json_type},
         nlohmann::json{{"result", {{"nodes", nlohmann::json::array({node})}}}}.dump(), keep,
         version);
    return;
  }
  if (where == route::api_history) {
    history_request hr;
    if (auto ec = parse_api_history(req.body(), hr, detail)) {
      send_api_error(static_cast<errc>(ec.value()), detail, keep, version);
      return;
    }
    service_.channel_history(
      hr.channel, hr.limit,
      [self = shared_from_this(), keep, version](bool ok, stream_position pos,
                                                 std::vector<publication_ptr> latest) {
        if (!ok) {
          self->reply_later(info(errc::unavailable).http_status,
                            encode_api_error(errc::unavailable,
                                             "Redis did not answer the channel's position; retry"),
                            keep, version);
          return;
        }
        self->reply_later(200, encode_api_history(pos, latest), keep, version);
      });
    return;
  }
  const bool broadcast = where == route::api_broadcast;
  publish_request pub;
  if (auto ec =
        parse_api_publish(req.body(), broadcast, opts_.max_channels_per_publish, pub, detail)) {
    send_api_error(static_cast<errc>(ec.value()), detail, keep, version);
    return;
  }
  service_.publish(std::move(pub), [self = shared_from_this(), keep, version,
                                    broadcast](publish_outcome outcome) {
    // Centrifugo's shape: the same code and message as /v1/publish's error.
    if (!outcome.stored()) {
      self->reply_later(info(outcome.code).http_status,
                        encode_api_error(outcome.code, outcome.message), keep, version);
      return;
    }
    self->reply_later(200,
                      broadcast ? encode_api_broadcast(outcome.positions, outcome.suppressed)
                                : encode_api_publish(outcome.positions.at(0),
                                                     outcome.suppressed.empty()
                                                       ? std::string{}
                                                       : outcome.suppressed.at(0)),
                      keep, version);
  });
}

void http_session::handle_channel(request& req, const std::string& channel) {
  auto keep = req.keep_alive();
  auto version = req.version();
  auto gate =
    auth::check_channel_position(policy_of(opts_), header(req, bhttp::field::authorization));
  if (gate.code != errc::none) {
    send_error(gate.code, gate.message, false, version);
    return;
  }
  if (auto fault = check_channel(channel); fault != channel_fault::none) {
    send_error(errc::invalid_channel, channel_error_detail(channel, fault), keep, version);
    return;
  }
  service_.channel_history(
    channel, 0,
    [self = shared_from_this(), keep, version, channel](bool ok, stream_position pos,
                                                        std::vector<publication_ptr>) {
      if (!ok) {
        self->reply_later(
          info(errc::unavailable).http_status,
          error_body(errc::unavailable, "Redis did not answer the channel's position; retry"), keep,
          version);
        return;
      }
      self->reply_later(200, encode_channel_position(channel, pos), keep, version);
    });
}

void http_session::handle_sse(request& req) {
  sse_subscription sub;
  std::string detail;
  std::string_view last_event_id;
  auto it = req.find("Last-Event-ID");
  if (it != req.end())
    last_event_id = it->value();
  if (auto e = parse_sse_request(req.target(), it != req.end() ? &last_event_id : nullptr,
                                 opts_.max_channels_per_client, sub, detail);
      e != errc::none) {
    send_error(e, detail, false, req.version());
    return;
  }
  // ?token= (an EventSource cannot set headers; docs/auth.md). Never logged.
  std::string query_token;
  if (auto t = boost::urls::parse_origin_form(
        boost::core::string_view{req.target().data(), req.target().size()}))
    for (auto param : t->params())
      if (param.key == "token")
        query_token = param.value;
  auto gate = auth::check_sse(policy_of(opts_), header(req, bhttp::field::authorization),
                              query_token, sub.channels, unix_now());
  if (gate.code != errc::none) {
    send_error(gate.code, gate.message, false, req.version());
    return;
  }
  sub.who = std::move(gate.who);
  stream_.expires_never();
  auto session =
    std::make_shared<sse::sse_session>(stream_.release_socket(), opts_holder_, sub.envelope);
  session->hold(std::move(slot_));
  if (!sub.events.empty()) {
    sub.filter = tags_filter::event_in(sub.events);
    session->filter_every_channel(sub.filter);
  }
  if (!cors_.empty())
    session->add_header("Access-Control-Allow-Origin: " + cors_ + "\r\nVary: Origin\r\n");
  service_.open_sse(std::move(session), std::move(sub));
}

void http_session::send_error(errc code, std::string_view message, bool keep_alive,
                              unsigned version) {
  // Every refusal of a server API request (a body too large, a bad method,
  // an unknown /api/ path...) in Centrifugo's shape, numeric code included:
  // its backends read error.code as a number.
  if (api_request_ || (parser_ && is_api_target(parser_->get().target()))) {
    send_api_error(code, message, keep_alive, version);
    return;
  }
  send_refusal(code, message, error_body(code, message), keep_alive, version);
}

void http_session::send_refusal(errc code, std::string_view message, std::string body,
                                bool keep_alive, unsigned version) {
  metrics::http_error(code);
  service_.request_refused(code, message, peer());
  send(info(code).http_status, std::string{json_type}, std::move(body), keep_alive, version);
}

std::string http_session::peer() {
  beast::error_code ec;
  auto ep = stream_.socket().remote_endpoint(ec);
  return ec ? std::string{"?"} : ep.address().to_string() + ":" + std::to_string(ep.port());
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
  // Every 503 is temporary (Redis, readiness, shutdown): a publisher retries
  // after a second, on another instance if it has one; the body says whether
  // a publish may have been stored (docs/protocol.md "Publish outcomes").
  if (status == 503)
    response_->set(bhttp::field::retry_after, "1");
  if (status == 426) { // RFC 6455 section 4.4, RFC 9110 section 15.5.22
    response_->set(bhttp::field::sec_websocket_version, "13");
    response_->set(bhttp::field::upgrade, "websocket");
  }
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
                     [self = shared_from_this(), close = !keep_alive](
                       beast::error_code ec, std::size_t) { self->on_sent(close, ec); });
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
