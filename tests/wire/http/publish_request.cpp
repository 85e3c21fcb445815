#include "net/wire/http/publish_request.hpp"

#include <catch2/catch.hpp>

#include "net/wire/errors.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

using namespace herald;
using namespace herald::net::http;
using nlohmann::json;

namespace {

const std::string account = "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ";
constexpr std::size_t max64 = 64;

publish_request accept(std::string_view body, std::size_t max_channels = max64) {
  INFO("body: " << std::string(body));
  publish_request out;
  std::string detail;
  auto ec = parse_publish_request(body, max_channels, out, detail);
  INFO("error: " << ec.message() << " / " << detail);
  REQUIRE_FALSE(ec);
  return out;
}

void refused_with(std::string_view body, errc code, std::size_t max_channels = max64) {
  INFO("body: " << std::string(body).substr(0, 300));
  publish_request out;
  std::string detail;
  auto ec = parse_publish_request(body, max_channels, out, detail);
  REQUIRE(ec);
  CHECK(ec.category() == herald::herald_category());
  CHECK(info(static_cast<errc>(ec.value())).code == info(code).code);
  CHECK(ec == code);
}

// `{"channels":[...],"event":"e","data":1}` for stream:1..stream:n.
std::string body_with_channels(std::size_t n) {
  json chs = json::array();
  for (std::size_t i = 1; i <= n; ++i)
    chs.push_back("stream:" + std::to_string(i));
  return json{{"channels", chs}, {"event", "e"}, {"data", 1}}.dump();
}

std::string with_event(std::string_view event) {
  return R"({"channel":"stream:42","event":")" + std::string(event) + R"(","data":1})";
}

std::string with_data(std::string_view data) {
  return R"({"channel":"stream:42","event":"e","data":)" + std::string(data) + "}";
}

std::string nested(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

} // namespace

TEST_CASE("single channel", "[http][publish]") {
  auto r =
    accept(R"({"channel": "stream:42", "event": "withdrawn", "data": {"amount": "12.5000000"}})");
  CHECK(r.channels == std::vector<std::string>{"stream:42"});
  CHECK(r.event == "withdrawn");
  CHECK(r.data == R"({"amount":"12.5000000"})");

  auto u = accept(R"({"event":"e","data":0,"channel":"user:)" + account + "\"}");
  CHECK(u.channels == std::vector<std::string>{"user:" + account});
}

TEST_CASE("channels array, in request order", "[http][publish]") {
  auto r = accept(R"({"channels":["stream:b","user:)" + account +
                  R"(","stream:a"],"event":"e","data":true})");
  CHECK(r.channels == std::vector<std::string>{"stream:b", "user:" + account, "stream:a"});
  CHECK(r.data == "true");

  auto one = accept(R"({"channels":["stream:1"],"event":"e","data":1})");
  CHECK(one.channels == std::vector<std::string>{"stream:1"});
}

TEST_CASE("repeated channels collapse to the first occurrence", "[http][publish]") {
  auto r = accept(
    R"({"channels":["stream:2","stream:1","stream:2","stream:1","stream:3"],"event":"e","data":1})");
  CHECK(r.channels == std::vector<std::string>{"stream:2", "stream:1", "stream:3"});

  // Repeats count once towards the limit.
  auto lim = accept(
    R"({"channels":["stream:1","stream:2","stream:1","stream:2","stream:1"],"event":"e","data":1})",
    2);
  CHECK(lim.channels == std::vector<std::string>{"stream:1", "stream:2"});
}

TEST_CASE("too many channels: the maximum is respected exactly", "[http][publish][bad-input]") {
  SECTION("default 64") {
    CHECK(accept(body_with_channels(64), 64).channels.size() == 64);
    refused_with(body_with_channels(65), errc::too_many_channels, 64);
    refused_with(body_with_channels(1000), errc::too_many_channels, 64);
  }
  SECTION("small limits") {
    CHECK(accept(body_with_channels(1), 1).channels.size() == 1);
    refused_with(body_with_channels(2), errc::too_many_channels, 1);
    CHECK(accept(body_with_channels(3), 3).channels.size() == 3);
    refused_with(body_with_channels(4), errc::too_many_channels, 3);
  }
}

TEST_CASE("channel / channels presence and types", "[http][publish][bad-input]") {
  SECTION("both given") {
    refused_with(R"({"channel":"stream:1","channels":["stream:2"],"event":"e","data":1})",
                 errc::invalid_request);
    refused_with(R"({"channel":"stream:1","channels":["stream:1"],"event":"e","data":1})",
                 errc::invalid_request);
  }
  SECTION("neither given") {
    refused_with(R"({"event":"e","data":1})", errc::invalid_request);
    refused_with(R"({})", errc::invalid_request);
  }
  SECTION("empty array") {
    refused_with(R"({"channels":[],"event":"e","data":1})", errc::invalid_request);
  }
  SECTION("channels not an array") {
    refused_with(R"({"channels":"stream:1","event":"e","data":1})", errc::invalid_request);
    refused_with(R"({"channels":{"stream:1":1},"event":"e","data":1})", errc::invalid_request);
    refused_with(R"({"channels":null,"event":"e","data":1})", errc::invalid_request);
  }
  SECTION("non-string items") {
    refused_with(R"({"channels":["stream:1",2],"event":"e","data":1})", errc::invalid_request);
    refused_with(R"({"channels":[null],"event":"e","data":1})", errc::invalid_request);
    refused_with(R"({"channels":[["stream:1"]],"event":"e","data":1})", errc::invalid_request);
    refused_with(R"({"channels":[{"channel":"stream:1"}],"event":"e","data":1})",
                 errc::invalid_request);
  }
  SECTION("channel not a string") {
    refused_with(R"({"channel":42,"event":"e","data":1})", errc::invalid_request);
    refused_with(R"({"channel":null,"event":"e","data":1})", errc::invalid_request);
    refused_with(R"({"channel":["stream:1"],"event":"e","data":1})", errc::invalid_request);
  }
}

TEST_CASE("invalid channel names", "[http][publish][bad-input]") {
  for (std::string_view name : {"", "stream:", "Stream:1", "topic:1", "stream:a b", "user:GA7Q",
                                "stream:1\\n", "stream:\\u0000", "stream:caf\\u00e9"}) {
    INFO(name);
    refused_with(R"({"channel":")" + std::string(name) + R"(","event":"e","data":1})",
                 errc::invalid_channel);
    refused_with(R"({"channels":["stream:1",")" + std::string(name) + R"("],"event":"e","data":1})",
                 errc::invalid_channel);
  }
  refused_with(R"({"channel":"stream:)" + std::string(129, 'x') + R"(","event":"e","data":1})",
               errc::invalid_channel);
}

TEST_CASE("event names", "[http][publish]") {
  CHECK(accept(with_event("withdrawn")).event == "withdrawn");
  CHECK(accept(with_event("A-z_0.9:x")).event == "A-z_0.9:x");
  CHECK(accept(with_event(std::string(64, 'e'))).event == std::string(64, 'e'));
  CHECK(accept(with_event("herald")).event == "herald"); // no dot: not reserved
  CHECK(accept(with_event("heraldx.y")).event == "heraldx.y");
  CHECK(accept(with_event("herald:x")).event == "herald:x");
  CHECK(accept(with_event("Herald.x")).event == "Herald.x"); // prefix is case-sensitive
  CHECK(accept(with_event("x.herald.")).event == "x.herald.");
}

TEST_CASE("invalid event names", "[http][publish][bad-input]") {
  SECTION("missing or not a string: invalid_request") {
    refused_with(R"({"channel":"stream:1","data":1})", errc::invalid_request);
    refused_with(R"({"channel":"stream:1","event":42,"data":1})", errc::invalid_request);
    refused_with(R"({"channel":"stream:1","event":null,"data":1})", errc::invalid_request);
    refused_with(R"({"channel":"stream:1","event":["e"],"data":1})", errc::invalid_request);
  }
  SECTION("invalid_event") {
    for (std::string_view ev : {"", "a b", "a/b", "a\\nb", "a\\r", "a\\u0000", "caf\\u00e9", "e!",
                                "e#", "e\\\"", "herald.", "herald.gap", "herald.x"}) {
      INFO(ev);
      refused_with(with_event(ev), errc::invalid_event);
    }
    refused_with(with_event(std::string(65, 'e')), errc::invalid_event);
  }
}

TEST_CASE("data is required", "[http][publish][bad-input]") {
  refused_with(R"({"channel":"stream:1","event":"e"})", errc::invalid_request);
}

TEST_CASE("data of each JSON type is re-serialised compactly", "[http][publish]") {
  CHECK(accept(with_data("null")).data == "null");
  CHECK(accept(with_data("true")).data == "true");
  CHECK(accept(with_data("false")).data == "false");
  CHECK(accept(with_data("0")).data == "0");
  CHECK(accept(with_data("-17")).data == "-17");
  CHECK(accept(with_data("12.5")).data == "12.5");
  CHECK(accept(with_data("18446744073709551615")).data == "18446744073709551615");
  CHECK(accept(with_data(R"("")")).data == R"("")");
  CHECK(accept(with_data(R"("line1\nline2\r\nline3\u2028")")).data ==
        "\"line1\\nline2\\r\\nline3\xe2\x80\xa8\"");
  CHECK(accept(with_data(R"("tab\tnul\u0000")")).data == R"("tab\tnul\u0000")");
  CHECK(accept(with_data("[ 1 , \"a\" , null , [ ] , { } ]")).data == R"([1,"a",null,[],{}])");
  CHECK(
    accept(with_data("\n{\n  \"a\" : { \"b\" : [ { \"c\" : [ 1, 2 ] } ] },\n  \"d\" : \"x\"\n}\n"))
      .data == R"({"a":{"b":[{"c":[1,2]}]},"d":"x"})");
  // Whatever the input, data is one line.
  auto r = accept(with_data("{\"k\":\"a\\nb\",\n\"l\":[\r\n1]}"));
  CHECK(r.data.find('\n') == std::string::npos);
  CHECK(r.data.find('\r') == std::string::npos);
  CHECK(json::parse(r.data) == json{{"k", "a\nb"}, {"l", {1}}});
}

TEST_CASE("nesting depth of the body", "[http][publish][bad-input]") {
  // The body object is level 1, so data nested 63 deep makes a body 64 deep.
  CHECK(accept(with_data(nested(63))).data == nested(63));
  refused_with(with_data(nested(65)), errc::invalid_json);
  refused_with(with_data(nested(100000)), errc::invalid_json);
  // Brackets inside strings do not count.
  auto s = R"(")" + std::string(200, '[') + R"(")";
  CHECK(accept(with_data(s)).data == s);
  // Objects count as well as arrays.
  std::string objs;
  for (int i = 0; i < 65; ++i)
    objs += R"({"a":)";
  objs += "1" + std::string(65, '}');
  refused_with(with_data(objs), errc::invalid_json);
}

// docs/protocol.md, Publish: "`data`: any JSON value (nesting at most 64 deep)".
// parse_publish_request counts the enclosing body object too, so data 64 deep
// (body 65 deep) is refused. The HTTP error table ("the publish body ... nests
// deeper than 64") supports the code; the Publish section supports this test.
TEST_CASE("data nested exactly 64 deep is accepted", "[http][publish]") {
  publish_request out;
  std::string detail;
  auto ec = parse_publish_request(with_data(nested(64)), max64, out, detail);
  CHECK_FALSE(ec);
  CHECK(out.data == nested(64));
}

TEST_CASE("a body nested too deep is told so", "[http][publish][bad-input]") {
  // Was: "the body must be a JSON object" for a valid object nested too deep.
  publish_request out;
  std::string detail;
  CHECK(parse_publish_request(with_data(nested(65)), max64, out, detail) == errc::invalid_json);
  CHECK(detail == "the body nests deeper than 64 levels inside its object (the most for data)");
}

std::string detail_of(std::string_view body) {
  publish_request out;
  std::string detail;
  CHECK(parse_publish_request(body, max64, out, detail));
  return detail;
}

TEST_CASE("a JSON syntax error says what and where (issue 39)", "[http][publish][bad-input]") {
  // Was: "the body must be a JSON object, with data nested at most 64 deep" for each.
  auto d = detail_of(R"({"channel":"stream:1","event":"e","data":1,})");
  CHECK(d.rfind("the body is not valid JSON at byte 44: ", 0) == 0);
  CHECK(d.find("syntax error") != std::string::npos);
  CHECK(detail_of("{\"channel\":'x'}").rfind("the body is not valid JSON at byte 12: ", 0) == 0);
  CHECK(detail_of("").rfind("the body is not valid JSON at byte 1: ", 0) == 0);
  // A number no double holds: the parser knows no position, the message names the number
  // (was: "the body is not valid JSON" alone).
  CHECK(detail_of(R"({"channel":"stream:1","event":"e","data":1e400})") ==
        "the body is not valid JSON: number overflow parsing '1e400' (a number beyond the range of "
        "a double)");
  CHECK(detail_of("[]") == "the body must be a JSON object, not an array");
  CHECK(detail_of("42") == "the body must be a JSON object, not a number");
  CHECK(detail_of("null") == "the body must be a JSON object, not null");
  CHECK(detail_of(R"("x")") == "the body must be a JSON object, not a string");
  CHECK(detail_of(R"({"a":1,"a":2})") == R"(the body has a duplicate key "a")");
}

TEST_CASE("an unknown field is refused and named (issue 39)", "[http][publish][bad-input]") {
  // Was: accepted, without the version check or the tags the typo meant.
  publish_request out;
  std::string detail;
  CHECK(parse_publish_request(R"({"channel":"stream:1","event":"e","data":1,"verison":5})", max64,
                              out, detail) == errc::invalid_request);
  CHECK(detail.rfind(R"(unknown field "verison" (known: channel channels event data)", 0) == 0);
  CHECK(parse_publish_request(R"({"channel":"stream:1","event":"e","data":1,"tag":{"a":"b"}})",
                              max64, out, detail) == errc::invalid_request);
  CHECK(detail.rfind(R"(unknown field "tag" )", 0) == 0);
  accept(R"({"channel":"stream:1","event":"e","data":1,"version":5,"version_epoch":"x",)"
         R"("tags":{"a":"b"},"idempotency_key":"k"})");
}

TEST_CASE("an invalid channel error names the channel and the rule (issue 39)",
          "[http][publish][bad-input]") {
  // Was: "invalid channel name" whatever the fault.
  publish_request out;
  std::string detail;
  CHECK(parse_publish_request(R"({"channels":["stream:1","stream:a b"],"event":"e","data":1})",
                              max64, out, detail) == errc::invalid_channel);
  CHECK(detail == R"(channels[1]: invalid channel "stream:a b": the id after "stream:" allows )"
                  "only A-Z a-z 0-9 _ . -");
  std::string lower = account;
  for (auto& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  CHECK(parse_publish_request(R"({"channel":"user:)" + lower + R"(","event":"e","data":1})",
                              max64, out, detail) == errc::invalid_channel);
  CHECK(detail.find("must be upper case") != std::string::npos);
  CHECK(detail.rfind("invalid channel \"user:", 0) == 0);
}

TEST_CASE("body that is not a JSON object", "[http][publish][bad-input]") {
  for (std::string_view body :
       {"", " ", "not json", "{", "{\"channel\":\"stream:1\"", "[]",
        R"([{"channel":"stream:1","event":"e","data":1}])", "null", "42", R"("x")",
        "{\"channel\":\"stream:1\",}", R"({"channel":"stream:1","event":"e","data":1}x)",
        R"({"channel":"stream:1","event":"e","data":1}{})",
        R"({"channel":"stream:1","event":"e","data":undefined})",
        R"({"channel":"stream:1","event":"e","data":NaN})",
        R"({"channel":"stream:1","event":"e","data":'x'})"}) {
    refused_with(body, errc::invalid_json);
  }
}

TEST_CASE("invalid UTF-8 in a string is refused", "[http][publish][bad-input]") {
  refused_with(with_data("\"\xff\""), errc::invalid_json);
  refused_with(with_data("\"a\xc3\""), errc::invalid_json);            // truncated sequence
  refused_with(with_data("\"\xc0\x80\""), errc::invalid_json);         // overlong NUL
  refused_with(with_data("\"\xed\xa0\x80\""), errc::invalid_json);     // UTF-16 surrogate
  refused_with(with_data("\"\xf4\x90\x80\x80\""), errc::invalid_json); // above U+10FFFF
  refused_with(with_data("{\"\xfe\":1}"), errc::invalid_json);         // in a key
  refused_with("{\"channel\":\"stream:1\",\"event\":\"\xff\",\"data\":1}", errc::invalid_json);
  // Valid multi-byte UTF-8 is kept as is.
  CHECK(accept(with_data("\"caf\xc3\xa9 \xf0\x9f\x98\x80\"")).data ==
        "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
}

TEST_CASE("detail explains every refusal", "[http][publish][bad-input]") {
  const std::pair<std::string, errc> cases[] = {
    {"nope", errc::invalid_json},
    {R"({"event":"e","data":1})", errc::invalid_request},
    {R"({"channel":"x","event":"e","data":1})", errc::invalid_channel},
    {body_with_channels(3), errc::too_many_channels},
    {R"({"channel":"stream:1","event":"e"})", errc::invalid_request},
  };
  for (const auto& c : cases) {
    INFO(c.first);
    publish_request out;
    std::string detail;
    auto ec = parse_publish_request(c.first, 2, out, detail);
    CHECK(ec == c.second);
    CHECK_FALSE(detail.empty());
  }
}

// publish_request.hpp: "@param detail receives a human-readable explanation on
// error". For invalid_event, parse_publish_request returns without setting it.
TEST_CASE("detail is filled for invalid_event", "[http][publish][bad-input]") {
  publish_request out;
  std::string detail;
  auto ec =
    parse_publish_request(R"({"channel":"stream:1","event":"herald.x","data":1})", 64, out, detail);
  CHECK(ec == errc::invalid_event);
  CHECK_FALSE(detail.empty());
}

TEST_CASE("encode_publish_response", "[http][publish][encoder]") {
  CHECK(encode_publish_response({"stream:42"}, {17}) == R"({"offsets":{"stream:42":17}})");
  CHECK(encode_publish_response({}, {}) == R"({"offsets":{}})");
  auto j = json::parse(encode_publish_response({"stream:42", "user:" + account, "stream:1"},
                                               {17, 5, 9007199254740991ULL}));
  CHECK(j ==
        json{{"offsets",
              {{"stream:42", 17}, {"user:" + account, 5}, {"stream:1", 9007199254740991ULL}}}});
  CHECK(j.at("offsets").size() == 3);
}

// docs/protocol.md, Publish: "Reply 200 with the offset each channel gave the
// publication, in request order". nlohmann::json objects are std::map, so the
// keys come out sorted instead.
TEST_CASE("encode_publish_response keeps request order", "[http][publish][encoder]") {
  CHECK(encode_publish_response({"user:" + account, "stream:42"}, {5, 17}) ==
        R"({"offsets":{"user:)" + account + R"(":5,"stream:42":17}})");
  CHECK(encode_publish_response({"stream:b", "stream:a"}, {1, 2}) ==
        R"({"offsets":{"stream:b":1,"stream:a":2}})");
}

TEST_CASE("a body that names a key twice is refused with invalid_json",
          "[http][publish][bad-input]") {
  refused_with(R"({"channel":"stream:1","channel":"stream:2","event":"e","data":1})",
               errc::invalid_json);
  refused_with(R"({"channel":"stream:1","event":"e","event":"f","data":1})", errc::invalid_json);
  refused_with(R"({"channel":"stream:1","event":"e","data":{"amount":"1","amount":"2"}})",
               errc::invalid_json);
  publish_request out;
  std::string detail;
  parse_publish_request(R"({"channel":"stream:1","event":"e","event":"f","data":1})", 64, out,
                        detail);
  CHECK(detail == "the body has a duplicate key \"event\"");
}

TEST_CASE("version: an unsigned 64-bit integer or its digits, with an optional version epoch",
          "[http][publish][version]") {
  auto none = accept(R"({"channel":"stream:1","event":"e","data":1})");
  CHECK(none.version == 0u);
  CHECK(none.version_epoch.empty());
  auto n = accept(R"({"channel":"stream:1","event":"e","data":1,"version":51234567})");
  CHECK(n.version == 51234567u);
  auto max = accept(R"({"channel":"stream:1","event":"e","data":1,"version":18446744073709551615,)"
                    R"("version_epoch":"ledger-2"})");
  CHECK(max.version == 18446744073709551615u);
  CHECK(max.version_epoch == "ledger-2");
  auto text = accept(R"({"channel":"stream:1","event":"e","data":1,"version":"18446744073709551614"})");
  CHECK(text.version == 18446744073709551614u);
  CHECK(accept(R"({"channel":"stream:1","event":"e","data":1,"version":null})").version == 0u);
}

TEST_CASE("version: anything else is refused with invalid_request and says why",
          "[http][publish][version][bad-input]") {
  for (const char* v : {"0", "-1", "1.5", "1e3", "18446744073709551616", "\"\"", "\"12a\"",
                        "\"-3\"", "\"+3\"", "\" 3\"", "true", "[1]", "{}", "\"0\""}) {
    auto body = std::string(R"({"channel":"stream:1","event":"e","data":1,"version":)") + v + "}";
    refused_with(body, errc::invalid_request);
    publish_request out;
    std::string detail;
    parse_publish_request(body, max64, out, detail);
    CHECK_THAT(detail, Catch::Contains("\"version\" must be an integer"));
  }
  for (const char* e : {"1", "\"\"", "\"a b\"", "null"}) {
    auto body =
      std::string(R"({"channel":"stream:1","event":"e","data":1,"version":3,"version_epoch":)") +
      e + "}";
    if (std::string(e) == "null") {
      accept(body);
      continue;
    }
    refused_with(body, errc::invalid_request);
  }
  refused_with(R"({"channel":"stream:1","event":"e","data":1,"version_epoch":"x"})",
               errc::invalid_request);
  refused_with(std::string(R"({"channel":"stream:1","event":"e","data":1,"version":1,)") +
                 R"("version_epoch":")" + std::string(65, 'v') + "\"}",
               errc::invalid_request);
}

TEST_CASE("encode_publish_response names the suppressed channels and why",
          "[http][publish][encoder][version]") {
  CHECK(encode_publish_response({"stream:1", "stream:2"}, {4, 9}, {"", "stale_version"}) ==
        R"({"offsets":{"stream:1":4,"stream:2":9},"suppressed":{"stream:2":"stale_version"}})");
  CHECK(encode_publish_response({"stream:1"}, {4}, {""}) == R"({"offsets":{"stream:1":4}})");
}

TEST_CASE("publish: tags are an optional object of strings and a tag event is refused",
          "[publish][tags]") {
  auto req = accept(R"({"channel":"stream:1","event":"withdrawn","data":1,)"
                    R"("tags":{"asset":"USDC","memo":"rent"}})");
  CHECK(req.tags == herald::net::publication_tags{{"asset", "USDC"}, {"memo", "rent"}});
  CHECK(accept(R"({"channel":"stream:1","event":"e","data":1})").tags.empty());
  CHECK(accept(R"({"channel":"stream:1","event":"e","data":1,"tags":null})").tags.empty());
  for (const char* body :
       {R"({"channel":"stream:1","event":"e","data":1,"tags":["a"]})",
        R"({"channel":"stream:1","event":"e","data":1,"tags":{"a":1}})",
        R"({"channel":"stream:1","event":"e","data":1,"tags":{"event":"e"}})",
        R"({"channel":"stream:1","event":"e","data":1,"tags":{"":"x"}})"}) {
    publish_request out;
    std::string detail;
    CAPTURE(body);
    CHECK(parse_publish_request(body, 64, out, detail) == errc::invalid_request);
    CHECK(detail.find("tag") != std::string::npos);
  }
}

TEST_CASE("an unknown field's name is cut in the error (issue 39)", "[http][publish][bad-input]") {
  publish_request out;
  std::string detail;
  const std::string key(5000, 'k');
  CHECK(parse_publish_request(R"({"channel":"stream:1","event":"e","data":1,")" + key + R"(":1})",
                              max64, out, detail) == errc::invalid_request);
  CHECK(detail.rfind("unknown field \"" + std::string(64, 'k') + "...\" (known: ", 0) == 0);
  CHECK(detail.size() < 200);
}
