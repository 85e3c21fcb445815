#include "net/wire/json_input.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

using namespace herald::net;
using nlohmann::json;

namespace {

std::string nested(std::size_t depth, std::string_view inner = "") {
  return std::string(depth, '[') + std::string(inner) + std::string(depth, ']');
}

bool parses(std::string_view text, std::size_t max_depth = max_json_depth) {
  json out;
  return parse_client_json(text, out, max_depth);
}

} // namespace

TEST_CASE("parse_client_json parses JSON", "[json]") {
  json out;
  REQUIRE(parse_client_json(R"({"a":[1,"x",null],"b":{"c":true}})", out));
  CHECK(out == json{{"a", {1, "x", nullptr}}, {"b", {{"c", true}}}});
  REQUIRE(parse_client_json("  42 ", out));
  CHECK(out == 42);
  REQUIRE(parse_client_json(R"("\u00e9")", out));
  CHECK(out == "\xc3\xa9");
}

TEST_CASE("parse_client_json refuses what is not JSON", "[json][bad-input]") {
  for (std::string_view text : {"", "{", "[1,]", "{\"a\":1,}", "'x'", "nul", "1 2", "{} x",
                                "[1] // c", "/* c */ 1", "NaN", "\"\x01\"", "\"a\nb\""}) {
    INFO(text);
    CHECK_FALSE(parses(text));
  }
  CHECK_FALSE(parses("\"\xff\""));
  CHECK_FALSE(parses("\"\xe2\x80\""));
}

TEST_CASE("depth limit: 64 accepted, 65 refused", "[json][bad-input]") {
  CHECK(max_json_depth == 64);
  CHECK(parses(nested(1)));
  CHECK(parses(nested(64)));
  CHECK(parses(nested(64, "1")));
  CHECK_FALSE(parses(nested(65)));
  CHECK_FALSE(parses(nested(65, "1")));
  CHECK_FALSE(parses(nested(200000))); // refused before recursing
  // Unterminated deep input is refused too.
  CHECK_FALSE(parses(std::string(100000, '[')));
}

TEST_CASE("depth limit counts objects and arrays, and is configurable", "[json][bad-input]") {
  const std::string four = R"({"a":[{"b":[1]}]})";
  CHECK(parses(four, 4));
  CHECK_FALSE(parses(four, 3));
  CHECK(parses("1", 0));
  CHECK(parses(R"("[{")", 0));
  CHECK_FALSE(parses("[]", 0));
  CHECK_FALSE(parses("{}", 0));
  CHECK(parses("[[1],[2],[3],{\"a\":4}]", 2)); // siblings do not add up
  CHECK_FALSE(parses("[[1],[2],[[3]]]", 2));
  CHECK_FALSE(parses("[[1],[2],[3],{\"a\":[4]}]", 2));
}

TEST_CASE("brackets inside strings do not count", "[json][bad-input]") {
  const std::string deep_text(500, '[');
  CHECK(parses("[\"" + deep_text + "\"]", 1));
  CHECK(parses("{\"" + deep_text + "\":\"" + std::string(500, '{') + "\"}", 1));
  CHECK(parses("\"" + std::string(300, '[') + std::string(300, '{') + "\"", 0));
  // A 64-deep value whose innermost string is full of brackets.
  CHECK(parses(nested(64, "\"" + std::string(1000, '[') + "\"")));
  // Closing brackets inside strings do not end a level either.
  CHECK_FALSE(parses("[[\"]]]]]]]]\",[[]]]]", 3));
  CHECK(parses("[[\"]]]]]]]]\",[[]]]]", 4));
}

TEST_CASE("escaped quotes inside strings", "[json][bad-input]") {
  // An escaped quote does not end the string: the brackets after it are text.
  CHECK(parses(R"(["\"[[[[[[[[[["])", 1));
  CHECK(parses(R"(["a\"b\"[[[[", "\"]]]]"])", 1));
  CHECK(parses(R"(["\\\"[[[[[["])", 1)); // \\ then \" : still inside the string
  // An escaped backslash ends before the quote: the string is closed, and the
  // brackets after it count.
  CHECK_FALSE(parses(R"(["\\",[[[1]]]])", 3));
  CHECK(parses(R"(["\\",[[[1]]]])", 4));
  CHECK_FALSE(parses(R"(["\\\\",[[[1]]]])", 3));
  // Other escapes do not confuse the scanner.
  CHECK(parses(R"(["\n\t\u005b\u0022[[[[", 1])", 1));
  CHECK_FALSE(parses(R"(["\u005c",[[1]]])", 2)); // \u005c is a backslash, not an escape
}

TEST_CASE("dump_compact", "[json]") {
  CHECK(dump_compact(json{{"b", 1}, {"a", {1, 2}}}) == R"({"a":[1,2],"b":1})");
  CHECK(dump_compact(json("a\nb\r\"\\")) == R"("a\nb\r\"\\")");
  CHECK(dump_compact(json("\xc3\xa9")) == "\"\xc3\xa9\""); // UTF-8 kept, not \u escaped
  CHECK(dump_compact(json(nullptr)) == "null");
  // Invalid UTF-8 does not throw: it is replaced by U+FFFD.
  std::string out;
  CHECK_NOTHROW(out = dump_compact(json("a\xff"
                                        "b")));
  CHECK(out == "\"a\xef\xbf\xbd"
               "b\"");
}

TEST_CASE("is_valid_event_name", "[json][event]") {
  for (std::string_view ok : {"a", "withdrawn", "A-z_0.9:x", "herald", "heraldx", "herald-x",
                              "herald:x", "Herald.x", "HERALD.x", "x.herald.", ".", ":", "-", "_",
                              "0123456789012345678901234567890123456789012345678901234567890123"}) {
    INFO(ok);
    CHECK(is_valid_event_name(ok));
  }
  using namespace std::string_view_literals;
  for (std::string_view bad :
       {""sv, "herald."sv, "herald.gap"sv, "herald.x.y"sv, "a b"sv, " a"sv, "a\n"sv, "a\r"sv,
        "a\0"sv, "a/b"sv, "a\"b"sv, "a,b"sv, "caf\xc3\xa9"sv, "\xff"sv, "a\tb"sv, "e!"sv,
        "01234567890123456789012345678901234567890123456789012345678901234"sv}) {
    INFO(std::string(bad));
    CHECK_FALSE(is_valid_event_name(bad));
  }
  CHECK(is_valid_event_name(std::string(64, 'e')));
  CHECK_FALSE(is_valid_event_name(std::string(65, 'e')));
}

TEST_CASE("parse_client_json refuses a key named twice in one object, at any depth",
          "[json][bad-input]") {
  json out;
  std::string why;
  CHECK(
    parse_client_json(R"({"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]})", out, max_json_depth, &why));
  CHECK_FALSE(
    parse_client_json(R"({"op":"subscribe","op":"unsubscribe"})", out, max_json_depth, &why));
  CHECK(why == "duplicate key \"op\"");
  CHECK(out.is_null());
  CHECK_FALSE(parses(R"({"x":{"channel":"a","channel":"b"}})"));
  CHECK_FALSE(parses(R"([{"k":1},{"k":1,"k":1}])"));
  CHECK_FALSE(parses(R"({"\u0061":1,"a":2})")); // the same key once unescaped
}
