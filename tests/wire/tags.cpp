// tags: a publication's tags as publishers give them (bounds, the `event`
// tag) and as they travel (JSON object text, object members).
#include "net/wire/tags.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

using namespace herald::net;
using nlohmann::json;

namespace {
std::string refused(const json& value, event_tag_policy policy = event_tag_policy::refuse) {
  publication_tags out{{"kept", "as is"}};
  std::string event = "unchanged", detail;
  CHECK_FALSE(read_tags(value, policy, out, event, detail));
  CHECK(out == publication_tags{{"kept", "as is"}}); // untouched on error
  CHECK(event == "unchanged");
  return detail;
}
} // namespace

TEST_CASE("tags: an object of strings, sorted, event apart", "[tags]") {
  publication_tags out;
  std::string event, detail;
  REQUIRE(read_tags(json::parse(R"({"z":"1","asset":"USDC","memo":""})"), event_tag_policy::refuse,
                    out, event, detail));
  CHECK(out == publication_tags{{"asset", "USDC"}, {"memo", ""}, {"z", "1"}});
  CHECK(event.empty());
  REQUIRE(read_tags(json::parse(R"({"event":"withdrawn","asset":"USDC"})"),
                    event_tag_policy::take, out, event, detail));
  CHECK(event == "withdrawn");
  CHECK(out == publication_tags{{"asset", "USDC"}});
  REQUIRE(read_tags(json::object(), event_tag_policy::refuse, out, event, detail));
  CHECK(out.empty());
  CHECK(find_tag(publication_tags{{"a", "1"}, {"b", "2"}}, "b") != nullptr);
  CHECK(*find_tag(publication_tags{{"a", "1"}, {"b", "2"}}, "b") == "2");
  CHECK(find_tag(publication_tags{{"a", "1"}}, "c") == nullptr);
}

TEST_CASE("tags: bad shapes and bounds are refused with a reason", "[tags][bad-input]") {
  CHECK(refused(json::array()) == "\"tags\" must be an object of strings");
  CHECK(refused("x") == "\"tags\" must be an object of strings");
  CHECK(refused(json{{"n", 1}}).find("\"tags.n\" must be a string") == 0);
  CHECK(refused(json{{"n", nullptr}}).find("\"tags.n\" must be a string") == 0);
  CHECK(refused(json{{"n", json::object()}}).find("\"tags.n\" must be a string") == 0);
  CHECK(refused(json{{"event", "x"}}).find("\"tags.event\" is not allowed") == 0);
  CHECK(refused(json{{"event", 5}}, event_tag_policy::take).find("must be a string") !=
        std::string::npos);
  CHECK(refused(json{{"", "x"}}).find("tag key must be 1-64 bytes") != std::string::npos);
  CHECK(refused(json{{std::string(max_tag_key_bytes + 1, 'k'), "x"}}).find("1-64 bytes") !=
        std::string::npos);
  CHECK(refused(json{{"k", std::string(max_tag_value_bytes + 1, 'v')}}).find("longer than 256") !=
        std::string::npos);
  json many = json::object();
  for (std::size_t i = 0; i <= max_tags; ++i)
    many["t" + std::to_string(i)] = "v";
  CHECK(refused(many).find("at most 32 tags") != std::string::npos);
  // The bounds themselves pass, and `event` is not counted.
  many.erase("t0");
  many["event"] = "e";
  publication_tags out;
  std::string event, detail;
  CHECK(read_tags(many, event_tag_policy::take, out, event, detail));
  CHECK(out.size() == max_tags);
  CHECK(read_tags(json{{std::string(max_tag_key_bytes, 'k'), std::string(max_tag_value_bytes, 'v')}},
                  event_tag_policy::refuse, out, event, detail));
}

TEST_CASE("tags: JSON object text for Redis, object members for pushes", "[tags]") {
  CHECK(tags_json({}).empty());
  const publication_tags t{{"a", "1"}, {"q", "say \"hi\"\n"}};
  CHECK(tags_json(t) == R"({"a":"1","q":"say \"hi\"\n"})");
  std::string out = "{";
  append_tag_members(out, t);
  out += '}';
  CHECK(json::parse(out) == json{{"a", "1"}, {"q", "say \"hi\"\n"}});
  std::string none;
  append_tag_members(none, {});
  CHECK(none.empty());
}
