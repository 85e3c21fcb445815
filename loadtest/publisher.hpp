// The publisher: sends publications with `POST /v1/publish` over a few
// HTTP/1.1 keep-alive connections, at a fixed rate.
//
// Publication `seq` goes to the channels channel_plan::channels_of_publication
// gives, always over connection (first channel id % connections), with up to
// `inflight` requests pipelined per connection. One channel's publications
// therefore reach the server in seq order, so subscribers may check order by
// seq. Each request's data carries its send time, taken when the request is
// written (see payload.hpp). Runs on the caller's io_context (one thread);
// start, stats, wait_idle and stop may be called from any thread.
#pragma once

#include "loadtest/channel_plan.hpp"
#include "loadtest/histogram.hpp"

#include <boost/asio/io_context.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace herald::loadtest {

/// How to publish.
struct publisher_config {
  std::string target = "127.0.0.1:8080"; ///< host:port (IPv4 loopback)
  unsigned connections = 2;              ///< keep-alive connections
  unsigned inflight = 8;                 ///< pipelined requests per connection
  std::size_t payload_bytes = 128;       ///< size of each publication's data
  std::string event = "loadtest";        ///< event name
  channel_plan plan;
};

/// What the publisher did so far.
struct publisher_stats {
  std::uint64_t requested = 0; ///< publications asked for by start() calls
  std::uint64_t scheduled = 0; ///< publications whose due time has come
  std::uint64_t sent = 0;      ///< requests written
  std::uint64_t ok = 0;        ///< answered 200
  std::uint64_t failed = 0;    ///< answered with an error status
  std::uint64_t unknown = 0;   ///< connection lost before the answer (may or may not be published)
  std::vector<std::uint64_t> ok_per_channel; ///< 200 answers, by channel id
  bool broadcast = false;             ///< a 200 named no offsets: the server ignores channels
  std::uint64_t offset_anomalies = 0; ///< a channel's offset did not advance by exactly one
  histogram rtt;                      ///< request written -> answer read, ns
  histogram lag;                      ///< due time -> request written, ns
  std::map<std::string, std::uint64_t> errors;
  std::int64_t first_send_ns = 0;
  std::int64_t last_send_ns = 0;
  std::int64_t last_ok_ns = 0; ///< when the last 200 answer was read

  /// True when every requested publication has an outcome.
  bool idle() const noexcept { return ok + failed + unknown >= requested; }
};

class publisher {
public:
  /// A publisher that sends nothing until start(); connects lazily.
  publisher(boost::asio::io_context& ioc, publisher_config cfg);
  ~publisher();
  publisher(const publisher&) = delete;
  publisher& operator=(const publisher&) = delete;

  /// Schedules publications first_seq .. first_seq + count - 1 at `rate` per
  /// second from now (the first one at once). Thread-safe.
  void start(std::uint64_t first_seq, std::uint64_t count, double rate);
  /// Blocks until every requested publication has an outcome, the deadline
  /// (CLOCK_MONOTONIC ns) passes or `*stop` becomes true. True when idle.
  bool wait_idle(std::int64_t deadline_ns, const std::atomic<bool>* stop = nullptr);
  /// A copy of the statistics. Thread-safe.
  publisher_stats stats() const;
  /// Requests written so far (cheaper than stats()). Thread-safe.
  std::uint64_t sent_count() const;
  /// Stops scheduling; publications not yet written are dropped (counted
  /// as failed) and connections close. Thread-safe; waits for the I/O thread.
  void stop();

private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

} // namespace herald::loadtest
