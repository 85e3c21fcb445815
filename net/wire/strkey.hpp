// Stellar StrKey (SEP-23) for ed25519 account ids ("G..." addresses).
//
// A StrKey is RFC 4648 base32 (alphabet A-Z2-7, uppercase, no padding) of
//   version byte || payload || CRC16-XModem(version byte || payload)
// with the checksum stored little-endian. For an account id the version byte
// is 6 << 3 = 48 (which makes the text start with 'G'), the payload is the
// 32-byte ed25519 public key, so 35 bytes = 280 bits = exactly 56 characters.
// Pure code: no I/O, no allocation except in encode_account_id.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace herald::net {

/// StrKey version byte of an ed25519 public key (account id): 6 << 3 = 48.
inline constexpr std::uint8_t strkey_account_version = 6 << 3;

/// Length in characters of an account id StrKey (35 bytes in base32).
inline constexpr std::size_t account_id_length = 56;

/// CRC16-XModem (polynomial 0x1021, initial value 0, no reflection, no final
/// XOR) of `n` bytes at `data`, as used by SEP-23 StrKey checksums.
/// `data` may be null when `n` is 0. Never fails. crc16_xmodem("123456789")
/// is 0x31C3.
std::uint16_t crc16_xmodem(const std::uint8_t* data, std::size_t n) noexcept;

/// True iff `s` is a valid Stellar account id in SEP-23 StrKey form: exactly
/// 56 characters of the RFC 4648 base32 alphabet A-Z2-7 (uppercase only, no
/// '=' padding) decoding to 35 bytes = version byte 48 ('G...') + 32-byte
/// ed25519 public key + CRC16-XModem of the first 33 bytes, little-endian.
/// The encoding must also be canonical (re-encoding the decoded bytes gives
/// back `s`). Secret seeds ('S...'), muxed accounts ('M...'), lowercase text
/// and any other shape are rejected. Never throws; false on any error.
bool is_account_id(std::string_view s) noexcept;

/// Which rule of is_account_id a text breaks (account_fault::none: it is an
/// account id), in the order they are checked.
enum class account_fault : std::uint8_t {
  none,
  muxed,       ///< starts with 'M': a muxed account (SEP-23 "M...", 69 characters)
  lower_case,  ///< has a lowercase letter (StrKeys are uppercase)
  length,      ///< not 56 characters
  alphabet,    ///< a character outside A-Z2-7
  version,     ///< does not decode to an account id ('G...'; e.g. a secret seed 'S...')
  checksum,    ///< the CRC16 does not match (a typo in the address)
  non_canonical ///< decodes, but re-encodes to another text
};

/// Checks `s` as is_account_id does and says which rule failed first.
/// Never throws.
account_fault check_account_id(std::string_view s) noexcept;

/// Encodes a 32-byte ed25519 public key as a SEP-23 StrKey account id
/// (56 characters starting with 'G'). Always succeeds; the result satisfies
/// is_account_id. Throws only std::bad_alloc.
std::string encode_account_id(const std::array<std::uint8_t, 32>& key);

} // namespace herald::net
