// subscriber against real redis-server processes. The shared cases run in
// both command families (GENERATE over pubsub_mode: classic SUBSCRIBE and
// sharded SSUBSCRIBE, which a standalone Redis 7 takes too); then each
// family's own cases: classic's refused SUBSCRIBE, sharded's MOVED refusal
// and sunsubscribe on a slot migration in a 3-master Redis Cluster
// (test_cluster.hpp).
#include "net/redis/subscriber.hpp"

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
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using namespace herald::net::redis;
using namespace herald::test;

namespace {

// What the tests of one family send and ask the server.
struct family {
  std::string name;      ///< for the test log
  std::string publish;   ///< "PUBLISH" / "SPUBLISH"
  std::string other_publish; ///< the other family's: reaches none of our channels
  std::string subscribe; ///< commandstats name: "subscribe" / "ssubscribe"
  std::string unsubscribe;
  std::string list_field; ///< CLIENT LIST: " sub=" / " ssub="
  std::string channels;   ///< PUBSUB CHANNELS / SHARDCHANNELS: the active channels
  long long (*count)(redis_server&, const std::string&);       ///< NUMSUB / SHARDNUMSUB
  long long (*other_count)(redis_server&, const std::string&); ///< the other one
};

family family_of(pubsub_mode m) {
  if (m == pubsub_mode::sharded)
    return {"sharded", "SPUBLISH", "PUBLISH", "ssubscribe", "sunsubscribe", " ssub=",
            "SHARDCHANNELS", shardnumsub, numsub};
  return {"classic", "PUBLISH", "SPUBLISH", "subscribe", "unsubscribe", " sub=",
          "CHANNELS", numsub, shardnumsub};
}

// Runs the rest of a started_subscriber case once per family: sets the
// fixture's `mode` (GENERATE), names the family in the log (INFO) and
// declares `fam`, its family. A macro, because GENERATE and INFO belong to
// the test case's own scope.
#define FOR_EACH_FAMILY()                                                                          \
  mode = GENERATE(pubsub_mode::classic, pubsub_mode::sharded);                                     \
  const auto fam = family_of(mode);                                                                \
  INFO(fam.name)

// started_subscriber against a server that wants the password "pw".
struct password_subscriber : started_subscriber {
  password_subscriber()
    : started_subscriber({"--requirepass", "pw"}) {}
  std::string url(const std::string& password = "pw") const {
    return "redis://:" + password + "@127.0.0.1:" + std::to_string(srv.port());
  }
};

// The number after `field` (" sub=", " ssub=") on the CLIENT LIST line of
// the client named `name`; -1 when there is none.
int subscriptions_of(redis_server& srv, const std::string& name, const std::string& field) {
  auto list = srv.command({"CLIENT", "LIST"});
  std::istringstream lines(list.str);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find(" name=" + name + " ") == std::string::npos)
      continue;
    auto pos = line.find(field);
    if (pos != std::string::npos)
      return std::stoi(line.substr(pos + field.size()));
  }
  return -1;
}

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

// -- both families ---------------------------------------------------------------

TEST_CASE_METHOD(started_subscriber,
                 "subscriber: changes are batched per executor turn, in one write, sharded: one "
                 "SSUBSCRIBE per slot",
                 "[redis][subscriber]") {
  FOR_EACH_FAMILY();
  const bool sharded = mode == pubsub_mode::sharded;
  auto opts = test_options(srv.url());
  opts.client_name = "batch-sub";
  opts.heartbeat_interval = 10s; // no PING during the test
  create(opts);
  start();
  CHECK(sub->counters().subscribe_commands == 0); // nothing wanted, nothing sent

  auto writes = sub->counters().writes;
  auto before = command_calls(srv, fam.subscribe);
  // 102 channels in 3 slots, one call each, in one executor turn (the test
  // thread is the executor's only thread).
  for (const auto& tag : {"a", "b", "c"})
    for (auto& ch : tagged(tag, 34))
      sub->subscribe({ch});
  CHECK(sub->wanted_count() == 102);
  REQUIRE(f.run_until([&] { return rec.subscribed.size() == 102; }, 3s));
  CHECK(command_calls(srv, fam.subscribe) - before == (sharded ? 3 : 1));
  CHECK(sub->counters().subscribe_commands == (sharded ? 3u : 1u));
  CHECK(sub->counters().writes - writes == 1); // the whole batch in one write
  CHECK(subscriptions_of(srv, "batch-sub", fam.list_field) == 102);
  CHECK(fam.count(srv, "{a}:0") == 1);
  CHECK(fam.count(srv, "{c}:33") == 1);
  CHECK(fam.other_count(srv, "{a}:0") == 0); // not the other family's subscription
  CHECK(sub->confirmed("{b}:4"));
  CHECK(sub->confirmed_count() == 102);

  const std::string payload("x\0y\r\nz", 6);
  CHECK(srv.command({fam.publish, "{b}:7", payload}).number == 1);
  CHECK(srv.command({fam.other_publish, "{b}:7", "other"}).number == 0); // not delivered
  REQUIRE(f.run_until([&] { return rec.messages.size() == 1; }, 3s));
  CHECK(rec.messages[0] == std::make_pair(std::string("{b}:7"), payload));

  auto unsub_before = command_calls(srv, fam.unsubscribe);
  sub->unsubscribe(tagged("a", 34));
  for (auto& ch : tagged("b", 10)) // one turn, many calls
    sub->unsubscribe({ch});
  sub->flush(); // an explicit flush sends at once
  REQUIRE(f.run_until([&] { return fam.count(srv, "{b}:9") == 0; }, 3s));
  CHECK(command_calls(srv, fam.unsubscribe) - unsub_before == (sharded ? 2 : 1));
  CHECK(fam.count(srv, "{a}:5") == 0);
  CHECK(fam.count(srv, "{b}:10") == 1);
  CHECK(subscriptions_of(srv, "batch-sub", fam.list_field) == 58);
  CHECK(sub->wanted_count() == 58);

  CHECK(srv.command({fam.publish, "{a}:5", "gone"}).number == 0);
  CHECK(srv.command({fam.publish, "{c}:0", "still"}).number == 1);
  REQUIRE(f.run_until([&] { return rec.messages.size() == 2; }, 3s));
  CHECK(rec.messages[1] == std::make_pair(std::string("{c}:0"), std::string("still")));
  CHECK(rec.downs == 0);
  CHECK(rec.lost.empty());
}

TEST_CASE_METHOD(started_subscriber,
                 "subscriber: subscribe, unsubscribe, subscribe again in flight ends as last asked",
                 "[redis][subscriber]") {
  // At most one transition per channel is in flight: the SUBSCRIBE that
  // follows an unconfirmed UNSUBSCRIBE waits for its confirmation.
  FOR_EACH_FAMILY();
  start();

  auto toggle = [&](int times) {
    for (int i = 0; i < times; ++i) {
      if (i % 2 == 0)
        sub->subscribe({"a"});
      else
        sub->unsubscribe({"a"});
      sub->flush();
    }
  };

  toggle(5); // ends wanted
  REQUIRE(f.run_until([&] { return sub->confirmed("a"); }, 3s));
  f.run_for(100ms);
  CHECK(sub->confirmed("a"));
  CHECK(fam.count(srv, "a") == 1);
  CHECK(srv.command({fam.publish, "a", "hello"}).number == 1);
  REQUIRE(f.run_until([&] { return rec.messages.size() == 1; }, 3s));
  CHECK(rec.messages[0].second == "hello");

  toggle(2); // subscribe (no-op: already wanted), then unsubscribe
  toggle(4); // ends not wanted
  REQUIRE(f.run_until([&] { return fam.count(srv, "a") == 0; }, 3s));
  f.run_for(100ms);
  CHECK(fam.count(srv, "a") == 0);
  CHECK_FALSE(sub->confirmed("a"));
  CHECK_FALSE(sub->wanted("a"));

  toggle(1);
  REQUIRE(f.run_until([&] { return sub->confirmed("a"); }, 3s));
  CHECK(srv.command({fam.publish, "a", "again"}).number == 1);
  REQUIRE(f.run_until([&] { return rec.messages.size() == 2; }, 3s));

  // Within one turn: unsubscribe, subscribe, unsubscribe: ends not wanted.
  sub->unsubscribe({"a"});
  sub->subscribe({"a"});
  sub->unsubscribe({"a"});
  sub->flush();
  REQUIRE(f.run_until([&] { return fam.count(srv, "a") == 0; }, 3s));
  f.run_for(100ms);
  CHECK(fam.count(srv, "a") == 0);
  CHECK_FALSE(sub->confirmed("a"));
  CHECK(rec.downs == 0);
}

TEST_CASE_METHOD(password_subscriber,
                 "subscriber: channels wanted before start are subscribed on connect (AUTH), a "
                 "wrong password says why",
                 "[redis][subscriber]") {
  FOR_EACH_FAMILY();
  create(test_options(url()));
  sub->subscribe({"x", "y", "z"});
  start();
  // on_up comes after every confirmation.
  CHECK(rec.subscribed.size() == 3);
  CHECK(sub->confirmed("x"));
  CHECK(fam.count(srv, "z") == 1);
  CHECK(srv.command({fam.publish, "y", "1"}).number == 1);
  REQUIRE(f.run_until([&] { return rec.messages.size() == 1; }, 3s));

  // A wrong password never comes up and says why, as connection does.
  auto sub2 = subscriber::create(f.ex, test_options(url("wrong")), mode);
  stop_on_exit guard2{sub2};
  pubsub_events rec2;
  rec2.attach(*sub2);
  sub2->subscribe({"x"});
  sub2->start();
  REQUIRE(f.run_until([&] { return !rec2.attempt_failures.empty(); }, 3s));
  CHECK_THAT(rec2.attempt_failures[0], Catch::StartsWith("AUTH failed: WRONGPASS"));
  CHECK(sub2->last_error() == rec2.attempt_failures[0]);
  CHECK_FALSE(rec2.up);
  CHECK_FALSE(sub2->connected());
}

TEST_CASE_METHOD(started_subscriber,
                 "subscriber: PING keeps a healthy connection up, with and without channels",
                 "[redis][subscriber]") {
  FOR_EACH_FAMILY();
  auto opts = test_options(srv.url());
  opts.heartbeat_interval = 50ms;
  opts.heartbeat_timeout = 300ms;
  create(opts);
  start();
  f.run_for(400ms); // +PONG outside subscribed mode
  auto pings = sub->counters().pings;
  CHECK(pings >= 3);
  sub->subscribe({"p"});
  REQUIRE(f.run_until([&] { return sub->confirmed("p"); }, 3s));
  f.run_for(400ms); // ["pong", ""] in subscribed mode
  CHECK(sub->counters().pings - pings >= 3);
  CHECK(sub->counters().ping_timeouts == 0);
  CHECK(rec.downs == 0);
  // No channel but the wanted one: the heartbeat names none (there was a
  // probe channel once).
  auto active = srv.command({"PUBSUB", fam.channels});
  REQUIRE(active.elements.size() == 1);
  CHECK(active.elements[0].str == "p");
  CHECK(sub->confirmed_count() == 1);
  CHECK(srv.command({fam.publish, "p", "y"}).number == 1);
  REQUIRE(f.run_until([&] { return rec.messages.size() == 1; }, 3s));
  CHECK(rec.messages[0].first == "p");
}

TEST_CASE_METHOD(started_subscriber,
                 "restart: Redis killed, back 2 s later, the connection and the subscriber "
                 "recover, resubscribed",
                 "[redis][subscriber][connection][restart]") {
  FOR_EACH_FAMILY();
  auto conn = connection::create(f.ex, test_options(srv.url()));
  stop_on_exit guard{conn};
  link_events crec;
  crec.attach(*conn);
  auto& srec = rec;
  create();
  sub->subscribe({"news", "sport"}); // wanted before start
  conn->start();
  sub->start();
  REQUIRE(f.run_until([&] { return crec.up && srec.up; }, 3s));
  CHECK(srec.subscribed.size() == 2); // up only once every wanted channel is confirmed

  std::vector<reply> got;
  auto keep = [&](reply r) { got.push_back(std::move(r)); };
  conn->command({fam.publish, "news", "before"}, keep);
  REQUIRE(f.run_until([&] { return srec.messages.size() == 1; }, 3s));

  srv.kill();
  REQUIRE(f.run_until([&] { return crec.downs == 1 && srec.downs == 1; }, 2s));
  CHECK_THAT(crec.down_reasons[0], Catch::Contains("connection lost"));
  CHECK_THAT(srec.down_reasons[0], Catch::Contains("connection closed by the server") ||
                                     Catch::StartsWith("read: "));
  CHECK_FALSE(sub->confirmed("news"));
  sub->subscribe({"while-down"});
  auto failures_before = conn->counters().connect_failures;
  auto sub_failures_before = sub->counters().connect_failures;
  f.run_for(2000ms);
  CHECK_FALSE(conn->connected());
  CHECK_FALSE(sub->up());
  // Backoff 20 ms doubling to 300 ms: a handful of attempts, not hundreds.
  auto failed = conn->counters().connect_failures - failures_before;
  CHECK(failed >= 5);
  CHECK(failed <= 25);
  auto sub_failed = sub->counters().connect_failures - sub_failures_before;
  CHECK(sub_failed >= 5);
  CHECK(sub_failed <= 25);
  CHECK(srec.attempt_failures.size() == sub_failed);

  srv.start();
  auto restarted = std::chrono::steady_clock::now();
  REQUIRE(f.run_until([&] { return crec.up && srec.up; }, 3s));
  auto back_after = std::chrono::steady_clock::now() - restarted;
  CHECK(back_after < 1500ms);
  CHECK(crec.ups == 2);
  CHECK(srec.ups == 2);
  CHECK(srec.subscribed["news"] == 2); // confirmed again after the restart
  CHECK(srec.subscribed["while-down"] == 1);
  CHECK(fam.count(srv, "news") == 1);
  CHECK(fam.count(srv, "sport") == 1);
  CHECK(fam.count(srv, "while-down") == 1);
  CHECK(conn->counters().reconnects == 1);
  CHECK(sub->counters().reconnects == 1);

  got.clear();
  conn->command({fam.publish, "sport", "after"}, keep);
  REQUIRE(f.run_until([&] { return srec.messages.size() == 2; }, 3s));
  CHECK(srec.messages[1] == std::make_pair(std::string("sport"), std::string("after")));
  REQUIRE(got.size() == 1);
  CHECK(got[0].number == 1);
}

TEST_CASE_METHOD(started_subscriber,
                 "freeze: Redis stopped for 3 s, both heartbeats drop, then recover",
                 "[redis][subscriber][connection][freeze]") {
  FOR_EACH_FAMILY();
  auto opts = test_options(srv.url()); // heartbeat 200 ms, timeout 500 ms
  auto conn = connection::create(f.ex, opts);
  stop_on_exit guard{conn};
  link_events crec;
  crec.attach(*conn);
  auto& srec = rec;
  create(opts);
  sub->subscribe({"news"});
  conn->start();
  sub->start();
  REQUIRE(f.run_until([&] { return crec.up && srec.up; }, 3s));

  srv.freeze(); // TCP stays up; only the heartbeats notice
  auto frozen_at = std::chrono::steady_clock::now();
  REQUIRE(f.run_until([&] { return crec.downs == 1 && srec.downs == 1; }, 2500ms));
  auto detected_after = std::chrono::steady_clock::now() - frozen_at;
  CHECK(detected_after < 1500ms);
  CHECK_THAT(crec.down_reasons[0], Catch::Contains("heartbeat timeout"));
  CHECK(srec.down_reasons[0] == "heartbeat timeout: no PONG within 500 ms");
  CHECK(conn->counters().heartbeat_timeouts == 1);
  CHECK(sub->counters().ping_timeouts == 1);

  // Still frozen: TCP connects succeed (the kernel accepts), the handshake
  // times out, and the attempts go on.
  f.run_until([] { return false; }, 3000ms - std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::steady_clock::now() - frozen_at));
  CHECK_FALSE(conn->connected());
  CHECK_FALSE(sub->connected());
  CHECK_FALSE(sub->up());
  CHECK_THAT(conn->last_error(), Catch::Contains("connect timeout after 500 ms (handshake)"));
  CHECK(sub->last_error() == "connect timeout after 500 ms");

  srv.thaw();
  REQUIRE(f.run_until([&] { return crec.up && srec.up; }, 3s));
  CHECK(crec.ups == 2);
  CHECK(srec.ups == 2);
  std::vector<reply> got;
  conn->command({fam.publish, "news", "thawed"}, [&](reply r) { got.push_back(std::move(r)); });
  REQUIRE(f.run_until([&] { return srec.messages.size() == 1; }, 3s));
  CHECK(srec.messages[0].second == "thawed");
}

TEST_CASE_METHOD(started_subscriber, "subscriber: stop() ends it without events",
                 "[redis][subscriber]") {
  FOR_EACH_FAMILY();
  create();
  sub->subscribe({"q"});
  start();
  sub->stop();
  f.run_for(300ms);
  CHECK(rec.downs == 0);
  CHECK(rec.attempt_failures.empty());
  CHECK_FALSE(sub->connected());
  CHECK_FALSE(sub->up());
  REQUIRE(f.run_until([&] { return fam.count(srv, "q") == 0; }, 2s)); // the socket is closed
  sub->start(); // after stop(): nothing
  f.run_for(50ms);
  CHECK_FALSE(sub->connected());
  std::weak_ptr<subscriber> weak = sub;
  sub.reset();
  f.run_for(20ms);
  CHECK(weak.expired());
}

// -- issue 19: every name under the prefix; refusals reported -------------------

namespace {

// A server with the ACL user "herald" that may use only `herald:` keys and
// channels (docs/cluster.md "Redis ACL").
struct acl_subscriber : started_subscriber {
  acl_subscriber() {
    auto r =
      srv.command({"ACL", "SETUSER", "herald", "on", ">pw", "~herald:*", "&herald:*", "+@all"});
    REQUIRE(r.str == "OK");
  }
  std::string url() const { return "redis://herald:pw@127.0.0.1:" + std::to_string(srv.port()); }
};

} // namespace

TEST_CASE_METHOD(acl_subscriber,
                 "subscriber: an ACL user limited to the prefix (&herald:*) is enough: the PING "
                 "heartbeat names no channel",
                 "[redis][subscriber][acl]") {
  // Was (classic): a probe channel "__herald_probe:<hex>" outside the prefix
  // was refused (NOPERM) and the subscriber never came up; then the probe
  // channel moved under the prefix. Now there is no probe channel.
  FOR_EACH_FAMILY();
  create(test_options(url())); // PING every 200 ms
  sub->subscribe({"herald:{c}:pub"});
  start();
  CHECK(sub->confirmed("herald:{c}:pub"));
  f.run_for(500ms);
  CHECK(sub->counters().pings >= 2);
  CHECK(rec.downs == 0);
  CHECK(srv.command({fam.publish, "herald:{c}:pub", "m"}).number == 1);
  REQUIRE(f.run_until([&] { return rec.messages.size() == 1; }, 3s));
}

TEST_CASE_METHOD(acl_subscriber,
                 "subscriber: a SUBSCRIBE the ACL refuses is reported naming the channel (classic: "
                 "down and retried with backoff, sharded: lost)",
                 "[redis][subscriber][acl][backoff]") {
  FOR_EACH_FAMILY();
  create(test_options(url()));
  start(); // no channel yet: up (the heartbeat needs no channel permission)
  sub->subscribe({"other:{c}:pub"});

  if (mode == pubsub_mode::sharded) {
    // Like a MOVED: the owner decides where the channel goes.
    REQUIRE(f.run_until([&] { return rec.lost.size() == 1; }, 3s));
    CHECK(rec.lost[0].first == "other:{c}:pub");
    CHECK_THAT(rec.lost[0].second, Catch::StartsWith("NOPERM"));
    CHECK_FALSE(sub->wanted("other:{c}:pub"));
    CHECK(sub->counters().lost == 1);
    CHECK(rec.downs == 0);
    CHECK(sub->up());
    return;
  }

  // Was (hiredis): the connection closed on the refusal, then a reconnect
  // every 10-20 ms, forever.
  REQUIRE(f.run_until([&] { return rec.downs == 1; }, 3s));
  CHECK_THAT(rec.down_reasons[0], Catch::StartsWith("SUBSCRIBE of other:{c}:pub failed: NOPERM"));
  auto connects = sub->counters().connects;
  f.run_for(1000ms);
  CHECK_FALSE(rec.up);
  REQUIRE_FALSE(rec.attempt_failures.empty());
  // The same reason on every attempt (the resubscription refused again), so
  // the client reports it once.
  for (const auto& why : rec.attempt_failures)
    CHECK(why == rec.down_reasons[0]);
  // 20 ms doubling to 300 ms (test_options): at most 10 attempts in 1 s.
  CHECK(sub->counters().connects - connects >= 2);
  CHECK(sub->counters().connects - connects <= 10);
  CHECK(rec.lost.empty());

  // Once no refused channel is wanted, the next attempt comes up.
  sub->unsubscribe({"other:{c}:pub"});
  sub->subscribe({"herald:{c}:pub"});
  REQUIRE(f.run_until([&] { return rec.up; }, 3s));
  CHECK(sub->confirmed("herald:{c}:pub"));
}

// -- sharded: Redis Cluster ------------------------------------------------------

TEST_CASE("subscriber: sharded on a cluster, MOVED refusal and sunsubscribe on slot migration",
          "[redis][subscriber][cluster]") {
  io_fixture f;
  test_cluster c(3);
  auto a = channel_on(c, 0);
  auto b = channel_on(c, 1);
  auto sub0 = subscriber::create(f.ex, test_options(c.node(0).url()), pubsub_mode::sharded);
  stop_on_exit guard{sub0};
  pubsub_events rec;
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
  CHECK(sub0->counters().lost == 2);

  // Subscribed on the new owner, it gets what is published there.
  auto sub2 = subscriber::create(f.ex, test_options(c.node(2).url()), pubsub_mode::sharded);
  stop_on_exit guard2{sub2};
  pubsub_events rec2;
  rec2.attach(*sub2);
  sub2->subscribe({a});
  sub2->start();
  REQUIRE(f.run_until([&] { return sub2->confirmed(a); }, 3s));
  CHECK(c.node(2).command({"SPUBLISH", a, "m2"}).number == 1);
  REQUIRE(f.run_until([&] { return rec2.messages.size() == 1; }, 3s));
  CHECK(rec2.messages[0].second == "m2");
  CHECK(rec.messages.size() == 1);
}
