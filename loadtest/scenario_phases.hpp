// The phases of one run, in the parent process, on the controller's thread:
// connect (wait for every worker's ready report, then settle), then by
// scenario hold (idle), publish (with the reconnect storm at half way and
// the newcomer probe while it lasts) or find-max (rate steps until one
// fails), then finish (collect the workers' results and reap them). Each
// phase waits on the workers' reports and the publisher, prints progress
// every second (unless --quiet), and stops at the run's deadline or on a
// signal. Server readings go into the run's result at the phase boundaries.
// The controller (controller.hpp) wires the pieces and creates one object
// per run.
#pragma once

#include "loadtest/channel_plan.hpp"
#include "loadtest/options.hpp"
#include "loadtest/publisher.hpp"
#include "loadtest/report.hpp"
#include "loadtest/server_monitor.hpp"
#include "loadtest/timeline_recorder.hpp"
#include "loadtest/verdict.hpp"
#include "loadtest/worker_pool.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace herald::loadtest {

class scenario_phases {
public:
  /// Phases for options `o` (finalized) and channels `plan`, writing into
  /// `r`, over workers already started in `pool`. `interrupted` becomes true on SIGINT or
  /// SIGTERM; `start_ns` and `deadline_ns` are the run's start and hard end
  /// (CLOCK_MONOTONIC ns). Every reference must outlive this object.
  scenario_phases(const options& o, const channel_plan& plan, run_result& r, worker_pool& pool,
                  publisher& pub, server_monitor& monitor, timeline_recorder& timeline,
                  const std::atomic<bool>& interrupted, std::int64_t start_ns,
                  std::int64_t deadline_ns);

  /// Runs every phase of the scenario, the last being finish(); returns
  /// when the workers have reported their results (or were reaped).
  void run();

  /// The reading subscriptions the workers reported once connected (empty
  /// before the connect phase ends): what publications should reach.
  const reading_subscriptions& reading() const noexcept { return subs_; }

private:
  using worker_predicate = std::function<bool(const std::vector<worker_view>&)>;

  // -- phases ----------------------------------------------------------------
  void connect_phase();
  void hold_phase();
  void publish_phase();
  /// The reconnect storm, once half the publications are written.
  void storm();
  void find_max_phase();
  void finish_phase();

  // -- waiting ---------------------------------------------------------------
  bool stopping() const;
  /// Waits for `pred` on the workers until `deadline` (ns), printing
  /// progress every second. True when it held.
  bool wait_workers(const worker_predicate& pred, std::int64_t deadline, const std::string& phase);
  /// Waits until the publisher has an outcome for every request; false at
  /// the deadline or on a signal.
  bool wait_publisher(const std::string& phase);
  /// Waits until the unique deliveries since `base` reach `expected`, or
  /// none arrives for --drain-seconds.
  void drain(std::uint64_t base, std::uint64_t expected, const std::string& phase);
  /// Sleeps `ms` milliseconds (in 50 ms slices) or until the deadline or a signal.
  void sleep_ms(double ms);
  static worker_predicate snapshot_from_all(int id);

  // -- readings and messages ---------------------------------------------------
  void mark_publish_start();
  void mark_publish_end();
  void progress(const std::string& phase);
  void say(const std::string& phase, const std::string& text);

  const options& o_;
  const channel_plan& plan_;
  run_result& r_;
  worker_pool& pool_;
  publisher& pub_;
  server_monitor& monitor_;
  timeline_recorder& timeline_;
  const std::atomic<bool>& interrupted_;
  std::int64_t start_ns_;
  std::int64_t deadline_ns_;
  reading_subscriptions subs_;
  std::uint64_t ready_established_ = 0; // connections established by the end of the ramp
  double publish_cpu0_ = 0;
};

} // namespace herald::loadtest
