#include "net/wire/strkey.hpp"

namespace herald::net {

namespace {

constexpr std::size_t raw_length = 1 + 32 + 2; // version + key + crc
constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

static_assert(raw_length * 8 == account_id_length * 5,
              "an account id fills its base32 characters exactly");

// 5-bit value of a base32 character, or -1 when it is not in A-Z2-7.
constexpr int b32_value(char c) noexcept {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= '2' && c <= '7')
    return c - '2' + 26;
  return -1;
}

// Base32 of exactly raw_length bytes into exactly account_id_length chars.
void encode_raw(const std::array<std::uint8_t, raw_length>& raw, char* out) noexcept {
  std::uint32_t buffer = 0;
  int bits = 0;
  std::size_t o = 0;
  for (std::uint8_t byte : raw) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out[o++] = alphabet[(buffer >> bits) & 0x1F];
    }
  }
  // raw_length * 8 is a multiple of 5: no trailing partial group.
}

} // namespace

std::uint16_t crc16_xmodem(const std::uint8_t* data, std::size_t n) noexcept {
  std::uint16_t crc = 0;
  for (std::size_t i = 0; i < n; ++i) {
    crc ^= static_cast<std::uint16_t>(data[i]) << 8;
    for (int b = 0; b < 8; ++b) {
      crc = (crc & 0x8000) ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<std::uint16_t>(crc << 1);
    }
  }
  return crc;
}

bool is_account_id(std::string_view s) noexcept {
  return check_account_id(s) == account_fault::none;
}

account_fault check_account_id(std::string_view s) noexcept {
  if (!s.empty() && s.front() == 'M')
    return account_fault::muxed;
  for (char c : s)
    if (c >= 'a' && c <= 'z')
      return account_fault::lower_case;
  if (s.size() != account_id_length)
    return account_fault::length;

  std::array<std::uint8_t, raw_length> raw{};
  std::uint32_t buffer = 0;
  int bits = 0;
  std::size_t o = 0;
  for (char c : s) {
    int v = b32_value(c);
    if (v < 0)
      return account_fault::alphabet;
    buffer = (buffer << 5) | static_cast<std::uint32_t>(v);
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      raw[o++] = static_cast<std::uint8_t>(buffer >> bits);
    }
  }
  // 280 bits in 56 chars: every bit is used, none left over. Anything else
  // would be a non-canonical encoding.
  if (o != raw_length || bits != 0)
    return account_fault::non_canonical;

  if (raw[0] != strkey_account_version)
    return account_fault::version;

  std::uint16_t expected = crc16_xmodem(raw.data(), 33);
  std::uint16_t stored = static_cast<std::uint16_t>(raw[33] | (raw[34] << 8));
  if (expected != stored)
    return account_fault::checksum;

  // Canonical form: the decoded bytes must re-encode to exactly `s`.
  char again[account_id_length];
  encode_raw(raw, again);
  return std::string_view{again, account_id_length} == s ? account_fault::none
                                                          : account_fault::non_canonical;
}

std::string encode_account_id(const std::array<std::uint8_t, 32>& key) {
  std::array<std::uint8_t, raw_length> raw{};
  raw[0] = strkey_account_version;
  for (std::size_t i = 0; i < key.size(); ++i)
    raw[1 + i] = key[i];
  std::uint16_t crc = crc16_xmodem(raw.data(), 33);
  raw[33] = static_cast<std::uint8_t>(crc & 0xFF);
  raw[34] = static_cast<std::uint8_t>(crc >> 8);
  std::string out(account_id_length, '\0');
  encode_raw(raw, out.data());
  return out;
}

} // namespace herald::net
