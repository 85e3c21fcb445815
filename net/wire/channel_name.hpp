// Channel names: the only two shapes a client may subscribe or publish to.
//
//   stream:<1-128 characters of [A-Za-z0-9_.-]>    e.g. "stream:1001"
//   user:<Stellar account id, SEP-23 StrKey G...>  e.g. "user:GA7Q...VSGZ"
//
// Prefixes are lowercase and case-sensitive. See docs/protocol.md,
// "Channel names".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <system_error>

namespace herald::net {

/// Which of the two channel shapes a valid name has.
enum class channel_kind : std::uint8_t { stream, user };

/// Longest id allowed after "stream:".
inline constexpr std::size_t max_stream_id_length = 128;

/// Checks a channel name. `name` is raw bytes (no trimming, no decoding).
/// Valid names are "stream:" followed by 1-128 characters of [A-Za-z0-9_.-],
/// or "user:" followed by a Stellar account id (SEP-23 StrKey, see
/// is_account_id). Returns an empty error_code when valid, otherwise
/// make_error_code(herald::errc::invalid_channel) - for an empty name, any
/// other or differently-cased prefix, an empty or over-long stream id, any
/// byte outside the allowed set (space, NUL, CR/LF, non-ASCII, ...), or an
/// invalid account id. Never throws.
std::error_code validate_channel(std::string_view name) noexcept;

/// The kind of a channel name. Precondition: validate_channel(valid_name)
/// returned no error; only the prefix is inspected, so for any other input
/// the result is meaningless (but still defined: not "user:" gives stream).
channel_kind kind_of(std::string_view valid_name) noexcept;

} // namespace herald::net
