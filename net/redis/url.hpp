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
//
// A Redis Cluster is named by its seed nodes, comma-separated, in one URL
// (one --redis-url, one REDIS_URL variable; no repeated option):
//
//   redis+cluster://h1:7000,h2:7001,[::1]:7002
//   redis+cluster://user:password@h1:7000,h2:7001    the same login on every node
//
// Each seed is `host[:port]` as above (port 6379 when left out). The path
// may only be empty, "/" or "/0": a Redis Cluster has database 0 only. Any
// reachable seed is enough; the others are tried when it is not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

/// The seed nodes of a Redis Cluster (redis+cluster://), each with the
/// shared login, in the order given.
struct cluster_url {
  std::vector<url> seeds;
};

/// True when `text` starts with the redis+cluster:// scheme (any case).
/// Pure, thread-safe.
bool is_cluster_url(std::string_view text);

/// Parses a redis+cluster:// URL (see the header comment). Pure, never
/// throws, thread-safe.
/// @returns true and fills `out` (at least one seed) when `text` is valid;
///          otherwise false, a one-line reason in `error` starting with
///          "invalid Redis URL: " that names the offending seed by its
///          position (without echoing the password), and `out` unchanged.
bool parse_cluster_url(std::string_view text, cluster_url& out, std::string& error);

/// `c` for logs: redis+cluster://h1:7000,h2:7001, the password as "***".
std::string to_log_string(const cluster_url& c);

/// `u` as a URL for logs: the password is replaced by "***".
/// IPv6 hosts get brackets. Pure, thread-safe.
std::string to_log_string(const url& u);

} // namespace herald::net::redis
