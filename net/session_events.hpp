// session_events: the inbound seam between sessions and actors.
//
// A session calls these on its I/O shard thread; the implementation
// (actors/session_bridge) turns each call into a message to the connection
// actor, so every call returns at once.
#pragma once

#include "net/wire/close_reason.hpp"

#include <cstddef>
#include <string>

namespace herald::net {

/// Inbound interface of one client connection.
class session_events {
public:
  virtual ~session_events() = default;

  /// One complete WebSocket text message (valid UTF-8, at most the configured
  /// message size; Beast enforced both).
  virtual void on_text(std::string message) = 0;

  /// The outbound queue crossed the high-water mark (`above` true) or fell
  /// back to the low-water mark (`above` false). Reported once per episode.
  /// @param queued_bytes bytes queued but not yet written.
  virtual void on_watermark(bool above, std::size_t queued_bytes) = 0;

  /// The session is closed. Called exactly once; nothing follows it.
  virtual void on_closed(close_reason reason) = 0;
};

} // namespace herald::net
