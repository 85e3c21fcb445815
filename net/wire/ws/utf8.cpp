#include "net/wire/ws/utf8.hpp"

#include <cstring>

namespace herald::net::ws {

bool utf8_validator::feed(std::string_view bytes) noexcept {
  if (failed_)
    return false;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const auto* end = p + bytes.size();
  while (p != end) {
    if (need_ == 0) {
      // ASCII fast path: 8 bytes at a time while no byte has its top bit set.
      while (end - p >= 8) {
        std::uint64_t w;
        std::memcpy(&w, p, 8);
        if (w & 0x8080808080808080ull)
          break;
        p += 8;
      }
      if (p == end)
        break;
      unsigned char c = *p++;
      if (c < 0x80)
        continue;
      // Lead byte: how many continuation bytes follow, and the range of the
      // first one, which is what excludes overlongs (E0, F0), surrogates (ED)
      // and code points above U+10FFFF (F4). C0, C1, F5..FF never appear.
      lo_ = 0x80;
      hi_ = 0xBF;
      if (c >= 0xC2 && c <= 0xDF) {
        need_ = 1;
      } else if (c >= 0xE0 && c <= 0xEF) {
        need_ = 2;
        if (c == 0xE0)
          lo_ = 0xA0;
        else if (c == 0xED)
          hi_ = 0x9F;
      } else if (c >= 0xF0 && c <= 0xF4) {
        need_ = 3;
        if (c == 0xF0)
          lo_ = 0x90;
        else if (c == 0xF4)
          hi_ = 0x8F;
      } else {
        failed_ = true;
        return false;
      }
    } else {
      unsigned char c = *p++;
      if (c < lo_ || c > hi_) {
        failed_ = true;
        return false;
      }
      lo_ = 0x80;
      hi_ = 0xBF;
      --need_;
    }
  }
  return true;
}

bool is_valid_utf8(std::string_view text) noexcept {
  utf8_validator v;
  return v.feed(text) && v.complete();
}

std::size_t valid_utf8_prefix(std::string_view text, std::size_t max_bytes) noexcept {
  utf8_validator v;
  std::size_t best = 0;
  std::size_t n = text.size() < max_bytes ? text.size() : max_bytes;
  for (std::size_t i = 0; i < n; ++i) {
    if (!v.feed(text.substr(i, 1)))
      break;
    if (v.complete())
      best = i + 1;
  }
  return best;
}

} // namespace herald::net::ws
