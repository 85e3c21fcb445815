// The slot map and redirections (net/redis/cluster_map.hpp), from replies
// shaped like Redis 7's CLUSTER SLOTS and MOVED / ASK errors. The map read
// from a real cluster is checked in tests/e2e/cluster/redis_cluster.test.mjs.
#include "net/redis/cluster_map.hpp"

#include "reply_values.hpp"

#include <catch2/catch.hpp>

using namespace herald::net::redis;
using namespace herald::test;

namespace {

reply node(std::string host, long long port) {
  return array({string(std::move(host)), integer(port), string("0123abcd"), array({})});
}
reply range(long long first, long long last, reply master, std::vector<reply> replicas = {}) {
  std::vector<reply> e{integer(first), integer(last), std::move(master)};
  for (auto& r : replicas)
    e.push_back(std::move(r));
  return array(std::move(e));
}

const node_address asked{"10.0.0.9", 7009};

} // namespace

TEST_CASE("cluster_map: CLUSTER SLOTS of three masters with replicas", "[redis][cluster]") {
  auto r = array({range(0, 5460, node("127.0.0.1", 7000), {node("127.0.0.1", 7003)}),
                  range(5461, 10922, node("127.0.0.1", 7001), {node("127.0.0.1", 7004)}),
                  range(10923, 16383, node("127.0.0.1", 7002))});
  slot_map m;
  std::string error;
  REQUIRE(slot_map::parse_cluster_slots(r, asked, m, error));
  CHECK(error.empty());
  CHECK(m.covers_all());
  REQUIRE(m.masters().size() == 3);
  CHECK(m.masters()[0].to_string() == "127.0.0.1:7000");
  CHECK(m.master_for(0)->port == 7000);
  CHECK(m.master_for(5460)->port == 7000);
  CHECK(m.master_for(5461)->port == 7001);
  CHECK(m.master_for(16383)->port == 7002);
  CHECK(m.master_for(16384) == nullptr);
  CHECK(m.slots_of({"127.0.0.1", 7000}) == 5461);
  CHECK(m.slots_of({"127.0.0.1", 7003}) == 0); // a replica serves no slot

  SECTION("MOVED moves one slot; the map then differs") {
    slot_map before = m;
    CHECK(before.same_as(m));
    m.assign(42, {"127.0.0.1", 7002});
    CHECK(m.master_for(42)->port == 7002);
    CHECK(m.slots_of({"127.0.0.1", 7000}) == 5460);
    CHECK_FALSE(before.same_as(m));
  }
}

TEST_CASE("cluster_map: one master may serve several ranges, holes are not covered",
          "[redis][cluster]") {
  auto r = array(
    {range(0, 99, node("a", 1)), range(200, 16383, node("a", 1)), range(100, 150, node("", 2))});
  slot_map m;
  std::string error;
  REQUIRE(slot_map::parse_cluster_slots(r, asked, m, error));
  CHECK_FALSE(m.covers_all()); // 151-199 have no master
  CHECK(m.master_for(170) == nullptr);
  CHECK(m.masters().size() == 2);
  CHECK(m.slots_of({"a", 1}) == 100 + 16184);
  // An empty host is the answering node's.
  CHECK(*m.master_for(120) == node_address{"10.0.0.9", 2});
  CHECK(slot_map{}.master_for(0) == nullptr);
  CHECK_FALSE(slot_map{}.covers_all());
}

TEST_CASE("cluster_map: malformed CLUSTER SLOTS replies are refused, the map unchanged",
          "[redis][cluster][bad-input]") {
  slot_map m;
  std::string error;
  REQUIRE(slot_map::parse_cluster_slots(array({range(0, 16383, node("a", 1))}), asked, m, error));
  auto bad = [&](const reply& r) {
    INFO(r.to_string());
    CHECK_FALSE(slot_map::parse_cluster_slots(r, asked, m, error));
    CHECK(error.rfind("CLUSTER SLOTS: ", 0) == 0);
    CHECK(m.master_for(0)->host == "a");
  };
  bad(reply::make_error("ERR This instance has cluster support disabled"));
  bad(string("x"));
  bad(array({integer(1)}));
  bad(array({range(5, 4, node("a", 1))}));
  bad(array({range(0, 16384, node("a", 1))}));
  bad(array({range(-1, 3, node("a", 1))}));
  bad(array({range(0, 3, node("a", 0))}));
  bad(array({range(0, 3, node("a", 70000))}));
  bad(array({range(0, 3, node("?", 7000))}));
  bad(array({array({integer(0), integer(3), array({string("a")})})}));
}

TEST_CASE("cluster_map: MOVED and ASK redirections", "[redis][cluster]") {
  redirect r;
  REQUIRE(parse_redirect("MOVED 3999 127.0.0.1:6381", r));
  CHECK(r.kind == redirect::moved);
  CHECK(r.slot == 3999);
  CHECK(r.to == node_address{"127.0.0.1", 6381});
  REQUIRE(parse_redirect("ASK 0 redis-1.svc:7000", r));
  CHECK(r.kind == redirect::ask);
  CHECK(r.slot == 0);
  CHECK(r.to.host == "redis-1.svc");
  REQUIRE(parse_redirect("MOVED 16383 ::1:7002", r));
  CHECK(r.to == node_address{"::1", 7002});
  CHECK(r.to.to_string() == "[::1]:7002");
  REQUIRE(parse_redirect("ASK 7 [::1]:7002", r));
  CHECK(r.to.host == "::1");
}

TEST_CASE("cluster_map: other errors are not redirections", "[redis][cluster][bad-input]") {
  redirect r;
  r.slot = 77;
  for (const char* text :
       {"", "ERR unknown", "MOVED", "MOVED 1", "MOVED x 127.0.0.1:1", "MOVED 16384 h:1",
        "MOVED 1 h", "MOVED 1 h:", "MOVED 1 h:0", "MOVED 1 :7000", "ASK 1 h:99999", "moved 1 h:1",
        "CROSSSLOT Keys in request don't hash to the same slot",
        "TRYAGAIN Multiple keys request during rehashing of slot"}) {
    INFO(text);
    CHECK_FALSE(parse_redirect(text, r));
  }
  CHECK(r.slot == 77);
}
