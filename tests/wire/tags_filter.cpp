// tags_filter: Centrifugo's FilterNode tree over a publication's tags, every
// operator, the trees it refuses and its limits.
#include "net/wire/tags_filter.hpp"

#include "loadtest/counting_new.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <memory>
#include <new>
#include <string>

// Counts this thread's heap allocations, so a test can show that evaluation
// makes none (the whole test executable allocates through here).
using herald::loadtest::thread_allocations;

using namespace herald::net;
using nlohmann::json;

namespace {

tags_filter_ptr parse(const std::string& text) {
  std::string error;
  auto f = tags_filter::parse(json::parse(text), error);
  INFO(text << " -> " << error);
  REQUIRE(f);
  CHECK(error.empty());
  return f;
}

std::string refusal(const json& tree) {
  std::string error;
  auto f = tags_filter::parse(tree, error);
  CHECK_FALSE(f);
  CHECK_FALSE(error.empty());
  return error;
}

std::string refusal_text(const std::string& text) { return refusal(json::parse(text)); }

// A publication with event "withdrawn" and these tags.
const publication_tags tags{{"amount", "12.50"}, {"asset", "USDC"}, {"memo", "rent-june"}};

bool match(const std::string& filter, const publication_tags& t = tags,
           const std::string& event = "withdrawn") {
  return parse(filter)->matches(event, t);
}

} // namespace

TEST_CASE("tags_filter: eq and neq, on a tag and on the event", "[tags_filter]") {
  CHECK(match(R"({"key":"asset","cmp":"eq","val":"USDC"})"));
  CHECK_FALSE(match(R"({"key":"asset","cmp":"eq","val":"usdc"})"));
  CHECK_FALSE(match(R"({"key":"missing","cmp":"eq","val":"USDC"})"));
  CHECK(match(R"({"key":"asset","cmp":"neq","val":"XLM"})"));
  CHECK_FALSE(match(R"({"key":"asset","cmp":"neq","val":"USDC"})"));
  CHECK(match(R"({"key":"missing","cmp":"neq","val":"USDC"})")); // a missing tag is not equal
  // Herald's event name is the tag `event`.
  CHECK(match(R"({"key":"event","cmp":"eq","val":"withdrawn"})"));
  CHECK_FALSE(match(R"({"key":"event","cmp":"eq","val":"topped_up"})"));
  CHECK(match(R"({"key":"event","cmp":"eq","val":"topped_up"})", tags, "topped_up"));
}

TEST_CASE("tags_filter: in and nin", "[tags_filter]") {
  CHECK(match(R"({"key":"asset","cmp":"in","vals":["XLM","USDC"]})"));
  CHECK_FALSE(match(R"({"key":"asset","cmp":"in","vals":["XLM","EURC"]})"));
  CHECK_FALSE(match(R"({"key":"missing","cmp":"in","vals":["XLM",""]})"));
  CHECK(match(R"({"key":"asset","cmp":"nin","vals":["XLM","EURC"]})"));
  CHECK_FALSE(match(R"({"key":"asset","cmp":"nin","vals":["USDC"]})"));
  CHECK(match(R"({"key":"missing","cmp":"nin","vals":["USDC"]})"));
  CHECK(match(R"({"key":"event","cmp":"in","vals":["topped_up","withdrawn"]})"));
}

TEST_CASE("tags_filter: ex and nex", "[tags_filter]") {
  CHECK(match(R"({"key":"memo","cmp":"ex"})"));
  CHECK_FALSE(match(R"({"key":"missing","cmp":"ex"})"));
  CHECK(match(R"({"key":"missing","cmp":"nex"})"));
  CHECK_FALSE(match(R"({"key":"memo","cmp":"nex"})"));
  CHECK(match(R"({"key":"event","cmp":"ex"})")); // every publication has an event
  CHECK(match(R"({"key":"empty","cmp":"ex"})", {{"empty", ""}})); // an empty value exists
}

TEST_CASE("tags_filter: sw, ew and ct", "[tags_filter]") {
  CHECK(match(R"({"key":"memo","cmp":"sw","val":"rent"})"));
  CHECK_FALSE(match(R"({"key":"memo","cmp":"sw","val":"june"})"));
  CHECK(match(R"({"key":"memo","cmp":"ew","val":"june"})"));
  CHECK_FALSE(match(R"({"key":"memo","cmp":"ew","val":"rent"})"));
  CHECK_FALSE(match(R"({"key":"memo","cmp":"ew","val":"the rent-june"})")); // longer than the tag
  CHECK(match(R"({"key":"memo","cmp":"ct","val":"t-j"})"));
  CHECK_FALSE(match(R"({"key":"memo","cmp":"ct","val":"july"})"));
  CHECK_FALSE(match(R"({"key":"missing","cmp":"sw","val":"r"})"));
  CHECK_FALSE(match(R"({"key":"missing","cmp":"ew","val":"r"})"));
  CHECK_FALSE(match(R"({"key":"missing","cmp":"ct","val":"r"})"));
}

TEST_CASE("tags_filter: lt, lte, gt, gte compare decimal numbers", "[tags_filter]") {
  CHECK(match(R"({"key":"amount","cmp":"gt","val":"12.49"})"));
  CHECK(match(R"({"key":"amount","cmp":"gt","val":"9"})")); // as numbers: "9" > "12.50" as text
  CHECK_FALSE(match(R"({"key":"amount","cmp":"gt","val":"12.5"})"));
  CHECK(match(R"({"key":"amount","cmp":"gte","val":"12.5"})")); // 12.50 == 12.5
  CHECK(match(R"({"key":"amount","cmp":"lte","val":"012.500"})"));
  CHECK_FALSE(match(R"({"key":"amount","cmp":"lt","val":"12.5"})"));
  CHECK(match(R"({"key":"amount","cmp":"lt","val":"100"})"));
  CHECK(match(R"({"key":"amount","cmp":"gt","val":"-100"})"));
  CHECK_FALSE(match(R"({"key":"amount","cmp":"lt","val":"-0.1"})"));
  // Negative numbers order the other way; -0 is 0.
  const publication_tags neg{{"n", "-2.5"}};
  CHECK(match(R"({"key":"n","cmp":"lt","val":"-2.25"})", neg));
  CHECK(match(R"({"key":"n","cmp":"gt","val":"-10"})", neg));
  CHECK(match(R"({"key":"n","cmp":"gte","val":"-2.50"})", neg));
  CHECK(match(R"({"key":"z","cmp":"gte","val":"0"})", {{"z", "-0.00"}}));
  CHECK(match(R"({"key":"z","cmp":"lte","val":"0"})", {{"z", "-0.00"}}));
  CHECK(match(R"({"key":"z","cmp":"gt","val":"-0.001"})", {{"z", "+0"}}));
  // Beyond 2^64 and 2^53: exact, not a double's rounding.
  const publication_tags big{{"b", "184467440737095516160000000001"}};
  CHECK(match(R"({"key":"b","cmp":"gt","val":"184467440737095516160000000000"})", big));
  CHECK(match(R"({"key":"s","cmp":"gt","val":"9007199254740992"})", {{"s", "9007199254740993"}}));
  CHECK(match(R"({"key":"f","cmp":"lt","val":"0.30000000000000001"})", {{"f", "0.3"}}));
  // A tag that is not a number, or missing, matches none of the four.
  for (const char* cmp : {"lt", "lte", "gt", "gte"}) {
    const std::string leaf = std::string{R"({"key":"asset","cmp":")"} + cmp + R"(","val":"1"})";
    CHECK_FALSE(match(leaf));
    CHECK_FALSE(match(std::string{R"({"key":"missing","cmp":")"} + cmp + R"(","val":"1"})"));
    for (const char* bad : {"", "1.", ".", "-", "1e3", "1,5", " 1", "0x10", "1.2.3"})
      CHECK_FALSE(match(std::string{R"({"key":"x","cmp":")"} + cmp + R"(","val":"0"})",
                        {{"x", bad}}));
  }
  CHECK(match(R"({"key":"x","cmp":"lt","val":"1"})", {{"x", ".5"}}));
}

TEST_CASE("tags_filter: and, or, not", "[tags_filter]") {
  const std::string usdc_big =
    R"({"op":"and","nodes":[{"key":"asset","cmp":"eq","val":"USDC"},
                            {"key":"amount","cmp":"gte","val":"10"}]})";
  CHECK(match(usdc_big));
  CHECK_FALSE(match(usdc_big, {{"asset", "USDC"}, {"amount", "9.99"}}));
  CHECK_FALSE(match(usdc_big, {{"amount", "11"}}));
  const std::string xlm_or_rent =
    R"({"op":"or","nodes":[{"key":"asset","cmp":"eq","val":"XLM"},
                           {"key":"memo","cmp":"sw","val":"rent"}]})";
  CHECK(match(xlm_or_rent));
  CHECK(match(xlm_or_rent, {{"asset", "XLM"}}));
  CHECK_FALSE(match(xlm_or_rent, {{"asset", "EURC"}}));
  CHECK_FALSE(match(R"({"op":"not","nodes":[{"key":"asset","cmp":"eq","val":"USDC"}]})"));
  CHECK(match(R"({"op":"not","nodes":[{"key":"asset","cmp":"eq","val":"XLM"}]})"));
  // Nested: not (event in [..] and not memo ex).
  const std::string nested = R"({"op":"not","nodes":[{"op":"and","nodes":[
      {"key":"event","cmp":"in","vals":["withdrawn"]},
      {"op":"not","nodes":[{"key":"memo","cmp":"ex"}]}]}]})";
  CHECK(match(nested));                                    // has a memo
  CHECK_FALSE(match(nested, {}));                          // withdrawn without memo
  CHECK(match(nested, {}, "topped_up"));                   // another event
  // `op` "" is a leaf, as Centrifugo's OpLeaf.
  CHECK(match(R"({"op":"","key":"asset","cmp":"eq","val":"USDC"})"));
}

TEST_CASE("tags_filter: event_in is SSE's ?event= filter", "[tags_filter]") {
  auto f = tags_filter::event_in({"withdrawn", "topped_up"});
  CHECK(f->matches("withdrawn", {}));
  CHECK(f->matches("topped_up", tags));
  CHECK_FALSE(f->matches("trade", tags));
  CHECK_FALSE(f->matches("withdrawn_x", {}));
  CHECK(f->to_json() == R"({"cmp":"in","key":"event","vals":["withdrawn","topped_up"]})");
}

TEST_CASE("tags_filter: to_json gives the tree back", "[tags_filter]") {
  const auto text =
    R"({"nodes":[{"cmp":"eq","key":"a","val":"1"},{"nodes":[{"cmp":"nex","key":"b"}],"op":"not"}],"op":"or"})";
  CHECK(parse(text)->to_json() == text);
}

TEST_CASE("tags_filter: bad trees are refused with the node that is wrong",
          "[tags_filter][bad-input]") {
  CHECK(refusal_text("[]") == "the filter must be an object");
  CHECK(refusal_text("\"eq\"") == "the filter must be an object");
  CHECK(refusal_text(R"({})").find("cmp must be one of") != std::string::npos);
  CHECK(refusal_text(R"({"key":"a","cmp":"like","val":"x"})").find("not \"like\"") !=
        std::string::npos);
  CHECK(refusal_text(R"({"op":"xor","nodes":[{"key":"a","cmp":"ex"}]})").find("op must be") !=
        std::string::npos);
  CHECK(refusal_text(R"({"cmp":"eq","val":"x"})").find("needs a non-empty key") != std::string::npos);
  CHECK(refusal_text(R"({"key":"","cmp":"ex"})").find("needs a non-empty key") != std::string::npos);
  // val / vals as each comparison needs them (Centrifugo's Validate).
  CHECK(refusal_text(R"({"key":"a","cmp":"eq"})").find("takes a non-empty val") != std::string::npos);
  CHECK(refusal_text(R"({"key":"a","cmp":"eq","val":""})").find("non-empty val") != std::string::npos);
  CHECK(refusal_text(R"({"key":"a","cmp":"sw","val":"x","vals":["y"]})").find("no vals") !=
        std::string::npos);
  CHECK(refusal_text(R"({"key":"a","cmp":"in"})").find("non-empty vals") != std::string::npos);
  CHECK(refusal_text(R"({"key":"a","cmp":"in","vals":[]})").find("non-empty vals") !=
        std::string::npos);
  CHECK(refusal_text(R"({"key":"a","cmp":"nin","vals":["x"],"val":"y"})").find("no val") !=
        std::string::npos);
  CHECK(refusal_text(R"({"key":"a","cmp":"ex","val":"y"})").find("takes no val") != std::string::npos);
  CHECK(refusal_text(R"({"key":"a","cmp":"nex","vals":["y"]})").find("takes no val") !=
        std::string::npos);
  CHECK(refusal_text(R"({"key":"a","cmp":"gt","val":"ten"})").find("decimal number") !=
        std::string::npos);
  CHECK(refusal_text(R"({"key":"a","cmp":"lte","val":"1e3"})").find("decimal number") !=
        std::string::npos);
  // Types.
  CHECK(refusal_text(R"({"key":1,"cmp":"ex"})") == "key must be a string");
  CHECK(refusal_text(R"({"key":"a","cmp":"eq","val":5})") == "val must be a string");
  CHECK(refusal_text(R"({"key":"a","cmp":"in","vals":"x"})") == "vals must be an array of strings");
  CHECK(refusal_text(R"({"key":"a","cmp":"in","vals":["x",2]})").find("vals[1] must be a string") !=
        std::string::npos);
  CHECK(refusal_text(R"({"op":"and","nodes":{}})") == "nodes must be an array of filter nodes");
  CHECK(refusal_text(R"({"key":"a","cmp":"ex","extra":true})").find("extra is not a filter field") !=
        std::string::npos);
  // Structure: and/or need nodes, not exactly one; a leaf takes none; an op no leaf fields.
  CHECK(refusal_text(R"({"op":"and"})").find("at least one node") != std::string::npos);
  CHECK(refusal_text(R"({"op":"or","nodes":[]})").find("at least one node") != std::string::npos);
  CHECK(refusal_text(R"({"op":"not","nodes":[{"key":"a","cmp":"ex"},{"key":"b","cmp":"ex"}]})")
          .find("exactly one node") != std::string::npos);
  CHECK(refusal_text(R"({"key":"a","cmp":"ex","nodes":[{"key":"b","cmp":"ex"}]})")
          .find("takes no nodes") != std::string::npos);
  CHECK(refusal_text(R"({"op":"and","key":"a","nodes":[{"key":"b","cmp":"ex"}]})")
          .find("takes only nodes") != std::string::npos);
  // The path names the node.
  CHECK(refusal_text(R"({"op":"or","nodes":[{"key":"a","cmp":"ex"},{"op":"and","nodes":[{"key":"b","cmp":"gt","val":"x"}]}]})")
          .rfind("nodes[1].nodes[0].", 0) == 0);
  CHECK(refusal_text(R"({"op":"and","nodes":[{"key":"a","cmp":"ex"},5]})") ==
        "nodes[1] must be an object");
}

TEST_CASE("tags_filter: depth, node, vals and string limits", "[tags_filter][bad-input]") {
  // Depth: max_depth levels pass, one more is refused.
  auto nest = [](std::size_t depth) {
    json j{{"key", "a"}, {"cmp", "ex"}};
    for (std::size_t i = 1; i < depth; ++i)
      j = json{{"op", "not"}, {"nodes", json::array({j})}};
    return j;
  };
  std::string error;
  CHECK(tags_filter::parse(nest(tags_filter::max_depth), error));
  CHECK(refusal(nest(tags_filter::max_depth + 1)).find("deeper than 8") != std::string::npos);
  CHECK(refusal(nest(500)).find("deeper than 8") != std::string::npos); // stops at the limit
  // Nodes: an `or` of max_nodes - 1 leaves is max_nodes nodes.
  auto wide = [](std::size_t leaves) {
    json kids = json::array();
    for (std::size_t i = 0; i < leaves; ++i)
      kids.push_back({{"key", "k" + std::to_string(i)}, {"cmp", "ex"}});
    return json{{"op", "or"}, {"nodes", kids}};
  };
  CHECK(tags_filter::parse(wide(tags_filter::max_nodes - 1), error));
  CHECK(refusal(wide(tags_filter::max_nodes)).find("more than 64 nodes") != std::string::npos);
  // Vals, over the whole tree.
  json vals = json::array();
  for (std::size_t i = 0; i < tags_filter::max_vals; ++i)
    vals.push_back(std::to_string(i));
  CHECK(tags_filter::parse({{"key", "a"}, {"cmp", "in"}, {"vals", vals}}, error));
  json two{{"op", "and"},
           {"nodes", {{{"key", "a"}, {"cmp", "in"}, {"vals", vals}},
                      {{"key", "b"}, {"cmp", "in"}, {"vals", {"x"}}}}}};
  CHECK(refusal(two).find("more than 64 vals") != std::string::npos);
  // Strings.
  const std::string longest(tags_filter::max_string_bytes, 'v');
  CHECK(tags_filter::parse({{"key", "a"}, {"cmp", "eq"}, {"val", longest}}, error));
  CHECK(refusal(json{{"key", "a"}, {"cmp", "eq"}, {"val", longest + "v"}}).find("longer than") !=
        std::string::npos);
  CHECK(refusal(json{{"key", longest + "k"}, {"cmp", "ex"}}).find("key is longer than") !=
        std::string::npos);
  CHECK(refusal(json{{"key", "a"}, {"cmp", "in"}, {"vals", {longest + "v"}}})
          .find("vals[0] must be a string of at most") != std::string::npos);
}

TEST_CASE("tags_filter: evaluation allocates nothing", "[tags_filter]") {
  auto f = parse(R"({"op":"or","nodes":[
      {"op":"not","nodes":[{"key":"memo","cmp":"ex"}]},
      {"op":"and","nodes":[{"key":"memo","cmp":"sw","val":"rent"},
                           {"key":"amount","cmp":"lt","val":"1000.5"}]},
      {"key":"event","cmp":"nin","vals":["trade","fee"]},
      {"key":"asset","cmp":"in","vals":["USDC","XLM"]},
      {"key":"memo","cmp":"ct","val":"-j"}]})");
  const publication_tags long_values{{"amount", std::string(200, '7')},
                                     {"memo", std::string(200, 'm')}};
  const auto before = thread_allocations();
  bool any = false;
  for (int i = 0; i < 100; ++i) {
    any |= f->matches("withdrawn", tags);
    any |= f->matches("trade", long_values);
    any |= f->matches(std::string_view{}, {});
  }
  CHECK(thread_allocations() == before);
  CHECK(any);
  // The counter does count (the check above can fail).
  auto copy = std::make_unique<std::string>(300, 'x');
  CHECK(thread_allocations() > before);
}
