#include "net/wire/channel_class.hpp"

#include <catch2/catch.hpp>

#include <string>

using herald::net::channel_classes;
using herald::net::overflow_policy;
using herald::net::recovery_mode;
using namespace std::chrono_literals;

namespace {

const std::string account = "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ";

channel_classes parse_ok(std::string_view text) {
  std::string error;
  auto c = channel_classes::parse(text, 256, 300s, error);
  INFO(error);
  REQUIRE(c.has_value());
  return *c;
}

std::string parse_error(std::string_view text) {
  std::string error;
  auto c = channel_classes::parse(text, 256, 300s, error);
  CHECK_FALSE(c.has_value());
  return error;
}

} // namespace

TEST_CASE("no classes: every channel in the default class", "[channel_class]") {
  for (auto text : {"", " ", ";;", " ; "}) {
    auto c = parse_ok(text);
    CHECK(c.listed().empty());
    const auto& d = c.of("stream:1");
    CHECK(d.pattern == "*");
    CHECK(d.history_size == 256);
    CHECK(d.history_ttl == 300s);
    CHECK(d.recovery == recovery_mode::stream);
    CHECK(d.overflow == overflow_policy::close);
    CHECK(d.delta);
  }
}

TEST_CASE("classes set each key and start from the default class", "[channel_class]") {
  auto c = parse_ok("* history-ttl=60; stream:* history-size=1 recovery=cache;"
                    "user:* overflow=conflate delta=refused");
  REQUIRE(c.listed().size() == 2);
  const auto& s = c.of("stream:42");
  CHECK(s.pattern == "stream:*");
  CHECK(s.history_size == 1);
  CHECK(s.history_ttl == 60s); // from the * class
  CHECK(s.recovery == recovery_mode::cache);
  CHECK(s.overflow == overflow_policy::close);
  const auto& u = c.of("user:" + account);
  CHECK(u.history_size == 256);
  CHECK(u.overflow == overflow_policy::conflate);
  CHECK_FALSE(u.delta);
  CHECK(c.fallback().history_ttl == 60s);
}

TEST_CASE("an exact name beats a prefix, a longer prefix beats a shorter", "[channel_class]") {
  auto c = parse_ok("stream:* history-size=1; stream:vip-* history-size=2; "
                    "stream:vip-1 history-size=3");
  CHECK(c.of("stream:vip-1").history_size == 3);
  CHECK(c.of("stream:vip-10").history_size == 2);
  CHECK(c.of("stream:vi").history_size == 1);
  CHECK(c.of("user:" + account).history_size == 256);
}

TEST_CASE("bad classes are refused with the bad part named", "[channel_class]") {
  const std::pair<const char*, const char*> cases[] = {
    {"stream:* colour=red", "unknown class option \"colour\""},
    {"stream:* history-size", "not key=value"},
    {"stream:* history-size=0", "history-size"},
    {"stream:* history-size=-1", "history-size"},
    {"stream:* history-size=1x", "history-size"},
    {"stream:* history-ttl=0", "history-ttl"},
    {"stream:* recovery=fast", "recovery must be"},
    {"stream:* overflow=drop", "overflow must be"},
    {"stream:* delta=yes", "delta must be"},
    {"* recovery=x", "class *"},
    {"stream:* recovery=cache; stream:* recovery=stream", "listed twice"},
    // issue 39: was accepted, the last value winning.
    {"stream:* recovery=cache recovery=stream", R"(key "recovery" is given twice)"},
    {"* history-size=2 history-size=3", R"(class *: key "history-size")"},
  };
  for (const auto& [text, why] : cases) {
    INFO(text);
    CHECK_THAT(parse_error(text), Catch::Contains(why));
  }
  for (auto bad : {"chat:*", "stream:a/b*", "Stream:*", "user:g*", "stream:", "user:GABC",
                   "stream:**", "**"}) {
    INFO(bad);
    CHECK_THAT(parse_error(std::string(bad) + " recovery=cache"), Catch::Contains("class pattern"));
  }
}
