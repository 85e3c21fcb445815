// metrics: Herald's process-wide counters, gauges and histograms, and their
// Prometheus text exposition (format 0.0.4). No CAF: net/, actors/ and app/
// all report here. The figures and their meaning: docs/metrics.md.
//
// Recording is wait-free and never allocates or locks: every thread writes to
// its own shard (a block of relaxed atomics only that thread stores to, so an
// update is a plain load and store on a cache line no other thread writes),
// and a scrape sums the shards. A shard is taken from a pool the first time a
// thread records, and returned (with its values) when the thread exits, so
// sums never go backwards. Label values come from fixed enums only: never a
// channel name or anything a client sent.
//
// Recording functions may be called from any thread. render() and
// snapshot() take the pool's lock (not used by recording after a thread's
// first call) and read /proc for the process figures.
#pragma once

#include "net/wire/close_reason.hpp"
#include "net/wire/errors.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace herald::net::metrics {

// -- label sets (fixed) -------------------------------------------------------

/// Client transport (label `transport`).
enum class transport : std::uint8_t { sse, ws };
inline constexpr std::size_t transport_count = 2;

/// Where a publication came from (label `source`): a POST /v1/publish on this
/// instance (one per channel named), or a Redis pub/sub message (cluster mode).
enum class source : std::uint8_t { http, redis };
inline constexpr std::size_t source_count = 2;

/// Number of `close_reason` values (label `reason`).
inline constexpr std::size_t close_reason_count = static_cast<std::size_t>(close_reason::auth) + 1;

/// Histograms, with their bucket bounds (seconds; docs/metrics.md).
enum class histogram : std::uint8_t {
  publish_to_write,      ///< publication accepted -> its frame written to a client socket
  redis_command_latency, ///< Redis command sent -> reply received
};
inline constexpr std::size_t histogram_count = 2;
/// Upper bounds of the finite buckets, in nanoseconds (the same for both
/// histograms: 50 us to 5 s; +Inf follows).
inline constexpr std::int64_t bucket_bounds_ns[] = {
  50'000,      100'000,       250'000,       500'000,      1'000'000,   2'500'000,
  5'000'000,   10'000'000,    25'000'000,    50'000'000,   100'000'000, 250'000'000,
  500'000'000, 1'000'000'000, 2'500'000'000, 5'000'000'000};
inline constexpr std::size_t bucket_count = sizeof(bucket_bounds_ns) / sizeof(bucket_bounds_ns[0]);

// -- clock --------------------------------------------------------------------

/// Monotonic time in nanoseconds (std::chrono::steady_clock), the unit of
/// every timestamp handed to the recording functions below.
inline std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
           std::chrono::steady_clock::now().time_since_epoch())
    .count();
}

// -- recording (any thread; wait-free) ---------------------------------------

/// A client connection was opened (counted in herald_connects_total and the
/// herald_connections gauge).
void connection_opened(transport t) noexcept;

/// A client connection ended for `r` (herald_disconnects_total; the gauge
/// goes down). Call exactly once per connection_opened().
void connection_closed(transport t, close_reason r) noexcept;

/// `n` publications were received from `s` (one per channel of a publish).
void publications_received(source s, std::uint64_t n = 1) noexcept;

/// A publication was handed to one connection (live or replayed).
void delivered(transport t) noexcept;

/// One socket write of `frames` queued items and `bytes` bytes completed.
void written(transport t, std::uint64_t frames, std::uint64_t bytes) noexcept;

/// Bytes queued for clients and not yet written went up (`delta` > 0) or
/// down. The outbound queues report here; the gauge is their sum.
void outbound_bytes(std::int64_t delta) noexcept;

/// A client asked to resume from a stream position: `succeeded` when every
/// missed publication was replayed, false when it got a gap instead.
void recovery(bool succeeded) noexcept;

/// Channel actors alive on this instance went up or down by `delta`.
void channels(std::int64_t delta) noexcept;

/// Observes a duration of `ns` nanoseconds (negative counts as 0) in `h`.
void observe(histogram h, std::int64_t ns) noexcept;

/// Redis connections were lost and are being re-established (one per outage).
void redis_reconnect() noexcept;

/// Cluster mode: the Redis connections are up (true) or down. The first call
/// makes the Redis figures appear in the exposition (they are absent in
/// in-process mode).
void set_redis_up(bool up) noexcept;

/// Why Redis is not usable (cluster mode), as the `reason` label of
/// herald_redis_down_reason: a small fixed set, from the reason text.
enum class redis_problem : std::uint8_t {
  none,               ///< up and ready
  connection_refused, ///< TCP connect refused (wrong host or port, Redis down)
  timeout,            ///< connect, handshake, command or heartbeat timed out
  resolve,            ///< the host name did not resolve
  auth,               ///< AUTH refused (WRONGPASS) or needed (NOAUTH)
  noperm,             ///< an ACL refused a command, key or channel (NOPERM)
  replicas,           ///< --redis-wait-replicas: too few replicas in sync
  cluster,            ///< the Redis Cluster slot map is missing or incomplete
  other,              ///< anything else (connection lost, ...)
};
inline constexpr std::size_t redis_problem_count = 9;

/// The `reason` label value of `p` ("connection_refused", "auth", ...).
std::string_view to_string(redis_problem p) noexcept;

/// The problem a one-line reason (connection::last_error(), a not-ready
/// text) names: NOPERM, WRONGPASS/NOAUTH/AUTH, "refused", "timeout",
/// "resolve", "replica", "slot map"/"seed"; otherwise other. Pure.
redis_problem classify_redis_problem(std::string_view reason) noexcept;

/// Cluster mode: why Redis is not usable now (none while up and ready).
void set_redis_problem(redis_problem p) noexcept;

/// A publish to one channel repeated an idempotency key within the window.
void idempotent_replay() noexcept;

/// A publish to one channel was suppressed: its version was not above the
/// channel's last accepted one (docs/protocol.md "Versioned publishing").
void version_suppressed() noexcept;

/// `n` publications were dropped from a client's outbound queue by the
/// overflow policy conflate (net/core/outbound_queue.hpp): a newer one of
/// the same subscription replaced them.
void conflated(std::uint64_t n = 1) noexcept;

/// Cluster mode: Redis stored a publication (true) or refused a write
/// (false: read-only replica, OOM, script error). Counts the episodes.
void set_redis_writable(bool writable) noexcept;

/// A request to /v1/sse (GET or an OPTIONS preflight) came from a browser
/// origin that is neither the server itself nor in --allowed-origins: it is
/// answered without `Access-Control-Allow-Origin`, so the browser refuses the
/// answer (Fetch standard, "CORS check") while the server sees a normal
/// request. Any thread.
void sse_cors_denied() noexcept;

/// An HTTP request was refused with `e` (its status and code from the
/// net/wire/errors table), e.g. `invalid_channel`, or an auth refusal.
void http_error(errc e) noexcept;

// -- build information --------------------------------------------------------

/// Version reported in herald_build_info{version=...} and /v1/status. Defaults
/// to the CMake project version; call before serving (not thread-safe).
void set_version(std::string version);
const std::string& version() noexcept;

// -- reading ------------------------------------------------------------------

/// Sums of the figures /v1/status reports (a consistent-enough view: each
/// figure is summed on its own while others may move).
struct snapshot_t {
  std::int64_t connections[transport_count] = {};
  std::uint64_t connects[transport_count] = {};
  std::int64_t channels = 0;
  std::uint64_t publications_received[source_count] = {};
  std::uint64_t deliveries[transport_count] = {};
  std::uint64_t frames_written[transport_count] = {};
  std::uint64_t bytes_written[transport_count] = {};
  std::int64_t outbound_bytes = 0;
  int redis_up = -1; ///< -1: in-process mode; 0 down; 1 up
  std::uint64_t redis_reconnects = 0;
  double uptime_seconds = 0;
  /// herald_publish_to_write_seconds per bucket of bucket_bounds_ns, +Inf
  /// last (not cumulative).
  std::uint64_t publish_to_write[bucket_count + 1] = {};
};
snapshot_t snapshot();

/// The exposition for GET /metrics (Content-Type
/// `text/plain; version=0.0.4`): every Herald figure, herald_build_info and
/// the process_* figures from /proc/self (absent when /proc cannot be read).
std::string render();

/// Stable label value of a transport / source / histogram name.
std::string_view to_string(transport t) noexcept;
std::string_view to_string(source s) noexcept;

} // namespace herald::net::metrics
