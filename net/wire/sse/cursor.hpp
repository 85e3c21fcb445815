// SSE cursor: the `id:` of every SSE event, and what clients send back as
// `Last-Event-ID` (or `?last_event_id=`). One SSE connection carries several
// channels, so the cursor holds one stream position per channel.
//
// Format (docs/protocol.md, "SSE cursor"): entries joined by '_', each entry
// `<channel hash: 8 lower-case hex>-<epoch>-<offset decimal>`. It contains
// only [0-9a-z_-], so it can never break an SSE line (WHATWG HTML,
// "Server-sent events": the id field must not contain LF, CR or NUL).
#pragma once

#include "net/wire/errors.hpp"
#include "net/wire/stream_position.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace herald::net::sse {

/// One channel's entry in a cursor.
struct cursor_entry {
  std::uint32_t channel_hash = 0; ///< channel_hash(name)
  stream_position position;
};

/// Maximum cursor length accepted from a client (bytes).
inline constexpr std::size_t max_cursor_bytes = 4096;

/// FNV-1a 32-bit hash of a channel name; identifies a channel in a cursor.
std::uint32_t channel_hash(std::string_view channel) noexcept;

/// Appends the encoding of one entry to `out`.
void append_entry(std::string& out, const cursor_entry& e);

/// Encodes a whole cursor (entries in the given order).
std::string encode_cursor(const std::vector<cursor_entry>& entries);

/// Parses a cursor sent by a client. Never throws.
/// @param max_entries refuse cursors with more entries than this.
/// @returns false and leaves `out` unspecified when the text is malformed:
///          empty, over max_cursor_bytes, a bad hash, an epoch that is not
///          1-32 of [a-z0-9], an offset that is not a decimal within
///          max_client_offset, or a repeated channel hash. The caller answers
///          `errc::invalid_cursor` (HTTP 400).
bool parse_cursor(std::string_view text, std::size_t max_entries, std::vector<cursor_entry>& out);

} // namespace herald::net::sse
