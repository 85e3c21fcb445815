// session_events: the inbound seam between sessions and actors.
//
// A session tells its connection actor what it cannot decide itself: a
// client message (commands are the actor's), a subscribe it gave up, and
// that it closed. It calls these on its I/O shard thread; the implementation
// (actors/session_bridge) turns each call into a message to the connection
// actor, so every call returns at once.
#pragma once

#include "net/wire/close_reason.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace herald::net {

/// Inbound interface of one client connection.
class session_events {
public:
  virtual ~session_events() = default;

  /// One complete client message: WebSocket, in the dialect's frame kind
  /// (text, checked as UTF-8, or binary for Centrifugo's Protobuf), at most
  /// --max-ws-message-bytes, within the command rate limit; Herald's own
  /// framing (net/wire/ws/frame_codec.hpp) enforced all of it. SSE sends none.
  virtual void on_text(std::string message) = 0;

  /// The subscribe to `channel` numbered `request` got no answer within
  /// session_options::subscribe_timeout: the session answered the client
  /// (`unavailable`; Centrifugo 100, temporary) and dropped it; the actor
  /// forgets it too (and leaves the channel if it answered meanwhile).
  /// Reported once per given-up subscribe, before anything the client may
  /// send in reply to that answer.
  virtual void on_subscribe_timeout(std::string channel, std::uint64_t request) = 0;

  /// The session is closed. Called exactly once; nothing follows it.
  virtual void on_closed(close_reason reason) = 0;
};

} // namespace herald::net
