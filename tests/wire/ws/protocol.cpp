#include "net/wire/ws/protocol.hpp"

#include <catch2/catch.hpp>

#include "net/wire/errors.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

using namespace herald;
using namespace herald::net;
using namespace herald::net::ws;
using nlohmann::json;

namespace {

const std::string account = "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ";

command accept(std::string_view text) {
  INFO("input: " << std::string(text));
  command cmd;
  command_error err;
  bool ok = parse_command(text, cmd, err);
  INFO("error: " << info(err.code).code << ": " << err.message);
  REQUIRE(ok);
  return cmd;
}

command_error refuse(std::string_view text) {
  INFO("input: " << std::string(text));
  command cmd;
  command_error err;
  REQUIRE_FALSE(parse_command(text, cmd, err));
  CHECK_FALSE(err.message.empty());
  return err;
}

// Expects a refusal with `code`, and `id` echoed (null: none).
void refused_with(std::string_view text, errc code, const json& id = nullptr) {
  INFO("input: " << std::string(text));
  auto err = refuse(text);
  CHECK(info(err.code).code == info(code).code);
  CHECK(err.id == id);
}

std::string nested(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

} // namespace

TEST_CASE("ping with id as number, string, absent", "[ws][protocol]") {
  auto a = accept(R"({"op":"ping","id":3})");
  CHECK(a.kind == op::ping);
  CHECK(a.id == json(3));
  CHECK(a.id.is_number_integer());
  CHECK(a.channel.empty());
  CHECK_FALSE(a.since.has_value());

  auto b = accept(R"({"op":"ping","id":"abc"})");
  CHECK(b.kind == op::ping);
  CHECK(b.id == json("abc"));

  auto c = accept(R"({"op":"ping"})");
  CHECK(c.kind == op::ping);
  CHECK(c.id.is_null());

  auto d = accept(R"({"id":-7,"op":"ping"})");
  CHECK(d.id == json(-7));
  auto f = accept(R"({"op":"ping","id":""})");
  CHECK(f.id == json(""));
}

TEST_CASE("subscribe and unsubscribe with id as number, string, absent", "[ws][protocol]") {
  struct parsed {
    std::string text;
    op kind;
    json id; ///< null: absent
    std::string channel;
  };
  const parsed cases[] = {
    {R"({"op":"subscribe","id":1,"channel":"stream:42"})", op::subscribe, 1, "stream:42"},
    {R"({"op":"subscribe","id":"req-1","channel":"user:)" + account + "\"}", op::subscribe, "req-1",
     "user:" + account},
    {R"({"op":"subscribe","channel":"stream:a.b-c_d"})", op::subscribe, nullptr, "stream:a.b-c_d"},
    {R"({"op":"unsubscribe","id":2,"channel":"stream:42"})", op::unsubscribe, 2, "stream:42"},
    {R"({"op":"unsubscribe","id":"x","channel":"stream:42"})", op::unsubscribe, "x", "stream:42"},
    {R"({"op":"unsubscribe","channel":"stream:42"})", op::unsubscribe, nullptr, "stream:42"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    auto a = accept(c.text);
    CHECK(a.kind == c.kind);
    CHECK(a.id == c.id);
    CHECK(a.channel == c.channel);
    CHECK_FALSE(a.since.has_value());
  }
}

TEST_CASE("subscribe with a valid since", "[ws][protocol]") {
  auto a = accept(
    R"({"op":"subscribe","id":1,"channel":"stream:42","since":{"epoch":"u81bgp9q1gin","offset":17}})");
  REQUIRE(a.since.has_value());
  CHECK(a.since->epoch == "u81bgp9q1gin");
  CHECK(a.since->offset == 17);

  auto zero =
    accept(R"({"op":"subscribe","channel":"stream:42","since":{"epoch":"a","offset":0}})");
  REQUIRE(zero.since.has_value());
  CHECK(zero.since->epoch == "a");
  CHECK(zero.since->offset == 0);

  auto max = accept(
    R"({"op":"subscribe","channel":"stream:42","since":{"epoch":"0123456789abcdefghijklmnopqrstuv","offset":9007199254740991}})");
  REQUIRE(max.since.has_value());
  CHECK(max.since->epoch == "0123456789abcdefghijklmnopqrstuv");
  CHECK(max.since->offset == max_client_offset);

  // Members in any order (an extra one is refused: see "an unknown field in a command").
  auto reordered =
    accept(R"({"op":"subscribe","channel":"stream:42","since":{"offset":5,"epoch":"e"}})");
  REQUIRE(reordered.since.has_value());
  CHECK(reordered.since->offset == 5);
}

TEST_CASE("invalid since is refused with invalid_since and the id", "[ws][protocol][bad-input]") {
  const std::string head = R"({"op":"subscribe","id":9,"channel":"stream:42","since":)";
  auto since = [&](std::string_view s) { return head + std::string(s) + "}"; };
  SECTION("missing epoch") {
    refused_with(since(R"({"offset":1})"), errc::invalid_since, 9);
  }
  SECTION("missing offset") {
    refused_with(since(R"({"epoch":"e"})"), errc::invalid_since, 9);
  }
  SECTION("empty object") {
    refused_with(since("{}"), errc::invalid_since, 9);
  }
  SECTION("offset negative") {
    refused_with(since(R"({"epoch":"e","offset":-1})"), errc::invalid_since, 9);
  }
  SECTION("offset float") {
    refused_with(since(R"({"epoch":"e","offset":1.5})"), errc::invalid_since, 9);
    refused_with(since(R"({"epoch":"e","offset":17.0})"), errc::invalid_since, 9);
    refused_with(since(R"({"epoch":"e","offset":1e3})"), errc::invalid_since, 9);
  }
  SECTION("offset string") {
    refused_with(since(R"({"epoch":"e","offset":"17"})"), errc::invalid_since, 9);
  }
  SECTION("offset of another type") {
    refused_with(since(R"({"epoch":"e","offset":true})"), errc::invalid_since, 9);
    refused_with(since(R"({"epoch":"e","offset":null})"), errc::invalid_since, 9);
    refused_with(since(R"({"epoch":"e","offset":[1]})"), errc::invalid_since, 9);
  }
  SECTION("offset over 2^53-1") {
    refused_with(since(R"({"epoch":"e","offset":9007199254740992})"), errc::invalid_since, 9);
    refused_with(since(R"({"epoch":"e","offset":18446744073709551615})"), errc::invalid_since, 9);
  }
  SECTION("epoch invalid") {
    refused_with(since(R"({"epoch":"","offset":1})"), errc::invalid_since, 9);
    refused_with(since(R"({"epoch":"ABC","offset":1})"), errc::invalid_since, 9);
    refused_with(since(R"({"epoch":"a-b","offset":1})"), errc::invalid_since, 9);
    refused_with(since(R"({"epoch":"a\nb","offset":1})"), errc::invalid_since, 9);
    refused_with(since(R"({"epoch":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","offset":1})"),
                 errc::invalid_since, 9); // 33
    refused_with(since(R"({"epoch":5,"offset":1})"), errc::invalid_since, 9);
    refused_with(since(R"({"epoch":null,"offset":1})"), errc::invalid_since, 9);
  }
  SECTION("since not an object") {
    refused_with(since(R"("u81bgp9q1gin-17")"), errc::invalid_since, 9);
    refused_with(since("17"), errc::invalid_since, 9);
    refused_with(since(R"(["e",17])"), errc::invalid_since, 9);
    refused_with(since("true"), errc::invalid_since, 9);
  }
  SECTION("string id is echoed") {
    refused_with(R"({"op":"subscribe","id":"s","channel":"stream:42","since":{"offset":1}})",
                 errc::invalid_since, "s");
  }
}

TEST_CASE("invalid JSON is refused with invalid_json", "[ws][protocol][bad-input]") {
  for (std::string_view text :
       {"", " ", "{", "}", "not json", "{\"op\":\"ping\"", "{\"op\":\"ping\"}}", "{'op':'ping'}",
        "{\"op\":\"ping\",}", "{op:\"ping\"}", "{\"op\":\"ping\"} {\"op\":\"ping\"}",
        "{\"op\":\"ping\"} // comment"}) {
    refused_with(text, errc::invalid_json);
  }
}

TEST_CASE("a JSON value that is not an object is refused with invalid_json",
          "[ws][protocol][bad-input]") {
  for (std::string_view text : {"[]", R"([{"op":"ping","id":1}])", R"("ping")", "null", "42",
                                "true", "[\"op\",\"ping\"]"}) {
    refused_with(text, errc::invalid_json);
  }
}

TEST_CASE("invalid UTF-8 inside a string is refused with invalid_json",
          "[ws][protocol][bad-input]") {
  refused_with("{\"op\":\"ping\",\"id\":\"\xff\"}", errc::invalid_json);
  refused_with("{\"op\":\"ping\",\"id\":\"\xc3\"}", errc::invalid_json);         // truncated
  refused_with("{\"op\":\"ping\",\"id\":\"\xed\xa0\x80\"}", errc::invalid_json); // surrogate
  refused_with("{\"op\":\"ping\",\"id\":\"\xc0\xaf\"}", errc::invalid_json);     // overlong
}

TEST_CASE("nesting deeper than 64 is refused with invalid_json", "[ws][protocol][bad-input]") {
  // The object itself is level 1: x at 63 more levels is 64 deep, parsed (then refused
  // for its unknown field, not for its depth).
  refused_with(R"({"op":"ping","x":)" + nested(63) + "}", errc::invalid_request);
  refused_with(R"({"op":"ping","id":1,"x":)" + nested(64) + "}", errc::invalid_json);
  refused_with(R"({"op":"ping","x":)" + nested(10000) + "}", errc::invalid_json);
}

TEST_CASE("op missing, not a string or unknown", "[ws][protocol][bad-input]") {
  SECTION("missing") {
    refused_with(R"({"id":1})", errc::invalid_request, 1);
    refused_with(R"({})", errc::invalid_request);
    refused_with(R"({"id":"q","channel":"stream:42"})", errc::invalid_request, "q");
  }
  SECTION("not a string") {
    refused_with(R"({"op":1,"id":1})", errc::invalid_request, 1);
    refused_with(R"({"op":null,"id":1})", errc::invalid_request, 1);
    refused_with(R"({"op":["ping"],"id":1})", errc::invalid_request, 1);
    refused_with(R"({"op":{"name":"ping"},"id":"z"})", errc::invalid_request, "z");
  }
  SECTION("unknown") {
    refused_with(R"({"op":"publish","id":4,"channel":"stream:42"})", errc::unknown_op, 4);
    refused_with(R"({"op":"PING","id":4})", errc::unknown_op, 4);
    refused_with(R"({"op":"","id":"e"})", errc::unknown_op, "e");
    refused_with(R"({"op":"ping "})", errc::unknown_op);
    refused_with(R"({"op":"subscribed","channel":"stream:42"})", errc::unknown_op);
  }
}

TEST_CASE("channel missing, mistyped or invalid", "[ws][protocol][bad-input]") {
  for (std::string_view op_name : {"subscribe", "unsubscribe"}) {
    const std::string head = R"({"op":")" + std::string(op_name) + R"(","id":5)";
    INFO(op_name);
    refused_with(head + "}", errc::invalid_request, 5);
    refused_with(head + R"(,"channel":42})", errc::invalid_request, 5);
    refused_with(head + R"(,"channel":null})", errc::invalid_request, 5);
    refused_with(head + R"(,"channel":["stream:42"]})", errc::invalid_request, 5);
    refused_with(head + R"(,"channel":""})", errc::invalid_channel, 5);
    refused_with(head + R"(,"channel":"stream:"})", errc::invalid_channel, 5);
    refused_with(head + R"(,"channel":"Stream:42"})", errc::invalid_channel, 5);
    refused_with(head + R"(,"channel":"stream:4 2"})", errc::invalid_channel, 5);
    refused_with(head + R"(,"channel":"stream:42\n"})", errc::invalid_channel, 5);
    refused_with(head + R"(,"channel":"stream:42\u0000"})", errc::invalid_channel, 5);
    refused_with(head + R"(,"channel":"user:GA7Q"})", errc::invalid_channel, 5);
    refused_with(head + R"(,"channel":"topic:42"})", errc::invalid_channel, 5);
    refused_with(head + R"(,"channel":"stream:)" + std::string(129, 'x') + "\"}",
                 errc::invalid_channel, 5);
  }
  // The channel is checked before since.
  refused_with(R"({"op":"subscribe","id":"k","channel":"bad","since":{}})", errc::invalid_channel,
               "k");
}

TEST_CASE("id of a refused type", "[ws][protocol][bad-input]") {
  refused_with(R"({"op":"ping","id":{}})", errc::invalid_request);
  refused_with(R"({"op":"ping","id":{"n":1}})", errc::invalid_request);
  refused_with(R"({"op":"ping","id":[1]})", errc::invalid_request);
  refused_with(R"({"op":"ping","id":true})", errc::invalid_request);
  refused_with(R"({"op":"subscribe","id":{},"channel":"stream:42"})", errc::invalid_request);
}

TEST_CASE("id string of at most 64 characters", "[ws][protocol][bad-input]") {
  const std::string id64(64, 'i');
  auto a = accept(R"({"op":"ping","id":")" + id64 + "\"}");
  CHECK(a.id == json(id64));
  refused_with(R"({"op":"ping","id":")" + std::string(65, 'i') + "\"}", errc::invalid_request);
  refused_with(R"({"op":"ping","id":")" + std::string(1000, 'i') + "\"}", errc::invalid_request);
}

TEST_CASE("every WS command error code of docs/protocol.md", "[ws][protocol][errors]") {
  // Produced by parse_command:
  refused_with("nope", errc::invalid_json);
  refused_with(R"({"op":7,"id":1})", errc::invalid_request, 1);
  refused_with(R"({"op":"nope","id":1})", errc::unknown_op, 1);
  refused_with(R"({"op":"subscribe","id":1,"channel":"x"})", errc::invalid_channel, 1);
  refused_with(R"({"op":"subscribe","id":1,"channel":"stream:1","since":{}})", errc::invalid_since,
               1);
  // Produced by the session, encoded here; all eight as documented.
  struct row {
    errc e;
    std::string_view code;
  };
  const row rows[] = {
    {errc::invalid_json, "invalid_json"},     {errc::invalid_request, "invalid_request"},
    {errc::unknown_op, "unknown_op"},         {errc::invalid_channel, "invalid_channel"},
    {errc::invalid_since, "invalid_since"},   {errc::already_subscribed, "already_subscribed"},
    {errc::not_subscribed, "not_subscribed"}, {errc::too_many_channels, "too_many_channels"},
  };
  for (const auto& r : rows) {
    INFO(r.code);
    auto j = json::parse(encode_error(1, r.e, ""));
    CHECK(j.at("op") == "error");
    CHECK(j.at("id") == 1);
    CHECK(j.at("code") == r.code);
    CHECK(j.at("message") == info(r.e).message);
    CHECK(j.size() == 4);
  }
}

TEST_CASE("encode_subscribed", "[ws][protocol][encoder]") {
  SECTION("recovered, numeric id") {
    auto j = json::parse(encode_subscribed(1, "stream:42", stream_position{"ep1", 17}, true, ""));
    CHECK(j == json{{"op", "subscribed"},
                    {"id", 1},
                    {"channel", "stream:42"},
                    {"epoch", "ep1"},
                    {"offset", 17},
                    {"recovered", true}});
  }
  SECTION("not recovered with a reason, string id") {
    auto j = json::parse(
      encode_subscribed("a", "stream:42", stream_position{"e2", 0}, false, "epoch_changed"));
    CHECK(j == json{{"op", "subscribed"},
                    {"id", "a"},
                    {"channel", "stream:42"},
                    {"epoch", "e2"},
                    {"offset", 0},
                    {"recovered", false},
                    {"reason", "epoch_changed"}});
  }
  SECTION("a conflated channel says so (overflow policy conflate)") {
    auto j = json::parse(encode_subscribed(3, "stream:42", stream_position{"e", 5}, false, "",
                                           /*delta=*/false, /*cached=*/false, /*conflated=*/true));
    CHECK(j == json{{"op", "subscribed"},
                    {"id", 3},
                    {"channel", "stream:42"},
                    {"epoch", "e"},
                    {"offset", 5},
                    {"recovered", false},
                    {"conflated", true}});
  }
  SECTION("no id: the field is left out") {
    auto text = encode_subscribed(nullptr, "stream:42", stream_position{"e", 5}, false, "");
    auto j = json::parse(text);
    CHECK_FALSE(j.contains("id"));
    CHECK_FALSE(j.contains("reason"));
    CHECK(j == json{{"op", "subscribed"},
                    {"channel", "stream:42"},
                    {"epoch", "e"},
                    {"offset", 5},
                    {"recovered", false}});
    CHECK(text.find('\n') == std::string::npos);
  }
  SECTION("offset 2^53-1 is exact") {
    auto j = json::parse(
      encode_subscribed(1, "stream:42", stream_position{"e", max_client_offset}, false, ""));
    CHECK(j.at("offset").get<std::uint64_t>() == max_client_offset);
  }
}

TEST_CASE("encode_unsubscribed and encode_pong", "[ws][protocol][encoder]") {
  CHECK(json::parse(encode_unsubscribed(2, "stream:42")) ==
        json{{"op", "unsubscribed"}, {"id", 2}, {"channel", "stream:42"}});
  CHECK(json::parse(encode_unsubscribed(nullptr, "stream:42")) ==
        json{{"op", "unsubscribed"}, {"channel", "stream:42"}});
  CHECK(json::parse(encode_pong(3)) == json{{"op", "pong"}, {"id", 3}});
  CHECK(json::parse(encode_pong("p")) == json{{"op", "pong"}, {"id", "p"}});
  CHECK(json::parse(encode_pong(nullptr)) == json{{"op", "pong"}});
  CHECK(encode_pong(nullptr) == R"({"op":"pong"})");
  // An id is echoed with the same type and value.
  CHECK(json::parse(encode_pong(1.5)) == json{{"op", "pong"}, {"id", 1.5}});
  CHECK(json::parse(encode_pong(-3)).at("id").get<int>() == -3);
}

TEST_CASE("encode_error", "[ws][protocol][encoder]") {
  SECTION("with a channel and a message") {
    auto j = json::parse(encode_error(1, errc::invalid_channel, "bad name", "stream:"));
    CHECK(j == json{{"op", "error"},
                    {"id", 1},
                    {"code", "invalid_channel"},
                    {"message", "bad name"},
                    {"channel", "stream:"}});
  }
  SECTION("default message, no channel, no id") {
    auto j = json::parse(encode_error(nullptr, errc::invalid_json, ""));
    CHECK(j == json{{"op", "error"},
                    {"code", "invalid_json"},
                    {"message", std::string(info(errc::invalid_json).message)}});
  }
  SECTION("text that needs escaping stays valid JSON") {
    auto text =
      encode_error("i\"d", errc::invalid_request, "quote \" newline \n bad \xff", "stream:\"x\"\n");
    CHECK(text.find('\n') == std::string::npos);
    auto j = json::parse(text);
    CHECK(j.at("id") == "i\"d");
    CHECK(j.at("channel") == "stream:\"x\"\n");
    CHECK(j.at("code") == "invalid_request");
  }
}

TEST_CASE("encode_publication inserts data verbatim", "[ws][protocol][encoder]") {
  CHECK(
    encode_publication("stream:42", 17, "withdrawn", R"({"amount":"12.5000000"})") ==
    R"({"op":"publication","channel":"stream:42","offset":17,"event":"withdrawn","data":{"amount":"12.5000000"}})");
  CHECK(encode_publication("stream:1", 0, "e", "null") ==
        R"({"op":"publication","channel":"stream:1","offset":0,"event":"e","data":null})");

  for (std::string_view data :
       {"null", "true", "0", "-1.5e3", R"("s\n\"q\"")", "[]", "{}", R"([1,"a",{"b":[null]}])",
        R"({"z":1,"a":2})", "\"\xe2\x80\xa8\""}) {
    INFO(data);
    auto text = encode_publication("user:" + account, max_client_offset, "a:b.c-d_e", data);
    auto j = json::parse(text);
    CHECK(j.at("op") == "publication");
    CHECK(j.at("channel") == "user:" + account);
    CHECK(j.at("offset").get<std::uint64_t>() == max_client_offset);
    CHECK(j.at("event") == "a:b.c-d_e");
    CHECK(j.at("data") == json::parse(data));
    CHECK(j.size() == 5);
    // Verbatim: the exact bytes, key order inside data kept.
    const std::string tail = ",\"data\":" + std::string(data) + "}";
    CHECK(text.size() >= tail.size());
    CHECK(text.compare(text.size() - tail.size(), tail.size(), tail) == 0);
  }
}

TEST_CASE("subscribe with delta fossil, other delta values refused with invalid_request",
          "[ws][protocol][delta]") {
  CHECK(accept(R"({"op":"subscribe","channel":"stream:1","delta":"fossil"})").delta);
  CHECK_FALSE(accept(R"({"op":"subscribe","channel":"stream:1"})").delta);
  CHECK_FALSE(accept(R"({"op":"subscribe","channel":"stream:1","delta":null})").delta);
  for (auto text : {R"({"op":"subscribe","id":4,"channel":"stream:1","delta":"zstd"})",
                    R"({"op":"subscribe","id":4,"channel":"stream:1","delta":true})",
                    R"({"op":"subscribe","id":4,"channel":"stream:1","delta":""})"}) {
    auto err = refuse(text);
    CHECK(err.code == errc::invalid_request);
    CHECK(err.id == 4);
    CHECK(err.channel == "stream:1");
    CHECK(err.subscribe);
  }
  auto reply = json::parse(encode_subscribed(1, "stream:1", {"e", 3}, false, {}, true));
  CHECK(reply["delta"] == true);
  CHECK_FALSE(json::parse(encode_subscribed(1, "stream:1", {"e", 3}, false, {})).contains("delta"));
}

TEST_CASE("encode_delta_publication carries the data or the delta as a JSON string",
          "[ws][protocol][encoder][delta]") {
  const std::string data = R"({"memo":"caf\u00e9","s":"\u2028 \"q\""})";
  auto full = json::parse(encode_delta_publication("stream:1", 7, "tick", data, false));
  CHECK(full["op"] == "publication");
  CHECK(full["offset"] == 7);
  CHECK(full["event"] == "tick");
  CHECK(full["data"] == data); // a string holding the exact text
  CHECK_FALSE(full.contains("delta"));
  const std::string delta = "1f\n3@0,4:\"é\n;x;";
  auto d = json::parse(encode_delta_publication("stream:1", 8, "tick", delta, true));
  CHECK(d["data"] == delta);
  CHECK(d["delta"] == true);
}

TEST_CASE("connect and refresh carry a token string", "[ws][protocol][auth]") {
  auto c = accept(R"({"op":"connect","id":4,"token":"a.b.c"})");
  CHECK(c.kind == op::connect);
  CHECK(c.token == "a.b.c");
  CHECK(c.id == 4);
  auto r = accept(R"({"op":"refresh","token":"x.y.z"})");
  CHECK(r.kind == op::refresh);
  CHECK(r.token == "x.y.z");
  refused_with(R"({"op":"connect","id":5})", errc::invalid_request, 5);
  refused_with(R"({"op":"refresh","token":42})", errc::invalid_request);
  refused_with(R"({"op":"connect","token":null})", errc::invalid_request);
}

TEST_CASE("a command that names a key twice is refused with invalid_json",
          "[ws][protocol][bad-input]") {
  refused_with(R"({"op":"ping","op":"subscribe","channel":"stream:1"})", errc::invalid_json);
  refused_with(R"({"op":"subscribe","channel":"stream:1","channel":"stream:2"})",
               errc::invalid_json);
  refused_with(
    R"({"op":"subscribe","channel":"stream:1","since":{"epoch":"e","offset":1,"offset":2}})",
    errc::invalid_json);
}

TEST_CASE("id: a number must be an exact 64-bit integer, echoed as sent",
          "[ws][protocol][bad-input]") {
  // The extremes the parser holds exactly come back byte for byte.
  for (std::string_view text :
       {"-9223372036854775808", "18446744073709551615", "9223372036854775807", "0", "-1"}) {
    INFO(text);
    auto c = accept(R"({"op":"ping","id":)" + std::string(text) + "}");
    CHECK(c.id.is_number_integer());
    CHECK(encode_pong(c.id) == R"({"id":)" + std::string(text) + R"(,"op":"pong"})");
  }
  // Anything it could only hold as a double would be echoed altered (was:
  // -99999999999999999999999 came back as -9.999999999999999e+22): refused,
  // with no id (it cannot be echoed).
  for (std::string_view text : {"-99999999999999999999999", "-9223372036854775809",
                                "18446744073709551616", "1.5", "1.0", "1e3", "-0.0"}) {
    INFO(text);
    auto err = refuse(R"({"op":"ping","id":)" + std::string(text) + "}");
    CHECK(err.code == errc::invalid_request);
    CHECK(err.id.is_null());
    CHECK(err.message == "\"id\" must be a 64-bit integer or a string");
  }
}

TEST_CASE("connected, refreshed, refresh_required and gap are built by the codec",
          "[ws][protocol][auth]") {
  using herald::net::ws::encode_authenticated;
  using herald::net::ws::encode_gap;
  using herald::net::ws::encode_refresh_required;
  CHECK(json::parse(encode_authenticated(7, false, true, "GABC", 1700000000)) ==
        json::parse(R"({"op":"connected","id":7,"sub":"GABC","expires_at":1700000000})"));
  CHECK(json::parse(encode_authenticated("r1", true, true, "GABC", 5)) ==
        json::parse(R"({"op":"refreshed","id":"r1","sub":"GABC","expires_at":5})"));
  // Without authentication (--insecure): sub and expires_at are null; no id, none echoed.
  CHECK(json::parse(encode_authenticated(nullptr, false, false, "ignored", 9)) ==
        json::parse(R"({"op":"connected","sub":null,"expires_at":null})"));
  CHECK(json::parse(encode_refresh_required(42)) ==
        json::parse(R"({"op":"refresh_required","expires_at":42})"));
  CHECK(json::parse(encode_gap("stream:1", "epoch_changed")) ==
        json::parse(R"({"op":"gap","channel":"stream:1","reason":"epoch_changed"})"));
}

TEST_CASE("subscribe with a filter: a bad filter is refused invalid_request with the reason",
          "[ws][protocol][filter]") {
  auto cmd = accept(
    R"({"op":"subscribe","channel":"stream:1","filter":{"key":"event","cmp":"in","vals":["a","b"]}})");
  REQUIRE(cmd.filter);
  CHECK(cmd.filter->matches("b", {}));
  CHECK_FALSE(cmd.filter->matches("c", {}));
  CHECK_FALSE(accept(R"({"op":"subscribe","channel":"stream:1","filter":null})").filter);
  for (auto text :
       {R"({"op":"subscribe","id":4,"channel":"stream:1","filter":{"key":"a","cmp":"near"}})",
        R"({"op":"subscribe","id":4,"channel":"stream:1","filter":"event=a"})",
        R"({"op":"subscribe","id":4,"channel":"stream:1","filter":{"op":"not","nodes":[]}})"}) {
    auto err = refuse(text);
    CHECK(err.code == errc::invalid_request);
    CHECK(err.id == 4);
    CHECK(err.channel == "stream:1");
    CHECK(err.subscribe);
    CHECK(err.message.rfind("invalid \"filter\": ", 0) == 0);
  }
}

TEST_CASE("encode_publication carries tags when the publication has some",
          "[ws][protocol][encoder][filter]") {
  herald::net::publication_tags tags{{"asset", "USDC"}, {"k", "\"v\""}};
  auto j = json::parse(encode_publication("stream:1", 3, "e", R"({"a":1})", tags));
  CHECK(j["tags"] == json{{"asset", "USDC"}, {"k", "\"v\""}});
  CHECK(j["data"] == json{{"a", 1}});
  CHECK_FALSE(json::parse(encode_publication("stream:1", 3, "e", "1")).contains("tags"));
  auto d = json::parse(encode_delta_publication("stream:1", 3, "e", "1", true, tags));
  CHECK(d["tags"]["asset"] == "USDC");
  CHECK(d["delta"] == true);
}

TEST_CASE("an invalid channel's error names the rule it broke (issue 39)", "[ws][bad-input]") {
  // Was: the one message listing the two shapes, whatever the fault.
  auto err = refuse(R"({"op":"subscribe","id":1,"channel":"user:GA7Q"})");
  CHECK(err.code == errc::invalid_channel);
  CHECK(err.message ==
        R"(invalid channel "user:GA7Q": the account id must be 56 characters (StrKey G...))");
  CHECK(err.channel == "user:GA7Q");
}

TEST_CASE("an unknown field in a command is refused by name, as in a publish body",
          "[ws][protocol][bad-input]") {
  // Was: each accepted, the field ignored ("sinse": subscribed live, nothing recovered).
  struct row {
    const char* text;
    const char* message;
    bool subscribe;
  };
  const row rows[] = {
    {R"({"op":"subscribe","id":1,"channel":"stream:1","sinse":{"epoch":"e","offset":0}})",
     R"(unknown field "sinse" (known: op id channel since delta filter))", true},
    {R"({"op":"subscribe","id":1,"channel":"stream:1","filtr":{}})",
     R"(unknown field "filtr" (known: op id channel since delta filter))", true},
    {R"({"op":"subscribe","id":1,"chanel":"stream:1"})",
     R"(unknown field "chanel" (known: op id channel since delta filter))", true},
    {R"({"op":"subscribe","id":1,"channel":"stream:1","since":{"epoch":"e","offset":0,"x":1}})",
     R"("since": unknown field "x" (known: epoch offset))", true},
    {R"({"op":"unsubscribe","id":1,"channel":"stream:1","since":{}})",
     R"(unknown field "since" (known: op id channel))", false},
    {R"({"op":"ping","id":1,"foo":true})", R"(unknown field "foo" (known: op id))", false},
    {R"({"op":"connect","id":1,"token":"t","expires":1})",
     R"(unknown field "expires" (known: op id token))", false},
    {R"({"op":"refresh","token":"t","tokne":"t"})",
     R"(unknown field "tokne" (known: op id token))", false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.text);
    auto err = refuse(r.text);
    CHECK(err.code == errc::invalid_request);
    CHECK(err.message == r.message);
    CHECK(err.subscribe == r.subscribe);
  }
  // Every known field still passes.
  herald::net::ws::command cmd;
  herald::net::ws::command_error e;
  CHECK(herald::net::ws::parse_command(
    R"({"op":"subscribe","id":1,"channel":"stream:1","since":null,"delta":null,"filter":null})",
    cmd, e));
}
