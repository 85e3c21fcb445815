// shard_subscriber against real Redis 7 servers: a standalone one (Redis 7
// takes SSUBSCRIBE / SPUBLISH there too) and a 3-master Redis Cluster
// (test_cluster.hpp) for MOVED refusals and slot migration.
#include "net/redis/shard_subscriber.hpp"

#include <catch2/catch.hpp>

#include "client_events.hpp"
#include "io_fixture.hpp"
#include "net/redis/slot.hpp"
#include "redis_server.hpp"
#include "server_queries.hpp"
#include "started_client.hpp"
#include "stop_on_exit.hpp"
#include "test_cluster.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using herald::net::redis::key_slot;
using herald::net::redis::shard_subscriber;
using herald::test::command_calls;
using herald::test::io_fixture;
using herald::test::numsub;
using herald::test::redis_server;
using herald::test::shard_events;
using herald::test::shardnumsub;
using herald::test::started_shard_subscriber;
using herald::test::stop_on_exit;
using herald::test::test_cluster;
using herald::test::test_options;

namespace {

// started_shard_subscriber against a server that wants the password "s3cret".
struct password_shard_subscriber : started_shard_subscriber {
  password_shard_subscriber()
    : started_shard_subscriber({"--requirepass", "s3cret"}) {}
};

// Channels that share one hash tag (one slot): "{tag}:0", "{tag}:1", ...
std::vector<std::string> tagged(const std::string& tag, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i)
    out.push_back("{" + tag + "}:" + std::to_string(i));
  return out;
}

// A channel name "{ch<i>}:pub" whose slot node `owner` of `c` serves.
std::string channel_on(test_cluster& c, std::size_t owner, int start = 0) {
  for (int i = start;; ++i) {
    auto name = "{ch" + std::to_string(i) + "}:pub";
    if (c.owner_of(key_slot(name)) == owner)
      return name;
  }
}

} // namespace

TEST_CASE_METHOD(started_shard_subscriber,
                 "shard_subscriber: SSUBSCRIBE batched per turn, one command per slot",
                 "[redis][shard_subscriber]") {
  auto opts = test_options(srv.url());
  opts.client_name = "shard-batch";
  opts.heartbeat_interval = 10s; // no PING during the test
  create(opts);
  start();

  auto writes = sub->counters().writes;
  auto before = command_calls(srv, "ssubscribe");
  // 30 channels in 3 slots, one call each, in one executor turn.
  for (const auto& tag : {"a", "b", "c"})
    for (auto& ch : tagged(tag, 10))
      sub->subscribe({ch});
  CHECK(sub->wanted_count() == 30);
  REQUIRE(f.run_until([&] { return rec.subscribed.size() == 30; }, 3s));
  CHECK(command_calls(srv, "ssubscribe") - before == 3); // one per slot
  CHECK(sub->counters().writes - writes == 1);           // in one write
  CHECK(shardnumsub(srv, "{a}:0") == 1);
  CHECK(shardnumsub(srv, "{c}:9") == 1);
  CHECK(numsub(srv, "{a}:0") == 0); // not a classic subscription
  CHECK(sub->confirmed("{b}:4"));
  CHECK(sub->confirmed_count() == 30);

  const std::string payload("x\0y\r\nz", 6);
  CHECK(srv.command({"SPUBLISH", "{b}:4", payload}).number == 1);
  CHECK(srv.command({"PUBLISH", "{b}:4", "classic"}).number == 0); // not delivered
  REQUIRE(f.run_until([&] { return rec.messages.size() == 1; }, 3s));
  CHECK(rec.messages[0] == std::make_pair(std::string("{b}:4"), payload));

  auto unsub_before = command_calls(srv, "sunsubscribe");
  for (auto& ch : tagged("a", 10))
    sub->unsubscribe({ch});
  sub->unsubscribe({"{b}:0"});
  sub->flush();
  REQUIRE(f.run_until([&] { return shardnumsub(srv, "{b}:0") == 0; }, 3s));
  CHECK(command_calls(srv, "sunsubscribe") - unsub_before == 2);
  CHECK(shardnumsub(srv, "{a}:5") == 0);
  CHECK(shardnumsub(srv, "{b}:1") == 1);
  CHECK(sub->wanted_count() == 19);
  CHECK(srv.command({"SPUBLISH", "{a}:5", "gone"}).number == 0);
  CHECK(srv.command({"SPUBLISH", "{c}:0", "still"}).number == 1);
  REQUIRE(f.run_until([&] { return rec.messages.size() == 2; }, 3s));
  CHECK(rec.messages[1] == std::make_pair(std::string("{c}:0"), std::string("still")));
  CHECK(rec.downs == 0);
  CHECK(rec.lost.empty());
}

TEST_CASE_METHOD(started_shard_subscriber,
                 "shard_subscriber: toggled in flight, ends as last asked",
                 "[redis][shard_subscriber]") {
  start();
  for (int i = 0; i < 5; ++i) { // subscribe, unsubscribe, ..., subscribe
    if (i % 2 == 0)
      sub->subscribe({"t"});
    else
      sub->unsubscribe({"t"});
    sub->flush();
  }
  REQUIRE(f.run_until([&] { return sub->confirmed("t"); }, 3s));
  f.run_for(100ms);
  CHECK(shardnumsub(srv, "t") == 1);
  sub->unsubscribe({"t"});
  sub->subscribe({"t"});
  sub->unsubscribe({"t"});
  sub->flush();
  REQUIRE(f.run_until([&] { return shardnumsub(srv, "t") == 0; }, 3s));
  f.run_for(100ms);
  CHECK(shardnumsub(srv, "t") == 0);
  CHECK_FALSE(sub->confirmed("t"));
}

TEST_CASE_METHOD(password_shard_subscriber,
                 "shard_subscriber: PING keeps it up, with and without channels; AUTH",
                 "[redis][shard_subscriber]") {
  auto opts = test_options("redis://:s3cret@127.0.0.1:" + std::to_string(srv.port()));
  opts.client_name = "shard-ping";
  create(opts); // PING every 200 ms, timeout 500 ms
  start();
  f.run_for(700ms); // +PONG outside subscribed mode
  sub->subscribe({"p"});
  REQUIRE(f.run_until([&] { return sub->confirmed("p"); }, 3s));
  f.run_for(700ms); // ["pong", ""] in subscribed mode
  CHECK(sub->counters().pings >= 4);
  CHECK(sub->counters().ping_timeouts == 0);
  CHECK(rec.downs == 0);
  CHECK(srv.command({"SPUBLISH", "p", "hi"}, "s3cret").number == 1);
  REQUIRE(f.run_until([&] { return rec.messages.size() == 1; }, 3s));

  // A wrong password never comes up and says why.
  auto bad = test_options("redis://:wrong@127.0.0.1:" + std::to_string(srv.port()));
  auto sub2 = shard_subscriber::create(f.ex, bad);
  stop_on_exit guard2{sub2};
  shard_events rec2;
  rec2.attach(*sub2);
  sub2->start();
  REQUIRE(f.run_until([&] { return !sub2->last_error().empty(); }, 3s));
  CHECK(sub2->last_error().find("handshake") != std::string::npos);
  CHECK_FALSE(rec2.up);
}

TEST_CASE_METHOD(started_shard_subscriber,
                 "shard_subscriber: restart and freeze, resubscribed on reconnect",
                 "[redis][shard_subscriber]") {
  create();
  sub->subscribe(tagged("r", 3)); // wanted before start
  sub->subscribe({"other"});
  start();
  CHECK(rec.subscribed.size() == 4); // up only once every wanted channel is confirmed
  CHECK(shardnumsub(srv, "{r}:2") == 1);

  srv.kill();
  REQUIRE(f.run_until([&] { return rec.downs == 1; }, 3s));
  CHECK_FALSE(sub->confirmed("other"));
  sub->subscribe({"while-down"});
  srv.start();
  REQUIRE(f.run_until([&] { return rec.up; }, 5s));
  CHECK(rec.ups == 2);
  CHECK(rec.subscribed["other"] == 2);
  CHECK(rec.subscribed["while-down"] == 1);
  CHECK(shardnumsub(srv, "while-down") == 1);
  CHECK(sub->counters().reconnects == 1);

  srv.freeze(); // TCP stays up; only the PING notices
  REQUIRE(f.run_until([&] { return rec.downs == 2; }, 3s));
  CHECK(sub->counters().ping_timeouts == 1);
  CHECK(rec.down_reasons.back().find("PONG") != std::string::npos);
  srv.thaw();
  REQUIRE(f.run_until([&] { return rec.up; }, 5s));
  CHECK(srv.command({"SPUBLISH", "{r}:0", "back"}).number == 1);
  REQUIRE(f.run_until([&] { return rec.messages.size() == 1; }, 3s));
  CHECK(rec.messages[0].second == "back");
}

TEST_CASE_METHOD(started_shard_subscriber, "shard_subscriber: stop() ends it without events",
                 "[redis][shard_subscriber]") {
  create();
  sub->subscribe({"s"});
  start();
  sub->stop();
  CHECK(f.run_until([&] { return shardnumsub(srv, "s") == 0; }, 2s)); // the socket is closed
  f.run_for(200ms);
  CHECK(rec.downs == 0);
  CHECK_FALSE(sub->up());
}

TEST_CASE("shard_subscriber: cluster, MOVED refusal and sunsubscribe on slot migration",
          "[redis][shard_subscriber][cluster]") {
  io_fixture f;
  test_cluster c(3);
  auto a = channel_on(c, 0);
  auto b = channel_on(c, 1);
  auto sub0 = shard_subscriber::create(f.ex, test_options(c.node(0).url()));
  stop_on_exit guard{sub0};
  shard_events rec;
  rec.attach(*sub0);
  sub0->start();
  REQUIRE(f.run_until([&] { return rec.up; }, 3s));

  // b's slot is on node 1: node 0 refuses with MOVED naming node 1.
  sub0->subscribe({a, b});
  REQUIRE(f.run_until([&] { return sub0->confirmed(a) && rec.lost.size() == 1; }, 3s));
  CHECK(rec.lost[0].first == b);
  CHECK(rec.lost[0].second.rfind("MOVED " + std::to_string(key_slot(b)), 0) == 0);
  CHECK(rec.lost[0].second.find(":" + std::to_string(c.node(1).port())) != std::string::npos);
  CHECK_FALSE(sub0->wanted(b));
  CHECK(shardnumsub(c.node(0), a) == 1);

  CHECK(c.node(0).command({"SPUBLISH", a, "m1"}).number == 1);
  REQUIRE(f.run_until([&] { return rec.messages.size() == 1; }, 3s));

  // a's slot moves to node 2: node 0 sends an unasked sunsubscribe.
  c.migrate(key_slot(a), 0, 2);
  REQUIRE(f.run_until([&] { return rec.lost.size() == 2; }, 3s));
  CHECK(rec.lost[1] == std::make_pair(a, std::string{}));
  CHECK_FALSE(sub0->wanted(a));
  CHECK(shardnumsub(c.node(0), a) == 0);
  CHECK(rec.downs == 0); // the connection itself stays

  // Subscribed on the new owner, it gets what is published there.
  auto sub2 = shard_subscriber::create(f.ex, test_options(c.node(2).url()));
  stop_on_exit guard2{sub2};
  shard_events rec2;
  rec2.attach(*sub2);
  sub2->subscribe({a});
  sub2->start();
  REQUIRE(f.run_until([&] { return sub2->confirmed(a); }, 3s));
  CHECK(c.node(2).command({"SPUBLISH", a, "m2"}).number == 1);
  REQUIRE(f.run_until([&] { return rec2.messages.size() == 1; }, 3s));
  CHECK(rec2.messages[0].second == "m2");
  CHECK(rec.messages.size() == 1);
}
