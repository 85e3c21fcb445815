#include "net/redis/slot.hpp"

namespace herald::net::redis {

std::uint16_t crc16(std::string_view bytes) noexcept {
  // Bitwise: 8 shifts per byte is fast enough for key names, and shorter to
  // check than a 256-entry table.
  std::uint16_t crc = 0;
  for (unsigned char c : bytes) {
    crc = static_cast<std::uint16_t>(crc ^ (static_cast<std::uint16_t>(c) << 8));
    for (int i = 0; i < 8; ++i)
      crc = (crc & 0x8000) != 0 ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<std::uint16_t>(crc << 1);
  }
  return crc;
}

std::string_view hash_tag(std::string_view key) noexcept {
  auto open = key.find('{');
  if (open == std::string_view::npos)
    return key;
  auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1)
    return key;
  return key.substr(open + 1, close - open - 1);
}

std::uint16_t key_slot(std::string_view key) noexcept {
  return static_cast<std::uint16_t>(crc16(hash_tag(key)) & (slot_count - 1));
}

} // namespace herald::net::redis
