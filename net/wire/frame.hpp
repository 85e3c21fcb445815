// A frame: the bytes of one outbound unit for one transport (an SSE event
// block, or the payload of one WebSocket text message). Encoded once per
// publication and shared by every subscriber; nobody mutates a frame.
#pragma once

#include <memory>
#include <string>

namespace herald::net {

/// Immutable, shared, encoded bytes. Never null when handed to a sink.
using frame = std::shared_ptr<const std::string>;

/// Wraps `bytes` into a frame. Allocates once.
inline frame make_frame(std::string bytes) {
  return std::make_shared<const std::string>(std::move(bytes));
}

} // namespace herald::net
