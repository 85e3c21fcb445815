// The workers' counters added up: what the parent knows of all connections
// and deliveries at a moment, from the workers' JSON reports (progress,
// snapshot or result lines, worker.hpp). The phases read it to show
// progress and to wait for deliveries; find-max subtracts two snapshots;
// the final figures come from the results.
#pragma once

#include "loadtest/worker_pool.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace herald::loadtest {

/// Counters of several workers' reports, summed.
struct worker_totals {
  std::uint64_t attempted = 0, established = 0, failed = 0, open = 0, dropped = 0;
  std::uint64_t resuming = 0, resumed = 0, resume_failed = 0;
  std::uint64_t received = 0, duplicates = 0, out_of_order = 0, offset_gaps = 0;
  std::uint64_t gap_notices = 0, unparsed = 0, bytes = 0;
  std::int64_t first_recv_ns = 0,
               last_recv_ns = 0; ///< earliest and latest delivery, CLOCK_MONOTONIC ns
  double cpu_s = 0;              ///< the workers' CPU time, seconds

  /// Deliveries received minus duplicates.
  std::uint64_t unique() const noexcept { return received - std::min(received, duplicates); }

  /// Adds one report: its top-level counters and those under "counters"
  /// (missing fields count 0; anything but an object is ignored).
  void add(const nlohmann::json& report);
};

/// Each worker's final result where there is one, else its latest progress
/// report, summed.
worker_totals sum_latest(const std::vector<worker_view>& views);

/// The workers' replies to snapshot `id`, summed (workers that did not
/// answer count nothing).
worker_totals sum_snapshot(const std::vector<worker_view>& views, int id);

} // namespace herald::loadtest
