#include "net/obs/status.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using herald::net::metrics::redis_node;
using herald::net::obs::readyz_body;
using herald::net::obs::redis_nodes_json;
using nlohmann::json;

namespace {

// Two masters (one of them down) and the replica our subscriber is on.
std::vector<redis_node> three_nodes() {
  return {{"10.0.0.5:7000", true, 8192, 0, 1},
          {"10.0.0.6:7000", false, 8192, 0, 4},
          {"10.0.0.7:7000", true, 0, 12, 2}};
}

} // namespace

TEST_CASE("redis_nodes: one object per node, in order, masters by their slots", "[status]") {
  auto list = redis_nodes_json(three_nodes());
  REQUIRE(list.size() == 3);
  CHECK(list[0] == json::parse(R"({"node":"10.0.0.5:7000","role":"master","connected":true,
                                   "slots":8192,"subscriptions":0,"reconnects":1})"));
  CHECK(list[1]["connected"] == false);
  CHECK(list[1]["role"] == "master");
  CHECK(list[2] == json::parse(R"({"node":"10.0.0.7:7000","role":"other","connected":true,
                                   "slots":0,"subscriptions":12,"reconnects":2})"));
  CHECK(redis_nodes_json({}) == json::array());
}

TEST_CASE("readyz: a single Redis or in-process mode keeps the bodies it had", "[status]") {
  CHECK(readyz_body(true, {}, {}) == R"({"status":"ready"})");
  CHECK(json::parse(readyz_body(false, "redis: not connected", {})) ==
        json{{"error", {{"code", "unavailable"}, {"message", "redis: not connected"}}}});
}

TEST_CASE("readyz: in Redis Cluster mode both answers list the nodes /healthz lists", "[status]") {
  auto ok = json::parse(readyz_body(true, {}, three_nodes()));
  CHECK(ok["status"] == "ready");
  CHECK(ok["redis_nodes"] == redis_nodes_json(three_nodes()));
  auto down = json::parse(readyz_body(false, "master 10.0.0.6:7000: not connected", three_nodes()));
  CHECK(down["error"]["code"] == "unavailable");
  CHECK(down["error"]["message"] == "master 10.0.0.6:7000: not connected");
  CHECK(down["redis_nodes"] == redis_nodes_json(three_nodes()));
  CHECK(!down.contains("status"));
}

TEST_CASE("readyz: a reason quoting invalid UTF-8 from Redis still gives valid JSON",
          "[status][bad-input]") {
  auto body = readyz_body(false, std::string{"ERR \xff\xfe"}, three_nodes());
  auto j = json::parse(body, nullptr, false);
  REQUIRE(!j.is_discarded());
  CHECK(j["error"]["code"] == "unavailable");
}
