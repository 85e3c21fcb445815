// subscription_table: the session's per-channel positions, the recovery
// seam, gaps, SSE ids and the hold of a multi-channel SSE request.
#include "net/core/subscription_table.hpp"

#include "net/wire/sse/cursor.hpp"
#include "net/wire/sse/session_codec.hpp"
#include "net/wire/ws/session_codec.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <map>

using namespace herald::net;
using nlohmann::json;

namespace {

struct recorded : subscription_table::output {
  std::vector<std::string> ids; ///< SSE id lines ("" for WebSocket)
  std::vector<std::string> out; ///< "pub <channel> <offset>" or the message body
  std::vector<std::int64_t> accepted;
  std::vector<std::string> bodies; ///< each publication's message body
  std::vector<subscription_table::conflation_key> keys; ///< each publication's conflation key
  bool cursor = false; ///< SSE: the prefix is the id line (WebSocket: a frame header)
  void write_publication(const publication& p, std::string prefix, const frame& body,
                         std::int64_t acc, subscription_table::conflation_key key) override {
    bodies.push_back(body ? *body : std::string{});
    keys.push_back(key);
    ids.push_back(cursor ? std::move(prefix) : std::string{});
    out.push_back("pub " + p.channel + " " + std::to_string(p.offset));
    accepted.push_back(acc);
  }
  void write_message(std::string id_line, std::string body) override {
    ids.push_back(std::move(id_line));
    out.push_back(std::move(body));
    accepted.push_back(0);
  }
};

publication_ptr pub(std::string channel, std::string epoch, std::uint64_t offset) {
  auto p = std::make_shared<publication>();
  p->channel = std::move(channel);
  p->epoch = std::move(epoch);
  p->offset = offset;
  p->event = "e";
  p->data = "{}";
  p->accepted_ns = 42;
  return p;
}

subscription_answer answer(std::string channel, std::uint64_t request, std::string epoch,
                           std::uint64_t head, bool recovered = false,
                           std::vector<publication_ptr> replay = {}, std::string reason = {}) {
  return {std::move(channel), request,           {std::move(epoch), head},
          recovered,          std::move(reason), std::move(replay)};
}

std::vector<sse::cursor_entry> parse_id(const std::string& line) {
  std::vector<sse::cursor_entry> c;
  REQUIRE(line.rfind("id: ", 0) == 0);
  REQUIRE(sse::parse_cursor(line.substr(4, line.size() - 5), 64, c));
  return c;
}

const session_codec& ws_herald() {
  return ws::session_codec_for(ws::dialect::herald);
}

const session_codec& sse_codec() {
  static const sse::session_codec c{500, false};
  return c;
}

} // namespace

TEST_CASE("ws: publications before the answer are dropped, then live ones follow the reply",
          "[subscription_table]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.expect("stream:1", 1, 7, std::nullopt);
  t.on_publication(pub("stream:1", "e", 5)); // fanned out before the channel answered us
  CHECK(r.out.empty());
  t.on_answer(answer("stream:1", 1, "e", 5));
  t.on_publication(pub("stream:1", "e", 5)); // at the head: already covered by the answer
  t.on_publication(pub("stream:1", "e", 6));
  REQUIRE(r.out.size() == 2u);
  auto reply = json::parse(r.out[0]);
  CHECK(reply["op"] == "subscribed");
  CHECK(reply["id"] == 7);
  CHECK(reply["offset"] == 5);
  CHECK(r.out[1] == "pub stream:1 6");
  CHECK(r.accepted[1] == 42); // live: publish-to-write latency is measured
}

TEST_CASE("ws: a recovery replays the missed publications once, merged with live ones",
          "[subscription_table]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.expect("stream:1", 1, 1, stream_position{"e", 2});
  t.on_answer(
    answer("stream:1", 1, "e", 4, true, {pub("stream:1", "e", 3), pub("stream:1", "e", 4)}));
  t.on_publication(pub("stream:1", "e", 4)); // the seam: replayed already
  t.on_publication(pub("stream:1", "e", 5));
  REQUIRE(r.out.size() == 4u);
  CHECK(json::parse(r.out[0])["recovered"] == true);
  CHECK(r.out[1] == "pub stream:1 3");
  CHECK(r.accepted[1] == 0); // a replay carries no latency origin
  CHECK(r.out[2] == "pub stream:1 4");
  CHECK(r.out[3] == "pub stream:1 5");
}

TEST_CASE("ws: offset jumps and new epochs are gaps, never silent", "[subscription_table]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.expect("stream:1", 1, 1, std::nullopt);
  t.on_answer(answer("stream:1", 1, "e", 1));
  t.on_publication(pub("stream:1", "e", 3));
  t.on_publication(pub("stream:1", "f", 1));
  REQUIRE(r.out.size() == 5u);
  CHECK(json::parse(r.out[1]) ==
        json{{"op", "gap"}, {"channel", "stream:1"}, {"reason", "missed_publications"}});
  CHECK(r.out[2] == "pub stream:1 3");
  CHECK(json::parse(r.out[3])["reason"] == "epoch_changed");
  CHECK(r.out[4] == "pub stream:1 1");
}

TEST_CASE("ws: unsubscribe while pending answers cancelled, stale answers are ignored",
          "[subscription_table]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.expect("stream:1", 1, 1, std::nullopt);
  t.forget("stream:1", json(2));
  REQUIRE(r.out.size() == 2u);
  CHECK(json::parse(r.out[0])["code"] == "cancelled");
  CHECK(json::parse(r.out[0])["id"] == 1);
  CHECK(json::parse(r.out[1]) == json{{"op", "unsubscribed"}, {"id", 2}, {"channel", "stream:1"}});
  t.expect("stream:1", 2, 3, std::nullopt);   // subscribed again
  t.on_answer(answer("stream:1", 1, "e", 0)); // the answer to the cancelled one
  CHECK(r.out.size() == 2u);
  t.on_answer(answer("stream:1", 2, "e", 0));
  REQUIRE(r.out.size() == 3u);
  CHECK(json::parse(r.out[2])["id"] == 3);
  t.forget("stream:1", std::nullopt); // a refreshed token dropped it: nothing written
  t.on_publication(pub("stream:1", "e", 1));
  CHECK(r.out.size() == 3u);
  CHECK(t.size() == 0u);
}

TEST_CASE("sse: nothing is written until every channel answered, every id names all",
          "[subscription_table]") {
  recorded r;
  r.cursor = true;
  subscription_table t{metrics::transport::sse, sse_codec(), r};
  std::vector<sse::cursor_entry> cursor{{sse::channel_hash("stream:1"), {"e", 1}},
                                        {sse::channel_hash("stream:2"), {"old", 9}}};
  t.begin({"stream:1", "stream:2"}, cursor);
  t.on_answer(
    answer("stream:1", 5, "e", 3, true, {pub("stream:1", "e", 2), pub("stream:1", "e", 3)}));
  t.on_publication(pub("stream:1", "e", 4)); // live while stream:2 has not answered: held
  CHECK(r.out.empty());
  t.on_answer(answer("stream:2", 6, "e2", 4, false, {}, "epoch_changed"));
  t.on_answer(answer("stream:2", 6, "e2", 4)); // a duplicate answer changes nothing
  REQUIRE(r.out.size() == 4u);
  CHECK(r.out[0] == "pub stream:1 2");
  CHECK(r.out[1] == "pub stream:1 3");
  CHECK(r.out[2] ==
        "event: herald.gap\ndata: {\"channel\":\"stream:2\",\"reason\":\"epoch_changed\"}\n\n");
  CHECK(r.out[3] == "pub stream:1 4");
  auto first = parse_id(r.ids[0]);
  REQUIRE(first.size() == 2u);
  CHECK(first[0].position.offset == 2u);
  CHECK(first[1].position.epoch == "e2");
  CHECK(first[1].position.offset == 4u);
  auto last = parse_id(r.ids[3]);
  CHECK(last[0].position.offset == 4u);
  t.on_publication(pub("stream:2", "e2", 5));
  REQUIRE(r.out.size() == 5u);
  CHECK(parse_id(r.ids[4])[1].position.offset == 5u);
  CHECK(t.cursor() == r.ids[4].substr(4, r.ids[4].size() - 5));
}

TEST_CASE("sse: the first event carries the cursor of every channel, empty ones included",
          "[subscription_table]") {
  recorded r;
  r.cursor = true;
  subscription_table t{metrics::transport::sse, sse_codec(), r};
  t.begin({"stream:1", "stream:2"}, {});
  t.on_answer(answer("stream:1", 5, "e1", 0)); // no publication yet
  CHECK(r.out.empty());
  t.on_answer(answer("stream:2", 6, "e2", 7));
  // Nothing to replay and no gap: a herald.cursor event with the id line.
  REQUIRE(r.out.size() == 1u);
  CHECK(r.out[0] == "event: herald.cursor\ndata: {}\n\n");
  auto first = parse_id(r.ids[0]);
  REQUIRE(first.size() == 2u);
  CHECK(first[0].channel_hash == sse::channel_hash("stream:1"));
  CHECK(first[0].position.epoch == "e1");
  CHECK(first[0].position.offset == 0u);
  CHECK(first[1].position.epoch == "e2");
  CHECK(first[1].position.offset == 7u);
  t.on_publication(pub("stream:1", "e1", 1));
  REQUIRE(r.out.size() == 2u);
  CHECK(r.out[1] == "pub stream:1 1");
}

TEST_CASE("sse: a replay or a gap carries the cursor itself: no herald.cursor event then",
          "[subscription_table]") {
  recorded r;
  r.cursor = true;
  subscription_table t{metrics::transport::sse, sse_codec(), r};
  std::vector<sse::cursor_entry> cursor{{sse::channel_hash("stream:1"), {"old", 3}}};
  t.begin({"stream:1"}, cursor);
  t.on_answer(answer("stream:1", 5, "e1", 0, false, {}, "epoch_changed"));
  REQUIRE(r.out.size() == 1u);
  CHECK(r.out[0].find("herald.gap") != std::string::npos);
  CHECK(parse_id(r.ids[0]).size() == 1u);
}

// -- Centrifugo dialect (docs/centrifugo.md) --------------------------------

TEST_CASE("centrifugo: the replay is inside the subscribe reply, live ones follow without "
          "duplicate",
          "[subscription_table][centrifugo]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.set_codec(ws::session_codec_for(ws::dialect::centrifugo));
  t.expect("stream:1", 1, 2, stream_position{"e", 3}, false);
  t.on_publication(pub("stream:1", "e", 5)); // before the answer: dropped
  t.on_answer(
    answer("stream:1", 1, "e", 5, true, {pub("stream:1", "e", 4), pub("stream:1", "e", 5)}));
  t.on_publication(pub("stream:1", "e", 5)); // already in the reply
  t.on_publication(pub("stream:1", "e", 6));
  REQUIRE(r.out.size() == 2u);
  auto reply = json::parse(r.out[0]);
  CHECK(reply["id"] == 2);
  CHECK(reply["subscribe"]["recovered"] == true);
  CHECK(reply["subscribe"]["was_recovering"] == true);
  CHECK(reply["subscribe"]["offset"] == 5);
  REQUIRE(reply["subscribe"]["publications"].size() == 2u);
  CHECK(reply["subscribe"]["publications"][0]["offset"] == 4);
  CHECK(reply["subscribe"]["publications"][1]["offset"] == 5);
  CHECK(r.out[1] == "pub stream:1 6");
}

TEST_CASE("centrifugo: flag bit 2 answers a failed recovery with 112 and keeps nothing",
          "[subscription_table][centrifugo]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.set_codec(ws::session_codec_for(ws::dialect::centrifugo));
  t.expect("stream:1", 1, 3, stream_position{"old", 3}, true);
  t.on_answer(answer("stream:1", 1, "e", 9, false, {}, "epoch_changed"));
  t.on_publication(pub("stream:1", "e", 10));
  REQUIRE(r.out.size() == 1u);
  auto err = json::parse(r.out[0]);
  CHECK(err["id"] == 3);
  CHECK(err["error"]["code"] == 112);
  CHECK(t.size() == 0u);
  // Without the flag the same answer is a reply with recovered:false.
  recorded r2;
  subscription_table t2{metrics::transport::ws, ws_herald(), r2};
  t2.set_codec(ws::session_codec_for(ws::dialect::centrifugo));
  t2.expect("stream:1", 1, 3, stream_position{"old", 3}, false);
  t2.on_answer(answer("stream:1", 1, "e", 9, false, {}, "epoch_changed"));
  REQUIRE(r2.out.size() == 1u);
  auto reply = json::parse(r2.out[0]);
  CHECK(reply["subscribe"]["recovered"] == false);
  CHECK(reply["subscribe"]["was_recovering"] == true);
  CHECK(reply["subscribe"]["epoch"] == "e");
}

TEST_CASE("centrifugo: a live gap is an unsubscribe push >= 2500, then silence until a new "
          "subscribe",
          "[subscription_table][centrifugo]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.set_codec(ws::session_codec_for(ws::dialect::centrifugo));
  t.expect("stream:1", 1, 1, std::nullopt, false);
  t.on_answer(answer("stream:1", 1, "e", 2));
  t.on_publication(pub("stream:1", "e", 5)); // 3 and 4 are missing
  t.on_publication(pub("stream:1", "e", 6));
  REQUIRE(r.out.size() == 2u);
  auto push = json::parse(r.out[1]);
  CHECK(push["push"]["channel"] == "stream:1");
  CHECK(push["push"]["unsubscribe"]["code"] >= 2500);
  // The SDK subscribes again from its position and recovers.
  t.expect("stream:1", 2, 7, stream_position{"e", 2}, false);
  t.on_answer(answer("stream:1", 2, "e", 6, false, {}, "history_expired"));
  t.on_publication(pub("stream:1", "e", 7));
  REQUIRE(r.out.size() == 4u);
  CHECK(json::parse(r.out[2])["id"] == 7);
  CHECK(r.out[3] == "pub stream:1 7");
}

TEST_CASE("centrifugo: after a live epoch_changed gap the resubscribe reply carries the new "
          "epoch's publications, not recovered",
          "[subscription_table][centrifugo]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.set_codec(ws::session_codec_for(ws::dialect::centrifugo));
  t.expect("stream:1", 1, 1, std::nullopt, false);
  t.on_answer(answer("stream:1", 1, "old", 4));
  t.on_publication(pub("stream:1", "new", 1)); // the new epoch's first: the gap
  REQUIRE(r.out.size() == 2u);
  CHECK(json::parse(r.out[1])["push"]["unsubscribe"]["code"] >= 2500);
  // The SDK comes back with its old position; the channel answers with its
  // current epoch's history (the connection asked for it).
  t.expect("stream:1", 2, 7, stream_position{"old", 4}, false);
  t.on_answer(answer("stream:1", 2, "new", 2, false,
                     {pub("stream:1", "new", 1), pub("stream:1", "new", 2)}, "epoch_changed"));
  t.on_publication(pub("stream:1", "new", 2)); // in the reply already
  t.on_publication(pub("stream:1", "new", 3));
  REQUIRE(r.out.size() == 4u);
  auto reply = json::parse(r.out[2]);
  CHECK(reply["id"] == 7);
  CHECK(reply["subscribe"]["recovered"] == false);
  CHECK(reply["subscribe"]["was_recovering"] == true);
  CHECK(reply["subscribe"]["epoch"] == "new");
  // Was: no publications, so the first of the new epoch never reached the client.
  REQUIRE(reply["subscribe"]["publications"].size() == 2u);
  CHECK(reply["subscribe"]["publications"][0]["offset"] == 1);
  CHECK(reply["subscribe"]["publications"][1]["offset"] == 2);
  CHECK(r.out[3] == "pub stream:1 3");
}

// -- delta compression (Centrifugo's `delta: "fossil"`) ----------------------

namespace {
/// A publication whose data and delta are told apart on the wire.
publication_ptr delta_pub(std::uint64_t offset, std::string epoch = "e") {
  auto p = std::make_shared<publication>();
  p->channel = "stream:1";
  p->epoch = std::move(epoch);
  p->offset = offset;
  p->event = "e";
  p->data = R"({"n":)" + std::to_string(offset) + "}";
  p->delta = "D" + std::to_string(offset); // what the channel actor made
  return p;
}
/// The `pub` object of a recorded push body.
json pub_of(const std::string& body) {
  return json::parse(body)["push"]["pub"];
}
} // namespace

TEST_CASE("centrifugo delta: the first publication after the reply is full, the next ones "
          "deltas, data travels as a JSON string",
          "[subscription_table][centrifugo][delta]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.set_codec(ws::session_codec_for(ws::dialect::centrifugo));
  t.expect("stream:1", 1, 2, std::nullopt, false, {}, /*delta=*/true);
  t.on_answer(answer("stream:1", 1, "e", 4));
  t.on_publication(delta_pub(5));
  t.on_publication(delta_pub(6));
  auto no_delta = delta_pub(7);
  no_delta->delta.clear(); // the channel made none (not smaller): full
  t.on_publication(no_delta);
  t.on_publication(delta_pub(8));
  REQUIRE(r.out.size() == 5u);
  CHECK(json::parse(r.out[0])["subscribe"]["delta"] == true);
  REQUIRE(r.bodies.size() == 4u);
  auto p5 = pub_of(r.bodies[0]);
  CHECK(p5["data"] == R"({"n":5})"); // a string, not the object
  CHECK_FALSE(p5.contains("delta"));
  auto p6 = pub_of(r.bodies[1]);
  CHECK(p6["data"] == "D6");
  CHECK(p6["delta"] == true);
  CHECK(p6["offset"] == 6);
  CHECK(pub_of(r.bodies[2])["data"] == R"({"n":7})");
  CHECK_FALSE(pub_of(r.bodies[2]).contains("delta"));
  CHECK(pub_of(r.bodies[3])["data"] == "D8");
}

TEST_CASE("centrifugo delta: without the option the data goes whole, as a JSON value",
          "[subscription_table][centrifugo][delta]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.set_codec(ws::session_codec_for(ws::dialect::centrifugo));
  t.expect("stream:1", 1, 2, std::nullopt, false);
  t.on_answer(answer("stream:1", 1, "e", 4));
  t.on_publication(delta_pub(5));
  t.on_publication(delta_pub(6));
  REQUIRE(r.bodies.size() == 2u);
  CHECK_FALSE(json::parse(r.out[0])["subscribe"].contains("delta"));
  CHECK(pub_of(r.bodies[1])["data"] == json{{"n", 6}});
  CHECK_FALSE(pub_of(r.bodies[1]).contains("delta"));
}

TEST_CASE("centrifugo delta: a recovery replays the first publication full, the rest as "
          "deltas, and live ones continue the chain",
          "[subscription_table][centrifugo][delta]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.set_codec(ws::session_codec_for(ws::dialect::centrifugo));
  t.expect("stream:1", 1, 2, stream_position{"e", 3}, false, {}, true);
  t.on_answer(answer("stream:1", 1, "e", 6, true, {delta_pub(4), delta_pub(5), delta_pub(6)}));
  t.on_publication(delta_pub(7));
  REQUIRE(r.out.size() == 2u);
  auto reply = json::parse(r.out[0])["subscribe"];
  CHECK(reply["delta"] == true);
  REQUIRE(reply["publications"].size() == 3u);
  CHECK(reply["publications"][0]["data"] == R"({"n":4})");
  CHECK_FALSE(reply["publications"][0].contains("delta"));
  CHECK(reply["publications"][1]["data"] == "D5");
  CHECK(reply["publications"][1]["delta"] == true);
  CHECK(reply["publications"][2]["data"] == "D6");
  CHECK(pub_of(r.bodies[0])["data"] == "D7"); // the client holds 6
}

TEST_CASE("centrifugo delta: after a gap or on a new epoch the next publication is full",
          "[subscription_table][centrifugo][delta]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.set_codec(ws::session_codec_for(ws::dialect::centrifugo));
  t.expect("stream:1", 1, 2, std::nullopt, false, {}, true);
  t.on_answer(answer("stream:1", 1, "e", 4));
  t.on_publication(delta_pub(5));
  t.on_publication(delta_pub(6));
  t.on_publication(delta_pub(8)); // 7 missing: the gap (an unsubscribe push)
  // The SDK subscribes again from 6; the channel's answer replays 7 and 8.
  t.expect("stream:1", 2, 3, stream_position{"e", 6}, false, {}, true);
  t.on_answer(answer("stream:1", 2, "e", 8, true, {delta_pub(7), delta_pub(8)}));
  t.on_publication(delta_pub(1, "f")); // a new epoch: a gap again
  t.expect("stream:1", 3, 4, stream_position{"e", 8}, false, {}, true);
  t.on_answer(answer("stream:1", 3, "f", 1, false, {}, "epoch_changed"));
  t.on_publication(delta_pub(2, "f"));
  t.on_publication(delta_pub(3, "f"));
  REQUIRE(r.bodies.size() == 4u);
  CHECK(pub_of(r.bodies[0])["data"] == R"({"n":5})");
  CHECK(pub_of(r.bodies[1])["data"] == "D6");
  // No delta after the gap push: the replay starts full.
  auto replay = json::parse(r.out[4])["subscribe"]["publications"];
  REQUIRE(replay.size() == 2u);
  CHECK(replay[0]["data"] == R"({"n":7})");
  CHECK(replay[1]["data"] == "D8");
  // The new epoch's first publication after the reply is full, then deltas.
  CHECK(pub_of(r.bodies[2])["data"] == R"({"n":2})");
  CHECK(pub_of(r.bodies[3])["data"] == "D3");
}

TEST_CASE("ws delta: /v1/ws with delta \"fossil\": full after the reply and after a gap, "
          "deltas in between, data as a JSON string",
          "[subscription_table][delta]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.expect("stream:1", 1, "s1", stream_position{"e", 3}, false, {}, true);
  t.on_answer(answer("stream:1", 1, "e", 5, true, {delta_pub(4), delta_pub(5)}));
  t.on_publication(delta_pub(6));
  t.on_publication(delta_pub(8)); // 7 missing: a gap, the subscription goes on
  t.on_publication(delta_pub(9));
  auto reply = json::parse(r.out[0]);
  CHECK(reply["op"] == "subscribed");
  CHECK(reply["delta"] == true);
  REQUIRE(r.bodies.size() == 5u);
  auto msg = [&](std::size_t i) { return json::parse(r.bodies[i]); };
  CHECK(msg(0)["op"] == "publication");
  CHECK(msg(0)["data"] == R"({"n":4})"); // the replay's first: full
  CHECK_FALSE(msg(0).contains("delta"));
  CHECK(msg(1)["data"] == "D5");
  CHECK(msg(1)["delta"] == true);
  CHECK(msg(2)["data"] == "D6");
  CHECK(msg(3)["data"] == R"({"n":8})"); // after the gap
  CHECK(msg(3)["offset"] == 8);
  CHECK(msg(4)["data"] == "D9");
  // Without the option: today's message, data as a JSON value.
  recorded plain;
  subscription_table p{metrics::transport::ws, ws_herald(), plain};
  p.expect("stream:1", 1, "s1", std::nullopt, false);
  p.on_answer(answer("stream:1", 1, "e", 5));
  p.on_publication(delta_pub(6));
  CHECK_FALSE(json::parse(plain.out[0]).contains("delta"));
  // publication_message(): p.ws, which delta_pub() leaves unset.
  CHECK(plain.bodies == std::vector<std::string>{""});
}

TEST_CASE("centrifugo: unsubscribe replies echo the command id",
          "[subscription_table][centrifugo]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.set_codec(ws::session_codec_for(ws::dialect::centrifugo));
  t.expect("stream:1", 1, 1, std::nullopt, false);
  t.forget("stream:1", json(4)); // the subscribe had not been answered
  REQUIRE(r.out.size() == 2u);
  CHECK(json::parse(r.out[0])["id"] == 1);
  CHECK(json::parse(r.out[0]).contains("error"));
  CHECK(json::parse(r.out[1]) == json::parse(R"({"id":4,"unsubscribe":{}})"));
}

TEST_CASE("centrifugo: a subscribe superseded while pending is answered before the one that "
          "replaces it",
          "[subscription_table][centrifugo]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.set_codec(ws::session_codec_for(ws::dialect::centrifugo));
  // {"id":2,"subscribe":..}\n{"id":3,"subscribe":..} to one channel, one message.
  t.expect("stream:q", 1, 2, std::nullopt, false);
  t.expect("stream:q", 2, 3, std::nullopt, false);
  REQUIRE(r.out.size() == 1u);
  CHECK(json::parse(r.out[0])["id"] == 2);
  CHECK(json::parse(r.out[0])["error"]["code"] == 107);
  t.on_answer(answer("stream:q", 1, "e", 0)); // the answer to the superseded one: stale
  CHECK(r.out.size() == 1u);
  t.on_answer(answer("stream:q", 2, "e", 0));
  REQUIRE(r.out.size() == 2u);
  CHECK(json::parse(r.out[1])["id"] == 3);
  CHECK(json::parse(r.out[1]).contains("subscribe"));
  // A renewal of an answered subscription (after a live gap) supersedes nothing.
  t.expect("stream:q", 3, 4, stream_position{"e", 0}, false);
  CHECK(r.out.size() == 2u);
}

TEST_CASE("ws: a subscribe superseded while pending answers cancelled", "[subscription_table]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.expect("stream:1", 1, 1, std::nullopt);
  t.expect("stream:1", 2, 2, std::nullopt);
  REQUIRE(r.out.size() == 1u);
  CHECK(json::parse(r.out[0])["code"] == "cancelled");
  CHECK(json::parse(r.out[0])["id"] == 1);
  t.on_answer(answer("stream:1", 2, "e", 0));
  REQUIRE(r.out.size() == 2u);
  CHECK(json::parse(r.out[1])["id"] == 2);
}

TEST_CASE("ws: a subscribe unanswered by its due time is answered unavailable once and dropped",
          "[subscription_table]") {
  using namespace std::chrono_literals;
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  const subscription_table::time_point t0{};
  CHECK_FALSE(t.next_due().has_value());
  t.expect("stream:1", 1, 1, std::nullopt, false, t0 + 4s);
  t.expect("stream:2", 2, 2, std::nullopt, false, t0 + 5s);
  t.expect("stream:3", 3, 3, std::nullopt); // no due time: waits as long as it takes
  REQUIRE(t.next_due() == t0 + 4s);
  CHECK(t.give_up_overdue(t0 + 3999ms, "late").empty());
  CHECK(r.out.empty());
  auto gone = t.give_up_overdue(t0 + 4s, "the channel did not answer within 4000 ms");
  REQUIRE(gone.size() == 1u);
  CHECK(gone[0] == std::pair<std::string, std::uint64_t>{"stream:1", 1});
  REQUIRE(r.out.size() == 1u);
  auto err = json::parse(r.out[0]);
  CHECK(err["op"] == "error");
  CHECK(err["id"] == 1);
  CHECK(err["code"] == "unavailable");
  CHECK(err["channel"] == "stream:1");
  CHECK(err["message"] == "the channel did not answer within 4000 ms");
  CHECK(t.next_due() == t0 + 5s);
  // Its channel's answer comes late: stale, nothing written.
  t.on_answer(answer("stream:1", 1, "e", 3));
  CHECK(r.out.size() == 1u);
  // stream:2 is answered in time: its due time no longer counts.
  t.on_answer(answer("stream:2", 2, "e", 0));
  REQUIRE(r.out.size() == 2u);
  CHECK(json::parse(r.out[1])["op"] == "subscribed");
  CHECK_FALSE(t.next_due().has_value());
  CHECK(t.give_up_overdue(t0 + 1h, "late").empty());
  CHECK(r.out.size() == 2u);
  // The client subscribes to stream:1 again: a new entry with its own time.
  t.expect("stream:1", 4, 5, std::nullopt, false, t0 + 10s);
  CHECK(t.next_due() == t0 + 10s);
  t.on_answer(answer("stream:1", 4, "e", 3));
  REQUIRE(r.out.size() == 3u);
  CHECK(json::parse(r.out[2])["id"] == 5);
  CHECK(t.size() == 3u);
}

TEST_CASE("centrifugo: an overdue subscribe is error 100 with temporary, which the SDK retries",
          "[subscription_table][centrifugo]") {
  using namespace std::chrono_literals;
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.set_codec(ws::session_codec_for(ws::dialect::centrifugo));
  const subscription_table::time_point t0{};
  t.expect("stream:c", 1, 7, std::nullopt, false, t0 + 1s);
  auto gone = t.give_up_overdue(t0 + 2s, "slow");
  REQUIRE(gone.size() == 1u);
  REQUIRE(r.out.size() == 1u);
  auto err = json::parse(r.out[0]);
  CHECK(err["id"] == 7);
  CHECK(err["error"]["code"] == 100);
  CHECK(err["error"]["temporary"] == true);
  CHECK(t.size() == 0u);
}

TEST_CASE("ws: a revoked channel answers its pending subscribe, then says why, and stops",
          "[subscription_table]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.expect("user:a", 1, 1, std::nullopt);
  t.expect("user:b", 2, 2, std::nullopt);
  t.on_answer(answer("user:b", 2, "e", 0));
  REQUIRE(r.out.size() == 1u);
  t.revoke("user:a", "not allowed");
  t.revoke("user:b", "not allowed");
  t.revoke("user:c", "not allowed"); // no entry: nothing
  REQUIRE(r.out.size() == 4u);
  CHECK(json::parse(r.out[1])["id"] == 1);
  CHECK(json::parse(r.out[1])["code"] == "cancelled");
  CHECK(json::parse(r.out[2])["code"] == "forbidden");
  CHECK(json::parse(r.out[2])["channel"] == "user:a");
  CHECK(json::parse(r.out[3])["channel"] == "user:b");
  CHECK(t.size() == 0u);
  t.on_answer(answer("user:a", 1, "e", 0)); // stale
  t.on_publication(pub("user:b", "e", 1));  // no longer subscribed
  CHECK(r.out.size() == 4u);
}

// -- overflow policy conflate (issue 22 section 4) ------------------------------

namespace {

subscription_answer conflated_answer(std::string channel, std::uint64_t request, std::string epoch,
                                     std::uint64_t head) {
  auto a = answer(std::move(channel), request, std::move(epoch), head);
  a.overflow = overflow_policy::conflate;
  return a;
}

/// A publication with its SSE and /v1/ws bytes, which name it.
publication_ptr framed_pub(std::string channel, std::uint64_t offset) {
  auto p = std::make_shared<publication>();
  p->channel = std::move(channel);
  p->epoch = "e";
  p->offset = offset;
  p->event = "e";
  p->data = "{}";
  const auto name = p->channel + " " + std::to_string(offset);
  p->sse = make_frame("event: e\ndata: \"" + name + "\"\n\n");
  p->ws = make_frame("\"" + name + "\"");
  return p;
}

/// An output that queues as a session does, into a real outbound queue.
struct queued : subscription_table::output {
  explicit queued(std::size_t hwm) : q(hwm) {}
  outbound_queue q;
  bool crossed = false;
  void write_publication(const publication&, std::string prefix, const frame& body,
                         std::int64_t acc, subscription_table::conflation_key key) override {
    crossed |= q.push(std::move(prefix), body, acc, key) == outbound_queue::watermark::crossed_high;
  }
  void write_message(std::string id_line, std::string body) override {
    crossed |= q.push(std::move(id_line), make_frame(std::move(body))) ==
               outbound_queue::watermark::crossed_high;
  }
  /// Everything queued, one string per item (prefix and body).
  std::vector<std::string> drain() {
    std::vector<std::string> items;
    while (!q.empty()) {
      std::vector<std::string_view> bufs;
      q.begin_write(bufs, 1, 1 << 20);
      std::string s;
      for (auto b : bufs)
        s += b;
      items.push_back(std::move(s));
      q.complete_write();
    }
    return items;
  }
};

} // namespace

TEST_CASE("ws: a conflated subscription says so in its reply, and its publications carry a key "
          "of their own",
          "[subscription_table][conflate]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.expect("stream:1", 1, 1, std::nullopt);
  t.expect("stream:2", 2, 2, std::nullopt);
  t.expect("user:a", 3, 3, std::nullopt);
  t.on_answer(conflated_answer("stream:1", 1, "e", 0));
  t.on_answer(conflated_answer("stream:2", 2, "e", 0));
  t.on_answer(answer("user:a", 3, "e", 0)); // policy close
  REQUIRE(r.out.size() == 3u);
  CHECK(json::parse(r.out[0])["conflated"] == true);
  CHECK(json::parse(r.out[1])["conflated"] == true);
  CHECK_FALSE(json::parse(r.out[2]).contains("conflated"));
  for (std::uint64_t n = 1; n <= 2; ++n)
    for (auto c : {"stream:1", "stream:2", "user:a"})
      t.on_publication(pub(c, "e", n));
  REQUIRE(r.keys.size() == 6u);
  CHECK(r.keys[0] != 0);
  CHECK(r.keys[1] != 0);
  CHECK(r.keys[0] != r.keys[1]);
  CHECK(r.keys[2] == 0);
  CHECK(r.keys[3] == r.keys[0]);
  CHECK(r.keys[4] == r.keys[1]);
  CHECK(r.keys[5] == 0);

  // A renewed subscribe is a new subscription: a new key.
  t.expect("stream:1", 4, 4, stream_position{"e", 2});
  t.on_answer(conflated_answer("stream:1", 4, "e", 2));
  t.on_publication(pub("stream:1", "e", 3));
  REQUIRE(r.keys.size() == 7u);
  CHECK(r.keys[6] != 0);
  CHECK(r.keys[6] != r.keys[0]);
  CHECK(r.keys[6] != r.keys[1]);
}

TEST_CASE("ws, centrifugo: a conflated subscription does not use delta compression",
          "[subscription_table][conflate][delta]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.expect("stream:1", 1, 1, std::nullopt, false, {}, /*delta=*/true);
  t.on_answer(conflated_answer("stream:1", 1, "e", 4));
  REQUIRE(r.out.size() == 1u);
  CHECK_FALSE(json::parse(r.out[0]).contains("delta"));
  CHECK(json::parse(r.out[0])["conflated"] == true);

  recorded c;
  subscription_table tc{metrics::transport::ws, ws_herald(), c};
  tc.set_codec(ws::session_codec_for(ws::dialect::centrifugo));
  tc.expect("stream:1", 1, 2, std::nullopt, false, {}, /*delta=*/true);
  tc.on_answer(conflated_answer("stream:1", 1, "e", 4));
  tc.on_publication(delta_pub(5));
  tc.on_publication(delta_pub(6));
  REQUIRE(c.out.size() == 3u);
  CHECK_FALSE(json::parse(c.out[0])["subscribe"].contains("delta"));
  CHECK(pub_of(c.bodies[1])["data"] == json{{"n", 6}}); // whole, never a delta
  CHECK_FALSE(pub_of(c.bodies[1]).contains("delta"));
}

TEST_CASE("ws: into a tiny mark, 3 conflated channels end with the newest publication of each, "
          "offsets increasing, no gap",
          "[subscription_table][conflate]") {
  queued out{400}; // the three replies (~300 bytes) stay under it
  subscription_table t{metrics::transport::ws, ws_herald(), out};
  const std::vector<std::string> channels{"stream:1", "stream:2", "stream:3"};
  for (std::uint64_t i = 0; i < 3; ++i) {
    t.expect(channels[i], i + 1, static_cast<int>(i + 1), std::nullopt);
    t.on_answer(conflated_answer(channels[i], i + 1, "e", 0));
  }
  for (std::uint64_t n = 1; n <= 100; ++n)
    for (const auto& c : channels)
      t.on_publication(framed_pub(c, n));
  CHECK_FALSE(out.crossed); // never closed as a slow client
  CHECK(out.q.conflated() > 250);
  const auto items = out.drain();
  std::map<std::string, std::uint64_t> last;
  for (const auto& item : items) {
    CHECK(item.find("gap") == std::string::npos);
    const auto quote = item.find('"');
    if (quote == std::string::npos || item.find("subscribed") != std::string::npos)
      continue;
    const auto name = item.substr(quote + 1, item.rfind('"') - quote - 1);
    const auto space = name.find(' ');
    const auto channel = name.substr(0, space);
    const auto offset = std::stoull(name.substr(space + 1));
    CHECK(offset > last[channel]);
    last[channel] = offset;
  }
  CHECK(last == std::map<std::string, std::uint64_t>{
                  {"stream:1", 100}, {"stream:2", 100}, {"stream:3", 100}});
}

TEST_CASE("sse: herald.cursor names the conflated channels, and the last event's cursor covers "
          "what conflation dropped",
          "[subscription_table][conflate]") {
  queued out{300};
  subscription_table t{metrics::transport::sse, sse_codec(), out};
  t.begin({"stream:1", "user:a", "stream:2"}, {});
  t.on_answer(conflated_answer("stream:1", 1, "e", 0));
  t.on_answer(answer("user:a", 2, "e", 0));
  t.on_answer(conflated_answer("stream:2", 3, "e", 0));
  for (std::uint64_t n = 1; n <= 50; ++n) {
    t.on_publication(framed_pub("stream:1", n));
    t.on_publication(framed_pub("stream:2", n));
  }
  t.on_publication(framed_pub("user:a", 1)); // policy close: never dropped
  CHECK_FALSE(out.crossed);
  const auto items = out.drain();
  REQUIRE(items.size() >= 3u);
  const auto first = items.front();
  CHECK(first.find("event: herald.cursor\ndata: {\"conflated\":[\"stream:1\",\"stream:2\"]}\n\n") !=
        std::string::npos);
  CHECK(items[items.size() - 3].find("\"stream:1 50\"") != std::string::npos);
  CHECK(items[items.size() - 2].find("\"stream:2 50\"") != std::string::npos);
  CHECK(items.back().find("\"user:a 1\"") != std::string::npos);
  // The last id line names every channel at its last offset: a reconnect
  // with it resumes after the newest publication of each.
  auto cursor = parse_id(items.back().substr(0, items.back().find('\n') + 1));
  REQUIRE(cursor.size() == 3u);
  CHECK(cursor[0].position.offset == 50u);
  CHECK(cursor[1].position.offset == 1u);
  CHECK(cursor[2].position.offset == 50u);
  for (const auto& item : items)
    CHECK(item.find("herald.gap") == std::string::npos);
}

// -- channel classes: cache recovery and a class that refuses deltas ----------

namespace {

subscription_answer cached(std::string channel, std::uint64_t request, std::string epoch,
                           std::uint64_t head, bool recovered) {
  auto a = answer(std::move(channel), request, epoch, head, recovered,
                  {pub("stream:1", epoch, head)});
  a.cached = true;
  return a;
}

} // namespace

TEST_CASE("ws cache: a position that cannot be recovered gets the latest publication, no gap, "
          "and live ones follow",
          "[subscription_table][cache]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.expect("stream:1", 1, 3, stream_position{"old", 2});
  t.on_answer(cached("stream:1", 1, "e", 9, true));
  t.on_publication(pub("stream:1", "e", 9)); // the seam
  t.on_publication(pub("stream:1", "e", 10));
  REQUIRE(r.out.size() == 3u);
  auto reply = json::parse(r.out[0]);
  CHECK(reply["recovered"] == true);
  CHECK(reply["cache"] == true);
  CHECK_FALSE(reply.contains("reason"));
  CHECK(r.out[1] == "pub stream:1 9");
  CHECK(r.out[2] == "pub stream:1 10"); // no gap notice anywhere
}

TEST_CASE("sse cache: a stale cursor gets the latest publication with the new cursor, no "
          "herald.gap",
          "[subscription_table][cache]") {
  recorded r;
  r.cursor = true;
  subscription_table t{metrics::transport::sse, sse_codec(), r};
  t.begin({"stream:1"}, {{sse::channel_hash("stream:1"), {"old", 2}}});
  t.on_answer(cached("stream:1", 0, "e", 9, true));
  t.on_publication(pub("stream:1", "e", 10));
  REQUIRE(r.out.size() == 2u);
  CHECK(r.out[0] == "pub stream:1 9");
  CHECK(r.out[1] == "pub stream:1 10");
  auto first = parse_id(r.ids[0]);
  CHECK(first[0].position.epoch == "e");
  CHECK(first[0].position.offset == 9u);
}

TEST_CASE("centrifugo cache: the reply carries the latest publication, recovered, without 112",
          "[subscription_table][cache][centrifugo]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.set_codec(ws::session_codec_for(ws::dialect::centrifugo));
  // Flag bit 2 (reject unrecovered): a cache answer is a recovery.
  t.expect("stream:1", 1, 2, stream_position{"", 0}, true);
  t.on_answer(cached("stream:1", 1, "e", 7, true));
  t.on_publication(pub("stream:1", "e", 8));
  REQUIRE(r.out.size() == 2u);
  auto reply = json::parse(r.out[0]);
  CHECK(reply["subscribe"]["was_recovering"] == true);
  CHECK(reply["subscribe"]["recovered"] == true);
  REQUIRE(reply["subscribe"]["publications"].size() == 1u);
  CHECK(reply["subscribe"]["publications"][0]["offset"] == 7);
  CHECK(r.out[1] == "pub stream:1 8");
}

TEST_CASE("a class that refuses deltas: the reply says none, publications go whole",
          "[subscription_table][delta]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.set_codec(ws::session_codec_for(ws::dialect::centrifugo));
  t.expect("stream:1", 1, 2, std::nullopt, false, {}, /*delta=*/true);
  auto a = answer("stream:1", 1, "e", 4);
  a.delta_allowed = false;
  t.on_answer(a);
  auto p = std::make_shared<publication>(); // what pub() makes, with a delta
  p->channel = "stream:1";
  p->epoch = "e";
  p->offset = 5;
  p->event = "e";
  p->data = R"({"n":5})";
  p->delta = "D5";
  t.on_publication(p);
  REQUIRE(r.out.size() == 2u);
  CHECK_FALSE(json::parse(r.out[0])["subscribe"].contains("delta"));
  REQUIRE(r.bodies.size() == 1u);
  CHECK(r.bodies[0].find(R"("data":{"n":5})") != std::string::npos);
}

// -- filters (net/wire/tags_filter.hpp) -------------------------------------

namespace {
// A publication of stream:1 with event `event`.
publication_ptr tagged(std::uint64_t offset, std::string event, std::string epoch = "e") {
  auto p = std::make_shared<publication>();
  p->channel = "stream:1";
  p->epoch = std::move(epoch);
  p->offset = offset;
  p->event = std::move(event);
  p->data = R"({"n":)" + std::to_string(offset) + "}";
  p->delta = "D" + std::to_string(offset);
  p->accepted_ns = 42;
  return p;
}

tags_filter_ptr only(std::string event) {
  return tags_filter::event_in({std::move(event)});
}
} // namespace

TEST_CASE("filter ws: live, replayed and recovered publications pass the filter alike: "
          "the filtered ones advance the position without a gap",
          "[subscription_table][filter]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.expect("stream:1", 1, 1, stream_position{"e", 2}, false, {}, false, only("withdrawn"));
  t.on_answer(answer("stream:1", 1, "e", 5, true,
                     {tagged(3, "withdrawn"), tagged(4, "trade"), tagged(5, "trade")}));
  t.on_publication(tagged(5, "withdrawn")); // the seam: 5 was replayed (and filtered)
  t.on_publication(tagged(6, "trade"));
  t.on_publication(tagged(7, "withdrawn"));
  t.on_publication(tagged(8, "trade"));
  t.on_publication(tagged(9, "trade"));
  t.on_publication(tagged(10, "withdrawn")); // after two filtered ones: no gap
  REQUIRE(r.out.size() == 4u);
  CHECK(json::parse(r.out[0])["recovered"] == true);
  CHECK(r.out[1] == "pub stream:1 3");
  CHECK(r.out[2] == "pub stream:1 7");
  CHECK(r.out[3] == "pub stream:1 10");
  // A real jump is still a gap, and a filtered publication after it is silent.
  t.on_publication(tagged(12, "trade"));
  REQUIRE(r.out.size() == 5u);
  CHECK(json::parse(r.out[4])["reason"] == "missed_publications");
  t.on_publication(tagged(13, "withdrawn"));
  REQUIRE(r.out.size() == 6u);
  CHECK(r.out[5] == "pub stream:1 13");
  // Without a filter, everything: the filter is per subscription.
  recorded all;
  subscription_table u{metrics::transport::ws, ws_herald(), all};
  u.expect("stream:1", 1, 1, std::nullopt);
  u.on_answer(answer("stream:1", 1, "e", 0));
  u.on_publication(tagged(1, "trade"));
  u.on_publication(tagged(2, "withdrawn"));
  CHECK(all.out.size() == 3u);
}

TEST_CASE("filter ws: a filter on one channel leaves the connection's other channels alone",
          "[subscription_table][filter]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.expect("stream:1", 1, 1, std::nullopt, false, {}, false, only("withdrawn"));
  t.expect("stream:2", 2, 2, std::nullopt);
  t.on_answer(answer("stream:1", 1, "e", 0));
  t.on_answer(answer("stream:2", 2, "e", 0));
  auto two = tagged(1, "trade");
  std::const_pointer_cast<publication>(two)->channel = "stream:2";
  t.on_publication(tagged(1, "trade"));
  t.on_publication(two);
  REQUIRE(r.out.size() == 3u);
  CHECK(r.out[2] == "pub stream:2 1");
  // A renewed subscribe replaces the filter (here: none).
  t.forget("stream:1", std::nullopt);
  t.expect("stream:1", 3, 3, stream_position{"e", 1});
  t.on_answer(answer("stream:1", 3, "e", 2, true, {tagged(2, "trade")}));
  CHECK(r.out.back() == "pub stream:1 2");
}

TEST_CASE("filter sse: filtered publications write nothing, the next event's cursor names "
          "them, and a reconnect from it does not send them again",
          "[subscription_table][filter]") {
  recorded r;
  r.cursor = true;
  subscription_table t{metrics::transport::sse, sse_codec(), r};
  t.begin({"stream:1"}, {}, only("withdrawn"));
  t.on_answer(answer("stream:1", 5, "e", 2));
  REQUIRE(r.out.size() == 1u); // herald.cursor
  t.on_publication(tagged(3, "trade"));
  t.on_publication(tagged(4, "trade"));
  CHECK(r.out.size() == 1u);
  CHECK(parse_id("id: " + t.cursor() + "\n")[0].position.offset == 4u); // the cursor moved on
  t.on_publication(tagged(5, "withdrawn"));
  REQUIRE(r.out.size() == 2u);
  CHECK(r.out[1] == "pub stream:1 5");
  CHECK(parse_id(r.ids[1])[0].position.offset == 5u);
  t.on_publication(tagged(6, "trade"));
  const auto cursor = t.cursor();
  CHECK(parse_id("id: " + cursor + "\n")[0].position.offset == 6u);

  // The client reconnects from the last id it read (offset 5): the replay
  // holds 6 (filtered) and 7; only 7 is written, with a cursor at 7.
  recorded again;
  again.cursor = true;
  subscription_table u{metrics::transport::sse, sse_codec(), again};
  u.begin({"stream:1"}, parse_id(r.ids[1]), only("withdrawn"));
  u.on_answer(answer("stream:1", 1, "e", 7, true, {tagged(6, "trade"), tagged(7, "withdrawn")}));
  REQUIRE(again.out.size() == 1u);
  CHECK(again.out[0] == "pub stream:1 7");
  CHECK(parse_id(again.ids[0])[0].position.offset == 7u);

  // A recovery whose replay is all filtered out still gives the client its
  // cursor (a herald.cursor event), past the filtered publications.
  recorded none;
  none.cursor = true;
  subscription_table v{metrics::transport::sse, sse_codec(), none};
  v.begin({"stream:1"}, parse_id(r.ids[1]), only("withdrawn"));
  v.on_answer(answer("stream:1", 1, "e", 6, true, {tagged(6, "trade")}));
  REQUIRE(none.out.size() == 1u);
  CHECK(none.out[0] == "event: herald.cursor\ndata: {}\n\n");
  CHECK(parse_id(none.ids[0])[0].position.offset == 6u);
}

TEST_CASE("filter centrifugo: the reply's replay holds only matching publications and live "
          "ones are filtered without an unsubscribe push",
          "[subscription_table][filter][centrifugo]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.set_codec(ws::session_codec_for(ws::dialect::centrifugo));
  t.expect("stream:1", 1, 2, stream_position{"e", 3}, false, {}, false, only("withdrawn"));
  t.on_answer(answer("stream:1", 1, "e", 6, true,
                     {tagged(4, "trade"), tagged(5, "withdrawn"), tagged(6, "trade")}));
  t.on_publication(tagged(7, "trade"));
  t.on_publication(tagged(8, "withdrawn"));
  REQUIRE(r.out.size() == 2u);
  auto reply = json::parse(r.out[0]);
  CHECK(reply["subscribe"]["recovered"] == true);
  REQUIRE(reply["subscribe"]["publications"].size() == 1u);
  CHECK(reply["subscribe"]["publications"][0]["offset"] == 5);
  CHECK(r.out[1] == "pub stream:1 8"); // no gap push (2500) for 7
}

TEST_CASE("filter ws delta: after a filtered publication the next one goes in full",
          "[subscription_table][filter][delta]") {
  recorded r;
  subscription_table t{metrics::transport::ws, ws_herald(), r};
  t.expect("stream:1", 1, 1, std::nullopt, false, {}, true, only("withdrawn"));
  t.on_answer(answer("stream:1", 1, "e", 0));
  t.on_publication(tagged(1, "withdrawn"));
  t.on_publication(tagged(2, "withdrawn"));
  t.on_publication(tagged(3, "trade"));
  t.on_publication(tagged(4, "withdrawn"));
  t.on_publication(tagged(5, "withdrawn"));
  REQUIRE(r.bodies.size() == 4u);
  auto msg = [&](std::size_t i) { return json::parse(r.bodies[i]); };
  CHECK(msg(0)["data"] == R"({"n":1})");
  CHECK(msg(1)["data"] == "D2"); // on top of 1, which the client holds
  CHECK(msg(2)["offset"] == 4);
  CHECK(msg(2)["data"] == R"({"n":4})"); // its delta is against 3, which the client lacks
  CHECK_FALSE(msg(2).contains("delta"));
  CHECK(msg(3)["data"] == "D5");
}
