// A worker process: holds a share of the subscriber connections (one
// process holds at most ~20,000 files), opens them at its share of the ramp
// rate, and talks to the parent over two pipes:
//
//   parent -> worker (stdin), JSON lines: first the worker_config, then
//     {"cmd":"reconnect"}           every established connection drops and resumes
//     {"cmd":"snapshot","id":N}     reply with the latency since the last snapshot
//     {"cmd":"finish"}              reply with the final result and exit
//   worker -> parent (fd 3), JSON lines with "type":
//     progress (every 250 ms), ready (every connection attempted),
//     storm_done, snapshot, result.
//
// The worker exits on "finish", when stdin closes (the parent died) and at
// its own deadline, whichever comes first.
#pragma once

#include "loadtest/channel_plan.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace herald::loadtest {

/// Everything a worker needs, sent by the parent as its first line.
struct worker_config {
  int worker = 0;                ///< this worker's number
  std::uint64_t first = 0;       ///< first global connection number
  std::uint64_t count = 0;       ///< connections of this worker
  std::string transport = "sse"; ///< sse, ws, centrifugo, centrifugo-protobuf or mix (even numbers SSE, odd WebSocket)
  bool ws_deflate = false;       ///< WebSocket connections offer permessage-deflate
  bool centrifugo_delta = false; ///< Centrifugo JSON subscribes with delta "fossil"
  /// Non-empty: every subscription filters on this event name (--filter).
  std::string filter_event;
  bool resume_on_drop = false;   ///< a connection the server closes resumes
  std::vector<std::string> targets; ///< host:port, connection k uses targets[k % size]
  std::vector<std::string> sources; ///< loopback source addresses, round robin by k
  channel_plan plan;
  double ramp_rate = 1000;           ///< connections per second (this worker's share)
  double slow_share = 0;             ///< share of connections that stop reading
  double connect_timeout_s = 10;     ///< an attempt not established by then fails
  double lifetime_s = 600;           ///< hard limit: the worker exits after this
  std::size_t max_connecting = 1000; ///< attempts in progress at once (ramp)
  int resume_attempts = 3;           ///< tries per connection to resume after a drop

  nlohmann::json to_json() const;
  static worker_config from_json(const nlohmann::json& j);
};

/// True iff global connection `k` is one of the slow ones for `share`.
bool is_slow_connection(std::uint64_t k, double share) noexcept;

/// Runs a worker: reads its config from `control_fd`, reports on
/// `report_fd`. Returns the process exit code.
int run_worker(int control_fd, int report_fd);

/// Writes all of `bytes` to the blocking descriptor `fd` (a worker's pipe),
/// retrying after EINTR. False when a write fails (the other end is gone:
/// EPIPE, ...; errno says why).
bool write_all(int fd, std::string_view bytes);

} // namespace herald::loadtest
