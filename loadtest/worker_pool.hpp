// The parent's side of the worker processes: starts them (fork, then exec
// of this same executable with --worker), sends them commands, and collects
// their JSON reports (see worker.hpp) on an io_context running in another
// thread. Everything it learns is kept per worker behind a mutex, so the
// scenario code can wait for conditions on it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace herald::loadtest {

/// What the parent knows about one worker.
struct worker_view {
  pid_t pid = -1;
  bool alive = true;                       ///< its report pipe is still open
  nlohmann::json progress;                 ///< latest progress report (null until the first)
  nlohmann::json ready;                    ///< its ready report (null until then)
  nlohmann::json storm;                    ///< its storm_done report (null until then)
  nlohmann::json result;                   ///< its final result (null until then)
  std::map<int, nlohmann::json> snapshots; ///< snapshot replies by id
  int exit_status = -1;                    ///< after reaping: waitpid status
};

class worker_pool {
public:
  /// A pool whose pipes are read on `ioc` (run by another thread).
  explicit worker_pool(boost::asio::io_context& ioc);
  /// Kills and reaps workers that are still running.
  ~worker_pool();
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  /// Starts one worker per configuration: fork, then exec `exe --worker`
  /// with the control pipe as stdin and the report pipe as fd 3; the
  /// configuration is the first line on the control pipe. Workers die with
  /// the parent (PR_SET_PDEATHSIG). Throws std::system_error on failure.
  void start(const std::string& exe, const std::vector<nlohmann::json>& configs);

  /// Sends one JSON command line to every worker still alive.
  void broadcast(const nlohmann::json& cmd);

  /// Blocks until `pred(workers)` holds (evaluated under the lock after each
  /// report), the deadline (CLOCK_MONOTONIC ns) passes or `stop()` returns
  /// true. Returns whether pred held.
  bool wait_until(const std::function<bool(const std::vector<worker_view>&)>& pred,
                  std::int64_t deadline_ns, const std::function<bool()>& stop = {});

  /// A copy of what is known about every worker.
  std::vector<worker_view> view() const;

  /// Closes the control pipes and reaps the workers, killing (SIGKILL) any
  /// still running at the deadline.
  void reap(std::int64_t deadline_ns);

  /// Number of workers started.
  std::size_t size() const noexcept { return children_.size(); }

private:
  struct child;
  void read_reports(std::size_t i);
  void on_line(std::size_t i, const std::string& line);

  boost::asio::io_context& ioc_;
  std::vector<std::unique_ptr<child>> children_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<worker_view> views_;
};

} // namespace herald::loadtest
