// Redis connection URLs: where a redis::connection connects and how it logs
// in. Pure code (no Asio, no hiredis).
//
// Accepted forms (the scheme is case-insensitive):
//
//   redis://host                         port 6379, database 0
//   redis://host:port
//   redis://host:port/db
//   redis://:password@host:port/db       AUTH password
//   redis://user:password@host:port/db   AUTH user password (Redis 6 ACL)
//   redis://[::1]:port                   IPv6 literal in brackets
//
// The user and the password may be percent-encoded (%40 for '@', %3A for
// ':', %2F for '/'). Everything else is rejected: other schemes (rediss://
// needs TLS, which hiredis 0.14 lacks), a user without ':' and password,
// an empty host, a port outside 1-65535, a database that is not a
// non-negative decimal number, query strings and fragments.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace herald::net::redis {

/// The parts of a Redis URL.
struct url {
  std::string host = "127.0.0.1"; ///< name or IP address, IPv6 without brackets
  std::uint16_t port = 6379;
  std::string username; ///< empty: `AUTH password` (or no AUTH without a password)
  std::string password; ///< empty: no AUTH
  int db = 0;           ///< SELECTed on connect when not 0
};

/// Parses `text` (see the header comment for the accepted forms).
/// Pure, never throws, thread-safe.
/// @returns true and fills `out` when `text` is valid; otherwise false, a
///          one-line reason in `error` that names the offending part
///          (without echoing the password), and `out` unchanged.
bool parse_url(std::string_view text, url& out, std::string& error);

/// `u` as a URL for logs: the password is replaced by "***".
/// IPv6 hosts get brackets. Pure, thread-safe.
std::string to_log_string(const url& u);

} // namespace herald::net::redis
