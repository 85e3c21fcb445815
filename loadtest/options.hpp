// Command line of herald-loadtest: parsing, scenario presets and checks
// (loopback only, process file limits).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace herald::loadtest {

/// Preset runs (see usage()).
enum class scenario { idle, fanout, spread, slow, reconnect_storm, cluster };

/// Everything the command line sets. Zero in a numeric field with a
/// scenario-dependent default means "use the scenario's value".
struct options {
  scenario scen = scenario::fanout;
  std::string transport = "sse";                      ///< sse, ws, centrifugo, centrifugo-protobuf or mix
  std::vector<std::string> targets{"127.0.0.1:8080"}; ///< host:port (IPv4 loopback)
  std::string publish_target;                         ///< default: targets[0]
  std::vector<std::string> source_addrs{"127.0.0.1"};
  std::uint64_t connections = 1000;
  std::uint32_t channels = 0; ///< stream channels
  unsigned workers = 0;       ///< 0: one per 15,000 connections
  double ramp_rate = 2000;    ///< connections per second, all workers
  std::uint64_t publications = 0;
  double rate = 0; ///< publications per second
  std::size_t payload_bytes = 0;
  unsigned publish_conns = 2;
  unsigned publish_inflight = 8;
  bool find_max = false;
  double step_seconds = 5;
  double step_factor = 1.5;
  double max_p99_ms = 1000;
  double hold_seconds = 10;
  double slow_share = 0.1;
  double duration = 180;    ///< hard cap on the whole run, seconds
  double drain_seconds = 5; ///< wait for late deliveries without progress
  double settle_ms = 500;   ///< pause between connections and publishing
  double connect_timeout = 10;
  std::vector<int> server_pids;
  bool json = false;
  std::string json_file;
  std::string svg_file;
  std::string throughput_svg_file;
  std::string channel_prefix = "lt";
  std::uint64_t seed = 0; ///< 0: random
  bool quiet = false;
  bool ws_deflate = false; ///< WebSocket connections offer permessage-deflate
  bool centrifugo_delta = false; ///< Centrifugo JSON subscribes with delta "fossil"
  bool resume_on_drop = false;   ///< a connection the server closes resumes
  bool filter = false; ///< every subscription has a tags filter its publications match
  bool worker = false;     ///< internal: run as a worker process
};

/// Name of a scenario as on the command line.
const char* to_string(scenario s) noexcept;

/// The --help text.
std::string usage();

/// Parses argv into `out` (which holds the defaults). Returns an error
/// message, empty on success. Sets `help` when --help was given.
std::string parse_options(int argc, char** argv, options& out, bool& help);

/// Applies the scenario's defaults to fields left at 0, then checks the
/// result: targets and sources on 127.0.0.0/8, sizes within limits, enough
/// workers for the per-process file limit. Returns an error message, empty
/// when the options are usable.
std::string finalize_options(options& o);

/// True iff `host` is an IPv4 address in 127.0.0.0/8 (or "localhost").
bool is_loopback_v4(const std::string& host) noexcept;

/// Splits "host:port" (host may be "localhost", turned into 127.0.0.1).
/// Returns false when malformed.
bool split_host_port(const std::string& text, std::string& host, unsigned& port);

} // namespace herald::loadtest
