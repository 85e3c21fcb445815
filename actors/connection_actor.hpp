// connection_actor: the control plane of one client connection (SSE or
// WebSocket).
//
// Spawned by the service (app/) when a session is ready; talks to its session
// only through net::session_control, and hears from it through the session bridge
// (text, subscribe timeout, closed). Parses WebSocket commands and answers them,
// checks authentication and permissions, and keeps the set of channels the
// connection subscribes to (limits, unsubscribe, whom to leave). Publications
// never pass through it: a channel hands them, with its subscribe answers, to
// the session directly (net/fanout.hpp), and the session keeps each
// channel's position (net/core/subscription_table.hpp): the table owns what
// the client sees of a subscription (pending id, active, position), the
// actor only which channel actor to leave. The slow-client policy is the
// session's (net/core/stream_session.hpp: it closes at the high-water mark
// and reports closed). Ends when the session reports closed; when it ends
// for any other reason it closes the session. Runs on CAF's scheduler.
// A WebSocket speaks Herald's commands (docs/protocol.md) or Centrifugo's
// (connection_options::dialect; actors/centrifugo_commands.hpp): only the
// command layer differs, subscriptions, limits and auth are shared.
#pragma once

#include "actors/messages.hpp"
#include "net/auth/policy.hpp"
#include "net/core/session_options.hpp"
#include "net/session_control.hpp"
#include "net/wire/sse/cursor.hpp"
#include "net/wire/tags_filter.hpp"
#include "net/wire/ws/dialect.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <chrono>
#include <functional>
#include <optional>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

namespace herald::actors {

enum class transport : std::uint8_t { sse, ws };

/// The system clock as the token checks read it: ms since the Unix epoch.
std::chrono::milliseconds system_wall_clock();

struct connection_options {
  transport kind = transport::ws;
  std::size_t max_channels =
    net::session_options{}.max_channels_per_client; ///< --max-channels-per-client
  /// Authentication policy (null: no checks at all, as in actor tests).
  std::shared_ptr<const net::auth::policy> auth;
  /// Who the client is when the connection opens (SSE: checked already;
  /// WebSocket: from the upgrade's Authorization header, or anonymous).
  net::auth::principal who;
  /// --max-subscribe-attempts: WS subscribe commands (accepted or refused) in
  /// the connection's life; the next one gets `too_many_subscribes` and the
  /// connection is closed with 1008. 0: unlimited (the actor tests' default;
  /// the server always sets it from --max-subscribe-attempts).
  std::size_t max_subscribe_attempts = 0;
  /// WebSocket: the command layer (Herald's or Centrifugo's).
  net::ws::dialect dialect = net::ws::dialect::herald;
  /// Centrifugo: the server's ping period announced in the connect reply
  /// (--ws-ping-interval; the session sends a `{}` at least this often).
  std::chrono::milliseconds ping_interval = net::session_options{}.ws_ping_interval;
  /// The wall clock token times (exp, nbf, iat) are checked against, in ms
  /// since the Unix epoch: the system clock; actor tests give one that moves
  /// with the test scheduler's clock, so expiry timers and checks agree.
  std::function<std::chrono::milliseconds()> wall_clock = system_wall_clock;
  /// Centrifugo: the `version` of connect and refresh replies.
  std::string server_version = "herald";
  /// SSE: the `?event=` filter of every channel (null: none), sent with each
  /// subscribe (subscribe_request::filter).
  net::tags_filter_ptr sse_filter{};
};

/// One (connection, channel) pair, as the control plane sees it: whom to
/// leave. Whether the client sees it pending or active is the session's
/// (net/core/subscription_table.hpp).
struct subscription {
  caf::actor channel;        ///< null until a channel answered
  std::uint64_t request = 0; ///< number of the latest subscribe
};

struct connection_state {
  std::shared_ptr<net::session_control> sink;
  caf::actor registry;
  connection_options options;
  std::unordered_map<std::string, subscription> subs;
  bool closing = false;
  std::uint64_t next_request = 1;     ///< numbers subscribe requests
  net::auth::principal who;           ///< current identity (connect/refresh replace it)
  std::uint64_t auth_generation = 0;  ///< expiry timers of older tokens are ignored
  std::size_t subscribe_attempts = 0; ///< WS subscribe commands received
  bool connected = false;             ///< Centrifugo: the connect command was answered
  std::string client_id;              ///< Centrifugo: `client` of the connect reply
};

using connection_pointer = caf::stateful_actor<connection_state>*;

/// Sends a subscribe for `channel` (through the registry) as the next request
/// number, recording it in `subs` (a renewed subscribe replaces the pending
/// one). The caller told the session first (session_control::expect()).
/// @param epoch_history see subscribe_request::epoch_history (Centrifugo).
/// @param delta see subscribe_request::delta (Centrifugo's `delta: "fossil"`).
/// @param filter see subscribe_request::filter (null: none).
void send_subscribe(connection_pointer self, const std::string& channel,
                    std::optional<net::stream_position> since, bool epoch_history = false,
                    bool delta = false, net::tags_filter_ptr filter = nullptr);

/// Closes the client once (later calls are ignored).
void close_client(connection_pointer self, net::close_request req);

/// Behavior of a connection actor.
/// @param initial SSE: the channels to subscribe to at once, with the
///        positions from the client's cursor; empty for WebSocket.
caf::behavior connection_actor(connection_pointer self, std::shared_ptr<net::session_control> sink,
                               caf::actor registry, connection_options options,
                               std::vector<std::string> initial,
                               std::vector<net::sse::cursor_entry> cursor);

} // namespace herald::actors
