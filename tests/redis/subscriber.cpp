#include "net/redis/subscriber.hpp"

#include <catch2/catch.hpp>

#include "client_events.hpp"
#include "io_fixture.hpp"
#include "redis_server.hpp"
#include "server_queries.hpp"
#include "started_client.hpp"
#include "stop_on_exit.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using herald::net::redis::connection;
using herald::net::redis::reply;
using herald::net::redis::subscriber;
using herald::test::command_calls;
using herald::test::link_events;
using herald::test::numsub;
using herald::test::redis_server;
using herald::test::started_subscriber;
using herald::test::stop_on_exit;
using herald::test::test_options;

namespace {

// started_subscriber against a server that wants the password "pw".
struct password_subscriber : started_subscriber {
  password_subscriber()
    : started_subscriber({"--requirepass", "pw"}) {}
};

// The number of subscriptions ("sub=N") of the client named `name`.
int subscriptions_of(redis_server& srv, const std::string& name) {
  auto list = srv.command({"CLIENT", "LIST"});
  std::istringstream lines(list.str);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find(" name=" + name + " ") == std::string::npos)
      continue;
    auto pos = line.find(" sub=");
    if (pos != std::string::npos)
      return std::stoi(line.substr(pos + 5));
  }
  return -1;
}

std::vector<std::string> names(const std::string& prefix, int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i)
    out.push_back(prefix + std::to_string(i));
  return out;
}

} // namespace

TEST_CASE_METHOD(started_subscriber,
                 "subscriber: SUBSCRIBE and UNSUBSCRIBE are batched per executor turn",
                 "[redis][subscriber]") {
  auto opts = test_options(srv.url());
  opts.client_name = "batch-sub";
  opts.heartbeat_interval = 10s; // no probe SUBSCRIBE during the test
  create(opts);
  start();
  CHECK(sub->counters().subscribe_commands == 1); // the probe channel alone

  auto before = command_calls(srv, "subscribe");
  // 100 calls in one turn (the test thread is the executor's only thread).
  for (auto& ch : names("ch", 0, 100))
    sub->subscribe({ch});
  CHECK(sub->wanted_count() == 100);
  REQUIRE(f.run_until([&] { return rec.subscribed.size() == 100; }, 3s));
  CHECK(command_calls(srv, "subscribe") - before == 1);
  CHECK(sub->counters().subscribe_commands == 2);
  CHECK(subscriptions_of(srv, "batch-sub") == 101); // + the probe channel
  CHECK(numsub(srv, "ch0") == 1);
  CHECK(numsub(srv, "ch99") == 1);
  CHECK(sub->confirmed("ch42"));

  const std::string payload("x\0y\r\nz", 6);
  CHECK(srv.command({"PUBLISH", "ch7", payload}).number == 1);
  REQUIRE(f.run_until([&] { return rec.messages.size() == 1; }, 3s));
  CHECK(rec.messages[0].first == "ch7");
  CHECK(rec.messages[0].second == payload);

  auto unsub_before = command_calls(srv, "unsubscribe");
  sub->unsubscribe(names("ch", 0, 50));
  for (auto& ch : names("ch", 50, 60)) // one turn, many calls
    sub->unsubscribe({ch});
  sub->flush(); // explicit flush sends at once
  REQUIRE(f.run_until([&] { return numsub(srv, "ch59") == 0; }, 3s));
  CHECK(command_calls(srv, "unsubscribe") - unsub_before == 1);
  CHECK(numsub(srv, "ch0") == 0);
  CHECK(numsub(srv, "ch60") == 1);
  CHECK(subscriptions_of(srv, "batch-sub") == 41);
  CHECK(sub->wanted_count() == 40);

  CHECK(srv.command({"PUBLISH", "ch0", "gone"}).number == 0);
  CHECK(srv.command({"PUBLISH", "ch60", "still"}).number == 1);
  REQUIRE(f.run_until([&] { return rec.messages.size() == 2; }, 3s));
  CHECK(rec.messages[1] == std::make_pair(std::string("ch60"), std::string("still")));
  CHECK(rec.downs == 0);
}

TEST_CASE_METHOD(started_subscriber,
                 "subscriber: subscribe, unsubscribe, subscribe again in flight",
                 "[redis][subscriber]") {
  // At most one transition per channel is in flight: the SUBSCRIBE that
  // follows an unconfirmed UNSUBSCRIBE waits for its confirmation.
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

  toggle(3); // ends wanted
  REQUIRE(f.run_until([&] { return sub->confirmed("a"); }, 3s));
  f.run_for(100ms);
  CHECK(sub->confirmed("a"));
  CHECK(numsub(srv, "a") == 1);
  CHECK(srv.command({"PUBLISH", "a", "hello"}).number == 1);
  REQUIRE(f.run_until([&] { return rec.messages.size() == 1; }, 3s));
  CHECK(rec.messages[0].second == "hello");

  toggle(2); // subscribe (no-op: already wanted), then unsubscribe
  toggle(4); // ends not wanted
  REQUIRE(f.run_until([&] { return numsub(srv, "a") == 0; }, 3s));
  f.run_for(100ms);
  CHECK(numsub(srv, "a") == 0);
  CHECK_FALSE(sub->confirmed("a"));
  CHECK_FALSE(sub->wanted("a"));

  toggle(1);
  REQUIRE(f.run_until([&] { return sub->confirmed("a"); }, 3s));
  CHECK(srv.command({"PUBLISH", "a", "again"}).number == 1);
  REQUIRE(f.run_until([&] { return rec.messages.size() == 2; }, 3s));
}

TEST_CASE_METHOD(password_subscriber,
                 "subscriber: channels wanted before start are subscribed on connect",
                 "[redis][subscriber]") {
  create(test_options("redis://:pw@127.0.0.1:" + std::to_string(srv.port())));
  sub->subscribe({"x", "y", "z"});
  start();
  // on_up comes after every confirmation.
  CHECK(rec.subscribed.size() == 3);
  CHECK(sub->confirmed("x"));
  CHECK(numsub(srv, "z") == 1);
  CHECK(srv.command({"PUBLISH", "y", "1"}).number == 1);
  REQUIRE(f.run_until([&] { return rec.messages.size() == 1; }, 3s));
}

TEST_CASE_METHOD(started_subscriber, "subscriber: the probe keeps a healthy connection up",
                 "[redis][subscriber]") {
  auto opts = test_options(srv.url());
  opts.heartbeat_interval = 50ms;
  opts.heartbeat_timeout = 300ms;
  create(opts);
  sub->subscribe({"p"});
  start();
  f.run_for(600ms);
  CHECK(sub->counters().probes >= 5);
  CHECK(sub->counters().probe_timeouts == 0);
  CHECK(rec.downs == 0);
  // The probe channel is never reported.
  CHECK(srv.command({"PUBLISH", sub->probe_channel(), "x"}).number == 1);
  CHECK(srv.command({"PUBLISH", "p", "y"}).number == 1);
  REQUIRE(f.run_until([&] { return rec.messages.size() == 1; }, 3s));
  CHECK(rec.messages[0].first == "p");
}

TEST_CASE_METHOD(started_subscriber,
                 "restart: Redis killed, back 2 s later, both connections recover",
                 "[redis][subscriber][connection][restart]") {
  auto conn = connection::create(f.ex, test_options(srv.url()));
  stop_on_exit guard{conn};
  link_events crec;
  crec.attach(*conn);
  auto& srec = rec;
  create();
  sub->subscribe({"news", "sport"});
  conn->start();
  sub->start();
  REQUIRE(f.run_until([&] { return crec.up && srec.up; }, 3s));

  std::vector<reply> got;
  auto keep = [&](reply r) { got.push_back(std::move(r)); };
  conn->command({"PUBLISH", "news", "before"}, keep);
  REQUIRE(f.run_until([&] { return srec.messages.size() == 1; }, 3s));

  srv.kill();
  REQUIRE(f.run_until([&] { return crec.downs == 1 && srec.downs == 1; }, 2s));
  CHECK_THAT(crec.down_reasons[0], Catch::Contains("connection lost"));
  CHECK_THAT(srec.down_reasons[0], Catch::Contains("connection lost"));
  auto failures_before = conn->counters().connect_failures;
  f.run_for(2000ms);
  CHECK_FALSE(conn->connected());
  CHECK_FALSE(sub->up());
  // Backoff 20 ms doubling to 300 ms: a handful of attempts, not hundreds.
  auto failed = conn->counters().connect_failures - failures_before;
  CHECK(failed >= 5);
  CHECK(failed <= 25);

  srv.start();
  auto restarted = std::chrono::steady_clock::now();
  REQUIRE(f.run_until([&] { return crec.up && srec.up; }, 3s));
  auto back_after = std::chrono::steady_clock::now() - restarted;
  CHECK(back_after < 1500ms);
  CHECK(crec.ups == 2);
  CHECK(srec.ups == 2);
  CHECK(srec.subscribed["news"] == 2); // confirmed again after the restart
  CHECK(numsub(srv, "news") == 1);
  CHECK(numsub(srv, "sport") == 1);
  CHECK(conn->counters().reconnects == 1);
  CHECK(sub->link_counters().reconnects == 1);

  got.clear();
  conn->command({"PUBLISH", "sport", "after"}, keep);
  REQUIRE(f.run_until([&] { return srec.messages.size() == 2; }, 3s));
  CHECK(srec.messages[1] == std::make_pair(std::string("sport"), std::string("after")));
  REQUIRE(got.size() == 1);
  CHECK(got[0].number == 1);
}

TEST_CASE_METHOD(started_subscriber,
                 "freeze: Redis stopped for 3 s, heartbeat and probe drop, then recover",
                 "[redis][subscriber][connection][freeze]") {
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

  srv.freeze();
  auto frozen_at = std::chrono::steady_clock::now();
  REQUIRE(f.run_until([&] { return crec.downs == 1 && srec.downs == 1; }, 2500ms));
  auto detected_after = std::chrono::steady_clock::now() - frozen_at;
  CHECK(detected_after < 1500ms);
  CHECK_THAT(crec.down_reasons[0], Catch::Contains("heartbeat timeout"));
  CHECK_THAT(srec.down_reasons[0], Catch::Contains("probe timeout"));
  CHECK(conn->counters().heartbeat_timeouts == 1);
  CHECK(sub->counters().probe_timeouts == 1);

  // Still frozen: TCP connects succeed (the kernel accepts), the handshake
  // times out, and the attempts go on.
  f.run_until([] { return false; }, 3000ms - std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::steady_clock::now() - frozen_at));
  CHECK_FALSE(conn->connected());
  CHECK_FALSE(sub->up());
  CHECK_THAT(conn->last_error(), Catch::Contains("connect timeout after 500 ms (handshake)"));

  srv.thaw();
  REQUIRE(f.run_until([&] { return crec.up && srec.up; }, 3s));
  CHECK(crec.ups == 2);
  CHECK(srec.ups == 2);
  std::vector<reply> got;
  conn->command({"PUBLISH", "news", "thawed"}, [&](reply r) { got.push_back(std::move(r)); });
  REQUIRE(f.run_until([&] { return srec.messages.size() == 1; }, 3s));
  CHECK(srec.messages[0].second == "thawed");
}

TEST_CASE_METHOD(started_subscriber, "subscriber: stop() ends it without events",
                 "[redis][subscriber]") {
  create();
  sub->subscribe({"q"});
  start();
  sub->stop();
  f.run_for(300ms);
  CHECK(rec.downs == 0);
  CHECK_FALSE(sub->connected());
  REQUIRE(f.run_until([&] { return numsub(srv, "q") == 0; }, 2s));
  std::weak_ptr<subscriber> weak = sub;
  sub.reset();
  f.run_for(20ms);
  CHECK(weak.expired());
}

// -- issue 19: every name under the prefix; failures reported ---------------

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
                 "subscriber: its probe channel is under the prefix, so an ACL limited to the "
                 "prefix lets it up",
                 "[redis][subscriber][acl]") {
  // Was: the probe channel "__herald_probe:<hex>" was refused (NOPERM) and
  // the subscriber never came up.
  client = subscriber::create(f.ex, test_options(url()), "herald:");
  rec.attach(*client);
  CHECK(sub->probe_channel().rfind("herald:__herald_probe:", 0) == 0);
  sub->subscribe({"herald:{c}:pub"});
  start();
  CHECK(sub->confirmed("herald:{c}:pub"));
  CHECK(srv.command({"PUBLISH", "herald:{c}:pub", "m"}).number == 1);
  REQUIRE(f.run_until([&] { return rec.messages.size() == 1; }, 3s));
}

TEST_CASE_METHOD(acl_subscriber,
                 "subscriber: a SUBSCRIBE the ACL refuses is reported, naming the channel, and "
                 "retried with backoff",
                 "[redis][subscriber][acl][backoff]") {
  // Was: no event (the connection had been up), and a reconnect every
  // 10-20 ms, forever.
  client = subscriber::create(f.ex, test_options(url()), "other:");
  rec.attach(*client);
  std::vector<std::string> reasons;
  sub->on_attempt_failed = [&](const std::string& why) { reasons.push_back(why); };
  sub->start();
  f.run_for(1000ms);
  CHECK_FALSE(rec.up);
  REQUIRE_FALSE(reasons.empty());
  CHECK_THAT(reasons[0], Catch::StartsWith("SUBSCRIBE of " + sub->probe_channel() + " failed: ") &&
                           Catch::Contains("NOPERM"));
  // 20 ms doubling to 300 ms (test_options): at most 10 attempts in 1 s.
  CHECK(sub->link_counters().connects >= 3);
  CHECK(sub->link_counters().connects <= 10);
}
