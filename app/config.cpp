#include "app/config.hpp"

#include "app/options.hpp"
#include "net/redis/client.hpp"

#include <caf/atom.hpp>
#include <caf/config_option_set.hpp>
#include <caf/config_option_adder.hpp>

#include <limits>
#include <sstream>
#include <thread>

namespace herald::app {

namespace defaults {

// Function-local statics: ready whenever a config is made, even during
// another translation unit's static initialization.
const net::session_options& session() noexcept {
  static const net::session_options d{};
  return d;
}

const actors::history_options& history() noexcept {
  static const actors::history_options d{};
  return d;
}

const net::auth::policy& auth() noexcept {
  static const net::auth::policy d{};
  return d;
}

const net::auth::jwt_config& jwt() noexcept {
  static const net::auth::jwt_config d{};
  return d;
}

namespace {
const net::redis::client::options& redis() noexcept {
  static const net::redis::client::options d{};
  return d;
}
} // namespace

std::string redis_prefix() {
  return redis().prefix;
}

std::size_t redis_pool_size() noexcept {
  return redis().pool_size;
}

std::size_t redis_command_timeout_ms() noexcept {
  return static_cast<std::size_t>(redis().command_timeout.count());
}

std::size_t redis_wait_replicas() noexcept {
  return redis().wait_replicas;
}

} // namespace defaults

// The option table: every option of the server, its name, its description
// and (by the member it binds) its default. One place for every default:
//
// - A default is the initial value of the bound member of config
//   (app/config.hpp). An option that fills a field of a lower layer's struct
//   (net::session_options, actors::history_options, net::auth::policy,
//   net::auth::jwt_config, net::redis::client::options) starts from that
//   struct's value-initialized field (config.hpp's defaults::), so the number
//   is written once, where net/ and actors/ code and their tests also get it.
//   The others (host, port, log-*, shutdown-*, ...) are written in
//   config.hpp. Machine-dependent defaults (io-threads, scheduler.*) are set
//   in the constructor below and described in words by default_note()
//   (app/options.hpp).
// - --help, --help-markdown (the README table) and --dump-config print the
//   bound value (app/options.cpp), never a number from a description: a
//   description says what the option does and never restates its default.
// - tests/app/options.cpp checks that every option's default is rendered
//   from that one value in all three outputs, that no description restates
//   it, and that the lower structs' defaults equal the table's (structs that
//   share a default take it from one constant: net/wire/history_bounds.hpp,
//   net/redis/backend.hpp, net::session_options).
config::config() {
  opt_group{custom_options_, "global"}
    .add(host, "host", "address to listen on")
    .add(port, "port", "TCP port; 0 picks a free one")
    .add(io_threads, "io-threads",
         "I/O shards: event loops with a thread each; a connection stays on one")
    .add(sse_heartbeat, "sse-heartbeat", "seconds of silence before an SSE comment heartbeat")
    .add(ws_ping_interval, "ws-ping-interval", "seconds between server WebSocket pings")
    .add(ws_pong_timeout, "ws-pong-timeout", "seconds to wait for a pong before closing")
    .add(write_timeout, "write-timeout", "seconds a stalled write may last before closing")
    .add(close_grace_ms, "close-grace-ms",
         "ms a closing connection (slow client, token expired, ...) waits for its last bytes "
         "(the close signal) while the peer acknowledges nothing; each acknowledged byte "
         "starts the wait again, up to --close-grace-max-ms")
    .add(close_grace_max_ms, "close-grace-max-ms",
         "ms a closing connection waits for its last bytes at most, however slowly the peer "
         "still reads")
    .add(request_timeout, "request-timeout", "seconds to receive a whole HTTP request")
    .add(ws_message_timeout, "ws-message-timeout",
         "seconds to receive a whole WebSocket message, from its first byte to its last "
         "fragment; longer closes with 1008")
    .add(history_size, "history-size", "publications kept per channel for recovery")
    .add(history_ttl, "history-ttl", "seconds a publication stays recoverable")
    .add(idempotency_window, "idempotency-window",
         "seconds a publish's idempotency key is remembered: a retry within it gets the "
         "first offsets and delivers nothing")
    .add(channel_classes, "channel-classes",
         "channel classes, ';'-separated: a pattern (stream:*, user:*, a longer prefix ending "
         "in *, a channel name, or * for every other channel) then key=value settings: "
         "history-size, history-ttl (s), recovery=stream|cache, overflow=close|conflate, "
         "delta=allowed|refused")
    .add(client_max_buffer, "client-max-buffer",
         "bytes queued for one client before it is closed as slow")
    .add(conflate_unsent_bytes, "conflate-unsent-bytes",
         "bytes the kernel may hold unsent for a connection with a subscription of overflow "
         "policy conflate (TCP_NOTSENT_LOWAT), and the most one write hands it: the rest waits "
         "in Herald's queue, where newer publications replace it; 0: as the kernel sets it")
    .add(max_publish_bytes, "max-publish-bytes", "largest publish body in bytes, 413 above")
    .add(max_ws_message_bytes, "max-ws-message-bytes",
         "largest client WebSocket message in bytes (inflated, with permessage-deflate), close "
         "1009 above")
    .add(ws_deflate_min_bytes, "ws-deflate-min-bytes",
         "WebSocket permessage-deflate: messages of at least this many bytes go compressed to "
         "clients that offer it; 0: never negotiated")
    .add(max_header_bytes, "max-header-bytes", "largest HTTP request head in bytes, 431 above")
    .add(max_channels_per_client, "max-channels-per-client", "channels one connection may hold")
    .add(max_channels_per_publish, "max-channels-per-publish", "channels one publish may name")
    // Abuse limits (docs/protocol.md "Limits").
    .add(max_header_count, "max-header-count", "most header fields in one HTTP request, 431 above")
    .add(header_timeout, "header-timeout",
         "seconds to receive a request's whole head (slow headers), 408 after")
    .add(ws_commands_per_second, "ws-commands-per-second",
         "WebSocket commands per second per connection, rate_limited above; 0: off")
    .add(ws_commands_burst, "ws-commands-burst",
         "WebSocket commands a connection may send at once; that many refused in a row close "
         "it with 1008")
    .add(max_connections_per_ip, "max-connections-per-ip",
         "connections open at once from one client address, 429 above; 0: unlimited; behind a "
         "load balancer use 0")
    .add(max_subscribe_attempts, "max-subscribe-attempts",
         "WebSocket subscribe commands per connection, accepted or refused; then error and "
         "close 1008; 0: unlimited")
    .add(redis_url, "redis-url",
         "redis://[:password@]host:port[/db]: cluster mode through Redis; "
         "redis+cluster://[:password@]host:port,host:port...: through a Redis Cluster, "
         "from its seed nodes; empty: in-process mode")
    .add(redis_prefix, "redis-prefix", "prefix of every Redis key and channel")
    .add(redis_pool_size, "redis-pool-size", "Redis command connections")
    .add(redis_command_timeout_ms, "redis-command-timeout-ms",
         "ms to wait for a Redis reply, from when Redis can start the command (the reply "
         "before it came), before dropping the connection; twice this is the longest a "
         "WebSocket subscribe waits for its channel (then unavailable)")
    .add(redis_wait_replicas, "redis-wait-replicas",
         "acknowledge a publication only once this many replicas of its Redis master "
         "confirmed it (Redis WAIT, up to half of --redis-command-timeout-ms; else 503); "
         "0: once the master stored it")
    .add(log_level, "log-level", "trace, debug, info, warn, error or off")
    // -- operations: log format, client log limit, graceful shutdown ---------
    .add(log_format, "log-format", "text or json: one JSON object per log line")
    .add(log_client_rate, "log-client-rate",
         "log lines per second for each kind of client-caused event (bad request, protocol "
         "error, accept error); the rest is counted in one 'suppressed' line")
    .add(shutdown_timeout, "shutdown-timeout",
         "seconds after SIGTERM/SIGINT to flush each client's buffer before exiting")
    .add(shutdown_retry_ms, "shutdown-retry-ms",
         "ms in the SSE retry: hint sent at shutdown, so clients reconnect soon")
    .add(shutdown_drain_window, "shutdown-drain-window",
         "ms over which SIGTERM/SIGINT closes the connections, in batches, so their reconnects "
         "spread over the other instances (at most half of --shutdown-timeout; 0: all at once)");
  // Authentication and permissions (docs/auth.md).
  opt_group{custom_options_, "global"}
    .add(jwt_algorithm, "jwt-algorithm", "accepted JWT algorithm: HS256, RS256 or ES256")
    .add(jwt_secret_file, "jwt-secret-file",
         "file holding the HS256 secret, at least 32 bytes (or env HERALD_JWT_SECRET)")
    .add(jwt_public_key, "jwt-public-key", "PEM public key file for RS256 / ES256")
    .add(jwt_leeway, "jwt-leeway", "seconds of clock skew allowed for exp, nbf and iat")
    .add(jwt_issuer, "jwt-issuer", "required iss claim (empty: not checked)")
    .add(jwt_audience, "jwt-audience", "required aud claim (empty: not checked)")
    .add(api_key_file, "api-key-file",
         "file holding the API key POST /v1/publish needs (or env HERALD_API_KEY)")
    .add(anonymous_streams, "anonymous-streams",
         "clients without a token may read stream: channels (and nothing else)")
    .add(allowed_origins, "allowed-origins",
         "comma list of browser origins allowed for WebSocket upgrades and SSE CORS ('*': any)")
    .add(ws_auth_timeout, "ws-auth-timeout",
         "seconds a WebSocket without a token has to send {\"op\":\"connect\"}")
    .add(token_refresh_grace, "token-refresh-grace",
         "seconds before token expiry a WebSocket is asked to refresh")
    .add(insecure, "insecure",
         "development only: without a JWT key or API key, turn those checks off");
  // Measured on 2 cores (shared/notes/caf-0.17.md section 5): a sharing
  // scheduler with one worker per core beat work stealing for cheap fan-out.
  auto cores = std::max(1u, std::thread::hardware_concurrency());
  set("scheduler.policy", caf::atom("sharing"));
  set("scheduler.max-threads", static_cast<size_t>(cores));
  // CAF's own default (SIZE_MAX) is no value an option can be given (a
  // config value is a signed 64-bit integer): the same "unlimited" in a value
  // --dump-config writes and reads back.
  set("scheduler.max-throughput", static_cast<size_t>(std::numeric_limits<std::int64_t>::max()));
  // One I/O shard per core: fan-out writes to the sessions of each shard on
  // its own thread (net/core/io_shard.hpp, docs/architecture.md).
  io_threads = cores;
}

net::session_options config::session_options() const {
  net::session_options o;
  o.client_max_buffer_bytes = client_max_buffer;
  o.conflate_unsent_bytes = conflate_unsent_bytes;
  o.write_timeout = std::chrono::seconds(write_timeout);
  o.close_grace = std::chrono::milliseconds(close_grace_ms);
  o.close_grace_max = std::chrono::milliseconds(close_grace_max_ms);
  o.sse_heartbeat = std::chrono::seconds(sse_heartbeat);
  o.ws_ping_interval = std::chrono::seconds(ws_ping_interval);
  o.ws_pong_timeout = std::chrono::seconds(ws_pong_timeout);
  o.max_ws_message_bytes = max_ws_message_bytes;
  o.max_header_bytes = max_header_bytes;
  o.max_publish_bytes = max_publish_bytes;
  o.request_timeout = std::chrono::seconds(request_timeout);
  o.ws_message_timeout = std::chrono::seconds(ws_message_timeout);
  o.ws_deflate_min_bytes = ws_deflate_min_bytes;
  o.max_channels_per_client = max_channels_per_client;
  o.max_channels_per_publish = max_channels_per_publish;
  o.auth = auth;
  o.max_header_count = max_header_count;
  o.header_timeout = std::chrono::seconds(header_timeout);
  o.ws_commands_per_second = static_cast<double>(ws_commands_per_second);
  o.ws_commands_burst = ws_commands_burst;
  o.max_connections_per_ip = max_connections_per_ip;
  o.max_subscribe_attempts = max_subscribe_attempts;
  o.shutdown_retry_ms = static_cast<unsigned>(shutdown_retry_ms);
  // Cluster mode: a channel answers once Redis confirmed its watch and its
  // sync, two round trips each bounded by --redis-command-timeout-ms.
  o.subscribe_timeout = redis_url.empty()
                          ? std::chrono::milliseconds{0}
                          : std::chrono::milliseconds{2 * redis_command_timeout_ms};
  return o;
}

actors::history_options config::history_options() const {
  return {history_size, std::chrono::seconds(history_ttl),
          std::chrono::seconds(idempotency_window)};
}

std::shared_ptr<const net::channel_classes> config::classes() const {
  std::string error;
  auto parsed = net::channel_classes::parse(channel_classes, history_size,
                                            std::chrono::seconds(history_ttl), error);
  if (!parsed)
    return std::make_shared<const net::channel_classes>(history_size,
                                                        std::chrono::seconds(history_ttl));
  return std::make_shared<const net::channel_classes>(std::move(*parsed));
}

std::string config::validate() const {
  auto positive = [](std::size_t v, const char* name) -> std::string {
    return v == 0 ? std::string{"--"} + name + " must be greater than 0" : std::string{};
  };
  for (auto msg : {positive(io_threads, "io-threads"),
                   positive(sse_heartbeat, "sse-heartbeat"),
                   positive(ws_ping_interval, "ws-ping-interval"),
                   positive(ws_pong_timeout, "ws-pong-timeout"),
                   positive(write_timeout, "write-timeout"),
                   positive(close_grace_ms, "close-grace-ms"),
                   positive(close_grace_max_ms, "close-grace-max-ms"),
                   positive(request_timeout, "request-timeout"),
                   positive(ws_message_timeout, "ws-message-timeout"),
                   positive(history_size, "history-size"),
                   positive(history_ttl, "history-ttl"),
                   positive(idempotency_window, "idempotency-window"),
                   positive(client_max_buffer, "client-max-buffer"),
                   positive(max_publish_bytes, "max-publish-bytes"),
                   positive(max_ws_message_bytes, "max-ws-message-bytes"),
                   positive(max_header_bytes, "max-header-bytes"),
                   positive(max_channels_per_client, "max-channels-per-client"),
                   positive(max_channels_per_publish, "max-channels-per-publish"),
                   positive(max_header_count, "max-header-count"),
                   positive(header_timeout, "header-timeout"),
                   positive(ws_commands_burst, "ws-commands-burst"),
                   positive(redis_pool_size, "redis-pool-size"),
                   positive(redis_command_timeout_ms, "redis-command-timeout-ms"),
                   positive(ws_auth_timeout, "ws-auth-timeout")})
    if (!msg.empty())
      return msg;
  if (redis_prefix.empty() || redis_prefix.size() > 64 ||
      redis_prefix.find_first_of(" \r\n\t*?[]{}") != std::string::npos)
    return "--redis-prefix must be 1-64 characters without spaces, glob characters or braces "
           "(braces would change the Redis Cluster hash tag of every key)";
  if (std::string error;
      !net::channel_classes::parse(channel_classes, history_size, std::chrono::seconds(history_ttl),
                                   error))
    return "--channel-classes: " + error;
  if (io_threads > 64)
    return "--io-threads must be at most 64";
  if (redis_wait_replicas > 16)
    return "--redis-wait-replicas must be 0-16";
  static const char* levels[] = {"trace", "debug", "info", "warn", "error", "off"};
  if (std::none_of(std::begin(levels), std::end(levels),
                   [&](const char* l) { return log_level == l; }))
    return "--log-level must be one of trace, debug, info, warn, error, off";
  if (log_format != "text" && log_format != "json")
    return "--log-format must be text or json";
  if (shutdown_timeout == 0 || shutdown_timeout > 3600)
    return "--shutdown-timeout must be 1-3600 seconds";
  if (shutdown_retry_ms == 0 || shutdown_retry_ms > 60'000)
    return "--shutdown-retry-ms must be 1-60000 ms";
  if (log_client_rate == 0)
    return "--log-client-rate must be greater than 0";
  return {};
}

std::string config::help() const {
  return help_text(*this);
}

} // namespace herald::app
