// session_control: the control seam between a connection actor and its session.
//
// A session (sse_session, ws_session, both on net/core/stream_session) implements
// it; the connection actor calls it from a CAF worker thread. Every call only
// appends to the session's shard queue (net/core/io_shard.hpp), in the same FIFO
// as the channels' answers and fan-outs, so it never blocks, may be called
// from any thread, and keeps its order relative to what the connection actor
// caused before (a subscribe's expect() precedes the channel's answer).
// Calls on a closed session are ignored. Publications do not pass here: the
// channel hands them to the session directly (net/fanout.hpp,
// delivery_sink, which this interface extends).
#pragma once

#include "net/wire/close_reason.hpp"
#include "net/fanout.hpp"
#include "net/wire/frame.hpp"
#include "net/wire/sse/cursor.hpp"
#include "net/wire/tags_filter.hpp"

#include <nlohmann/json.hpp>
#include <optional>

#include <chrono>
#include <cstdint>
#include <string>

namespace herald::net {

/// How a session ends: why, and what the client is told. The session maps
/// `code` and `text` to its bytes through its codec (net/wire/session_codec.hpp
/// close(): WebSocket a close frame in its dialect; SSE a last event where
/// the code has one, e.g. 1013 a `herald.gap`, 4002 `herald.token_expired`).
struct close_request {
  close_reason reason = close_reason::shutdown;
  /// Herald's close code (docs/protocol.md "Close codes"; RFC 6455 section
  /// 7.4.1 numbers).
  std::uint16_t code = 1000;
  /// Why, for the client (a WebSocket close reason is cut to 123 bytes,
  /// RFC 6455 section 5.5.1).
  std::string text;
  /// true: write what is queued before the final bytes (graceful shutdown);
  /// false: drop it (slow or misbehaving client).
  bool flush_queued = false;
  /// How long the session waits for its last bytes (and, WebSocket, the
  /// client's close answer) with no progress: while the peer's TCP keeps
  /// acknowledging bytes at least once per `grace`, the wait goes on, up to
  /// `grace_max` from the close's start; then the socket is closed anyway
  /// (a peer that does not read never lets the last bytes out). Unset: the
  /// session's --close-grace-ms and --close-grace-max-ms
  /// (net/core/session_options.hpp). Graceful shutdown sets both to the
  /// time it has left.
  std::optional<std::chrono::milliseconds> grace{};
  std::optional<std::chrono::milliseconds> grace_max{};
};

/// Outbound interface of one client connection.
class session_control : public delivery_sink {
public:
  /// Queues `message` for the client: one message of the connection's
  /// command layer (a reply or a notice: WebSocket one text or binary
  /// message in the dialect's encoding). Thread-safe; never blocks.
  virtual void send(std::string message) = 0;

  /// Ends the connection: drops what is queued but not yet written (unless
  /// `req.flush_queued`), sends the close request's final bytes where the
  /// socket still takes them within `req.grace` (counted from the last bytes
  /// the peer acknowledged), and
  /// reports `closed(req.reason)` through session_events. Thread-safe;
  /// idempotent (later calls are ignored).
  virtual void close(close_request req) = 0;

  /// SSE: the channels of the request and the client's cursor
  /// (subscription_table::begin()). Called once, before the subscribes.
  /// Thread-safe; ordered with send() and close().
  virtual void begin(std::vector<std::string> channels, std::vector<sse::cursor_entry> cursor) = 0;

  /// A subscribe to `channel` is on its way to the channel as the
  /// connection's request number `request` (net/core/subscription_table.hpp
  /// expect(): `id` the client's command id, `since` its position;
  /// `reject_unrecovered` the Centrifugo subscribe flag bit 2: answer a failed
  /// recovery with error 112; `delta` the client asked for delta
  /// compression, Centrifugo's `delta: "fossil"`; `filter` the
  /// subscription's filter, null for none). Where the session has a subscribe timeout
  /// (session_options::subscribe_timeout, cluster mode) and the channel does
  /// not answer in time, the session answers the client `unavailable` and
  /// reports session_events::on_subscribe_timeout().
  /// Thread-safe; ordered with send() and close().
  virtual void expect(std::string channel, std::uint64_t request, nlohmann::json id,
                      std::optional<stream_position> since, bool reject_unrecovered,
                      bool delta = false, tags_filter_ptr filter = nullptr) = 0;

  /// The client left `channel` (subscription_table::forget()).
  /// Thread-safe; ordered with send() and close().
  virtual void forget(std::string channel, std::optional<nlohmann::json> unsub_id) = 0;

  /// `channel` was dropped because a refreshed token no longer allows it:
  /// a pending subscribe is answered first, then the client is told `why`
  /// (subscription_table::revoke()). Thread-safe; ordered with send() and close().
  virtual void revoke(std::string channel, std::string why) = 0;

};

} // namespace herald::net
