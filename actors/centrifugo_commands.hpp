// centrifugo_commands: the connection actor's command layer for a WebSocket
// that speaks Centrifugo's client protocol v2 in JSON (/connection/websocket;
// net/wire/centrifugo/protocol.hpp is the codec, docs/centrifugo.md the contract).
// Called from connection_actor's behavior on CAF's scheduler; everything it
// does goes through the same machinery as Herald's own WebSocket commands:
// connection_state's subscriptions and limits, connection_auth for tokens,
// session_control::expect()/forget() so the session's subscription_table answers
// subscribes (with the replay inside the reply) and unsubscribes in order.
#pragma once

#include "actors/connection_actor.hpp"

#include <string>

namespace herald::actors {

/// Handles one WebSocket text message of a Centrifugo client: one or more
/// commands separated by '\n', each answered by `id` exactly once, whatever
/// arrives before its reply (connect, subscribe, unsubscribe, refresh, ping;
/// any other method gets error 104; a subscribe that a later unsubscribe or
/// subscribe of its channel ends unanswered gets 107). A command
/// other than connect before connect, or a line without a readable `id`,
/// closes the connection with 3501 "bad request". Bad tokens close it with
/// 3500 (through Herald's 4001), an expired token at connect is answered
/// with error 109 so the SDK fetches a new one.
void centrifugo_on_text(connection_pointer self, const std::string& text);

} // namespace herald::actors
