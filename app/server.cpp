#include "app/server.hpp"

#include "net/core/io_shard.hpp"

#include "actors/channel_registry.hpp"
#include "app/demo_page.hpp"
#include "app/herald_service.hpp"
#include "app/status_page.hpp"
#include "app/logging.hpp"
#include "actors/redis_gateway.hpp"
#include "net/core/listener.hpp"
#include "net/http/http_session.hpp"
#include "net/redis/client.hpp"
#include "net/redis/cluster_client.hpp"
#include "net/redis/url.hpp"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include <boost/asio/signal_set.hpp>

#include <thread>

namespace herald::app {

namespace asio = boost::asio;

int run_server(config& cfg) {
  // The io_context is declared before the actor system, so the actor system
  // (whose destructor joins the CAF workers) goes first: no actor can post to
  // a destroyed io_context (shared/notes/caf-0.17.md section 7).
  // --io-threads I/O shards, each an io_context with a thread of its own
  // (net/core/io_shard.hpp); shard 0 also runs the listener, Redis and signals.
  net::io_shards shards{cfg.io_threads};
  asio::io_context& ioc = shards.main();
  caf::actor_system sys{cfg};

  // Cluster mode: a Redis gateway links this instance to the others.
  caf::actor gateway;
  std::shared_ptr<net::redis::backend> redis;
  std::shared_ptr<actors::cluster_status> status;
  // Channel classes: the channel actors and the Redis scripts take each
  // channel's history bounds from its class.
  auto classes = cfg.classes();
  if (!cfg.redis_url.empty()) {
    net::redis::script_settings scripts;
    scripts.classes = classes;
    scripts.prefix = cfg.redis_prefix;
    scripts.history_size = cfg.history_size;
    scripts.history_ttl = std::chrono::seconds(cfg.history_ttl);
    scripts.idempotency_window = std::chrono::seconds(cfg.idempotency_window);
    auto command_timeout = std::chrono::milliseconds(cfg.redis_command_timeout_ms);
    std::string error;
    std::string where;
    if (net::redis::is_cluster_url(cfg.redis_url)) {
      // A Redis Cluster: its seeds, one connection per master (docs/cluster.md).
      net::redis::cluster_client::options copts;
      if (!net::redis::parse_cluster_url(cfg.redis_url, copts.seeds, error)) {
        spdlog::critical("--redis-url: {}", error);
        return 1;
      }
      copts.scripts = scripts;
      copts.command_timeout = command_timeout;
      copts.make_epoch = actors::random_epoch;
      copts.wait_replicas = cfg.redis_wait_replicas;
      where = "the Redis Cluster " + net::redis::to_log_string(copts.seeds);
      redis = net::redis::cluster_client::create(ioc, copts);
    } else {
      net::redis::client::options ropts;
      if (!net::redis::parse_url(cfg.redis_url, ropts.target, error)) {
        spdlog::critical("--redis-url: {}", error);
        return 1;
      }
      ropts.prefix = scripts.prefix;
      ropts.pool_size = cfg.redis_pool_size;
      ropts.command_timeout = command_timeout;
      ropts.history_size = scripts.history_size;
      ropts.history_ttl = scripts.history_ttl;
      ropts.idempotency_window = scripts.idempotency_window;
      ropts.classes = classes;
      ropts.make_epoch = actors::random_epoch;
      ropts.wait_replicas = cfg.redis_wait_replicas;
      where = "Redis at " + net::redis::to_log_string(ropts.target);
      redis = net::redis::client::create(ioc, ropts);
    }
    status = std::make_shared<actors::cluster_status>();
    gateway = sys.spawn(actors::redis_gateway, redis, status);
    spdlog::info("mode: cluster through {} (prefix {})", where, cfg.redis_prefix);
  } else {
    spdlog::info("mode: in-process (no Redis): publications reach the clients of this instance");
  }
  auto registry = sys.spawn(actors::channel_registry, cfg.history_options(),
                            std::function<std::string()>{actors::random_epoch}, gateway, classes);
  herald_service service{sys, registry, gateway, status, cfg};
  net::http::static_pages pages{std::string{demo_page}, std::string{status_page}};
  // One copy of the options, shared by every session.
  auto opts = std::make_shared<const net::session_options>(cfg.session_options());

  std::shared_ptr<net::listener> listener;
  try {
    asio::ip::tcp::endpoint ep{asio::ip::make_address(cfg.host), cfg.port};
    // Every accepted connection starts as an HTTP/1.1 session on its shard.
    listener = std::make_shared<net::listener>(
      shards, ep, *opts,
      [opts, &service, &pages](net::tcp::socket socket, std::shared_ptr<void> slot) {
        std::make_shared<net::http::http_session>(std::move(socket), opts, service, pages,
                                                  std::move(slot))
          ->run();
      });
  } catch (const std::exception& e) {
    spdlog::critical("cannot listen on {}:{}: {}", cfg.host, cfg.port, e.what());
    caf::anon_send_exit(registry, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(gateway, caf::exit_reason::user_shutdown);
    return 1;
  }
  // At the file limit accept fails every retry (100 ms): log once a minute.
  listener->on_accept_error = [last = std::chrono::steady_clock::time_point{},
                               count =
                                 std::uint64_t{0}](const boost::system::error_code& ec) mutable {
    ++count;
    auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::minutes(1))
      return;
    spdlog::warn("accept failed: {} ({} time(s) since the last report; retrying)", ec.message(),
                 count);
    last = now;
    count = 0;
  };
  listener->run();
  spdlog::info("scheduler: policy={} max-threads={}, io-threads={}",
               caf::to_string(caf::get_or(cfg, "scheduler.policy", caf::atom("sharing"))),
               sys.scheduler().num_workers(), cfg.io_threads);
  spdlog::info("listening on {}:{}", cfg.host, listener->port());

  // The registry and the gateway are the server's spine: if one of them
  // ends outside a shutdown, fail loudly and exit non-zero (a supervisor
  // restarts the instance; clients recover from history) instead of
  // answering publishes with errors forever.
  std::atomic<bool> failed{false};
  auto supervisor = sys.spawn(
    [&ioc, &failed, &service, registry, gateway](caf::event_based_actor* self) -> caf::behavior {
      self->monitor(registry);
      if (gateway)
        self->monitor(gateway);
      self->set_down_handler([self, &ioc, &failed, &service](caf::down_msg& dm) {
        if (!service.draining()) {
          spdlog::critical("a core actor ended unexpectedly ({}): exiting",
                           caf::to_string(dm.reason));
          failed = true;
          ioc.stop();
        }
        self->quit();
      });
      return {[](caf::unit_t) {}};
    });

  // Client-caused log lines dropped by the limiter are reported once a
  // second, also when the flood stopped.
  asio::steady_timer log_timer{ioc};
  std::function<void()> flush_client_log = [&] {
    log_timer.expires_after(std::chrono::seconds(1));
    log_timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec)
        return;
      client_log().flush();
      flush_client_log();
    });
  };
  flush_client_log();

  // Graceful shutdown (README "Operations"): not ready at once, stop
  // accepting, close the clients in batches over --shutdown-drain-window,
  // each flushing its queue and getting its close (WS 1012, SSE retry hint +
  // herald.shutdown) within --shutdown-timeout, then stop.
  // A second signal stops at once.
  asio::signal_set signals{ioc, SIGINT, SIGTERM};
  asio::steady_timer drain_timer{ioc}; // paces the shutdown's batches of closes
  auto work = asio::make_work_guard(ioc);
  auto shutdown_started = std::chrono::steady_clock::now();
  std::function<void(const boost::system::error_code&, int)> on_second_signal =
    [&](const boost::system::error_code& ec, int sig) {
      if (ec)
        return;
      spdlog::warn("signal {} during shutdown: stopping now", sig);
      drain_timer.cancel(); // no more batches of closes
      ioc.stop();
    };
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec)
      return;
    shutdown_started = std::chrono::steady_clock::now();
    auto grace = std::chrono::seconds(cfg.shutdown_timeout);
    log_with(spdlog::level::info, "shutting down",
             {{"signal", sig},
              {"connections", service.connections()},
              {"shutdown_timeout_s", cfg.shutdown_timeout}});
    // Draining first (readyz 503), then the connections closed in batches
    // spread over --shutdown-drain-window, so their reconnects spread over
    // the other instances instead of landing in the same second; the ones
    // not closed yet keep getting publications. Each close may take what is
    // left of --shutdown-timeout to flush.
    // Weak: a connection that ends on its own meanwhile is not kept, and a
    // stop before the last batch leaves no session to outlive its shard.
    auto left = std::make_shared<std::vector<std::weak_ptr<net::session_control>>>();
    for (auto& connection : service.begin_drain())
      left->push_back(connection);
    // At most half the shutdown timeout: the last ones closed need time to flush.
    const auto window = std::min(std::chrono::milliseconds(cfg.shutdown_drain_window),
                                 std::chrono::milliseconds(grace) / 2);
    constexpr auto tick = std::chrono::milliseconds(50);
    const std::size_t ticks = std::max<std::size_t>(1, window / tick);
    const std::size_t total = left->size();
    const auto close_by = shutdown_started + grace;
    if (total > 0)
      log_with(spdlog::level::info, "closing connections",
               {{"connections", total}, {"drain_window_ms", window.count()}, {"batches", ticks}});
    auto close_batch = std::make_shared<std::function<void()>>();
    auto batch = std::make_shared<std::size_t>(0);
    // The closure holds itself only weakly and the timer by reference: the
    // timer's pending handler holds it strongly, so a stop before the last
    // batch (every client gone on its own) leaves no cycle behind.
    *close_batch = [left, total, ticks, batch, close_by, &drain_timer,
                    weak = std::weak_ptr<std::function<void()>>(close_batch), tick] {
      using namespace std::chrono;
      const auto now = steady_clock::now();
      const auto grace_left =
        std::max(milliseconds(100), duration_cast<milliseconds>(close_by - now));
      // After batch k (from 1), ceil(k * total / ticks) are closed: even
      // batches over the whole window whatever the count, the first at once.
      const std::size_t closed_after = (++*batch * total + ticks - 1) / ticks;
      while (total - left->size() < closed_after && !left->empty()) {
        if (auto connection = left->back().lock())
          herald_service::close_for_shutdown(*connection, grace_left);
        left->pop_back();
      }
      auto self = weak.lock();
      if (left->empty() || !self)
        return;
      drain_timer.expires_after(tick);
      drain_timer.async_wait([self](const boost::system::error_code& ec) {
        if (!ec)
          (*self)();
      });
    };
    (*close_batch)();
    listener->stop();
    log_timer.cancel();
    signals.async_wait(on_second_signal);
    work.reset();
    // Stop as soon as every session closed, or when the sessions' own
    // grace timers should have closed the last ones.
    auto timer = std::make_shared<asio::steady_timer>(ioc);
    auto deadline = std::chrono::steady_clock::now() + grace + std::chrono::milliseconds(500);
    auto poll = std::make_shared<std::function<void()>>();
    *poll = [&ioc, &service, timer, deadline, poll, &signals, &drain_timer] {
      if (service.connections() == 0 || std::chrono::steady_clock::now() >= deadline) {
        if (auto left = service.connections())
          spdlog::warn("shutdown timeout: {} connection(s) still open are dropped", left);
        signals.cancel();
        drain_timer.cancel(); // every connection is gone, or the time is up
        ioc.stop();
        *poll = nullptr; // break the self-reference
        return;
      }
      timer->expires_after(std::chrono::milliseconds(20));
      timer->async_wait([poll](const boost::system::error_code&) {
        if (*poll)
          (*poll)();
      });
    };
    (*poll)();
  });

  shards.run(); // returns when shard 0 stopped; the other shards are stopped and joined
  if (redis) {
    // Close the Redis connections while the event loop can still run their
    // last handlers (hiredis frees its contexts there).
    redis->stop();
    ioc.restart();
    ioc.run_for(std::chrono::milliseconds(500));
  }
  service.stop_actors();
  caf::anon_send_exit(registry, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(gateway, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(supervisor, caf::exit_reason::user_shutdown);
  sys.await_all_actors_done();
  client_log().flush();
  log_with(spdlog::level::info, "stopped",
           {{"shutdown_ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - shutdown_started)
                              .count()}});
  return failed ? 1 : 0;
}

} // namespace herald::app
