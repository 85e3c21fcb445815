#include "net/redis/replica_check.hpp"

#include "net/redis/script_reply.hpp"

#include <algorithm>

namespace herald::net::redis {

std::size_t online_replicas(const std::string& text) {
  const std::string info = "\n" + text;
  std::size_t n = 0;
  std::size_t pos = 0;
  while ((pos = info.find("\nslave", pos)) != std::string::npos) {
    auto end = info.find('\n', pos + 1);
    auto line = info.substr(pos + 1, end == std::string::npos ? end : end - pos - 1);
    if (line.find(":ip=") != std::string::npos && line.find(",state=online,") != std::string::npos)
      ++n;
    pos += 1;
  }
  return n;
}

void check_master_replicas(const std::shared_ptr<connection>& conn, const channel_keys& keys,
                           std::size_t replicas, std::chrono::milliseconds wait,
                           const std::string& node, std::function<void(const std::string&)> done) {
  const std::string subject = node.empty() ? "the Redis master" : "master " + node;
  const std::string prefix = node.empty() ? "" : subject + ": ";
  const auto n = replicas;
  const auto wait_ms = std::max<long long>(1, wait.count());
  conn->command({"INFO", "replication"}, [conn, keys, n, wait_ms, subject, prefix,
                                          done = std::move(done)](reply r) mutable {
    if (r.is_error()) {
      done(prefix + "INFO replication failed: " + r.str);
      return;
    }
    auto online = online_replicas(r.str);
    if (online < n) {
      done(subject + " has " + std::to_string(online) +
           " replica(s) connected and in sync; --redis-wait-replicas=" + std::to_string(n) +
           " needs " + std::to_string(n));
      return;
    }
    // In sync by INFO; a probe write must also pass WAIT, as a publish does.
    conn->command({"EVAL", probe_script, "2", keys.meta, keys.history},
                  [conn, n, wait_ms, prefix, done = std::move(done)](reply w) mutable {
                    if (w.is_error()) {
                      done(prefix + "the readiness probe write failed: " + w.str);
                      return;
                    }
                    conn->command({"WAIT", std::to_string(n), std::to_string(wait_ms)},
                                  [n, wait_ms, prefix, done = std::move(done)](reply r2) {
                                    if (r2.type == reply::integer &&
                                        r2.number >= static_cast<long long>(n))
                                      done({});
                                    else
                                      done(prefix + "the readiness probe write was confirmed by " +
                                           (r2.type == reply::integer ? std::to_string(r2.number)
                                                                      : std::string{"no"}) +
                                           " of " + std::to_string(n) + " replica(s) within " +
                                           std::to_string(wait_ms) + " ms (WAIT)");
                                  });
                  });
  });
}

std::shared_ptr<replica_watch> replica_watch::create(const asio::any_io_executor& executor,
                                                     check_fn check, report_fn report) {
  return std::shared_ptr<replica_watch>(
    new replica_watch(executor, std::move(check), std::move(report)));
}

replica_watch::replica_watch(const asio::any_io_executor& executor, check_fn check,
                             report_fn report)
  : timer_(executor),
    check_(std::move(check)),
    report_(std::move(report)) {}

void replica_watch::start(const std::string& waiting) {
  report(false, waiting);
  run();
}

void replica_watch::stop() {
  stopped_ = true;
  timer_.cancel();
}

void replica_watch::run() {
  if (stopped_)
    return;
  auto started = check_([self = shared_from_this()](bool ok, const std::string& why) {
    self->report(ok, why);
    self->again();
  });
  if (!started)
    again(); // the down reason says why; checked again once up
}

void replica_watch::again() {
  if (stopped_)
    return;
  timer_.expires_after(interval);
  timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    if (auto s = weak.lock(); s && !ec)
      s->run();
  });
}

void replica_watch::report(bool ok, const std::string& why) {
  if (stopped_ || (ok_ == (ok ? 1 : 0) && why == why_))
    return;
  ok_ = ok ? 1 : 0;
  why_ = why;
  if (report_)
    report_(ok, why);
}

} // namespace herald::net::redis
