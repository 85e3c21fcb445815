#include "loadtest/payload.hpp"

namespace herald::loadtest {

bool pub_fields::lists(std::int32_t id) const noexcept {
  for (std::size_t i = 0; i < n_c; ++i)
    if (c[i] == id)
      return true;
  return false;
}

std::string make_data(std::uint64_t seq, std::uint64_t t_ns, const std::vector<int>& channels,
                      std::size_t payload_bytes) {
  std::string out;
  out.reserve(payload_bytes + 64);
  out += "{\"seq\":";
  out += std::to_string(seq);
  out += ",\"t\":";
  out += std::to_string(t_ns);
  out += ",\"c\":[";
  for (std::size_t i = 0; i < channels.size(); ++i) {
    if (i)
      out += ',';
    out += std::to_string(channels[i]);
  }
  out += "],\"pad\":\"";
  constexpr std::size_t tail = 2; // "}
  if (out.size() + tail < payload_bytes)
    out.append(payload_bytes - out.size() - tail, 'x');
  out += "\"}";
  return out;
}

bool parse_u64(std::string_view s, std::uint64_t& out) noexcept {
  std::size_t i = 0;
  std::uint64_t v = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i < 20) {
    v = v * 10 + static_cast<std::uint64_t>(s[i] - '0');
    ++i;
  }
  if (i == 0)
    return false;
  out = v;
  return true;
}

namespace {
// The value after `"key":` in text, or an empty view.
std::string_view after_key(std::string_view text, std::string_view quoted_key_colon) noexcept {
  auto p = text.find(quoted_key_colon);
  if (p == std::string_view::npos)
    return {};
  return text.substr(p + quoted_key_colon.size());
}
} // namespace

bool scan_pub_fields(std::string_view text, pub_fields& out) noexcept {
  out.n_c = 0;
  auto seq = after_key(text, "\"seq\":");
  auto t = after_key(text, "\"t\":");
  if (!parse_u64(seq, out.seq) || !parse_u64(t, out.t_ns))
    return false;
  auto c = after_key(text, "\"c\":[");
  while (!c.empty() && c.front() != ']') {
    std::uint64_t id = 0;
    if (!parse_u64(c, id))
      break;
    if (out.n_c < out.c.size())
      out.c[out.n_c++] = static_cast<std::int32_t>(id);
    auto next = c.find_first_of(",]");
    if (next == std::string_view::npos || c[next] == ']')
      break;
    c.remove_prefix(next + 1);
  }
  return true;
}

namespace {

// `msg` starts with `prefix` and then a channel name up to a '"': takes the
// name into `channel` and leaves `msg` at that quote.
bool take_channel(std::string_view& msg, std::string_view prefix,
                  std::string_view& channel) noexcept {
  if (msg.substr(0, prefix.size()) != prefix)
    return false;
  msg.remove_prefix(prefix.size());
  auto q = msg.find('"');
  if (q == std::string_view::npos)
    return false;
  channel = msg.substr(0, q);
  msg.remove_prefix(q);
  return true;
}

} // namespace

bool scan_centrifugo_publication(std::string_view msg, std::string_view& channel,
                                 std::uint64_t& offset) noexcept {
  if (!take_channel(msg, R"({"push":{"channel":")", channel))
    return false;
  constexpr std::string_view pub = R"(","pub":{)";
  if (msg.substr(0, pub.size()) != pub)
    return false;
  constexpr std::string_view off = R"(,"offset":)";
  auto o = msg.rfind(off);
  return o != std::string_view::npos && parse_u64(msg.substr(o + off.size()), offset);
}

bool scan_ws_publication(std::string_view msg, std::string_view& channel,
                         std::uint64_t& offset) noexcept {
  if (!take_channel(msg, R"({"op":"publication","channel":")", channel))
    return false;
  constexpr std::string_view off = R"(","offset":)";
  if (msg.substr(0, off.size()) != off)
    return false;
  return parse_u64(msg.substr(off.size()), offset);
}

bool parse_cursor_entry(std::string_view text, cursor_entry& out) noexcept {
  if (text.size() < 12 || text[8] != '-')
    return false;
  std::uint32_t h = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    char c = text[i];
    std::uint32_t d;
    if (c >= '0' && c <= '9')
      d = static_cast<std::uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = static_cast<std::uint32_t>(c - 'a' + 10);
    else
      return false;
    h = (h << 4) | d;
  }
  auto rest = text.substr(9);
  auto dash = rest.rfind('-');
  if (dash == std::string_view::npos || dash == 0)
    return false;
  out.hash = h;
  out.epoch = rest.substr(0, dash);
  auto digits = rest.substr(dash + 1);
  if (!parse_u64(digits, out.offset))
    return false;
  return true;
}

} // namespace herald::loadtest
