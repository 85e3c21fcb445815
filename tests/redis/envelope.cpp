// The publication envelope and the publish script's arguments
// (net/redis/envelope.hpp, script_reply.hpp) with tags: ARGV[9] always names
// the publish command, ARGV[10] carries the tags as a JSON object text, and
// the script (run on a real redis-server) appends them to the envelope,
// which parse_envelope reads back; bad tags from another publisher are refused.
#include "net/redis/envelope.hpp"

#include <catch2/catch.hpp>

#include "net/redis/script_reply.hpp"
#include "redis_server.hpp"

#include <string>
#include <vector>

using namespace herald::net::redis;
using herald::net::publication_tags;
using herald::net::tags_json;
using herald::test::redis_server;

TEST_CASE("envelope: ARGV[9] is PUBLISH or SPUBLISH, ARGV[10] the tags, ARGV[11-12] the version",
          "[redis][envelope]") {
  script_settings s;
  std::vector<std::string> keys, args;
  publish_call(s, "stream:42", {"withdrawn", "1"}, "e1", keys, args);
  REQUIRE(args.size() == 12u);
  CHECK(args[8] == "PUBLISH");
  CHECK(args[9].empty());
  CHECK(args[10].empty());
  CHECK(args[11].empty());
  s.sharded = true;
  backend::publish_args pub{"withdrawn", "1", "k1", 18446744073709551615u, "run-2",
                            R"({"asset":"USDC"})"};
  publish_call(s, "stream:42", pub, "e1", keys, args);
  REQUIRE(args.size() == 12u);
  CHECK(args[8] == "SPUBLISH");
  CHECK(args[9] == R"({"asset":"USDC"})");
  CHECK(args[10] == "18446744073709551615");
  CHECK(args[11] == "run-2");
  CHECK(keys.size() == 3u); // the idempotency key
}

TEST_CASE("envelope: the publish script appends the tags and parse_envelope reads them back",
          "[redis][envelope]") {
  redis_server redis;
  auto publish = [&](const std::string& tags, const std::string& event) {
    std::vector<std::string> keys, args;
    backend::publish_args pub{event, R"({"n":1})"};
    pub.tags = tags;
    publish_call({}, "stream:42", pub, "e1", keys, args);
    std::vector<std::string> call{"EVAL", publish_script, std::to_string(keys.size())};
    call.insert(call.end(), keys.begin(), keys.end());
    call.insert(call.end(), args.begin(), args.end());
    auto r = redis.command(call);
    REQUIRE(r.type == herald::net::redis::reply::array);
    return r.elements[1].number;
  };
  const publication_tags tags{{"asset", "USDC"}, {"memo", "caf\xc3\xa9 \"q\""}};
  CHECK(publish(tags_json(tags), "withdrawn") == 1);
  CHECK(publish("", "trade") == 2);
  auto k = keys_for("herald:", "stream:42");
  auto entries = redis.command({"XRANGE", k.history, "-", "+"});
  REQUIRE(entries.elements.size() == 2u);
  const auto& first = entries.elements[0].elements[1].elements[1].str;
  const auto& second = entries.elements[1].elements[1].elements[1].str;
  CHECK(first.find(R"("data":{"n":1},"tags":{)") != std::string::npos);
  CHECK(second.find("tags") == std::string::npos); // none: no member
  envelope e;
  std::string error;
  REQUIRE(parse_envelope(first, e, error));
  CHECK(e.event == "withdrawn");
  CHECK(e.tags == tags);
  REQUIRE(parse_envelope(second, e, error));
  CHECK(e.tags.empty());
}

TEST_CASE("envelope: tags another publisher wrote badly are refused", "[redis][envelope]") {
  const std::string head = R"({"channel":"stream:1","epoch":"e1","offset":3,"event":"e","data":1,)";
  envelope e;
  std::string error;
  for (const char* tags : {R"("tags":[])", R"("tags":{"a":1})", R"("tags":{"event":"x"})",
                           R"("tags":"a=b")"}) {
    CAPTURE(tags);
    CHECK_FALSE(parse_envelope(head + tags + "}", e, error));
    CHECK(error.rfind("invalid tags: ", 0) == 0);
  }
  CHECK(parse_envelope(head + R"("tags":null})", e, error));
  CHECK(parse_envelope(head + R"("tags":{}})", e, error));
}
