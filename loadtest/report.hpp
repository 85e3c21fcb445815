// The result of a run and its two renderings: a readable table and JSON.
#pragma once

#include "loadtest/histogram.hpp"
#include "loadtest/newcomer_probe.hpp"
#include "loadtest/proc_sampler.hpp"
#include "loadtest/publisher.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace herald::loadtest {

/// One server process watched through /proc.
struct server_figures {
  int pid = 0;
  std::string target;               ///< the target it serves, when known
  std::uint64_t connections = 0;    ///< connections established to it
  proc_sample before;               ///< before any connection
  proc_sample after_connect;        ///< once every connection was established
  proc_sample publish_start;        ///< when publishing began
  proc_sample publish_end;          ///< when the last delivery arrived (or draining ended)
  proc_sample end;                  ///< at the end of the run
  std::uint64_t peak_rss_bytes = 0; ///< highest RSS seen by the 500 ms sampler

  /// (RSS after connect - RSS before) / connections, bytes (0 if unknown).
  double bytes_per_connection() const noexcept;
  /// CPU seconds used while publishing.
  double publish_cpu_s() const noexcept { return publish_end.cpu_s - publish_start.cpu_s; }
  /// publish_cpu_s as a percentage of one core over the same wall time (0 if unknown).
  double publish_cpu_pct() const noexcept;
};

/// One --find-max step.
struct step_result {
  double target_rate = 0;   ///< publications per second asked for
  double achieved_rate = 0; ///< publications per second actually written
  std::uint64_t published = 0;
  std::uint64_t expected = 0;
  std::uint64_t received = 0; ///< unique deliveries
  std::uint64_t duplicates = 0;
  std::uint64_t out_of_order = 0;
  double deliveries_per_s = 0;
  histogram latency;
  bool pass = false;
  std::string verdict; ///< why it failed ("" when it passed)
};

/// Everything a run measured.
struct run_result {
  // What ran.
  std::string scenario, transport, publish_target;
  std::vector<std::string> targets;
  std::uint64_t connections = 0;
  std::uint32_t channels = 0;
  bool user_channels = false;
  unsigned workers = 0;
  std::size_t source_addrs = 0;
  std::size_t payload_bytes = 0;
  double rate = 0;
  std::uint64_t publications = 0;
  std::string started_at; ///< local wall-clock time, ISO 8601

  // Connections.
  std::uint64_t established = 0, failed = 0, dropped = 0;
  std::uint64_t slow = 0, slow_closed_by_server = 0;
  double establish_s = 0; ///< first attempt -> last established
  histogram connect;      ///< per connection, attempt -> established, ns
  std::map<std::string, std::uint64_t> failures;

  // Reconnect storm.
  bool storm = false;
  std::uint64_t resumed = 0, resume_failed = 0, no_position = 0;
  double storm_s = 0; ///< drop -> last connection resumed
  histogram reconnect;
  /// New SSE subscribers opened one after another while the storm lasts
  /// (loadtest/newcomer_probe.hpp): is the server still accepting?
  newcomer_figures newcomers;

  // Publishing.
  publisher_stats pub;
  double publish_s = 0;     ///< first write -> last write
  double achieved_rate = 0; ///< publications written per second
  /// Publications acknowledged (200) per second, from the first request
  /// written to the last 200 read: the publish throughput when --rate asks
  /// for more than the server acknowledges.
  double acked_rate = 0;

  // Deliveries.
  std::uint64_t expected = 0, received = 0, duplicates = 0, out_of_order = 0;
  std::uint64_t offset_gaps = 0, gap_notices = 0, unparsed = 0;
  std::uint64_t loss = 0; ///< expected - unique received (0 if more arrived)
  double deliveries_per_s = 0;
  histogram latency; ///< publish -> receive, ns, merged over workers
  std::map<std::string, std::uint64_t> notices;

  // Processes.
  std::vector<server_figures> servers;
  double generator_cpu_s = 0;         ///< parent + workers, whole run
  double generator_publish_cpu_s = 0; ///< workers while publishing
  std::uint64_t worker_rss_bytes = 0; ///< sum over workers at the end

  // --find-max.
  bool find_max = false;
  std::vector<step_result> steps;
  double max_sustained_rate = 0;

  // Verdict.
  std::vector<std::string> problems; ///< empty: every check passed
  double wall_s = 0;
};

/// Writes the readable report.
void print_table(std::ostream& out, const run_result& r);

/// The machine-readable report.
nlohmann::json to_json(const run_result& r);

/// Percentiles of a latency histogram in milliseconds:
/// {"n","p50","p90","p99","p99_9","max","mean"}.
nlohmann::json percentiles_ms(const histogram& h);

} // namespace herald::loadtest
