// connection_auth: the authentication part of a connection actor
// (docs/auth.md). Called from connection_actor's behavior on CAF's
// scheduler; all state lives in connection_state (`who`,
// `auth_generation`). It
// - gives a WebSocket without a token --ws-auth-timeout to send
//   {"op":"connect","token":...}, else closes it with 4001;
// - verifies connect and refresh tokens (a refresh must keep the `sub`) and
//   drops subscriptions a refreshed token no longer allows (error
//   `forbidden` per channel);
// - watches token expiry: a WebSocket gets {"op":"refresh_required"}
//   --token-refresh-grace seconds before exp (+leeway) and is closed with
//   4002 at exp (+leeway) unless a valid refresh came; an SSE stream gets a
//   final `herald.token_expired` event at exp (+leeway) and is closed;
// - refuses subscribes the principal may not read (`unauthorized` without a
//   token, `forbidden` with one); the connection keeps its other channels.
// With no policy (actor tests) or auth off (--insecure without a JWT key)
// nothing is checked and no timer runs.
#pragma once

#include "actors/connection_actor.hpp"
#include "net/wire/ws/protocol.hpp"

#include <cstdint>

namespace herald::actors {

/// Seconds since the Unix epoch by the connection's wall clock
/// (connection_options::wall_clock), for token times.
std::int64_t unix_now(const connection_state& st);

/// Starts the timers of a new connection: the connect deadline (WebSocket
/// without a token, unless --anonymous-streams) and the token's expiry.
void auth_start(connection_pointer self);

/// Handles a WebSocket `connect` or `refresh` command: replies `connected` /
/// `refreshed`, or an `error` (refresh: `unauthorized`, `forbidden` for
/// another `sub`; connect with a bad token closes with 4001).
void auth_command(connection_pointer self, const net::ws::command& cmd);

/// True when the principal may read `cmd.channel`; otherwise answers the
/// client with an `error` (`unauthorized` or `forbidden`) and returns false.
bool auth_may_subscribe(connection_pointer self, const net::ws::command& cmd);

/// True when tokens are checked (a policy with a JWT key).
bool auth_checking(const connection_state& st);

/// Seconds until the current token stops being valid (exp + leeway) minus
/// --token-refresh-grace, at least 1: the `ttl` a Centrifugo client refreshes
/// after. 0 when the token does not expire (or nothing is checked).
std::uint32_t auth_refresh_ttl(const connection_state& st);

/// Takes `next` as the connection's principal (after connect or refresh),
/// drops the subscriptions it may no longer read (telling the client: Herald
/// WS an `error` `forbidden` per channel; Centrifugo an `unsubscribe` push
/// with code 2000) and arms the new token's expiry timers.
void auth_adopt(connection_pointer self, net::auth::principal next);

/// The connect deadline passed: closes (4001) a still unauthenticated WebSocket.
void auth_on_wait_over(connection_pointer self);

/// Time to ask for a new token (WebSocket), if `generation` is current.
void auth_on_expiring(connection_pointer self, std::uint64_t generation);

/// The token expired, if `generation` is current: closes the connection.
void auth_on_expired(connection_pointer self, std::uint64_t generation);

} // namespace herald::actors
