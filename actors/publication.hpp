// publication: one event published to one channel, with its offset, and its
// frames for every transport. Built once by the channel actor and shared (as
// publication_ptr) by the history and every subscriber; never mutated.
#pragma once

#include "net/frame.hpp"

#include <caf/actor_clock.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace herald::actors {

struct publication {
  std::string channel;
  std::string epoch;              ///< the history generation the offset counts in
  std::uint64_t offset = 0;       ///< 1 for the first publication of an epoch
  std::string event;              ///< validated event name
  std::string data;               ///< compact JSON text
  net::frame sse;                 ///< SSE event block, without the id line
  net::frame ws;                  ///< WebSocket "publication" message
  caf::actor_clock::time_point at; ///< when the channel took it (history TTL)
  /// When this instance accepted it (net/metrics.hpp now_ns(): HTTP publish
  /// parsed, or Redis message received), for publish-to-write latency.
  std::int64_t accepted_ns = 0;
};

using publication_ptr = std::shared_ptr<const publication>;

/// Builds a publication and encodes its frames (SSE and WebSocket) once.
/// @param data compact JSON text (already validated).
/// @param accepted_ns when this instance accepted the publication
///        (metrics::now_ns()); 0: now.
publication_ptr make_publication(std::string channel, std::string epoch, std::uint64_t offset,
                                 std::string event, std::string data,
                                 caf::actor_clock::time_point at, std::int64_t accepted_ns = 0);

} // namespace herald::actors
