#include "test_cluster.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>

#include <cstdio>
#include <stdexcept>
#include <thread>

namespace herald::test {

namespace {

bool bindable(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// A port for a cluster node: its cluster bus listens on port + 10000, so
// both must be free (and the bus port below 65536).
std::uint16_t cluster_port() {
  static std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<int> dist(20000, 50000);
  for (int i = 0; i < 1000; ++i) {
    auto p = static_cast<std::uint16_t>(dist(rng));
    if (bindable(p) && bindable(static_cast<std::uint16_t>(p + 10000)))
      return p;
  }
  throw std::runtime_error("no free port pair for a cluster node");
}

std::string check(const net::redis::reply& r, const char* what) {
  if (r.is_error())
    throw std::runtime_error(std::string(what) + ": " + r.str);
  return r.str;
}

} // namespace

test_cluster::test_cluster(int masters) {
  for (int i = 0; i < masters; ++i) {
    auto port = cluster_port();
    auto conf =
      "/tmp/herald-test-nodes-" + std::to_string(::getpid()) + "-" + std::to_string(port) + ".conf";
    std::remove(conf.c_str());
    conf_files_.paths.push_back(conf);
    nodes_.push_back(std::make_unique<redis_server>(
      std::vector<std::string>{"--cluster-enabled", "yes", "--cluster-config-file", conf,
                               "--cluster-node-timeout", "2000"},
      port));
    ids_.push_back(check(nodes_.back()->command({"CLUSTER", "MYID"}), "CLUSTER MYID"));
  }
  const int per = 16384 / masters;
  for (int i = 0; i < masters; ++i) {
    int first = i * per;
    int last = i + 1 == masters ? 16383 : (i + 1) * per - 1;
    check(
      nodes_[i]->command({"CLUSTER", "ADDSLOTSRANGE", std::to_string(first), std::to_string(last)}),
      "CLUSTER ADDSLOTSRANGE");
  }
  for (int i = 1; i < masters; ++i)
    check(nodes_[0]->command({"CLUSTER", "MEET", "127.0.0.1", std::to_string(nodes_[i]->port())}),
          "CLUSTER MEET");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    bool ok = true;
    for (auto& n : nodes_) {
      auto info = n->command({"CLUSTER", "INFO"});
      if (info.str.find("cluster_state:ok") == std::string::npos ||
          info.str.find("cluster_known_nodes:" + std::to_string(masters)) == std::string::npos)
        ok = false;
    }
    if (ok)
      break;
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("the test cluster did not reach cluster_state:ok in 10 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

test_cluster::~test_cluster() = default;

test_cluster::conf_files::~conf_files() {
  for (auto& f : paths)
    std::remove(f.c_str());
}

std::string test_cluster::url() const {
  std::string u = "redis+cluster://";
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    u += (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(nodes_[i]->port());
  return u;
}

std::size_t test_cluster::owner_of(std::uint16_t slot) {
  auto r = nodes_[0]->command({"CLUSTER", "SLOTS"});
  for (const auto& range : r.elements) {
    if (range.elements.size() < 3)
      continue;
    if (slot < range.elements[0].number || slot > range.elements[1].number)
      continue;
    auto port = range.elements[2].elements.at(1).number;
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (nodes_[i]->port() == port)
        return i;
  }
  throw std::runtime_error("no owner for slot " + std::to_string(slot));
}

void test_cluster::migrate(std::uint16_t slot, std::size_t from, std::size_t to) {
  auto s = std::to_string(slot);
  auto& src = *nodes_.at(from);
  auto& dst = *nodes_.at(to);
  check(dst.command({"CLUSTER", "SETSLOT", s, "IMPORTING", ids_[from]}), "SETSLOT IMPORTING");
  check(src.command({"CLUSTER", "SETSLOT", s, "MIGRATING", ids_[to]}), "SETSLOT MIGRATING");
  for (;;) {
    auto keys = src.command({"CLUSTER", "GETKEYSINSLOT", s, "100"});
    if (keys.elements.empty())
      break;
    std::vector<std::string> cmd{"MIGRATE", "127.0.0.1", std::to_string(dst.port()), "", "0",
                                 "5000",    "KEYS"};
    for (const auto& k : keys.elements)
      cmd.push_back(k.str);
    check(src.command(cmd), "MIGRATE");
  }
  check(dst.command({"CLUSTER", "SETSLOT", s, "NODE", ids_[to]}), "SETSLOT NODE (target)");
  check(src.command({"CLUSTER", "SETSLOT", s, "NODE", ids_[to]}), "SETSLOT NODE (source)");
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (i != from && i != to)
      nodes_[i]->command({"CLUSTER", "SETSLOT", s, "NODE", ids_[to]});
}

} // namespace herald::test
