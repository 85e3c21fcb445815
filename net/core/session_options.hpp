// Limits and timings every session needs. Filled from app/config.hpp, which
// documents each option. The defaults here are the only statement of those
// options' defaults: app/config.hpp takes them from a value-initialized
// session_options (a test in tests/app/options.cpp checks the mapping).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

namespace herald::net::auth {
struct policy;
}

namespace herald::net {

struct session_options {
  /// High-water mark of a connection's outbound queue (bytes); the low-water
  /// mark is half of it. The session closes the client by itself at twice
  /// the high-water mark (last line of defence if the actor is late).
  std::size_t client_max_buffer_bytes = 1024 * 1024;
  /// A connection with a subscription of overflow policy conflate
  /// (net/wire/channel_class.hpp) lets the kernel hold at most this many
  /// bytes not yet sent (Linux TCP_NOTSENT_LOWAT, bytes), and one write hands
  /// it at most this many (at least one whole message); the rest waits in
  /// the outbound queue, where conflation can replace it with newer
  /// publications. Without it a loopback or LAN socket's send buffer grows
  /// to MiBs, which conflation never reaches. Small, so that the newest state
  /// is never far behind on a slow link (docs/protocol.md "Overflow policy").
  /// 0: the kernel's default.
  std::size_t conflate_unsent_bytes = 1024;
  /// A closing session waits this long for its last bytes (the slow-client
  /// signal, a close frame, the WebSocket client's close answer) with no
  /// progress: each time the peer's TCP acknowledged bytes (TCP_INFO
  /// tcpi_bytes_acked) within it, the wait starts again ...
  std::chrono::milliseconds close_grace{2'000};
  /// ... up to this long from the close's start; then the socket is closed
  /// whatever is left (net/session_control.hpp close_request).
  std::chrono::milliseconds close_grace_max{30'000};
  /// A write that makes no progress for this long closes the connection.
  std::chrono::milliseconds write_timeout{30'000};
  /// SSE: a comment line goes out after this much idle time.
  std::chrono::milliseconds sse_heartbeat{15'000};
  /// SSE: `retry:` hint sent at the start of the stream (ms).
  unsigned sse_retry_ms = 2'000;
  /// SSE: `retry:` hint of the last event at shutdown (ms, --shutdown-retry-ms).
  unsigned shutdown_retry_ms = 500;
  /// WebSocket: a subscribe its channel has not answered within this long is
  /// answered `unavailable` (Centrifugo: 100, temporary) and dropped; the
  /// client may subscribe again. Cluster mode (a channel waits for Redis
  /// before it answers; the server sets twice --redis-command-timeout-ms);
  /// zero: wait as long as it takes (in-process channels answer at once).
  std::chrono::milliseconds subscribe_timeout{0};
  /// WebSocket: the server pings this often ...
  std::chrono::milliseconds ws_ping_interval{25'000};
  /// ... and closes the connection when the pong is this late.
  std::chrono::milliseconds ws_pong_timeout{10'000};
  /// WebSocket: largest client message (bytes, across fragments): 1009 above.
  std::size_t max_ws_message_bytes = 64 * 1024;
  /// WebSocket: time a client message (or a frame) may take from its first
  /// byte to its last, across fragments: a message left open longer, idle or
  /// trickling, closes the connection with 1008.
  std::chrono::milliseconds ws_message_timeout{10'000};
  /// WebSocket permessage-deflate (RFC 7692), negotiated when the client
  /// offers it: messages of at least this many bytes go compressed (a
  /// publication's compressed frame made once and shared); smaller ones
  /// plain. 0: the extension is never negotiated.
  std::size_t ws_deflate_min_bytes = 256;
  /// HTTP: largest request head (request line and headers, bytes): 431 above.
  std::size_t max_header_bytes = 8 * 1024;
  /// HTTP: largest publish body (bytes): 413 above.
  std::size_t max_publish_bytes = 64 * 1024;
  /// HTTP: time allowed to receive a whole request (head and body).
  std::chrono::milliseconds request_timeout{10'000};
  /// Channels one connection may subscribe to.
  std::size_t max_channels_per_client = 64;
  /// Channels one publish request may name.
  std::size_t max_channels_per_publish = 64;
  /// Authentication and permissions (net/auth/policy.hpp). Never null once
  /// the server runs; null only in tests of code that does not look at it.
  std::shared_ptr<const auth::policy> auth;

  // -- abuse limits (docs/protocol.md "Limits"; app/config.hpp documents each)
  /// HTTP: most header fields in one request head: 431 headers_too_large above.
  std::size_t max_header_count = 100;
  /// HTTP: time allowed from the start of a request until its head is complete
  /// (slow headers): 408 header_timeout, or a silent close if nothing came.
  std::chrono::milliseconds header_timeout{5'000};
  /// WebSocket: commands per second per connection (token bucket refill rate);
  /// 0 turns the limit off.
  double ws_commands_per_second = 20;
  /// WebSocket: bucket size: commands a connection may send at once. A client
  /// that keeps sending while its bucket is empty is closed with 1008 after
  /// this many refused commands in a row.
  std::size_t ws_commands_burst = 100;
  /// Connections open at once from one client address (0: unlimited):
  /// more are answered 429 too_many_connections and closed.
  std::size_t max_connections_per_ip = 1024;
  /// WebSocket: subscribe commands (accepted or refused) one connection may
  /// send in its lifetime: error too_many_subscribes, then close 1008.
  std::size_t max_subscribe_attempts = 1024;
};

/// One session_options shared by every session of a listener: a session
/// holds this pointer (16 bytes), not a copy of the options.
using session_options_ptr = std::shared_ptr<const session_options>;

} // namespace herald::net
