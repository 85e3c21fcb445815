// logging: Herald's log lines through spdlog, as text or as JSON, and a
// rate limit for lines that clients can cause.
//
// setup_logging() installs one formatter on spdlog's default logger (stdout):
// - json: one object per line, `{"time":"2026-01-01T12:00:00.123Z",
//   "level":"info","msg":"...","thread":1234, ...fields}`, escaped by
//   nlohmann::json (RFC 8259), so control characters and quotes in a message
//   never break a line;
// - text: `2026-01-01T12:00:00.123Z info msg key=value ...`.
//
// Fields: log_with() passes a JSON object along with the message; it becomes
// top-level keys in json and `key=value` pairs in text.
//
// What must never be logged: tokens, API keys, secrets, passwords, request
// targets or query strings (they may carry `token=`). Callers log paths,
// option names, peers and error codes only (see README "Operations").
#pragma once

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace herald::app {

/// Installs the formatter and the level on spdlog's default logger.
/// @param level trace, debug, info, warn, error, off (config::validate() checked it).
/// @param json true: one JSON object per line; false: text.
/// Call once on the main thread before other threads log.
void setup_logging(std::string_view level, bool json);

/// Logs `msg` at `level` with `fields` (a JSON object; other values ignored).
/// Thread-safe (spdlog's default logger is).
void log_with(spdlog::level::level_enum level, std::string_view msg, nlohmann::json fields);

/// Bounds the log lines one kind of client-caused event may produce: at most
/// `per_second` lines of a kind per one-second window; the first line of a
/// kind after a window in which lines were dropped says how many
/// ("suppressed": K), and flush() reports what the last windows dropped.
/// Thread-safe (one mutex; client errors are not a hot path).
class client_log_limiter {
public:
  using clock = std::chrono::steady_clock;

  /// @param per_second lines per kind and second; 0 is treated as 1.
  explicit client_log_limiter(std::size_t per_second);

  /// Logs `msg` (kind `kind`, e.g. "bad_request") at `level` with `fields`,
  /// unless the kind is over its limit in this window (then it is counted).
  /// @returns whether a line was written.
  bool log(std::string_view kind, spdlog::level::level_enum level, std::string_view msg,
           nlohmann::json fields = nlohmann::json::object(), clock::time_point now = clock::now());

  /// Writes one "suppressed" line per kind that dropped lines and was not
  /// reported yet (e.g. at shutdown). @returns the number of lines written.
  std::size_t flush();

private:
  struct window {
    clock::time_point start{};
    std::size_t written = 0;
    std::uint64_t suppressed = 0;
  };
  void report(const std::string& kind, std::uint64_t suppressed);

  std::size_t per_second_;
  std::mutex mtx_;
  std::unordered_map<std::string, window> windows_;
};

/// The process-wide limiter for client-caused lines (--log-client-rate),
/// set by setup_client_log(); before that, a limiter of 10 per second.
client_log_limiter& client_log();

/// Replaces the process-wide limiter's rate. Call once at start-up.
void setup_client_log(std::size_t per_second);

} // namespace herald::app
