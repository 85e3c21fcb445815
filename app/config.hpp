// config: every option of the server, in one struct.
//
// The option table (config::config() in app/config.cpp) binds each member to
// its name, help and checks; app/options.hpp reads the values, highest
// precedence first, from the command line (`--name=value`), the environment
// (`HERALD_*`), a config file (CAF's INI: `[global]`, `[scheduler]`, ...),
// and the defaults below. CAF's scheduler settings (`scheduler.policy`,
// `scheduler.max-threads`, `scheduler.max-throughput`) are tuning knobs set
// the same way. Durations are whole seconds; sizes are bytes.
#pragma once

#include "net/auth/policy.hpp"
#include "net/core/session_options.hpp"
#include "net/wire/channel_class.hpp"
#include "actors/channel_actor.hpp"

#include <caf/actor_system_config.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>

namespace herald::app {

/// Where the defaults of the options come from (see the comment at the
/// option table in app/config.cpp): an option that sets a field of a lower
/// layer's struct takes its default from that struct, value-initialized, so
/// the number is written in one place only.
namespace defaults {
/// --sse-heartbeat ... --max-subscribe-attempts (net/core/session_options.hpp).
const net::session_options& session() noexcept;
/// --history-size, --history-ttl, --idempotency-window.
const actors::history_options& history() noexcept;
/// --ws-auth-timeout, --token-refresh-grace (net/auth/policy.hpp).
const net::auth::policy& auth() noexcept;
/// --jwt-algorithm, --jwt-leeway (net/auth/jwt_verifier.hpp).
const net::auth::jwt_config& jwt() noexcept;
/// --redis-prefix, --redis-pool-size, --redis-command-timeout-ms,
/// --redis-wait-replicas: net::redis::client::options (net/redis/client.hpp;
/// out of line, so this header does not pull in Asio and hiredis).
std::string redis_prefix();
std::size_t redis_pool_size() noexcept;
std::size_t redis_command_timeout_ms() noexcept;
std::size_t redis_wait_replicas() noexcept;
/// Whole seconds of `d` (options are whole seconds).
template <class Duration>
std::size_t seconds(Duration d) noexcept {
  return static_cast<std::size_t>(std::chrono::duration_cast<std::chrono::seconds>(d).count());
}
} // namespace defaults

struct config : caf::actor_system_config {
  // -- listening -------------------------------------------------------------
  std::string host = "0.0.0.0"; ///< address to listen on
  std::uint16_t port = 8080;    ///< port (0: pick a free one); env PORT
  /// I/O shards (event loops, one thread each); config() sets the number of cores
  std::size_t io_threads = 1;

  // -- heartbeats and timeouts (seconds) -------------------------------------
  // Defaults: net::session_options (net/core/session_options.hpp).
  /// SSE comment after this much silence
  std::size_t sse_heartbeat = defaults::seconds(defaults::session().sse_heartbeat);
  /// server ping period
  std::size_t ws_ping_interval = defaults::seconds(defaults::session().ws_ping_interval);
  /// close when the pong is this late
  std::size_t ws_pong_timeout = defaults::seconds(defaults::session().ws_pong_timeout);
  /// close when a write stalls this long
  std::size_t write_timeout = defaults::seconds(defaults::session().write_timeout);
  /// ms a closing connection waits for its last bytes with no bytes acknowledged
  std::size_t close_grace_ms = static_cast<std::size_t>(defaults::session().close_grace.count());
  /// ms a closing connection waits for its last bytes at most
  std::size_t close_grace_max_ms =
    static_cast<std::size_t>(defaults::session().close_grace_max.count());
  /// time to receive a whole HTTP request
  std::size_t request_timeout = defaults::seconds(defaults::session().request_timeout);
  /// time to receive a whole WebSocket message (all fragments)
  std::size_t ws_message_timeout = defaults::seconds(defaults::session().ws_message_timeout);

  // -- history ---------------------------------------------------------------
  // Defaults: actors::history_options (actors/channel_actor.hpp), which takes
  // them from net/wire/history_bounds.hpp.
  /// publications kept per channel
  std::size_t history_size = defaults::history().size;
  /// seconds a publication stays recoverable
  std::size_t history_ttl = defaults::seconds(defaults::history().ttl);
  /// seconds a publish's idempotency key is remembered
  std::size_t idempotency_window = defaults::seconds(defaults::history().idempotency_window);
  /// Channel classes by name pattern (net/wire/channel_class.hpp, docs/protocol.md
  /// "Channel classes"): per class history size and TTL, recovery mode,
  /// overflow policy, delta compression; empty: every channel as above.
  std::string channel_classes;

  // -- limits (bytes / counts) -----------------------------------------------
  // Defaults: net::session_options.
  /// outbound high-water mark per connection
  std::size_t client_max_buffer = defaults::session().client_max_buffer_bytes;
  /// POST /v1/publish body
  std::size_t max_publish_bytes = defaults::session().max_publish_bytes;
  /// one client WebSocket message
  std::size_t max_ws_message_bytes = defaults::session().max_ws_message_bytes;
  /// HTTP request line + headers
  std::size_t max_header_bytes = defaults::session().max_header_bytes;
  /// subscriptions per connection
  std::size_t max_channels_per_client = defaults::session().max_channels_per_client;
  /// channels per publish request
  std::size_t max_channels_per_publish = defaults::session().max_channels_per_publish;

  // -- abuse limits (docs/protocol.md "Limits"); over one, only the offender is affected
  // Defaults: net::session_options.
  /// header fields per HTTP request head; 431 above
  std::size_t max_header_count = defaults::session().max_header_count;
  /// seconds to finish a request head (slow headers); 408
  std::size_t header_timeout = defaults::seconds(defaults::session().header_timeout);
  /// WS commands per second per connection; 0: no limit
  std::size_t ws_commands_per_second =
    static_cast<std::size_t>(defaults::session().ws_commands_per_second);
  /// WS commands at once; this many refused in a row: close 1008
  std::size_t ws_commands_burst = defaults::session().ws_commands_burst;
  /// bytes the kernel may hold unsent for a connection with a conflated
  /// subscription (TCP_NOTSENT_LOWAT); 0: the kernel's default
  std::size_t conflate_unsent_bytes = defaults::session().conflate_unsent_bytes;
  /// WS permessage-deflate: compress messages of at least this many bytes
  /// for clients that offer it; 0: never negotiated
  std::size_t ws_deflate_min_bytes = defaults::session().ws_deflate_min_bytes;
  /// open connections per client address; 0: unlimited; 429
  std::size_t max_connections_per_ip = defaults::session().max_connections_per_ip;
  /// WS subscribes per connection (accepted or refused); 0: unlimited
  std::size_t max_subscribe_attempts = defaults::session().max_subscribe_attempts;

  // -- cluster mode (Redis) --------------------------------------------------
  /// redis://[:password@]host:port[/db], or redis+cluster://h1:p1,h2:p2 for a
  /// Redis Cluster (its seed nodes); empty: in-process; env REDIS_URL
  std::string redis_url;
  // Defaults: net::redis::client::options (prefix from script_settings,
  // command timeout and wait-replicas from net/redis/backend.hpp).
  std::string redis_prefix = defaults::redis_prefix(); ///< namespace of every Redis key and channel
  /// command connections (publish, sync)
  std::size_t redis_pool_size = defaults::redis_pool_size();
  /// a reply later than this drops the connection
  std::size_t redis_command_timeout_ms = defaults::redis_command_timeout_ms();
  /// Replicas that must confirm a publication (Redis WAIT) before it is
  /// acknowledged, so it survives a master failover; 0: none (docs/cluster.md).
  std::size_t redis_wait_replicas = defaults::redis_wait_replicas();

  // -- authentication and permissions (docs/auth.md) -------------------------
  // Secure by default: without a JWT key or an API key the server refuses to
  // start, unless --insecure turns the missing checks off.
  // Defaults of jwt-algorithm, jwt-leeway: net::auth::jwt_config; of
  // ws-auth-timeout, token-refresh-grace: net::auth::policy.
  /// HS256, RS256 or ES256; never taken from a token
  std::string jwt_algorithm{net::auth::to_string(defaults::jwt().algorithm)};
  std::string jwt_secret_file; ///< HS256 secret file (or env HERALD_JWT_SECRET)
  std::string jwt_public_key;  ///< RS256/ES256: PEM public key file
  /// seconds of clock skew allowed for exp, nbf, iat
  std::size_t jwt_leeway = defaults::seconds(defaults::jwt().leeway);
  std::string jwt_issuer;         ///< required `iss`; empty: not checked
  std::string jwt_audience;       ///< required in `aud`; empty: not checked
  std::string api_key_file;       ///< publish API key file (or env HERALD_API_KEY)
  bool anonymous_streams = false; ///< clients without a token may read stream: channels
  std::string allowed_origins;    ///< comma list of browser origins ("*": any) for WS and SSE CORS
  /// seconds a WS without a token has to send {"op":"connect"}
  std::size_t ws_auth_timeout = defaults::seconds(defaults::auth().ws_auth_timeout);
  /// seconds before expiry a WS is asked to refresh
  std::size_t token_refresh_grace = defaults::seconds(defaults::auth().refresh_grace);
  bool insecure = false; ///< development only: missing JWT key / API key turn checks off
  /// Built by load_auth() (app/auth_setup.hpp) from the options above.
  std::shared_ptr<const net::auth::policy> auth;

  // -- logging ---------------------------------------------------------------
  std::string log_level = "info"; ///< trace, debug, info, warn, error, off

  // -- operations: log format, client log limit, graceful shutdown -----------
  // (app/options.hpp reads every option from CLI, HERALD_* env and file)
  std::string log_format = "text";     ///< text (human) or json (one object per line)
  std::size_t log_client_rate = 10;    ///< log lines per second per kind caused by clients
  std::size_t shutdown_timeout = 10;   ///< seconds to flush clients after SIGTERM/SIGINT
  std::size_t shutdown_retry_ms = 500; ///< SSE `retry:` hint (ms) sent to clients at shutdown
  /// ms over which a shutdown closes the connections, in batches (0: all at once)
  std::size_t shutdown_drain_window = 2'000;

  config();

  /// Session limits derived from the options above.
  net::session_options session_options() const;
  /// History bounds derived from the options above.
  actors::history_options history_options() const;
  /// The channel classes (--channel-classes) over the default class of
  /// --history-size and --history-ttl. Call after validate() succeeded.
  std::shared_ptr<const net::channel_classes> classes() const;

  /// Checks values after parsing. @returns an empty string, or a message
  /// naming the bad option.
  std::string validate() const;

  /// Help text for `--help`: this struct's options and CAF's scheduler ones,
  /// each with its default and environment variable (app/options.hpp).
  std::string help() const;

  /// Names (as app/options.hpp's option_name()) of options whose values are
  /// secrets: never shown by --help, --dump-config or an error message.
  /// Named explicitly; none of Herald's own options holds a secret (the
  /// JWT secret and API key come from files or HERALD_JWT_SECRET /
  /// HERALD_API_KEY, and the Redis password inside --redis-url is masked).
  std::set<std::string, std::less<>> secret_options;

  /// Every option CAF and we declared (for app/options.hpp).
  const caf::config_option_set& option_set() const noexcept { return custom_options_; }
};

} // namespace herald::app
