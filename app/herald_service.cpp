#include "app/herald_service.hpp"

#include "app/build_info.hpp"
#include "app/logging.hpp"

#include "actors/connection_actor.hpp"
#include "actors/messages.hpp"
#include "actors/publish_ticket.hpp"
#include "actors/session_bridge.hpp"
#include "net/wire/errors.hpp"
#include "net/wire/http/publish_request.hpp"
#include "net/obs/status.hpp"
#include "net/obs/metrics_redis.hpp"
#include "net/sse/sse_session.hpp"
#include "net/ws/ws_session.hpp"

#include <caf/send.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace herald::app {

herald_service::herald_service(caf::actor_system& sys, caf::actor registry, caf::actor gateway,
                               std::shared_ptr<actors::cluster_status> status, const config& cfg)
  : sys_(sys),
    registry_(std::move(registry)),
    gateway_(std::move(gateway)),
    status_(std::move(status)),
    max_channels_(cfg.max_channels_per_client),
    auth_(cfg.auth),
    max_subscribe_attempts_(cfg.max_subscribe_attempts),
    ws_ping_interval_(std::chrono::seconds(cfg.ws_ping_interval)) {}

void herald_service::publish(net::http::publish_request req, publish_done done) {
  net::metrics::publications_received(net::metrics::source::http, req.channels.size());
  auto ticket = std::make_shared<actors::publish_ticket>(
    std::move(req), [done = std::move(done)](const actors::publish_ticket&,
                                             const net::publish_outcome& outcome) {
      done(outcome);
    });
  // Cluster mode: Redis assigns the offsets and fans out to every instance
  // (this one included); in-process mode: the channel actors do.
  caf::anon_send(gateway_ ? gateway_ : registry_, actors::publish_atom_v, std::move(ticket));
}

void herald_service::channel_history(std::string channel, std::size_t limit, history_done done) {
  auto q = std::make_shared<actors::channel_query>();
  q->channel = std::move(channel);
  q->limit = limit;
  q->done = std::move(done);
  caf::anon_send(registry_, actors::history_atom_v, std::move(q));
}

std::shared_ptr<net::session_events> herald_service::bridge_for(std::uint64_t id, caf::actor actor,
                                                                net::metrics::transport kind) {
  net::metrics::connection_opened(kind);
  return std::make_shared<actors::session_bridge>(
    std::move(actor), [this, id, kind](net::close_reason reason) {
      net::metrics::connection_closed(kind, reason);
      {
        std::lock_guard<std::mutex> guard{mtx_};
        conns_.erase(id);
      }
      // Protocol errors and refusals are the client's doing: rate-limited.
      if (reason == net::close_reason::protocol_error || reason == net::close_reason::policy)
        client_log().log("protocol_error", spdlog::level::info, "connection closed by the server",
                         {{"conn", id}, {"reason", net::to_string(reason)}});
      else
        spdlog::debug("connection {} closed: {}", id, net::to_string(reason));
    });
}

void herald_service::track(std::uint64_t id, std::shared_ptr<net::session_control> sink,
                           caf::actor actor, const char* transport, const std::string& peer) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    conns_.emplace(id, entry{sink, std::move(actor)});
  }
  spdlog::debug("connection {} opened: {} from {}", id, transport, peer);
}

void herald_service::open_sse(std::shared_ptr<net::sse::sse_session> session,
                              net::sse_subscription sub) {
  auto id = next_id_++;
  actors::connection_options opts{actors::transport::sse, max_channels_, auth_, std::move(sub.who)};
  opts.sse_filter = std::move(sub.filter);
  auto actor = sys_.spawn(actors::connection_actor, std::shared_ptr<net::session_control>(session),
                          registry_, opts, std::move(sub.channels), std::move(sub.cursor));
  track(id, session, actor, "sse", session->peer());
  session->start(bridge_for(id, std::move(actor), net::metrics::transport::sse));
}

void herald_service::open_ws(std::shared_ptr<net::ws::ws_session> session) {
  auto id = next_id_++;
  actors::connection_options opts{actors::transport::ws, max_channels_, auth_,
                                  session->principal()};
  opts.max_subscribe_attempts = max_subscribe_attempts_;
  opts.dialect = session->protocol();
  opts.ping_interval = ws_ping_interval_;
  opts.server_version = "herald " HERALD_VERSION;
  auto actor =
    sys_.spawn(actors::connection_actor, std::shared_ptr<net::session_control>(session), registry_, opts,
               std::vector<std::string>{}, std::vector<net::sse::cursor_entry>{});
  track(id, session, actor, "ws", session->peer());
  session->start(bridge_for(id, std::move(actor), net::metrics::transport::ws));
}

void herald_service::request_refused(errc code, std::string_view message, std::string_view peer) {
  // Refusals while draining or while Redis is down are the server's state,
  // not a client's mistake: they are not logged one by one.
  if (code == errc::shutting_down || code == errc::unavailable)
    return;
  const auto& row = herald::info(code);
  client_log().log("bad_request", spdlog::level::info, "request refused",
                   {{"status", row.http_status},
                    {"code", row.code},
                    {"detail", message.empty() ? row.message : message},
                    {"peer", peer}});
}

void herald_service::sse_origin_denied(std::string_view origin, std::string_view peer) {
  // The answer is a 200 (or 204) the browser will not let the page read, so
  // nothing else tells the operator; the origin is client text: cut short.
  constexpr std::size_t max_origin_chars = 200;
  client_log().log("bad_request", spdlog::level::info,
                   "SSE request from an origin not allowed: the browser will refuse the answer",
                   {{"origin", std::string{origin.substr(0, max_origin_chars)}},
                    {"detail", "no Access-Control-Allow-Origin sent; to allow this origin add it "
                               "to --allowed-origins"},
                    {"peer", peer}});
}

net::service::stats herald_service::current() {
  return {gateway_ != nullptr, connections()};
}

std::string herald_service::health() {
  const auto now = current();
  nlohmann::json j{{"status", "ok"},
                   {"mode", now.cluster ? "cluster" : "in-process"},
                   {"connections", now.connections}};
  if (auth_ && (auth_->auth_off() || !auth_->api_key_digest)) {
    // --insecure: say loudly what is not checked (docs/auth.md).
    j["insecure"] = true;
    auto& off = j["auth_off"] = nlohmann::json::array();
    if (auth_->auth_off())
      off.push_back("subscriber tokens");
    if (!auth_->api_key_digest)
      off.push_back("publish API key");
  }
  if (status_) {
    j["redis"] = status_->ready.ok() ? "up" : "down";
    j["redis_reconnects"] = status_->reconnects.load();
    // A Redis Cluster: each node's state as this instance sees it.
    if (auto nodes = net::metrics::redis_nodes(); !nodes.empty())
      j["redis_nodes"] = net::obs::redis_nodes_json(nodes);
  }
  return j.dump();
}

bool herald_service::ready(std::string& reason) {
  if (draining_) {
    reason = "shutting down";
    return false;
  }
  if (!status_)
    return true;
  if (!status_->ready.ok()) {
    reason = status_->ready.why();
    return false;
  }
  if (!status_->writable.ok()) {
    reason = status_->writable.why();
    return false;
  }
  if (!status_->replicas.ok()) {
    reason = status_->replicas.why();
    return false;
  }
  return true;
}

std::vector<std::shared_ptr<net::session_control>> herald_service::begin_drain() {
  draining_ = true;
  std::vector<std::shared_ptr<net::session_control>> sinks;
  std::lock_guard<std::mutex> guard{mtx_};
  sinks.reserve(conns_.size());
  for (auto& [id, e] : conns_)
    if (auto s = e.sink.lock())
      sinks.push_back(std::move(s));
  return sinks;
}

void herald_service::close_for_shutdown(net::session_control& connection,
                                        std::chrono::milliseconds grace) {
  net::close_request req;
  req.reason = net::close_reason::shutdown;
  req.code = info(errc::shutting_down).close_code; // 1012; SSE: herald.shutdown with retry:
  req.text = "service restart";
  req.flush_queued = true;
  req.grace = grace;
  req.grace_max = grace;
  connection.close(std::move(req));
}

void herald_service::stop_actors() {
  std::unordered_map<std::uint64_t, entry> left;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    left.swap(conns_);
  }
  for (auto& [id, e] : left)
    caf::anon_send_exit(e.actor, caf::exit_reason::user_shutdown);
}

std::size_t herald_service::connections() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return conns_.size();
}

} // namespace herald::app
