#include "net/wire/ws/upgrade.hpp"

namespace herald::net::ws {

namespace {

bool base64_char(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

} // namespace

errc check_upgrade(std::string_view host, std::string_view version, std::string_view key,
                   std::string& detail) {
  if (trim(host).empty()) {
    detail = "the WebSocket upgrade needs a Host header (RFC 6455 section 4.1 item 3)";
    return errc::invalid_request;
  }
  version = trim(version);
  if (version != "13") {
    detail = version.empty() ? "the WebSocket upgrade needs Sec-WebSocket-Version: 13"
                             : "WebSocket version " + std::string{version.substr(0, 16)} +
                                 " is not supported; use Sec-WebSocket-Version: 13";
    return errc::upgrade_required;
  }
  key = trim(key);
  // 16 bytes in base64: 22 characters, then "==" (RFC 4648 section 4).
  bool ok = key.size() == 24 && key.substr(22) == "==";
  for (std::size_t i = 0; ok && i < 22; ++i)
    ok = base64_char(key[i]);
  if (!ok) {
    detail = key.empty() ? "the WebSocket upgrade needs a Sec-WebSocket-Key"
                         : "Sec-WebSocket-Key must be 16 bytes in base64 (RFC 6455 section 4.1)";
    return errc::invalid_request;
  }
  return errc::none;
}

bool offers_subprotocol(std::string_view field, std::string_view name) noexcept {
  while (!field.empty()) {
    auto comma = field.find(',');
    if (trim(field.substr(0, comma)) == name)
      return true;
    if (comma == std::string_view::npos)
      break;
    field.remove_prefix(comma + 1);
  }
  return false;
}

namespace {

// One offer's parameters: name and value (unquoted), in order. False when
// the offer's syntax is broken (an empty name, an unterminated quote).
bool acceptable_deflate_offer(std::string_view params) noexcept {
  bool seen[4] = {};
  const std::string_view names[4] = {"server_no_context_takeover", "client_no_context_takeover",
                                     "server_max_window_bits", "client_max_window_bits"};
  while (!params.empty()) {
    auto semi = params.find(';');
    auto param = trim(params.substr(0, semi));
    params.remove_prefix(semi == std::string_view::npos ? params.size() : semi + 1);
    auto eq = param.find('=');
    auto name = trim(param.substr(0, eq));
    std::string_view value;
    bool has_value = eq != std::string_view::npos;
    if (has_value) {
      value = trim(param.substr(eq + 1));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
        value = value.substr(1, value.size() - 2);
    }
    int which = -1;
    for (int i = 0; i < 4; ++i)
      if (name == names[i])
        which = i;
    if (which < 0 || seen[which])
      return false; // unknown or repeated (RFC 7692 section 5.1)
    seen[which] = true;
    if (which < 2 && has_value)
      return false; // the no_context_takeover parameters take no value
    if (which >= 2) {
      if (!has_value) {
        if (which == 2)
          return false; // server_max_window_bits needs a value
        continue;       // client_max_window_bits alone: the client can be limited
      }
      if (value.size() < 1 || value.size() > 2 || value.front() == '0')
        return false;
      int bits = 0;
      for (char c : value) {
        if (c < '0' || c > '9')
          return false;
        bits = bits * 10 + (c - '0');
      }
      if (bits < 8 || bits > 15)
        return false;
      if (which == 2 && bits < 15)
        return false; // Herald's shared frames use a 2^15 window
    }
  }
  return true;
}

} // namespace

bool accepts_deflate(std::string_view field) noexcept {
  // Offers are tried in the client's order of preference; a quoted value
  // holds no ',' or ';' among the parameters RFC 7692 defines.
  while (!field.empty()) {
    auto comma = field.find(',');
    auto offer = field.substr(0, comma);
    field.remove_prefix(comma == std::string_view::npos ? field.size() : comma + 1);
    auto semi = offer.find(';');
    if (trim(offer.substr(0, semi)) != "permessage-deflate")
      continue;
    if (semi == std::string_view::npos ||
        acceptable_deflate_offer(offer.substr(semi + 1)))
      return true;
  }
  return false;
}

std::string encode_upgrade_response(std::string_view accept, std::string_view subprotocol,
                                    bool deflate) {
  std::string out;
  out.reserve(160 + subprotocol.size() + (deflate ? deflate_response.size() + 30 : 0));
  out += "HTTP/1.1 101 Switching Protocols\r\n"
         "Upgrade: websocket\r\n"
         "Connection: Upgrade\r\n"
         "Sec-WebSocket-Accept: ";
  out += accept;
  out += "\r\nServer: herald\r\n";
  if (!subprotocol.empty()) {
    out += "Sec-WebSocket-Protocol: ";
    out += subprotocol;
    out += "\r\n";
  }
  if (deflate) {
    out += "Sec-WebSocket-Extensions: ";
    out += deflate_response;
    out += "\r\n";
  }
  out += "\r\n";
  return out;
}

} // namespace herald::net::ws
