// herald_service: net::service backed by the actor system. Created by
// server; called on the sessions' shard threads. Publishes by handing a publish ticket
// to the channel registry; opens connections by spawning a connection actor
// per session and wiring the session to it through a session bridge. Keeps a
// table of open connections for /healthz and for shutdown.
#pragma once

#include "actors/redis_gateway.hpp"
#include "app/config.hpp"
#include "net/session_control.hpp"
#include "net/obs/metrics.hpp"
#include "net/service.hpp"
#include "net/session_events.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace herald::app {

class herald_service : public net::service {
public:
  /// @param gateway the Redis gateway in cluster mode (publications go
  ///        through Redis), null in in-process mode (they go to the registry).
  /// @param status readiness in cluster mode; null in in-process mode.
  herald_service(caf::actor_system& sys, caf::actor registry, caf::actor gateway,
                 std::shared_ptr<actors::cluster_status> status, const config& cfg);

  void publish(net::http::publish_request req, publish_done done) override;
  void channel_history(std::string channel, std::size_t limit, history_done done) override;
  void open_sse(std::shared_ptr<net::sse::sse_session> session, net::sse_subscription sub) override;
  void open_ws(std::shared_ptr<net::ws::ws_session> session) override;
  stats current() override;
  std::string health() override;
  bool ready(std::string& reason) override;
  bool draining() const override { return draining_; }
  /// Logs the refusal through the client log limiter (kind "bad_request").
  void request_refused(errc code, std::string_view message, std::string_view peer) override;
  /// Logs the origin and the --allowed-origins hint through the client log
  /// limiter (kind "bad_request", as a WebSocket upgrade refused for its Origin).
  void sse_origin_denied(std::string_view origin, std::string_view peer) override;

  /// Graceful shutdown, first step: marks the service draining (readyz 503,
  /// new requests 503) and returns every open connection's control seam, to
  /// be closed with close_for_shutdown() (all at once, or in batches over
  /// --shutdown-drain-window). Thread-safe.
  std::vector<std::shared_ptr<net::session_control>> begin_drain();

  /// Asks one connection to write what it has queued and close within
  /// `grace` (ms): WebSocket with close 1012 "service restart" (RFC 6455
  /// section 7.4.1, IANA registry), SSE with a final `retry:` hint
  /// (--shutdown-retry-ms) and `event: herald.shutdown` (docs/protocol.md).
  /// Publications keep reaching it until then. Thread-safe.
  static void close_for_shutdown(net::session_control& connection,
                                 std::chrono::milliseconds grace);
  /// Stops the connection actors that are still running. Thread-safe.
  void stop_actors();
  /// Open connections now.
  std::size_t connections() const;

private:
  struct entry {
    std::weak_ptr<net::session_control> sink;
    caf::actor actor;
  };
  void track(std::uint64_t id, std::shared_ptr<net::session_control> sink, caf::actor actor,
             const char* transport, const std::string& peer);
  std::shared_ptr<net::session_events> bridge_for(std::uint64_t id, caf::actor actor,
                                                  net::metrics::transport kind);

  caf::actor_system& sys_;
  caf::actor registry_;
  caf::actor gateway_;
  std::shared_ptr<actors::cluster_status> status_;
  std::size_t max_channels_;
  std::shared_ptr<const net::auth::policy> auth_;
  std::size_t max_subscribe_attempts_;         ///< --max-subscribe-attempts
  std::chrono::milliseconds ws_ping_interval_; ///< --ws-ping-interval (Centrifugo connect reply)
  mutable std::mutex mtx_;
  std::unordered_map<std::uint64_t, entry> conns_;
  std::atomic<std::uint64_t> next_id_{1};
  std::atomic<bool> draining_{false};
};

} // namespace herald::app
