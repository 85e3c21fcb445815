// Centrifugo server API bodies (net/wire/http/server_api.hpp): what
// /api/publish and /api/broadcast accept and refuse, and the shapes they
// answer. The same requests go through the real server in e2e.centrifugo.
#include "net/wire/http/server_api.hpp"

#include "net/wire/errors.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using namespace herald;
using namespace herald::net;
using namespace herald::net::http;
using nlohmann::json;

TEST_CASE("api broadcast: a channel listed twice is published twice, responses in order",
          "[server_api]") {
  publish_request req;
  std::string detail;
  auto ec = parse_api_publish(R"({"channels":["stream:bx","stream:by","stream:bx"],"data":1})",
                              true, 64, req, detail);
  REQUIRE_FALSE(ec);
  CHECK(req.channels == std::vector<std::string>{"stream:bx", "stream:by", "stream:bx"});
  auto body = json::parse(encode_api_broadcast({{"e", 1}, {"e", 1}, {"e", 2}}));
  REQUIRE(body["result"]["responses"].size() == 3);
  CHECK(body["result"]["responses"][2]["result"]["offset"] == 2);
  // POST /v1/publish keeps counting a repeated channel once (its answer is a map).
  publish_request v1;
  REQUIRE_FALSE(parse_publish_request(
    R"({"channels":["stream:bx","stream:bx"],"event":"e","data":1})", 64, v1, detail));
  CHECK(v1.channels == std::vector<std::string>{"stream:bx"});
}

TEST_CASE("api broadcast: the channel limit counts entries", "[server_api]") {
  publish_request req;
  std::string detail;
  auto ec = parse_api_publish(R"({"channels":["stream:a","stream:a","stream:a"],"data":1})", true,
                              2, req, detail);
  CHECK(ec == errc::too_many_channels);
}

TEST_CASE("api publish: every tag must be a string, event included", "[server_api]") {
  std::string detail;
  for (const char* body : {R"({"channel":"stream:1","data":1,"tags":{"event":"e","foo":1}})",
                           R"({"channel":"stream:1","data":1,"tags":{"event":7}})",
                           R"({"channel":"stream:1","data":1,"tags":{"x":null}})"}) {
    publish_request req;
    CAPTURE(body);
    CHECK(parse_api_publish(body, false, 64, req, detail) == errc::invalid_request);
    CHECK(detail.find("must be a string") != std::string::npos);
  }
  publish_request ok;
  REQUIRE_FALSE(parse_api_publish(R"({"channel":"stream:1","data":1,"tags":{"event":"e","k":"v"}})",
                                  false, 64, ok, detail));
  CHECK(ok.event == "e");
}

TEST_CASE("api errors: Centrifugo's shape with a numeric code", "[server_api]") {
  for (auto code : {errc::payload_too_large, errc::headers_too_large, errc::method_not_allowed,
                    errc::not_found, errc::invalid_request, errc::unavailable}) {
    auto body = json::parse(encode_api_error(code, {}));
    CAPTURE(info(code).code);
    CHECK(body["error"]["code"].is_number_unsigned());
    CHECK(body["error"]["message"].is_string());
    CHECK(body["error"]["message"] != "");
  }
}

TEST_CASE("api publish: version and version_epoch as on /v1/publish, and suppressed answers say so",
          "[server_api][version]") {
  publish_request req;
  std::string detail;
  REQUIRE_FALSE(parse_api_publish(
    R"({"channel":"stream:v","data":1,"version":77,"version_epoch":"x1"})", false, 64, req, detail));
  CHECK(req.version == 77u);
  CHECK(req.version_epoch == "x1");
  publish_request bad;
  CHECK(parse_api_publish(R"({"channel":"stream:v","data":1,"version":"seven"})", false, 64, bad,
                          detail) == errc::invalid_request);
  CHECK_THAT(detail, Catch::Contains("\"version\""));
  auto one = json::parse(encode_api_publish({"e", 4}, "stale_version"));
  CHECK(one["result"]["offset"] == 4);
  CHECK(one["result"]["suppressed"] == true);
  CHECK(one["result"]["suppress_reason"] == "stale_version");
  CHECK_FALSE(json::parse(encode_api_publish({"e", 4}))["result"].contains("suppressed"));
  auto many = json::parse(encode_api_broadcast({{"e", 1}, {"e", 2}}, {"stale_version", ""}));
  CHECK(many["result"]["responses"][0]["result"]["suppressed"] == true);
  CHECK_FALSE(many["result"]["responses"][1]["result"].contains("suppressed"));
}

TEST_CASE("api publish: tags.event is the event, the other tags travel with the publication",
          "[server_api][tags]") {
  publish_request req;
  std::string detail;
  REQUIRE_FALSE(parse_api_publish(
    R"({"channel":"stream:1","data":1,"tags":{"event":"withdrawn","asset":"USDC","z":""}})", false,
    64, req, detail));
  CHECK(req.event == "withdrawn");
  CHECK(req.tags == herald::net::publication_tags{{"asset", "USDC"}, {"z", ""}});
  REQUIRE_FALSE(parse_api_publish(R"({"channels":["stream:1","stream:2"],"data":1,)"
                                  R"("tags":{"asset":"XLM"}})",
                                  true, 64, req, detail));
  CHECK(req.event == "publication");
  CHECK(req.tags == herald::net::publication_tags{{"asset", "XLM"}});
  CHECK(parse_api_publish(R"({"channel":"stream:1","data":1,"tags":{"":"x"}})", false, 64, req,
                          detail) == errc::invalid_request);
  CHECK(detail.find("tag key") != std::string::npos);
}

TEST_CASE("api publish: the body's checks are /v1/publish's (data required, null allowed, one object)",
          "[server_api]") {
  std::string detail;
  publish_request req;
  CHECK(parse_api_publish(R"({"channel":"stream:1"})", false, 64, req, detail) ==
        errc::invalid_request);
  CHECK(detail.find("\"data\" is required") != std::string::npos);
  publish_request null_data;
  REQUIRE_FALSE(parse_api_publish(R"({"channel":"stream:1","data":null})", false, 64, null_data,
                                  detail));
  CHECK(null_data.data == "null");
  CHECK(parse_api_publish(R"([1])", false, 64, req, detail) == errc::invalid_json);
  CHECK(detail.find("must be a JSON object") != std::string::npos);
  CHECK(parse_api_publish(R"({"channel":"stream:1","data":1,"data":2})", false, 64, req, detail) ==
        errc::invalid_json);
  CHECK(detail.find("duplicate key") != std::string::npos);
}

TEST_CASE("api publish, broadcast and history refuse an unknown field by name (issue 39)",
          "[server_api][bad-input]") {
  // Was: ignored, as Centrifugo does: "verison" published without the version check.
  publish_request out;
  std::string detail;
  CHECK(parse_api_publish(R"({"channel":"stream:1","data":1,"verison":5})", false, 64, out,
                          detail) == errc::invalid_request);
  CHECK(detail.rfind(R"(unknown field "verison" (known: channel data tags)", 0) == 0);
  CHECK(parse_api_publish(R"({"channels":["stream:1"],"data":1,"tag":{"a":"b"}})", true, 64, out,
                          detail) == errc::invalid_request);
  CHECK(detail.rfind(R"(unknown field "tag" (known: channels data)", 0) == 0);
  history_request h;
  CHECK(parse_api_history(R"({"channel":"stream:1","limt":3})", h, detail) ==
        errc::invalid_request);
  CHECK(detail.rfind(R"(unknown field "limt")", 0) == 0);
  // Centrifugo's own fields that change nothing still pass.
  CHECK_FALSE(parse_api_publish(R"({"channel":"stream:1","data":1,"delta":true,)"
                                R"("skip_history":false,"b64data":null})",
                                false, 64, out, detail));
  // An invalid channel names the rule here too.
  CHECK(parse_api_history(R"({"channel":"stream:a b"})", h, detail) == errc::invalid_channel);
  CHECK(detail.find(R"(invalid channel "stream:a b")") == 0);
}
