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

std::string encode_upgrade_response(std::string_view accept, std::string_view subprotocol) {
  std::string out;
  out.reserve(160 + subprotocol.size());
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
  out += "\r\n";
  return out;
}

} // namespace herald::net::ws
