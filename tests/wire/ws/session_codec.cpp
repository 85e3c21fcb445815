// ws::session_codec: what a WebSocket session and its subscription table
// write, per dialect, chosen once (net/wire/ws/session_codec.hpp).
#include "net/wire/ws/session_codec.hpp"

#include "net/wire/centrifugo/protobuf.hpp"

#include "../support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <memory>

using namespace herald::net;
using herald::errc;
using nlohmann::json;

namespace {
std::shared_ptr<publication> make_pub(std::uint64_t offset) {
  auto p = herald::test::make_pub(offset, "stream:1", "ep", "created", R"({"a":1})");
  p->ws = make_frame(R"({"op":"publication"})");
  p->ws_header = "\x81\x14";
  return p;
}
} // namespace

TEST_CASE("session codec /v1/ws: Herald's messages, one command per text message", "[ws][codec]") {
  const auto& c = ws::session_codec_for(ws::dialect::herald);
  CHECK_FALSE(c.binary());
  CHECK(c.command_ends("{\"op\":\"ping\"}\n{}") == std::vector<std::size_t>{16});
  CHECK(c.command_ends("") == std::vector<std::size_t>{0}); // an empty message is a command too
  CHECK(c.command_ids("anything") == std::vector<json>{json{}});
  CHECK(json::parse(c.rate_limited(json{}, "slow down"))["code"] == "rate_limited");
  auto p = make_pub(3);
  CHECK(&c.publication_message(*p).body == &p->ws);
  CHECK(c.publication_message(*p).header == p->ws_header);
  CHECK(c.ping_frame() == nullptr);
  CHECK(c.close(1013, "slow") == std::pair<std::uint16_t, std::string>{1013, "slow"});
  auto cancelled = json::parse(c.pending_error(5, "stream:1", errc::cancelled, "why"));
  CHECK(cancelled["id"] == 5);
  CHECK(cancelled["code"] == "cancelled");
  CHECK(cancelled["channel"] == "stream:1");
  CHECK(json::parse(c.unsubscribed("u", "stream:1"))["op"] == "unsubscribed");
  CHECK(json::parse(c.gap("stream:1", "epoch_changed"))["op"] == "gap");
  CHECK_FALSE(c.gap_ends_subscription());
  CHECK_FALSE(c.replay_in_reply());
  auto sub = json::parse(c.subscribed(1, "stream:1", {"ep", 4}, true, false, "history_expired", {}));
  CHECK(sub["op"] == "subscribed");
  CHECK(sub["recovered"] == false);
  CHECK(sub["reason"] == "history_expired");
  // Not asked for (no flag on /v1/ws) and never recovered when not recovering.
  CHECK(json::parse(c.subscribed(1, "stream:1", {"ep", 4}, false, true, {}, {}))["recovered"] ==
        false);
}

TEST_CASE("session codec Centrifugo JSON: ids per line, 2500 gaps end the subscription, replay "
          "inside the reply",
          "[ws][codec]") {
  const auto& c = ws::session_codec_for(ws::dialect::centrifugo);
  CHECK_FALSE(c.binary());
  CHECK(c.command_ends("{\"id\":1,\"ping\":{}}\n\n{}\n") == std::vector<std::size_t>{19, 23});
  CHECK(c.command_ids("{\"id\":7,\"ping\":{}}\nnot json\n") == std::vector<json>{7, 0});
  auto limited = json::parse(c.rate_limited(7, "slow down"));
  CHECK(limited["id"] == 7);
  CHECK(limited["error"]["code"] == 111);
  REQUIRE(c.ping_frame() != nullptr);
  CHECK(**c.ping_frame() == "\x81\x02{}");
  CHECK(c.close(1013, "slow").first == 3008);
  auto retry = json::parse(c.pending_error(4, "stream:1", errc::unavailable, "no answer"));
  CHECK(retry["error"]["code"] == 100);
  CHECK(retry["error"]["temporary"] == true);
  CHECK(json::parse(c.pending_error(4, "stream:1", errc::cancelled, "x"))["error"]["code"] == 107);
  CHECK(json::parse(c.unsubscribed(9, "stream:1")) == json::parse(R"({"id":9,"unsubscribe":{}})"));
  CHECK(json::parse(c.gap("stream:1", "missed_publications"))["push"]["unsubscribe"]["code"] ==
        2500);
  CHECK(c.gap_ends_subscription());
  CHECK(c.replay_in_reply());
  auto p = make_pub(4);
  auto sub = json::parse(c.subscribed(2, "stream:1", {"ep", 4}, true, true, {}, {p.get()}));
  CHECK(sub["subscribe"]["recovered"] == true);
  CHECK(sub["subscribe"]["publications"][0]["offset"] == 4);
  CHECK(json::parse(c.unrecoverable(3, {}))["error"]["code"] == 112);
  CHECK(json::parse(c.unrecoverable(3, "history_expired"))["error"]["message"] ==
        "history_expired");
}

TEST_CASE("session codec Centrifugo Protobuf: binary, delimited ids, the same decisions",
          "[ws][codec]") {
  const auto& c = ws::session_codec_for(ws::dialect::centrifugo_protobuf);
  CHECK(c.binary());
  CHECK(c.gap_ends_subscription());
  CHECK(c.replay_in_reply());
  // id 7 with ping (field 11), then a pong, then a broken length.
  std::string message = std::string("\x04\x08\x07\x5a\x00", 5) + std::string("\x00", 1) + "\x80";
  CHECK(c.command_ends(message) == std::vector<std::size_t>{5, 6, 7});
  CHECK(c.command_ids(message) == std::vector<json>{7, 0, 0});
  REQUIRE(c.ping_frame() != nullptr);
  CHECK(**c.ping_frame() == std::string("\x82\x01\x00", 3));
  auto p = make_pub(4);
  CHECK(c.publication_message(*p).header[0] == '\x82');
  CHECK(c.close(1012, "").first == 3001);
}
