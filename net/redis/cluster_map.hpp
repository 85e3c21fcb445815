// cluster_map: a Redis Cluster's slot map (which master serves each hash
// slot) and the redirections a node answers with. Pure code (no I/O), fed
// with copied replies (net/redis/reply.hpp).
//
// Follows the Redis Cluster specification: CLUSTER SLOTS (one entry per
// slot range: start, end, then the master [ip, port, node id, ...] and its
// replicas), and the errors "MOVED <slot> <host>:<port>" (the slot has a new
// owner: update the map) and "ASK <slot> <host>:<port>" (the slot is being
// migrated: send this one command to that node, after ASKING, and keep the
// map). Tested in tests/redis/cluster_map.cpp.
#pragma once

#include "net/redis/reply.hpp"
#include "net/redis/slot.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace herald::net::redis {

/// A node's address as the cluster announces it.
struct node_address {
  std::string host; ///< IP address or name (IPv6 without brackets)
  std::uint16_t port = 0;

  /// "host:port" ("[::1]:7000" for IPv6), used as the node's key and in logs.
  std::string to_string() const;
  friend bool operator==(const node_address& a, const node_address& b) {
    return a.port == b.port && a.host == b.host;
  }
  friend bool operator!=(const node_address& a, const node_address& b) { return !(a == b); }
};

/// Which master serves each of the 16384 slots.
class slot_map {
public:
  /// An empty map: no slot has an owner.
  slot_map();

  /// Parses a CLUSTER SLOTS reply. `asked` is the node that answered: an
  /// entry with an empty host means that node's host (Redis announces "" when
  /// it does not know its own address). Never throws.
  /// @returns false with a one-line reason in `error` when the reply is an
  ///          error or not shaped like CLUSTER SLOTS; `out` is then unchanged.
  static bool parse_cluster_slots(const reply& r, const node_address& asked, slot_map& out,
                                  std::string& error);

  /// The master serving `slot` (0-16383), or nullptr when none does.
  const node_address* master_for(std::uint16_t slot) const;
  /// Every master that serves at least one slot, in first-slot order.
  std::vector<node_address> masters() const;
  /// Slots served by `master`.
  std::size_t slots_of(const node_address& master) const;
  /// Every slot has a master (a cluster with all slots covered).
  bool covers_all() const;
  /// `slot` is now served by `master` (after a MOVED redirection).
  void assign(std::uint16_t slot, const node_address& master);
  /// Both maps give every slot the same master.
  bool same_as(const slot_map& other) const;

private:
  static constexpr std::uint16_t none = 0xFFFF;
  std::size_t index_of(const node_address& a);

  std::vector<node_address> nodes_;  // distinct masters named so far
  std::vector<std::uint16_t> owner_; // slot -> index in nodes_, or none
};

/// A redirection in an error reply.
struct redirect {
  enum kind_t { moved, ask } kind = moved;
  std::uint16_t slot = 0;
  node_address to;
};

/// Parses "MOVED 3999 127.0.0.1:6381" or "ASK 3999 [::1]:6381" (also the
/// bare "::1:6381" Redis writes for IPv6: the port follows the last ':').
/// @returns false for any other text (an ordinary error), never throws.
bool parse_redirect(std::string_view error_text, redirect& out);

} // namespace herald::net::redis
