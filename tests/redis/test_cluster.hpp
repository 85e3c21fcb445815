// test_cluster: a real Redis Cluster of N masters (no replicas) for one
// test, on free loopback ports. Slots are assigned in equal ranges with
// CLUSTER ADDSLOTSRANGE and the nodes joined with CLUSTER MEET; the
// constructor waits until every node reports cluster_state:ok. Each node is
// a redis_server (stopped by PID when the test ends); its nodes.conf lives
// in /tmp and is removed when it ends (also when the constructor throws).
// Not thread-safe: use it from the test's thread.
#pragma once

#include "redis_server.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace herald::test {

class test_cluster {
public:
  /// Starts `masters` nodes and forms the cluster. Throws
  /// std::runtime_error when it is not ok within 10 s.
  explicit test_cluster(int masters = 3);
  ~test_cluster();

  redis_server& node(std::size_t i) { return *nodes_.at(i); }
  std::size_t size() const noexcept { return nodes_.size(); }
  /// The node id (CLUSTER MYID) of node i.
  const std::string& id(std::size_t i) const { return ids_.at(i); }
  /// "redis+cluster://127.0.0.1:<p0>,127.0.0.1:<p1>,..."
  std::string url() const;
  /// The index of the node that serves `slot`, as node 0 sees it.
  std::size_t owner_of(std::uint16_t slot);
  /// Moves `slot` with its keys from node `from` to node `to` the way
  /// `redis-cli --cluster reshard` does: SETSLOT IMPORTING / MIGRATING,
  /// MIGRATE of every key, then SETSLOT NODE on every node.
  void migrate(std::uint16_t slot, std::size_t from, std::size_t to);

private:
  // Removes the nodes.conf files, also when the constructor throws; declared
  // first so the servers (destroyed before it) are stopped by then.
  struct conf_files {
    std::vector<std::string> paths;
    ~conf_files();
  };
  conf_files conf_files_;
  std::vector<std::unique_ptr<redis_server>> nodes_;
  std::vector<std::string> ids_;
};

} // namespace herald::test
