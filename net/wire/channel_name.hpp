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
#include <string>
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

/// Which channel-name rule a name breaks (channel_fault::none: valid), so
/// that an error can point at the fault.
enum class channel_fault : std::uint8_t {
  none,
  prefix,           ///< neither "stream:" nor "user:" (also empty, or another case)
  stream_id_length, ///< stream id empty or longer than max_stream_id_length
  stream_id_char,   ///< a byte outside [A-Za-z0-9_.-] in the stream id
  account_muxed,    ///< "user:M...": a muxed account, not an account id
  account_case,     ///< lowercase letters in the account id
  account_length,   ///< the account id is not 56 characters
  account_alphabet, ///< a character outside A-Z2-7 in the account id
  account_version,  ///< not a 'G...' account id (e.g. a secret seed 'S...')
  account_checksum  ///< the StrKey checksum does not match (or a non-canonical encoding)
};

/// Checks a channel name as validate_channel does and says which rule it
/// breaks first. Never throws.
channel_fault check_channel(std::string_view name) noexcept;

/// The rule a fault breaks, in words, e.g. "the account id's StrKey checksum
/// does not match"; "" for channel_fault::none.
std::string_view describe(channel_fault fault) noexcept;

/// The error detail every caller gives for an invalid channel:
/// `invalid channel "<name>": <describe(fault)>`, the name shortened past
/// 140 bytes. `where`, when not empty, goes before it (e.g. "channels[2]: ").
/// @pre fault != channel_fault::none
std::string channel_error_detail(std::string_view name, channel_fault fault,
                                 std::string_view where = {});

/// The kind of a channel name. Precondition: validate_channel(valid_name)
/// returned no error; only the prefix is inspected, so for any other input
/// the result is meaningless (but still defined: not "user:" gives stream).
channel_kind kind_of(std::string_view valid_name) noexcept;

} // namespace herald::net
