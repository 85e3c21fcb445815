// connection_limit: counts open connections per client address and refuses
// new ones over --max-connections-per-ip. Shared by the listener (which asks
// at accept time) and every session (which holds its slot until it ends).
// Thread-safe: sessions end on any io thread.
//
// Addresses are counted exactly as accepted, except that an IPv4-mapped IPv6
// address (::ffff:a.b.c.d) counts as the IPv4 address. Behind a load balancer
// every connection comes from the balancer's address: set the limit to 0 (or
// above the balancer's own connection limit) there, and limit per client at
// the balancer.
#pragma once

#include "net/asio.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace herald::net {

class connection_limit : public std::enable_shared_from_this<connection_limit> {
public:
  /// @param max_per_address connections allowed at once per address; 0: unlimited.
  static std::shared_ptr<connection_limit> create(std::size_t max_per_address);

  /// Takes a slot for a new connection from `peer`.
  /// @returns a token that gives the slot back when its last copy is
  ///          destroyed, or nullptr when `peer` already holds the maximum
  ///          (the caller refuses the connection). With no limit, a token
  ///          that counts nothing.
  std::shared_ptr<void> acquire(const asio::ip::address& peer);

  /// Connections currently counted for `peer` (for tests and logs).
  std::size_t count(const asio::ip::address& peer) const;

  std::size_t max_per_address() const noexcept { return max_; }

private:
  explicit connection_limit(std::size_t max_per_address)
    : max_(max_per_address) {}
  static std::string key_of(const asio::ip::address& a);
  void release(const std::string& key);

  std::size_t max_;
  mutable std::mutex mtx_;
  std::unordered_map<std::string, std::size_t> open_;
};

/// Answers an over-limit connection with `429 too_many_connections` (JSON
/// error body, `Connection: close`) without reading its request, then closes
/// it. Bounded in time: the write gets `write_timeout`, draining the peer's
/// request afterwards at most one second. Call on the socket's executor.
void refuse_connection(tcp::socket socket, std::chrono::milliseconds write_timeout,
                       std::size_t limit);

} // namespace herald::net
