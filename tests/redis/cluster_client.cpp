// cluster_client's sharded pub/sub against a real 3-master Redis Cluster
// (test_cluster.hpp): publications go out with SPUBLISH, every watched
// channel is SSUBSCRIBEd on the master of its slot, and a channel whose
// slot migrates is subscribed again on the new owner and reported as
// watching (so the gateway syncs it from history). And what a publish
// answers when its master freezes or dies (backend::outcome).
#include "net/redis/cluster_client.hpp"

#include <catch2/catch.hpp>

#include "client_events.hpp"
#include "io_fixture.hpp"
#include "net/redis/envelope.hpp"
#include "net/redis/slot.hpp"
#include "net/redis/url.hpp"
#include "server_queries.hpp"
#include "test_cluster.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace herald::net::redis;
using namespace herald::test;

namespace {

// The client's link events, the channels it reported watching and the
// offsets of the envelopes it received.
struct events : link_events {
  std::map<std::string, int> watching;
  std::map<std::string, std::vector<std::uint64_t>> offsets; // per channel, in arrival order

  void attach(cluster_client& c) {
    link_events::attach(c);
    c.on_watching = [this](const std::string& ch) { ++watching[ch]; };
    c.on_message = [this](const std::string& ch, std::string text) {
      envelope e;
      std::string error;
      if (parse_envelope(text, e, error) && e.channel == ch)
        offsets[ch].push_back(e.offset);
    };
  }
};

std::shared_ptr<cluster_client> make_client(io_fixture& f, test_cluster& c,
                                            std::chrono::milliseconds refresh = 500ms) {
  cluster_client::options o;
  std::string error;
  REQUIRE(herald::net::redis::parse_cluster_url(c.url(), o.seeds, error));
  o.command_timeout = 2000ms;
  o.refresh_interval = refresh;
  int n = 0;
  o.make_epoch = [n]() mutable { return "e" + std::to_string(++n); };
  return cluster_client::create(f.io, std::move(o));
}

// Publishes and waits for Redis's answer; returns the offset (0: failed).
std::uint64_t publish(io_fixture& f, cluster_client& c, const std::string& channel, int i) {
  bool done = false;
  backend::publish_result res;
  c.publish(channel, {"ev", std::to_string(i)}, [&](backend::publish_result r) {
    res = std::move(r);
    done = true;
  });
  f.run_until([&] { return done; }, 3s);
  return res.ok ? res.offset : 0;
}

// Herald channel names "stream:<i>", one on each master.
std::vector<std::string> one_per_master(test_cluster& c) {
  std::vector<std::string> out(c.size());
  std::size_t found = 0;
  for (int i = 0; found < c.size(); ++i) {
    auto ch = "stream:" + std::to_string(i);
    auto owner = c.owner_of(key_slot(keys_for("herald:", ch).pubsub));
    if (out[owner].empty()) {
      out[owner] = ch;
      ++found;
    }
  }
  return out;
}

// The set-up both cases share: an io_fixture f, a 3-master test_cluster cl,
// one Herald channel per master (channels), and a cluster_client on f.io,
// its events recorded in ev. start() creates and starts the client and
// REQUIREs its on_up within 5 s. The destructor stops the client and runs
// the io_context 200 ms more: stop() posts to the client's strand, and the
// connections keep themselves alive until they are closed there. Then the
// cluster's servers are stopped by PID and the io_context goes.
struct started_cluster_client {
  io_fixture f;
  test_cluster cl{3};
  std::vector<std::string> channels = one_per_master(cl);
  std::shared_ptr<cluster_client> client;
  events ev;

  ~started_cluster_client() {
    if (client) {
      client->stop();
      f.run_for(std::chrono::milliseconds(200));
    }
  }

  void start(std::chrono::milliseconds refresh = 500ms) {
    client = make_client(f, cl, refresh);
    ev.attach(*client);
    client->start();
    REQUIRE(f.run_until([&] { return ev.up; }, 5s));
  }
};

} // namespace

TEST_CASE_METHOD(started_cluster_client,
                 "cluster_client: SPUBLISH and SSUBSCRIBE on each channel's master, a migrated "
                 "slot's channel follows to the new owner",
                 "[redis][cluster_client][cluster]") {
  start();
  for (auto& ch : channels)
    client->watch(ch);
  REQUIRE(f.run_until([&] { return ev.watching.size() == channels.size(); }, 5s));

  // Sharded: each channel is subscribed on its own master only, no
  // classic subscription anywhere.
  for (std::size_t m = 0; m < cl.size(); ++m) {
    auto pubsub = keys_for("herald:", channels[m]).pubsub;
    CHECK(client->subscribed_node(channels[m]) == "127.0.0.1:" + std::to_string(cl.node(m).port()));
    for (std::size_t n = 0; n < cl.size(); ++n) {
      CHECK(shardnumsub(cl.node(n), pubsub) == (n == m ? 1 : 0));
      CHECK(numsub(cl.node(n), pubsub) == 0);
    }
  }
  auto nodes = client->nodes();
  REQUIRE(nodes.size() == 3);
  for (auto& n : nodes)
    CHECK(n.subscriptions == 1);

  for (int i = 1; i <= 5; ++i)
    for (auto& ch : channels)
      REQUIRE(publish(f, *client, ch, i) == static_cast<std::uint64_t>(i));
  REQUIRE(f.run_until(
    [&] {
      for (auto& ch : channels)
        if (ev.offsets[ch].size() < 5)
          return false;
      return true;
    },
    3s));
  for (auto& ch : channels)
    CHECK(ev.offsets[ch] == std::vector<std::uint64_t>{1, 2, 3, 4, 5});
  // SPUBLISH, not PUBLISH: nothing was broadcast to the other nodes.
  auto info = cl.node(0).command({"INFO", "commandstats"});
  CHECK(info.str.find("cmdstat_publish:") == std::string::npos);

  // Move channel 0's slot (with its history) from master 0 to master 1.
  const auto& moved = channels[0];
  auto pubsub = keys_for("herald:", moved).pubsub;
  auto watching_before = ev.watching[moved];
  auto moves_before = client->shard_moves();
  cl.migrate(key_slot(pubsub), 0, 1);
  auto node1 = "127.0.0.1:" + std::to_string(cl.node(1).port());
  REQUIRE(f.run_until([&] { return client->subscribed_node(moved) == node1; }, 5s));
  CHECK(client->shard_moves() > moves_before);
  CHECK(ev.watching[moved] > watching_before); // reported again: the gateway syncs it
  CHECK(shardnumsub(cl.node(1), pubsub) == 1);
  CHECK(shardnumsub(cl.node(0), pubsub) == 0);

  // Publishing goes on through the new owner and reaches the subscriber.
  REQUIRE(f.run_until([&] { return publish(f, *client, moved, 6) == 6; }, 5s));
  REQUIRE(f.run_until([&] { return ev.offsets[moved].size() == 6; }, 3s));
  CHECK(ev.offsets[moved] == std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6});
  // The unmoved channels are untouched.
  REQUIRE(publish(f, *client, channels[2], 6) == 6);
  REQUIRE(f.run_until([&] { return ev.offsets[channels[2]].size() == 6; }, 3s));
  INFO("down: " << (ev.down_reasons.empty() ? std::string("-") : ev.down_reasons.front()));
  CHECK(ev.downs == 0);

  // Master 1's shard subscriber connection is killed: the client goes down,
  // reconnects, subscribes both of master 1's channels again, is up again,
  // and reports them as watching (each syncs from history).
  auto ssub_id = [&](redis_server& n) {
    auto list = n.command({"CLIENT", "LIST"}).str;
    auto at = list.find(" name=herald-ssub ");
    REQUIRE(at != std::string::npos);
    auto line_start = list.rfind('\n', at);
    line_start = line_start == std::string::npos ? 0 : line_start + 1;
    return list.substr(line_start + 3, list.find(' ', line_start) - line_start - 3); // "id=<n> "
  };
  auto w_moved = ev.watching[moved], w_one = ev.watching[channels[1]];
  REQUIRE(cl.node(1).command({"CLIENT", "KILL", "ID", ssub_id(cl.node(1))}).number == 1);
  REQUIRE(f.run_until([&] { return ev.downs == 1; }, 3s));
  REQUIRE(f.run_until([&] { return ev.up; }, 5s));
  CHECK(ev.watching[moved] > w_moved);
  CHECK(ev.watching[channels[1]] > w_one);
  CHECK(shardnumsub(cl.node(1), pubsub) == 1);
  REQUIRE(publish(f, *client, channels[1], 6) == 6);
  REQUIRE(f.run_until([&] { return ev.offsets[channels[1]].size() == 6; }, 3s));
  CHECK(ev.offsets[channels[1]] == std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6});

  // Master 0 has no channel left: its shard subscriber is closed at the
  // next map refresh; unwatch removes the subscription.
  REQUIRE(f.run_until(
    [&] {
      for (auto& n : client->nodes())
        if (n.address == "127.0.0.1:" + std::to_string(cl.node(0).port()))
          return n.subscriptions == 0;
      return false;
    },
    3s));
  client->unwatch(channels[2]);
  REQUIRE(f.run_until(
    [&] { return shardnumsub(cl.node(2), keys_for("herald:", channels[2]).pubsub) == 0; }, 3s));
}

// The e2e migration test cannot count on a MOVED (Herald's map may learn the
// new owner before a command meets the old one); here the map is stale by
// construction: no channel is watched (no sunsubscribe to refresh on) and
// the periodic refresh is an hour away, so the publication after the
// migration goes to the old owner, is answered MOVED, and follows it.
TEST_CASE_METHOD(
  started_cluster_client,
  "cluster_client: a publication sent to a slot's old owner follows MOVED to the new one",
  "[redis][cluster_client][cluster]") {
  start(std::chrono::hours(1));
  const auto& ch = channels[0];
  REQUIRE(publish(f, *client, ch, 1) == 1);
  REQUIRE(publish(f, *client, ch, 2) == 2);
  CHECK(client->redirects() == 0);

  cl.node(0).command({"CONFIG", "RESETSTAT"});
  cl.migrate(key_slot(keys_for("herald:", ch).pubsub), 0, 1);

  // Stored on the new owner with the history that moved: offset 3, not 1.
  REQUIRE(publish(f, *client, ch, 3) == 3);
  CHECK(client->redirects() == 1);
  CHECK(error_count(cl.node(0), "MOVED") == 1);
  auto len = cl.node(1).command({"XLEN", keys_for("herald:", ch).history});
  CHECK(len.number == 3);
  // The MOVED refreshed the map: the next one goes straight to node 1.
  REQUIRE(publish(f, *client, ch, 4) == 4);
  CHECK(client->redirects() == 1);
  CHECK(error_count(cl.node(0), "MOVED") == 1);
}

// Issue 19: what a publish answers when its master fails under it. Frozen
// after the script was sent: unknown (it may run once the master thaws), and
// a retry with the same idempotency key stores it at most once. Killed: the
// script cannot be sent, so not stored.
TEST_CASE_METHOD(started_cluster_client,
                 "cluster_client: a master frozen mid-publish gives unknown, a dead one not stored",
                 "[redis][cluster_client][cluster]") {
  using outcome = backend::outcome;
  start(std::chrono::hours(1));
  const auto& ch = channels[0];
  const auto owner = cl.owner_of(key_slot(keys_for("herald:", ch).pubsub));
  auto publish_keyed = [&](const std::string& key) {
    bool done = false;
    backend::publish_result res;
    client->publish(ch, {"ev", "1", key}, [&](backend::publish_result r) {
      res = std::move(r);
      done = true;
    });
    REQUIRE(f.run_until([&] { return done; }, 5s));
    return res;
  };
  REQUIRE(publish(f, *client, ch, 1) == 1);

  cl.node(owner).freeze();
  auto frozen = publish_keyed("k-frozen");
  cl.node(owner).thaw();
  CHECK_FALSE(frozen.ok);
  CHECK(frozen.what == outcome::unknown);
  // Retried with the same key once the master answers again: stored once.
  backend::publish_result again;
  REQUIRE(f.run_until(
    [&] {
      again = publish_keyed("k-frozen");
      return again.ok;
    },
    8s));
  CHECK(again.offset == 2);
  CHECK(cl.node(owner).command({"XLEN", keys_for("herald:", ch).history}).number == 2);

  // Once the client knows its master is gone (a publish written into the
  // socket before that is unknown: Herald cannot tell whether it arrived).
  const auto address = "127.0.0.1:" + std::to_string(cl.node(owner).port());
  cl.node(owner).kill();
  REQUIRE(f.run_until(
    [&] {
      for (const auto& n : client->nodes())
        if (n.address == address)
          return !n.connected;
      return false;
    },
    3s));
  auto dead = publish_keyed("k-dead");
  CHECK_FALSE(dead.ok);
  CHECK(dead.what == outcome::not_stored);
  CHECK_THAT(dead.error, Catch::Contains("not sent"));
}
