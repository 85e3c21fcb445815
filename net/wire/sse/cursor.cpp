#include "net/wire/sse/cursor.hpp"

#include <algorithm>
#include <charconv>

namespace herald::net {

bool is_valid_epoch(const std::string& epoch) noexcept {
  if (epoch.empty() || epoch.size() > 32)
    return false;
  return std::all_of(epoch.begin(), epoch.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); });
}

} // namespace herald::net

namespace herald::net::sse {

std::uint32_t channel_hash(std::string_view channel) noexcept {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : channel) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

void append_entry(std::string& out, const cursor_entry& e) {
  static constexpr char hex[] = "0123456789abcdef";
  char buf[8];
  for (int i = 7; i >= 0; --i)
    buf[7 - i] = hex[(e.channel_hash >> (i * 4)) & 0xF];
  out.append(buf, 8);
  out.push_back('-');
  out += e.position.epoch;
  out.push_back('-');
  char num[24];
  auto res = std::to_chars(num, num + sizeof num, e.position.offset);
  out.append(num, res.ptr);
}

std::string encode_cursor(const std::vector<cursor_entry>& entries) {
  std::string out;
  out.reserve(entries.size() * 32);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i > 0)
      out.push_back('_');
    append_entry(out, entries[i]);
  }
  return out;
}

namespace {

bool parse_hex32(std::string_view s, std::uint32_t& out) {
  if (s.size() != 8)
    return false;
  std::uint32_t v = 0;
  for (char c : s) {
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= static_cast<std::uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= static_cast<std::uint32_t>(c - 'a' + 10);
    else
      return false;
  }
  out = v;
  return true;
}

bool parse_offset(std::string_view s, std::uint64_t& out) {
  if (s.empty() || s.size() > 16)
    return false;
  std::uint64_t v = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (res.ec != std::errc{} || res.ptr != s.data() + s.size())
    return false;
  if (v > max_client_offset)
    return false;
  out = v;
  return true;
}

} // namespace

bool parse_cursor(std::string_view text, std::size_t max_entries, std::vector<cursor_entry>& out) {
  out.clear();
  if (text.empty() || text.size() > max_cursor_bytes)
    return false;
  while (!text.empty()) {
    auto end = text.find('_');
    auto entry = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (end != std::string_view::npos && text.empty())
      return false; // trailing separator
    auto d1 = entry.find('-');
    if (d1 == std::string_view::npos)
      return false;
    auto d2 = entry.find('-', d1 + 1);
    if (d2 == std::string_view::npos)
      return false;
    cursor_entry e;
    if (!parse_hex32(entry.substr(0, d1), e.channel_hash))
      return false;
    e.position.epoch = std::string{entry.substr(d1 + 1, d2 - d1 - 1)};
    if (!is_valid_epoch(e.position.epoch))
      return false;
    if (!parse_offset(entry.substr(d2 + 1), e.position.offset))
      return false;
    for (const auto& prev : out)
      if (prev.channel_hash == e.channel_hash)
        return false;
    if (out.size() == max_entries)
      return false;
    out.push_back(std::move(e));
  }
  return !out.empty();
}

} // namespace herald::net::sse
