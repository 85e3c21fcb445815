// Reads a process's memory and CPU use from /proc: RSS and peak RSS from
// /proc/<pid>/status (VmRSS, VmHWM), CPU time from /proc/<pid>/stat
// (utime + stime, in clock ticks), thread count and open files.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>

namespace herald::loadtest {

/// One reading of a process.
struct proc_sample {
  int pid = 0;
  bool ok = false;             ///< false when the process could not be read
  std::int64_t t_ns = 0;       ///< CLOCK_MONOTONIC time of the reading
  std::uint64_t rss_bytes = 0; ///< VmRSS
  std::uint64_t hwm_bytes = 0; ///< VmHWM (peak RSS since start)
  double cpu_s = 0;            ///< utime + stime, seconds
  int threads = 0;
  int open_files = -1; ///< entries in /proc/<pid>/fd (-1 when unreadable)

  /// {"pid":..,"ok":..,"rss_bytes":..,"hwm_bytes":..,"cpu_s":..,"threads":..,"open_files":..}
  nlohmann::json to_json() const;
};

/// Reads process `pid` now. Never throws; `ok` is false when the process is
/// gone or unreadable. With `count_files`, also counts its open files.
proc_sample sample_process(int pid, bool count_files = false);

/// CPU seconds (user + system) used by this process so far (getrusage).
double self_cpu_seconds() noexcept;

} // namespace herald::loadtest
