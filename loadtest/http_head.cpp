#include "loadtest/http_head.hpp"

#include "net/wire/ascii.hpp"

namespace herald::loadtest::http {

namespace {
std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}
} // namespace

std::size_t head_end(std::string_view buf) noexcept {
  auto p = buf.find("\r\n\r\n");
  return p == std::string_view::npos ? p : p + 4;
}

int status_code(std::string_view head) noexcept {
  if (head.size() < 12 || head.substr(0, 5) != "HTTP/")
    return 0;
  auto sp = head.find(' ');
  if (sp == std::string_view::npos || sp + 4 > head.size())
    return 0;
  int code = 0;
  for (std::size_t i = sp + 1; i < sp + 4; ++i) {
    if (head[i] < '0' || head[i] > '9')
      return 0;
    code = code * 10 + (head[i] - '0');
  }
  return code;
}

std::string_view header_value(std::string_view head, std::string_view name) noexcept {
  std::size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos && pos + 2 < head.size()) {
    std::size_t start = pos + 2;
    std::size_t eol = head.find("\r\n", start);
    std::string_view line = head.substr(start, eol == std::string_view::npos ? eol : eol - start);
    auto colon = line.find(':');
    if (colon != std::string_view::npos && net::iequals(trim(line.substr(0, colon)), name))
      return trim(line.substr(colon + 1));
    pos = eol;
  }
  return {};
}

} // namespace herald::loadtest::http
