#include "net/redis/reply.hpp"

#include "net/redis/replica_check.hpp"

#include <catch2/catch.hpp>

using herald::net::redis::reply;

TEST_CASE("reply: disconnected and error codes", "[redis][reply]") {
  auto d = reply::disconnected();
  CHECK(d.is_error());
  CHECK(d.is_disconnected());
  CHECK(d.str == "disconnected");

  auto e = reply::make_error("NOSCRIPT No matching script. Please use EVAL.");
  CHECK(e.has_error_code("NOSCRIPT"));
  CHECK_FALSE(e.has_error_code("NOSCRIPTS"));
  CHECK_FALSE(e.has_error_code("ERR"));
  CHECK_FALSE(e.is_disconnected());
  CHECK(reply::make_error("NOSCRIPT").has_error_code("NOSCRIPT"));

  reply s;
  s.type = reply::string;
  s.str = "NOSCRIPT";
  CHECK_FALSE(s.has_error_code("NOSCRIPT"));
}

TEST_CASE("reply: debug form", "[redis][reply]") {
  reply a;
  a.type = reply::array;
  reply i;
  i.type = reply::integer;
  i.number = 42;
  reply s;
  s.type = reply::string;
  s.str = "x";
  reply inner;
  inner.type = reply::array;
  inner.elements = {s, reply{}};
  a.elements = {i, inner, reply::make_error("ERR no")};
  CHECK(a.to_string() == "[42,[\"x\",nil],-ERR no]");
}

TEST_CASE("online_replicas counts the replicas INFO replication lists as online",
          "[redis][reply]") {
  using herald::net::redis::online_replicas;
  const std::string two = "# Replication\r\nrole:master\r\nconnected_slaves:3\r\n"
                          "slave0:ip=127.0.0.1,port=7001,state=online,offset=42,lag=0\r\n"
                          "slave1:ip=127.0.0.1,port=7002,state=wait_bgsave,offset=0,lag=0\r\n"
                          "slave2:ip=127.0.0.1,port=7003,state=online,offset=42,lag=1\r\n"
                          "master_failover_state:no-failover\r\n";
  CHECK(online_replicas(two) == 2);
  CHECK(online_replicas("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n") == 0);
  CHECK(online_replicas("") == 0);
  // "slave_read_only:1" on a replica is no replica line.
  CHECK(online_replicas("role:slave\r\nslave_read_only:1\r\nslave_repl_offset:5\r\n") == 0);
}
