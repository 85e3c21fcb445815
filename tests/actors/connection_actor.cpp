#define CAF_SUITE actors.connection_actor
#include "actors/connection_actor.hpp"

#include "connection_fixture.hpp" // last: caf/test/dsl.hpp defines expect() as a macro

#include <algorithm>

using namespace herald;
using namespace herald::actors;
using namespace std::chrono_literals;
using nlohmann::json;

using fixture = test::connection_fixture;
const std::string& user_a = test::user_a;

CAF_TEST_FIXTURE_SCOPE(connection_actor_tests, fixture)

CAF_TEST(ws subscribe is answered and then publications follow) {
  auto c = ws_conn();
  text(c, R"({"op":"subscribe","id":1,"channel":"stream:42"})");
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 1u);
  CAF_CHECK_EQUAL(
    body(0),
    json::parse(
      R"({"op":"subscribed","id":1,"channel":"stream:42","epoch":"ep","offset":0,"recovered":false})"));
  publish({"stream:42"});
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 2u);
  CAF_CHECK_EQUAL(body(1)["op"], "publication");
  CAF_CHECK_EQUAL(body(1)["offset"], 1);
}

CAF_TEST(ws bad commands get error replies and the connection stays) {
  auto c = ws_conn(1);
  text(c, "not json");
  text(c, R"({"op":"nope","id":7})");
  text(c, R"({"op":"subscribe","id":8,"channel":"foo:1"})");
  text(c, R"({"op":"subscribe","id":9,"channel":"stream:1"})");
  text(c, R"({"op":"subscribe","id":10,"channel":"stream:1"})");
  text(c, R"({"op":"subscribe","id":11,"channel":"stream:2"})");
  text(c, R"({"op":"unsubscribe","id":12,"channel":"stream:3"})");
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 7u);
  CAF_CHECK_EQUAL(body(0)["code"], "invalid_json");
  CAF_CHECK_EQUAL(body(1)["code"], "unknown_op");
  CAF_CHECK_EQUAL(body(1)["id"], 7);
  CAF_CHECK_EQUAL(body(2)["code"], "invalid_channel");
  CAF_CHECK_EQUAL(body(3)["op"], "subscribed");
  CAF_CHECK_EQUAL(body(4)["code"], "already_subscribed");
  CAF_CHECK_EQUAL(body(5)["code"], "too_many_channels");
  CAF_CHECK_EQUAL(body(6)["code"], "not_subscribed");
  CAF_CHECK(!sink->closed);
  publish({"stream:1"});
  CAF_CHECK_EQUAL(body(7)["op"], "publication");
}

CAF_TEST(ws unsubscribe stops publications) {
  auto c = ws_conn();
  text(c, R"({"op":"subscribe","id":1,"channel":"stream:42"})");
  text(c, R"({"op":"unsubscribe","id":2,"channel":"stream:42"})");
  publish({"stream:42"});
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 2u);
  CAF_CHECK_EQUAL(body(1), json::parse(R"({"op":"unsubscribed","id":2,"channel":"stream:42"})"));
}

CAF_TEST(ws recovery replays after the answer and drops duplicates) {
  publish({"stream:42"});
  publish({"stream:42"});
  publish({"stream:42"});
  auto c = ws_conn();
  text(c, R"({"op":"subscribe","id":1,"channel":"stream:42","since":{"epoch":"ep","offset":1}})");
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 3u);
  CAF_CHECK_EQUAL(body(0)["recovered"], true);
  CAF_CHECK_EQUAL(body(0)["offset"], 3);
  CAF_CHECK_EQUAL(body(1)["offset"], 2);
  CAF_CHECK_EQUAL(body(2)["offset"], 3);
  // A publication the session already wrote (the seam) is not sent again.
  auto again = make_publication("stream:42", "ep", 3, "withdrawn", "{}", {});
  sink->on_publication(again);
  CAF_CHECK_EQUAL(sink->bodies.size(), 3u);
}

CAF_TEST(ws recovery from another epoch says so) {
  publish({"stream:42"});
  auto c = ws_conn();
  text(c, R"({"op":"subscribe","id":1,"channel":"stream:42","since":{"epoch":"old","offset":1}})");
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 1u);
  CAF_CHECK_EQUAL(body(0)["recovered"], false);
  CAF_CHECK_EQUAL(body(0)["reason"], "epoch_changed");
}

CAF_TEST(ws ping is answered with pong) {
  auto c = ws_conn();
  text(c, R"({"op":"ping","id":"abc"})");
  CAF_CHECK_EQUAL(body(0), json::parse(R"({"op":"pong","id":"abc"})"));
}

CAF_TEST(ws subscribe attempts are limited and refused ones count) {
  auto c = ws_conn(64, 4);
  text(c, R"({"op":"subscribe","id":1,"channel":"stream:1"})");
  text(c, R"({"op":"subscribe","id":2,"channel":"nope"})");       // invalid_channel
  text(c, R"({"op":"subscribe","id":3,"channel":"stream:1"})");   // already_subscribed
  text(c, R"({"op":"subscribe","id":4})");                        // invalid_request
  text(c, R"({"op":"ping","id":5})");                             // not counted
  text(c, R"({"op":"unsubscribe","id":6,"channel":"stream:1"})"); // not counted
  CAF_CHECK(!sink->closed);
  text(c, R"({"op":"subscribe","id":7,"channel":"stream:2","since":{"epoch":"ep","offset":0}})");
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 7u);
  CAF_CHECK_EQUAL(body(1)["code"], "invalid_channel");
  CAF_CHECK_EQUAL(body(3)["code"], "invalid_request");
  CAF_CHECK_EQUAL(body(6)["code"], "too_many_subscribes");
  CAF_CHECK_EQUAL(body(6)["id"], 7);
  CAF_REQUIRE(sink->closed.has_value());
  CAF_CHECK(sink->closed->reason == net::close_reason::policy);
  CAF_CHECK_EQUAL(sink->closed->code, 1008);
}

CAF_TEST(the actor quits when its session closes) {
  auto c = ws_conn();
  caf::anon_send(c, closed_atom_v, static_cast<std::uint8_t>(net::close_reason::client));
  sched.run();
  auto self_ref = caf::actor_cast<caf::actor>(c);
  self->monitor(self_ref);
  sched.run();
  // A monitor on a dead actor fires at once.
  bool down = false;
  self->receive([&](caf::down_msg&) { down = true; }, caf::after(0s) >> [] {});
  CAF_CHECK(down);
}

CAF_TEST(sse ids carry the position of every channel) {
  auto c = sse_conn({"stream:1", user_a});
  // Before any publication: herald.cursor, its id covering both channels.
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 1u);
  CAF_CHECK_EQUAL(sink->bodies[0], "event: herald.cursor\ndata: {}\n\n");
  std::vector<net::sse::cursor_entry> first;
  CAF_REQUIRE(
    net::sse::parse_cursor(sink->prefixes[0].substr(4, sink->prefixes[0].size() - 5), 64, first));
  CAF_REQUIRE_EQUAL(first.size(), 2u);
  CAF_CHECK_EQUAL(first[0].position.offset, 0u);
  CAF_CHECK_EQUAL(first[1].position.offset, 0u);
  sink->bodies.erase(sink->bodies.begin());
  sink->prefixes.erase(sink->prefixes.begin());
  publish({"stream:1", user_a});
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 2u);
  std::vector<net::sse::cursor_entry> cur;
  auto id = sink->prefixes[1].substr(4, sink->prefixes[1].size() - 5); // "id: " ... "\n"
  CAF_REQUIRE(net::sse::parse_cursor(id, 64, cur));
  CAF_REQUIRE_EQUAL(cur.size(), 2u);
  CAF_CHECK_EQUAL(cur[0].channel_hash, net::sse::channel_hash("stream:1"));
  CAF_CHECK_EQUAL(cur[0].position.offset, 1u);
  CAF_CHECK_EQUAL(cur[1].channel_hash, net::sse::channel_hash(user_a));
  CAF_CHECK_EQUAL(cur[1].position.offset, 1u);
  CAF_CHECK_EQUAL(sink->bodies[0], "event: withdrawn\ndata: {\"x\":1}\n\n");
}

CAF_TEST(sse recovery replays each channel and reports gaps) {
  for (int i = 0; i < 3; ++i)
    publish({"stream:1", "stream:2"});
  std::vector<net::sse::cursor_entry> cursor{
    {net::sse::channel_hash("stream:1"), {"ep", 1}},
    {net::sse::channel_hash("stream:2"), {"gone", 1}},
  };
  auto c = sse_conn({"stream:1", "stream:2"}, cursor);
  // In request order: stream:1 replays 2 and 3; stream:2 reports epoch_changed.
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 3u);
  CAF_CHECK_EQUAL(sink->bodies[0], "event: withdrawn\ndata: {\"x\":1}\n\n");
  CAF_CHECK_EQUAL(sink->bodies[1], "event: withdrawn\ndata: {\"x\":1}\n\n");
  CAF_CHECK_EQUAL(
    sink->bodies[2],
    "event: herald.gap\ndata: {\"channel\":\"stream:2\",\"reason\":\"epoch_changed\"}\n\n");
  // The first id already names both channels: stream:1 at 2, stream:2 at
  // the position it starts from.
  std::vector<net::sse::cursor_entry> first;
  CAF_REQUIRE(
    net::sse::parse_cursor(sink->prefixes[0].substr(4, sink->prefixes[0].size() - 5), 64, first));
  CAF_REQUIRE_EQUAL(first.size(), 2u);
  CAF_CHECK_EQUAL(first[0].position.offset, 2u);
  std::vector<net::sse::cursor_entry> last;
  auto id = sink->prefixes[2].substr(4, sink->prefixes[2].size() - 5);
  CAF_REQUIRE(net::sse::parse_cursor(id, 64, last));
  CAF_CHECK_EQUAL(last[0].position.offset, 3u);
  CAF_CHECK_EQUAL(last[1].position.epoch, "ep");
  CAF_CHECK_EQUAL(last[1].position.offset, 3u);
  publish({"stream:2"});
  CAF_CHECK_EQUAL(sink->bodies.size(), 4u);
}

// -- Centrifugo dialect (actors/centrifugo_commands.hpp, docs/centrifugo.md) --

CAF_TEST(centrifugo commands before connect close with 3501) {
  sink->use_centrifugo();
  connection_options opts;
  opts.max_channels = 64;
  opts.dialect = net::ws::dialect::centrifugo;
  auto c = ws_conn(opts);
  text(c, R"({"id":1,"subscribe":{"channel":"stream:1"}})");
  CAF_REQUIRE(sink->closed.has_value());
  CAF_CHECK_EQUAL(sink->closed->code, 3501);
}

CAF_TEST(centrifugo connect subscribe recover unsubscribe and unsupported methods) {
  sink->use_centrifugo();
  connection_options opts;
  opts.max_channels = 2;
  opts.dialect = net::ws::dialect::centrifugo;
  opts.ping_interval = 25s;
  auto c = ws_conn(opts);
  publish({"stream:1"});
  publish({"stream:1"});
  // Two commands in one message: replies in order, each with its id.
  text(c, "{\"id\":1,\"connect\":{}}\n{\"id\":2,\"subscribe\":{\"channel\":\"stream:1\","
          "\"recover\":true,\"epoch\":\"ep\",\"offset\":1}}");
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 2u);
  CAF_CHECK_EQUAL(body(0)["id"], 1);
  CAF_CHECK_EQUAL(body(0)["connect"]["ping"], 25);
  auto& sub = body(1);
  CAF_CHECK_EQUAL(sub["id"], 2);
  CAF_CHECK_EQUAL(sub["subscribe"]["recovered"], true);
  CAF_CHECK_EQUAL(sub["subscribe"]["offset"], 2);
  CAF_REQUIRE_EQUAL(sub["subscribe"]["publications"].size(), 1u);
  CAF_CHECK_EQUAL(sub["subscribe"]["publications"][0]["offset"], 2);
  publish({"stream:1"});
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 3u);
  CAF_CHECK_EQUAL(body(2)["push"]["pub"]["offset"], 3);
  CAF_CHECK_EQUAL(body(2)["push"]["pub"]["tags"]["event"], "withdrawn");
  text(c, R"({"id":3,"presence":{"channel":"stream:1"}})");
  CAF_CHECK_EQUAL(body(3)["error"]["code"], 104);
  text(c, R"({"id":4,"subscribe":{"channel":"nope"}})");
  CAF_CHECK_EQUAL(body(4)["error"]["code"], 102);
  text(c, R"({"id":5,"subscribe":{"channel":"stream:2"}})");
  text(c, R"({"id":6,"subscribe":{"channel":"stream:3"}})");
  CAF_CHECK_EQUAL(body(6)["error"]["code"], 106); // at most 2 channels
  text(c, R"({"id":7,"unsubscribe":{"channel":"stream:1"}})");
  CAF_CHECK_EQUAL(body(7), json::parse(R"({"id":7,"unsubscribe":{}})"));
  publish({"stream:1"});
  CAF_CHECK_EQUAL(sink->bodies.size(), 8u);
  CAF_CHECK(!sink->closed.has_value());
}

CAF_TEST(centrifugo a subscribe to a channel the connection has renews it) {
  sink->use_centrifugo();
  connection_options opts;
  opts.max_channels = 64;
  opts.dialect = net::ws::dialect::centrifugo;
  auto c = ws_conn(opts);
  text(c, R"({"id":1,"connect":{}})");
  text(c, R"({"id":2,"subscribe":{"channel":"stream:1"}})");
  publish({"stream:1"});
  // As after an unsubscribe push (a live gap): the SDK subscribes again and recovers.
  text(c, R"({"id":3,"subscribe":{"channel":"stream:1","recover":true,"epoch":"ep","offset":0}})");
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 4u);
  auto& again = body(3);
  CAF_CHECK_EQUAL(again["id"], 3);
  CAF_CHECK_EQUAL(again["subscribe"]["recovered"], true);
  CAF_CHECK_EQUAL(again["subscribe"]["publications"].size(), 1u);
  publish({"stream:1"});
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 5u);
  CAF_CHECK_EQUAL(body(4)["push"]["pub"]["offset"], 2);
}

// Cluster mode with Redis unreachable: the channel waits for a gateway that
// never confirms its watch (this one takes watches and says nothing), so it
// never answers. The session's shard timer gives the subscribe up (here the
// recording sink does what the timer does: subscription_table::give_up_overdue
// and the bridge's subscribe_timeout message; the timing itself is
// tests/net/core/subscription_table.cpp's, end to end
// tests/e2e/cluster/redis_outage.test.mjs's).
CAF_TEST(ws and centrifugo subscribes the channel never answers get unavailable and may retry) {
  auto silent_gateway = sys.spawn([]() -> caf::behavior {
    return {[](watch_atom, const std::string&, const caf::actor&) {},
            [](unwatch_atom, const std::string&) {}};
  });
  auto cluster_reg = spawn_registry(
    history_options{16, 60s}, [] { return std::string{}; }, silent_gateway);
  const auto due = net::subscription_table::time_point{} + 4s;
  auto conn = [&](net::ws::dialect d) {
    connection_options opts;
    opts.kind = transport::ws;
    opts.max_channels = 64;
    opts.dialect = d;
    sink->due = due;
    auto a = sys.spawn(connection_actor, std::shared_ptr<net::session_control>(sink), cluster_reg, opts,
                       std::vector<std::string>{}, std::vector<net::sse::cursor_entry>{});
    spawned.push_back(a);
    sched.run();
    return a;
  };
  auto c = conn(net::ws::dialect::herald);
  text(c, R"({"op":"subscribe","id":1,"channel":"stream:1"})");
  sink->expire_subscribes(c, due - 1ms);
  sched.run();
  CAF_CHECK_EQUAL(sink->bodies.size(), 0u); // still waiting
  sink->expire_subscribes(c, due);
  sched.run();
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 1u);
  auto& err = body(0);
  CAF_CHECK_EQUAL(err["op"], "error");
  CAF_CHECK_EQUAL(err["id"], 1);
  CAF_CHECK_EQUAL(err["code"], "unavailable");
  CAF_CHECK_EQUAL(err["channel"], "stream:1");
  // The actor forgot it too: the client may subscribe again (not
  // already_subscribed), and that one waits its own time.
  text(c, R"({"op":"subscribe","id":2,"channel":"stream:1"})");
  CAF_CHECK_EQUAL(sink->bodies.size(), 1u);
  sink->expire_subscribes(c, due);
  sched.run();
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 2u);
  CAF_CHECK_EQUAL(body(1)["id"], 2);
  CAF_CHECK_EQUAL(body(1)["code"], "unavailable");
  CAF_CHECK(!sink->closed);

  sink = std::make_shared<test::recording_sink>();
  sink->use_centrifugo();
  auto cf = conn(net::ws::dialect::centrifugo);
  text(cf, "{\"id\":1,\"connect\":{}}\n{\"id\":2,\"subscribe\":{\"channel\":\"stream:2\"}}");
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 1u); // the connect reply
  sink->expire_subscribes(cf, due);
  sched.run();
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 2u);
  // Code 100 with temporary: the centrifuge SDK resubscribes with backoff.
  auto& cf_err = body(1);
  CAF_CHECK_EQUAL(cf_err["id"], 2);
  CAF_CHECK_EQUAL(cf_err["error"]["code"], 100);
  CAF_CHECK_EQUAL(cf_err["error"]["temporary"], true);
  // And the SDK's resubscribe is taken as a new one.
  text(cf, "{\"id\":3,\"subscribe\":{\"channel\":\"stream:2\"}}");
  sink->expire_subscribes(cf, due);
  sched.run();
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 3u);
  CAF_CHECK_EQUAL(body(2)["id"], 3);
  CAF_CHECK(!sink->closed);
}

// In-process channels answer at once: a due time passing after the answer
// gives nothing up, and live publications keep flowing.
CAF_TEST(a subscribe answered in time is not given up) {
  connection_options opts;
  opts.kind = transport::ws;
  opts.max_channels = 64;
  sink->due = net::subscription_table::time_point{} + 4s;
  auto c = ws_conn(opts);
  text(c, R"({"op":"subscribe","id":1,"channel":"stream:9"})");
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 1u);
  CAF_CHECK_EQUAL(body(0)["op"], "subscribed");
  sink->expire_subscribes(c, net::subscription_table::time_point{} + 5s);
  sched.run();
  publish({"stream:9"});
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 2u);
  CAF_CHECK_EQUAL(body(1)["op"], "publication");
}

// Every command with an id gets exactly one reply, whatever else arrives
// before it is answered: the subscribe replies come from the session's
// subscription_table after the channel answered, the others at once.
CAF_TEST(centrifugo every command id is answered once however commands interleave) {
  sink->use_centrifugo();
  connection_options opts;
  opts.max_channels = 64;
  opts.dialect = net::ws::dialect::centrifugo;
  auto c = ws_conn(opts);
  // The ids each reply (a body with an "id") answers, in order of writing.
  auto replies = [&] {
    std::vector<int> ids;
    for (std::size_t i = 0; i < sink->bodies.size(); ++i)
      if (auto& b = body(i); b.contains("id"))
        ids.push_back(b["id"].get<int>());
    return ids;
  };
  auto is_error = [&](int id, int code) {
    for (std::size_t i = 0; i < sink->bodies.size(); ++i)
      if (auto& b = body(i); b.value("id", 0) == id)
        return b.contains("error") && b["error"]["code"] == code;
    return false;
  };
  auto is_subscribe = [&](int id) {
    for (std::size_t i = 0; i < sink->bodies.size(); ++i)
      if (auto& b = body(i); b.value("id", 0) == id)
        return b.contains("subscribe");
    return false;
  };
  publish({"stream:q"});
  // The tester's input: two subscribes to one channel in one message, after
  // the connect reply. The first used to get no reply at all.
  text(c, R"({"id":1,"connect":{}})");
  text(c, "{\"id\":2,\"subscribe\":{\"channel\":\"stream:q\"}}\n"
          "{\"id\":3,\"subscribe\":{\"channel\":\"stream:q\"}}");
  CAF_CHECK_EQUAL(replies(), (std::vector<int>{1, 2, 3}));
  CAF_CHECK(is_error(2, 107)); // superseded by id 3, which is the subscription
  CAF_CHECK(is_subscribe(3));
  CAF_CHECK_EQUAL(body(2)["subscribe"]["offset"], 1);
  publish({"stream:q"});
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 4u);
  CAF_CHECK_EQUAL(body(3)["push"]["pub"]["offset"], 2);
  // Subscribe, then unsubscribe before the reply; then subscribe, subscribe,
  // unsubscribe; refresh and ping in between; connect again.
  text(c, "{\"id\":4,\"subscribe\":{\"channel\":\"stream:r\"}}\n"
          "{\"id\":5,\"unsubscribe\":{\"channel\":\"stream:r\"}}\n"
          "{\"id\":6,\"subscribe\":{\"channel\":\"stream:s\"}}\n"
          "{\"id\":7,\"refresh\":{\"token\":\"\"}}\n"
          "{\"id\":8,\"subscribe\":{\"channel\":\"stream:s\"}}\n"
          "{\"id\":9,\"ping\":{}}\n"
          "{\"id\":10,\"unsubscribe\":{\"channel\":\"stream:s\"}}\n"
          "{\"id\":11,\"connect\":{}}\n"
          "{\"id\":12,\"subscribe\":{\"channel\":\"stream:t\"}}\n"
          "{\"id\":13,\"subscribe\":{\"channel\":\"stream:t\"}}\n"
          "{\"id\":14,\"subscribe\":{\"channel\":\"stream:t\"}}");
  // A superseded or cancelled subscribe is answered when the command that
  // ends it arrives, so ids are not in command order: each appears once.
  auto ids = replies();
  std::sort(ids.begin(), ids.end());
  CAF_CHECK_EQUAL(ids, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}));
  CAF_CHECK(is_error(4, 107));
  CAF_CHECK(is_error(6, 107));
  CAF_CHECK(is_error(8, 107));
  CAF_CHECK(is_error(11, 107)); // already connected
  CAF_CHECK(is_error(12, 107));
  CAF_CHECK(is_error(13, 107));
  CAF_CHECK(is_subscribe(14));
  // The channels left are the ones asked for last: q and t, not r or s.
  const auto before = sink->bodies.size();
  publish({"stream:r", "stream:s"});
  CAF_CHECK_EQUAL(sink->bodies.size(), before);
  publish({"stream:t"});
  CAF_REQUIRE_EQUAL(sink->bodies.size(), before + 1);
  CAF_CHECK_EQUAL(body(before)["push"]["channel"], "stream:t");
  CAF_CHECK(!sink->closed.has_value());
}

CAF_TEST_FIXTURE_SCOPE_END()
