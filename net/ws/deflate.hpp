// deflate: permessage-deflate's compression (RFC 7692 section 7.2) on zlib,
// with no context takeover either way (net/wire/ws/upgrade.hpp
// deflate_response): every message is compressed and inflated on its own, so
// a connection keeps no zlib state and a publication's compressed frame is
// made once and shared. Each thread keeps one deflate and one inflate stream
// (about 300 KiB for deflate's window and hash tables, 40 KiB for inflate),
// reset for each message. Apart from ws_session so the inflate fuzz target
// (tests/fuzz/ws_inflate.cpp) links it alone.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace herald::net::ws {

/// Compresses one message's payload as RFC 7692 section 7.2.1 says: raw
/// DEFLATE (2^15 window, zlib level 6), flushed with Z_SYNC_FLUSH, the
/// trailing 0x00 0x00 0xff 0xff removed. The result is the payload of a frame
/// with RSV1 set. Throws std::bad_alloc when zlib cannot allocate.
std::string deflate_message(std::string_view payload);

/// Why inflate_message() refused.
enum class inflate_status { ok, too_big, corrupt };

/// Inflates one compressed message (a frame payload whose first frame had
/// RSV1, RFC 7692 section 7.2.2: the 0x00 0x00 0xff 0xff tail is appended
/// here) into `out` (replaced), stopping as soon as more than `max_bytes`
/// would come out: a deflate bomb costs at most `max_bytes` (+ 16 KiB) of
/// memory before it is refused.
/// @returns ok; too_big when the message inflates past `max_bytes` (the
///          caller closes with 1009); corrupt when the bytes are not valid
///          DEFLATE, or use a preset dictionary, or end before a block ends
///          (1007). Never throws but std::bad_alloc.
inflate_status inflate_message(std::string_view compressed, std::size_t max_bytes,
                               std::string& out);

} // namespace herald::net::ws
