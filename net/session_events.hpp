// session_events: the inbound seam between sessions and actors.
//
// A session calls these on its I/O shard thread; the implementation
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

  /// One complete WebSocket text message (valid UTF-8, at most the configured
  /// message size; Beast enforced both).
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
