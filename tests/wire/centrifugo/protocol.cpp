// The Centrifugo client protocol v2 JSON codec: commands in, replies and
// pushes out, close code mapping (docs/centrifugo.md).
#include "net/wire/centrifugo/protocol.hpp"

#include "../support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>

using namespace herald::net;
using namespace herald::net::centrifugo;
using herald::test::check_recovering_subscribe;
using herald::test::make_pub;
using nlohmann::json;

TEST_CASE("centrifugo: several commands in one message, each with its id", "[centrifugo]") {
  auto lines = parse_commands("{\"id\":1,\"connect\":{\"token\":\"t\",\"name\":\"js\"}}\n"
                              "{\"id\":2,\"subscribe\":{\"channel\":\"stream:1\",\"recover\":true,"
                              "\"epoch\":\"e1\",\"offset\":7,\"flag\":3}}\r\n"
                              "{}\n"
                              "\n"
                              "{\"id\":3,\"unsubscribe\":{\"channel\":\"stream:1\"}}");
  REQUIRE(lines.size() == 4u);
  REQUIRE(lines[0].ok);
  CHECK(lines[0].cmd.kind == method::connect);
  CHECK(lines[0].cmd.id == 1u);
  CHECK(lines[0].cmd.token == "t");
  REQUIRE(lines[1].ok);
  check_recovering_subscribe(lines[1].cmd);
  REQUIRE(lines[2].ok);
  CHECK(lines[2].cmd.kind == method::pong);
  REQUIRE(lines[3].ok);
  CHECK(lines[3].cmd.kind == method::unsubscribe);
  CHECK(lines[3].cmd.id == 3u);
}

TEST_CASE("centrifugo: methods Herald does not offer are named, not refused as malformed",
          "[centrifugo]") {
  for (const char* name :
       {"publish", "presence", "presence_stats", "history", "rpc", "send", "sub_refresh"}) {
    auto lines = parse_commands(std::string{"{\"id\":9,\""} + name + "\":{}}");
    REQUIRE(lines.size() == 1u);
    REQUIRE(lines[0].ok);
    CHECK(lines[0].cmd.kind == method::unsupported);
    CHECK(lines[0].cmd.unsupported == name);
  }
  auto ping = parse_commands(R"({"id":4,"ping":{}})");
  REQUIRE(ping[0].ok);
  CHECK(ping[0].cmd.kind == method::ping);
}

TEST_CASE("centrifugo: malformed commands are bad requests, with the id when readable",
          "[centrifugo][bad-input]") {
  struct row {
    const char* text;
    std::uint32_t id;
  };
  for (auto r :
       {row{"not json", 0}, row{"[1]", 0}, row{R"({"id":-1,"ping":{}})", 0},
        row{R"({"id":"1","ping":{}})", 0}, row{R"({"id":4294967296,"ping":{}})", 0},
        row{R"({"ping":{}})", 0}, row{R"({"id":1})", 1}, row{R"({"id":2,"subscribe":{}})", 2},
        row{R"({"id":3,"subscribe":{"channel":1}})", 3},
        row{R"({"id":4,"subscribe":{"channel":"stream:1","offset":9007199254740992}})", 4},
        row{R"({"id":5,"subscribe":{"channel":"stream:1","recover":"yes"}})", 5},
        row{R"({"id":6,"connect":{"token":5}})", 6},
        row{R"({"id":7,"connect":{},"subscribe":{}})", 7}, row{R"({"id":8,"connect":[]})", 8},
        row{R"({"id":1,"id":2,"ping":{}})", 0},
        row{R"({"id":9,"subscribe":{"channel":"stream:1","channel":"stream:2"}})", 9},
        row{R"({"id":10,"ping":{},"ping":{}})", 10}, row{R"({"subscribe":{"id":1,"id":2}})", 0}}) {
    INFO(r.text);
    auto lines = parse_commands(r.text);
    REQUIRE(lines.size() == 1u);
    CHECK_FALSE(lines[0].ok);
    CHECK(lines[0].err.id == r.id);
    CHECK(lines[0].err.code == error_code::bad_request);
    CHECK_FALSE(lines[0].err.message.empty());
  }
}

TEST_CASE("centrifugo: connect and refresh replies announce ping, pong and ttl", "[centrifugo]") {
  auto c = json::parse(encode_connect(1, "cid", "herald 1", 25, 60));
  CHECK(c["id"] == 1);
  CHECK(c["connect"]["client"] == "cid");
  CHECK(c["connect"]["version"] == "herald 1");
  CHECK(c["connect"]["ping"] == 25);
  CHECK(c["connect"]["pong"] == true);
  CHECK(c["connect"]["expires"] == true);
  CHECK(c["connect"]["ttl"] == 60);
  auto forever = json::parse(encode_connect(1, "cid", "v", 25, 0));
  CHECK_FALSE(forever["connect"].contains("expires"));
  auto r = json::parse(encode_refresh(5, "cid", "v", 30));
  CHECK(r["id"] == 5);
  CHECK(r["refresh"]["ttl"] == 30);
  CHECK(r["refresh"]["expires"] == true);
}

TEST_CASE("centrifugo: the subscribe reply carries the position and the replay in order",
          "[centrifugo]") {
  auto p4 = make_pub(4);
  auto p5 = make_pub(5);
  auto j = json::parse(encode_subscribe(2, {"abc", 5}, true, true, {p4.get(), p5.get()}));
  CHECK(j["id"] == 2);
  const auto& s = j["subscribe"];
  CHECK(s["recoverable"] == true);
  CHECK(s["positioned"] == true);
  CHECK(s["epoch"] == "abc");
  CHECK(s["offset"] == 5);
  CHECK(s["was_recovering"] == true);
  CHECK(s["recovered"] == true);
  REQUIRE(s["publications"].size() == 2u);
  CHECK(s["publications"][0]["offset"] == 4);
  CHECK(s["publications"][1]["offset"] == 5);
  CHECK(s["publications"][0]["data"]["amount"] == "12.5");
  CHECK(s["publications"][0]["tags"]["event"] == "withdrawn");
  auto fresh = json::parse(encode_subscribe(3, {"abc", 0}, false, false, {}));
  CHECK_FALSE(fresh["subscribe"].contains("publications"));
  CHECK(fresh["subscribe"]["was_recovering"] == false);
}

TEST_CASE("centrifugo: a publication push is encoded once and shared", "[centrifugo]") {
  auto p = make_pub(17);
  const frame& first = publication_push(*p);
  const frame& again = publication_push(*p);
  CHECK(first.get() == again.get());
  auto j = json::parse(*first);
  CHECK(j["push"]["channel"] == "stream:42");
  CHECK(j["push"]["pub"]["offset"] == 17);
  CHECK(j["push"]["pub"]["data"]["amount"] == "12.5");
  CHECK(j["push"]["pub"]["tags"]["event"] == "withdrawn");
  // The RFC 6455 header of an unmasked text frame of that length.
  const auto& h = publication_push_header(*p);
  REQUIRE(h.size() == 2u);
  CHECK(static_cast<unsigned char>(h[0]) == 0x81);
  CHECK(static_cast<unsigned char>(h[1]) == first->size());
}

TEST_CASE("centrifugo: delta: \"fossil\" on subscribe, data as a JSON string on such "
          "subscriptions, the delta with delta: true",
          "[centrifugo][delta]") {
  auto cmds = parse_commands(
    R"({"id":1,"subscribe":{"channel":"stream:1","delta":"fossil"}})"
    "\n"
    R"({"id":2,"subscribe":{"channel":"stream:1","delta":"xdelta"}})"
    "\n"
    R"({"id":3,"subscribe":{"channel":"stream:1","delta":7}})"
    "\n"
    R"({"id":4,"subscribe":{"channel":"stream:1","delta":""}})");
  REQUIRE(cmds.size() == 4u);
  REQUIRE(cmds[0].ok);
  CHECK(cmds[0].cmd.delta);
  for (std::size_t i : {1u, 2u}) {
    INFO(i);
    CHECK_FALSE(cmds[i].ok);
    CHECK(cmds[i].err.id == i + 1);
    CHECK(cmds[i].err.code == error_code::bad_request);
  }
  REQUIRE(cmds[3].ok);
  CHECK_FALSE(cmds[3].cmd.delta);

  publication p;
  p.channel = "stream:1";
  p.epoch = "e";
  p.offset = 8;
  p.event = "tick";
  p.data = R"({"memo":"caf\u00e9 \"q\"","n":1})";
  p.delta = "Z\n2:\"é3@0,x;"; // UTF-8 with a quote, as a delta may be
  auto full = nlohmann::json::parse(encode_delta_object(p, false));
  CHECK(full["data"] == p.data); // a string holding the JSON text
  CHECK(full["offset"] == 8);
  CHECK(full["tags"]["event"] == "tick");
  CHECK_FALSE(full.contains("delta"));
  auto delta = nlohmann::json::parse(encode_delta_object(p, true));
  CHECK(delta["data"] == p.delta);
  CHECK(delta["delta"] == true);
  auto push = nlohmann::json::parse(*delta_push_bytes(p, true).body);
  CHECK(push["push"]["channel"] == "stream:1");
  CHECK(push["push"]["pub"] == delta);
  CHECK(delta_push_bytes(p, true).body.get() == delta_push_bytes(p, true).body.get());
  CHECK(nlohmann::json::parse(*delta_push_bytes(p, false).body)["push"]["pub"] == full);
}

TEST_CASE("centrifugo: errors, unsubscribe replies and pushes", "[centrifugo]") {
  auto e = json::parse(encode_error(7, error_code::unrecoverable_position));
  CHECK(e["id"] == 7);
  CHECK(e["error"]["code"] == 112);
  CHECK(e["error"]["message"] == "unrecoverable position");
  auto u = json::parse(encode_unsubscribe(8));
  CHECK(u["id"] == 8);
  CHECK(u["unsubscribe"].is_object());
  auto push =
    json::parse(encode_unsubscribe_push("stream:1", gap_unsubscribe_code, "epoch_changed"));
  CHECK(push["push"]["channel"] == "stream:1");
  CHECK(push["push"]["unsubscribe"]["code"] == 2500);
  CHECK(error_for(herald::errc::invalid_channel) == error_code::unknown_channel);
  CHECK(error_for(herald::errc::forbidden) == error_code::permission_denied);
  CHECK(error_for(herald::errc::too_many_channels) == error_code::limit_exceeded);
}

TEST_CASE("centrifugo: every Herald error has Centrifugo's code, bad request where it has none",
          "[centrifugo]") {
  using herald::errc;
  const std::map<errc, error_code> own = {
    {errc::invalid_channel, error_code::unknown_channel},
    {errc::forbidden, error_code::permission_denied},
    {errc::unauthorized, error_code::unauthorized},
    {errc::token_expired, error_code::token_expired},
    {errc::too_many_channels, error_code::limit_exceeded},
    {errc::too_many_subscribes, error_code::limit_exceeded},
    {errc::rate_limited, error_code::too_many_requests},
    {errc::already_subscribed, error_code::already_subscribed},
    {errc::unavailable, error_code::not_available},
    {errc::shutting_down, error_code::not_available},
    {errc::internal, error_code::internal}};
  for (std::size_t i = 0; i < herald::errc_count; ++i) {
    auto e = static_cast<errc>(i);
    CAPTURE(herald::info(e).code);
    auto it = own.find(e);
    CHECK(error_for(e) == (it == own.end() ? error_code::bad_request : it->second));
  }
}

TEST_CASE("centrifugo: Herald's close codes become Centrifugo's", "[centrifugo]") {
  CHECK(close_for(1012, "service restart").first == 3001);
  CHECK(close_for(1013, "slow client").first == 3008);
  CHECK(close_for(4001, "bad signature") ==
        std::pair<std::uint16_t, std::string>{3500, "invalid token: bad signature"});
  CHECK(close_for(4002, "token expired").first == 3005);
  CHECK(close_for(1008, "rate limited").first == 3501);
  // RFC 6455 framing codes and Centrifugo's own codes pass through.
  CHECK(close_for(1002, "x").first == 1002);
  CHECK(close_for(1009, "x").first == 1009);
  CHECK(close_for(3501, "bad request: connect first").first == 3501);
}

TEST_CASE("centrifugo: subscribe's tf is the tags filter: a bad tree, or tf with delta, is "
          "refused 107 with the reason",
          "[centrifugo][filter]") {
  auto cmds = parse_commands(
    R"({"id":1,"subscribe":{"channel":"stream:1","tf":{"key":"asset","cmp":"eq","val":"USDC"}}})"
    "\n"
    R"({"id":2,"subscribe":{"channel":"stream:1","tf":{"key":"asset","cmp":"eq"}}})"
    "\n"
    R"({"id":3,"subscribe":{"channel":"stream:1","delta":"fossil","tf":{"key":"a","cmp":"ex"}}})"
    "\n"
    R"({"id":4,"subscribe":{"channel":"stream:1","tf":null}})"
    "\n"
    R"({"id":5,"subscribe":{"channel":"stream:1","tf":"asset=USDC"}})");
  REQUIRE(cmds.size() == 5u);
  REQUIRE(cmds[0].ok);
  REQUIRE(cmds[0].cmd.filter);
  CHECK(cmds[0].cmd.filter->matches("e", {{"asset", "USDC"}}));
  CHECK_FALSE(cmds[0].cmd.filter->matches("e", {{"asset", "XLM"}}));
  for (std::size_t i : {1u, 2u, 4u}) {
    INFO(i);
    CHECK_FALSE(cmds[i].ok);
    CHECK(cmds[i].err.id == i + 1);
    CHECK(cmds[i].err.code == error_code::bad_request);
  }
  CHECK(cmds[1].err.message.find("invalid tags filter \"tf\": \"eq\" takes a non-empty val") == 0);
  CHECK(cmds[2].err.message.find("cannot be combined with \"delta\"") != std::string::npos);
  CHECK(cmds[4].err.message.find("must be an object") != std::string::npos);
  REQUIRE(cmds[3].ok);
  CHECK_FALSE(cmds[3].cmd.filter);
}

TEST_CASE("centrifugo: a publication's tags travel in pub.tags beside the event",
          "[centrifugo][filter]") {
  auto p = make_pub(5);
  p->tags = {{"asset", "USDC"}, {"note", "a \"quoted\"\nline"}};
  auto pub = json::parse(encode_publication_object(*p));
  CHECK(pub["tags"] == json{{"event", "withdrawn"}, {"asset", "USDC"}, {"note", "a \"quoted\"\nline"}});
  auto q = make_pub(6);
  p->delta = "x";
  CHECK(json::parse(encode_delta_object(*p, true))["tags"]["asset"] == "USDC");
  CHECK(json::parse(encode_publication_object(*q))["tags"] == json{{"event", "withdrawn"}});
}
