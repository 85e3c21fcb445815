// Minimal reading of an HTTP/1.1 response head, enough for a subscriber's
// handshake (SSE 200 or WebSocket 101) and the baseline server's requests.
#pragma once

#include <cstddef>
#include <string_view>

namespace herald::loadtest::http {

/// Position just past the blank line ending the head ("\r\n\r\n") in `buf`,
/// or std::string_view::npos while the head is incomplete.
std::size_t head_end(std::string_view buf) noexcept;

/// Status code of a response head ("HTTP/1.1 200 OK..."), or 0 when the
/// status line is malformed.
int status_code(std::string_view head) noexcept;

/// Value of header `name` (case-insensitive, surrounding blanks trimmed) in
/// a head, or an empty view when absent (names compare as net::iequals).
std::string_view header_value(std::string_view head, std::string_view name) noexcept;

} // namespace herald::loadtest::http
