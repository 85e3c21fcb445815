// The server processes watched during a run (--server-pids): a reading of
// each on demand, and a sample every 500 ms on the run's I/O thread that
// keeps each one's peak RSS. Readings come from /proc (proc_sampler.hpp).
#pragma once

#include "loadtest/proc_sampler.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <mutex>
#include <vector>

namespace herald::loadtest {

class server_monitor {
public:
  /// Watches `pids` (in --server-pids order); samples on `ioc` once started.
  server_monitor(boost::asio::io_context& ioc, std::vector<int> pids);

  /// Starts the 500 ms sampling on the I/O thread (nothing without pids).
  void start();
  /// Stops the sampling after the current tick. Any thread.
  void stop();
  /// The highest RSS seen of each process, bytes, in pid order. Any thread.
  std::vector<std::uint64_t> peaks() const;
  /// Reads every process now (any thread) and folds the result into the
  /// peaks; with `count_files`, also counts their open files. One sample
  /// per pid, in pid order (`ok` false for a process that is gone).
  std::vector<proc_sample> sample(bool count_files = false);

private:
  void tick();

  boost::asio::steady_timer timer_;
  std::vector<int> pids_;
  mutable std::mutex mu_;
  std::vector<std::uint64_t> peaks_;
  bool stopped_ = false;
};

} // namespace herald::loadtest
