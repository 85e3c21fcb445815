// replica_check: --redis-wait-replicas readiness, shared by the standalone
// client (client.hpp) and the Redis Cluster client (cluster_client.hpp).
// A master is ready when `INFO replication` lists enough replicas online and
// a probe write passes `WAIT`; a replica_watch repeats that check every
// second and reports each change of the answer (backend::on_replicas).
// Runs on the executor of the connections it is given; no thread of its own.
#pragma once

#include "net/asio.hpp"
#include "net/redis/connection.hpp"
#include "net/redis/envelope.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace herald::net::redis {

/// Replicas that finished their sync with the master, counted in the text of
/// `INFO replication` (lines "slave<i>:ip=...,port=...,state=online,..."). Pure.
std::size_t online_replicas(const std::string& info);

/// One master's replica check on its connection `conn`: `INFO replication`
/// must list at least `replicas` replicas online (online_replicas()), then
/// a probe write (probe_script on `keys`, a probe hash tag's meta and
/// history keys, which expire at once) must be confirmed by `WAIT
/// <replicas> <wait ms>` (`wait` in milliseconds, at least 1 ms).
/// `done(why)` is called exactly once, on `conn`'s executor: `why` empty when
/// the master passed, else a one-line reason naming the master (`node`,
/// "host:port"; empty: "the Redis master" of a standalone client). A refused
/// command or a lost connection is such a reason; nothing is thrown.
/// Executor of `conn` only.
void check_master_replicas(const std::shared_ptr<connection>& conn, const channel_keys& keys,
                           std::size_t replicas, std::chrono::milliseconds wait,
                           const std::string& node, std::function<void(const std::string&)> done);

/// The --redis-wait-replicas loop of one backend: runs a check, reports its
/// answer when it differs from the one reported last, and runs the next
/// check a second after each one completes, until stop(). Executor only
/// (the one given to create()); the report runs there too.
class replica_watch : public std::enable_shared_from_this<replica_watch> {
public:
  /// How a check ends: ok, or why not (one line).
  using done_fn = std::function<void(bool ok, const std::string& why)>;
  /// Starts one check, which must call `done` exactly once; returns false
  /// when it cannot check now (not connected: the reason to report is
  /// already the backend's down reason), and then must not call `done`.
  using check_fn = std::function<bool(done_fn done)>;
  /// Gets every change of the answer (backend::on_replicas).
  using report_fn = std::function<void(bool ok, const std::string& why)>;

  /// How long after a check (or a check that could not start) the next one
  /// starts.
  static constexpr std::chrono::seconds interval{1};

  /// A watch on `executor`; nothing runs before start().
  static std::shared_ptr<replica_watch> create(const asio::any_io_executor& executor,
                                               check_fn check, report_fn report);

  /// A watch on `executor` whose checks are `owner->check_replicas(done)`
  /// (a bool(done_fn) member, which may be private if Backend befriends
  /// replica_watch) and whose reports go to `owner->on_replicas` when set.
  /// It holds `owner` weakly: once `owner` is gone no check starts.
  template <class Backend>
  static std::shared_ptr<replica_watch> of(const std::shared_ptr<Backend>& owner,
                                           const asio::any_io_executor& executor) {
    std::weak_ptr<Backend> weak = owner;
    return create(
      executor,
      [weak](done_fn done) {
        auto s = weak.lock();
        return s && s->check_replicas(std::move(done));
      },
      [weak](bool ok, const std::string& why) {
        auto s = weak.lock();
        if (s && s->on_replicas)
          s->on_replicas(ok, why);
      });
  }

  /// Reports (false, `waiting`) (what is awaited, for readiness texts), then
  /// runs the first check at once.
  void start(const std::string& waiting);
  /// No check starts and nothing is reported from here on. Idempotent.
  void stop();

private:
  replica_watch(const asio::any_io_executor& executor, check_fn check, report_fn report);
  void run();
  void again();
  void report(bool ok, const std::string& why);

  asio::steady_timer timer_;
  check_fn check_;
  report_fn report_;
  bool stopped_ = false;
  int ok_ = -1; ///< last reported: -1 none yet, 0 no, 1 yes
  std::string why_;
};

} // namespace herald::net::redis
