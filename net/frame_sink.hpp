// frame_sink: the outbound seam between actors and sessions.
//
// A session (sse_session, ws_session) implements it; the connection actor
// calls it from a CAF worker thread. Every call only posts to the session's
// strand, so it never blocks and may be called from any thread. Calls on a
// closed session are ignored.
#pragma once

#include "net/close_reason.hpp"
#include "net/frame.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace herald::net {

/// What a closing session sends last.
struct close_request {
  close_reason reason = close_reason::shutdown;
  /// WebSocket close code (RFC 6455 section 7.4.1); ignored by SSE.
  std::uint16_t ws_code = 1000;
  /// WebSocket close reason text (at most 123 bytes, RFC 6455 section 5.5.1).
  std::string ws_text;
  /// SSE: a final event block written before the close (may be null).
  frame final_frame;
  /// true: write what is queued before the final bytes (graceful shutdown);
  /// false: drop it (slow or misbehaving client).
  bool flush_queued = false;
  /// How long the session waits for its last bytes before it closes the
  /// socket anyway (a peer that does not read never lets them out).
  std::chrono::milliseconds grace{2'000};
};

/// Outbound interface of one client connection.
class frame_sink {
public:
  virtual ~frame_sink() = default;

  /// Queues `body` for the client, preceded by `prefix` (an SSE `id:` line,
  /// or empty). `body` must not be null. `accepted_ns`: when the publication
  /// in `body` was accepted (net/metrics.hpp now_ns()), so the session can
  /// report publish-to-write latency once it is written; 0 for anything that
  /// is not a publication. Thread-safe; never blocks.
  virtual void deliver(std::string prefix, frame body, std::int64_t accepted_ns = 0) = 0;

  /// Ends the connection: drops what is queued but not yet written (unless
  /// `req.flush_queued`), sends the close request's final bytes where the
  /// socket still accepts them within `req.grace`, and
  /// reports `closed(req.reason)` through session_events. Thread-safe;
  /// idempotent (later calls are ignored).
  virtual void close(close_request req) = 0;
};

} // namespace herald::net
