#include "net/redis/url.hpp"

#include "net/wire/ascii.hpp"

#include <cctype>
#include <limits>

namespace herald::net::redis {

namespace {

constexpr std::uint32_t max_port = 65535;

bool fail(std::string& error, std::string_view why) {
  error = "invalid Redis URL: ";
  error += why;
  return false;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

int hex_value(char c) {
  if (is_digit(c))
    return c - '0';
  c = ascii_lower(c);
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

// Percent-decodes `in` (RFC 3986 section 2.1). False on a broken escape.
bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size())
      return false;
    int hi = hex_value(in[i + 1]);
    int lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0)
      return false;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

// A decimal number of at most `max` (no sign, no spaces). False otherwise.
bool parse_decimal(std::string_view text, std::uint64_t max, std::uint64_t& out) {
  if (text.empty() || text.size() > 19)
    return false;
  std::uint64_t value = 0;
  for (char c : text) {
    if (!is_digit(c))
      return false;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (value > max)
    return false;
  out = value;
  return true;
}

bool is_host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_';
}

bool is_ipv6_char(char c) {
  return hex_value(c) >= 0 || c == ':' || c == '.';
}

} // namespace

bool parse_url(std::string_view text, url& out, std::string& error) {
  auto scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos)
    return fail(error, "expected redis://[[user]:password@]host[:port][/db]");
  auto scheme = text.substr(0, scheme_end);
  if (iequals(scheme, "rediss"))
    return fail(error, "rediss:// (TLS) is not supported by hiredis 0.14; use redis://");
  if (!iequals(scheme, "redis"))
    return fail(error, "the scheme must be redis://");
  auto rest = text.substr(scheme_end + 3);
  if (rest.find_first_of("?#") != std::string_view::npos)
    return fail(error, "query strings and fragments are not supported (percent-encode "
                       "'?' and '#' in a password)");
  for (char c : rest)
    if (static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f)
      return fail(error, "spaces, control and non-ASCII characters must be percent-encoded");

  url result;

  // userinfo: everything up to the last '@' (a raw '@' in a password is
  // tolerated); the authority then ends at the first '/'.
  auto at = rest.rfind('@');
  if (at != std::string_view::npos) {
    auto userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    auto colon = userinfo.find(':');
    if (colon == std::string_view::npos)
      return fail(error, "the part before '@' must be ':password' or 'user:password'");
    if (userinfo.find('/') != std::string_view::npos)
      return fail(error, "percent-encode '/' in the user name and password (%2F)");
    if (!percent_decode(userinfo.substr(0, colon), result.username))
      return fail(error, "broken percent-escape in the user name");
    if (!percent_decode(userinfo.substr(colon + 1), result.password))
      return fail(error, "broken percent-escape in the password");
    if (result.password.empty())
      return fail(error, "empty password (leave out the part before '@' for no AUTH)");
  }

  auto slash = rest.find('/');
  auto authority = rest.substr(0, slash);
  auto path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);

  std::string_view port_text;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos)
      return fail(error, "missing ']' after the IPv6 address");
    auto host = authority.substr(1, close - 1);
    if (host.empty() || host.find(':') == std::string_view::npos)
      return fail(error, "brackets must hold an IPv6 address");
    for (char c : host)
      if (!is_ipv6_char(c))
        return fail(error, "invalid character in the IPv6 address");
    result.host = std::string(host);
    auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':')
        return fail(error, "expected ':port' after the IPv6 address");
      has_port = true;
      port_text = after.substr(1);
    }
  } else {
    auto colon = authority.find(':');
    auto host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      has_port = true;
      port_text = authority.substr(colon + 1);
      if (port_text.find(':') != std::string_view::npos)
        return fail(error, "too many ':' (write IPv6 addresses in brackets: [::1])");
    }
    if (host.empty())
      return fail(error, "empty host");
    if (host.size() > 253)
      return fail(error, "host name longer than 253 characters");
    for (char c : host)
      if (!is_host_char(c))
        return fail(error, "invalid character in the host name (allowed: letters, digits, "
                           "'.', '-', '_')");
    result.host = std::string(host);
  }

  if (has_port) {
    std::uint64_t port = 0;
    if (port_text.empty())
      return fail(error, "empty port after ':'");
    if (!parse_decimal(port_text, max_port, port) || port == 0)
      return fail(error, "the port must be a number from 1 to 65535");
    result.port = static_cast<std::uint16_t>(port);
  }

  if (path.size() > 1) {
    std::uint64_t db = 0;
    if (!parse_decimal(path.substr(1), static_cast<std::uint64_t>(std::numeric_limits<int>::max()),
                       db))
      return fail(error, "the path must be /<database number>, for example /0");
    result.db = static_cast<int>(db);
  }

  out = std::move(result);
  error.clear();
  return true;
}

std::string to_log_string(const url& u) {
  std::string s = "redis://";
  if (!u.password.empty()) {
    s += u.username;
    s += ":***@";
  }
  if (u.host.find(':') != std::string::npos)
    s += "[" + u.host + "]";
  else
    s += u.host;
  s += ":" + std::to_string(u.port);
  if (u.db != 0)
    s += "/" + std::to_string(u.db);
  return s;
}

namespace {
constexpr std::string_view cluster_scheme = "redis+cluster://";
} // namespace

bool is_cluster_url(std::string_view text) {
  return text.size() >= cluster_scheme.size() &&
         iequals(text.substr(0, cluster_scheme.size()), cluster_scheme);
}

bool parse_cluster_url(std::string_view text, cluster_url& out, std::string& error) {
  if (!is_cluster_url(text))
    return fail(error, "expected redis+cluster://[[user]:password@]host:port[,host:port...]");
  auto rest = text.substr(cluster_scheme.size());
  if (rest.find_first_of("?#") != std::string_view::npos)
    return fail(error, "query strings and fragments are not supported (percent-encode "
                       "'?' and '#' in a password)");
  // The login (up to the last '@') is shared by every seed.
  std::string_view userinfo;
  auto at = rest.rfind('@');
  if (at != std::string_view::npos) {
    userinfo = rest.substr(0, at + 1);
    rest = rest.substr(at + 1);
  }
  auto slash = rest.find('/');
  if (slash != std::string_view::npos) {
    auto path = rest.substr(slash);
    if (path != "/" && path != "/0")
      return fail(error, "a Redis Cluster has database 0 only (no /<db> other than /0)");
    rest = rest.substr(0, slash);
  }
  if (rest.empty())
    return fail(error, "no seed node after redis+cluster://");
  cluster_url result;
  std::size_t position = 0;
  while (true) {
    ++position;
    auto comma = rest.find(',');
    auto seed = rest.substr(0, comma);
    std::string what = "seed " + std::to_string(position);
    if (seed.empty())
      return fail(error, what + " is empty (two commas, or one at an end)");
    url u;
    std::string seed_error;
    std::string one = "redis://";
    one.append(userinfo).append(seed);
    if (!parse_url(one, u, seed_error)) {
      constexpr std::string_view head = "invalid Redis URL: ";
      error = std::string(head) + what + ": " + seed_error.substr(head.size());
      return false;
    }
    result.seeds.push_back(std::move(u));
    if (comma == std::string_view::npos)
      break;
    rest = rest.substr(comma + 1);
  }
  out = std::move(result);
  error.clear();
  return true;
}

std::string to_log_string(const cluster_url& c) {
  std::string s{cluster_scheme};
  for (std::size_t i = 0; i < c.seeds.size(); ++i) {
    auto one = to_log_string(c.seeds[i]); // redis://[user:***@]host:port
    auto host = one.substr(std::string("redis://").size());
    if (i == 0) {
      s += host;
    } else {
      auto at = host.rfind('@');
      s += "," + (at == std::string::npos ? host : host.substr(at + 1));
    }
  }
  return s;
}

} // namespace herald::net::redis
