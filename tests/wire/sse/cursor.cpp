#include "net/wire/sse/cursor.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

using namespace herald::net;
using namespace herald::net::sse;

namespace {

using namespace std::string_view_literals;

constexpr std::size_t many = 64;

// Parses `text` and reports only whether it was accepted.
bool accepts(std::string_view text, std::size_t max_entries = many) {
  std::vector<cursor_entry> out;
  return parse_cursor(text, max_entries, out);
}

cursor_entry entry(std::uint32_t hash, std::string epoch, std::uint64_t offset) {
  cursor_entry e;
  e.channel_hash = hash;
  e.position = stream_position{std::move(epoch), offset};
  return e;
}

// A cursor of `n` distinct entries `0000000i-e-1`.
std::string cursor_of(std::size_t n) {
  std::vector<cursor_entry> entries;
  for (std::size_t i = 0; i < n; ++i)
    entries.push_back(entry(static_cast<std::uint32_t>(i), "e", 1));
  return encode_cursor(entries);
}

} // namespace

TEST_CASE("channel_hash is FNV-1a 32", "[sse][cursor]") {
  CHECK(channel_hash("") == 0x811c9dc5u);
  CHECK(channel_hash("a") == 0xe40c292cu);
  CHECK(channel_hash("foobar") == 0xbf9cf968u);
  // The channels of the example cursor in docs/protocol.md.
  CHECK(channel_hash("stream:42") == 0x7ae5332bu);
  CHECK(channel_hash("user:GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ") ==
        0xa11b35e1u);
  // Bytes, not characters: a high byte is hashed as unsigned.
  CHECK(channel_hash("\xff"sv) == ((0x811c9dc5u ^ 0xffu) * 16777619u));
  CHECK(channel_hash("\0"sv) == 0x050c5d1fu);
}

TEST_CASE("append_entry and encode_cursor produce the documented format", "[sse][cursor]") {
  std::string out = "x";
  append_entry(out, entry(0x7ae5332b, "u81bgp9q1gin", 4));
  CHECK(out == "x7ae5332b-u81bgp9q1gin-4");

  CHECK(encode_cursor({}) == "");
  CHECK(encode_cursor({entry(0, "a", 0)}) == "00000000-a-0");
  CHECK(encode_cursor({entry(0xffffffff, "z9", max_client_offset)}) ==
        "ffffffff-z9-9007199254740991");
  CHECK(
    encode_cursor({entry(0x7ae5332b, "u81bgp9q1gin", 4), entry(0xa11b35e1, "jymkve2ow1t7", 3)}) ==
    "7ae5332b-u81bgp9q1gin-4_a11b35e1-jymkve2ow1t7-3");
  // Leading zeros of the hash are kept (always 8 digits).
  CHECK(encode_cursor({entry(0x00000abc, "e", 10)}) == "00000abc-e-10");
}

TEST_CASE("the example cursor of docs/protocol.md parses", "[sse][cursor]") {
  std::vector<cursor_entry> out;
  REQUIRE(parse_cursor("7ae5332b-u81bgp9q1gin-4_a11b35e1-jymkve2ow1t7-3", many, out));
  REQUIRE(out.size() == 2);
  CHECK(out[0].channel_hash == channel_hash("stream:42"));
  CHECK(out[0].position.epoch == "u81bgp9q1gin");
  CHECK(out[0].position.offset == 4);
  CHECK(out[1].channel_hash == 0xa11b35e1u);
  CHECK(out[1].position.epoch == "jymkve2ow1t7");
  CHECK(out[1].position.offset == 3);
}

TEST_CASE("encode_cursor / parse_cursor round trip", "[sse][cursor]") {
  std::vector<cursor_entry> in{
    entry(channel_hash("stream:1"), "abc", 0),
    entry(channel_hash("stream:2"), std::string(32, 'z'), max_client_offset),
    entry(0, "0", 1),
    entry(0xffffffff, "a1b2c3", 123456789),
  };
  auto text = encode_cursor(in);
  std::vector<cursor_entry> out;
  REQUIRE(parse_cursor(text, in.size(), out));
  REQUIRE(out.size() == in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    INFO("entry " << i);
    CHECK(out[i].channel_hash == in[i].channel_hash);
    CHECK(out[i].position.epoch == in[i].position.epoch);
    CHECK(out[i].position.offset == in[i].position.offset);
  }
  CHECK(encode_cursor(out) == text);
}

TEST_CASE("parse_cursor clears stale output and accepts limits exactly", "[sse][cursor]") {
  std::vector<cursor_entry> out{entry(1, "old", 1), entry(2, "old", 2)};
  REQUIRE(parse_cursor("00000003-new-3", many, out));
  REQUIRE(out.size() == 1);
  CHECK(out[0].channel_hash == 3);
  CHECK(out[0].position.epoch == "new");

  SECTION("offset 0 and 2^53-1") {
    CHECK(accepts("00000001-e-0"));
    CHECK(accepts("00000001-e-9007199254740991"));
  }
  SECTION("epoch of 1 and 32 characters") {
    CHECK(accepts("00000001-a-1"));
    CHECK(accepts("00000001-" + std::string(32, 'a') + "-1"));
    CHECK(accepts("00000001-0123456789abcdefghijklmnopqrstuv-1"));
  }
  SECTION("exactly max_entries entries") {
    CHECK(accepts(cursor_of(1), 1));
    CHECK(accepts(cursor_of(3), 3));
    CHECK(accepts(cursor_of(64), 64));
  }
  SECTION("exactly max_cursor_bytes bytes") {
    // 315 entries "xxxxxxxx-e-1" joined by '_' are 315 * 13 - 1 = 4094 bytes;
    // a 3-letter last epoch makes 4096, a 4-letter one 4097.
    std::vector<cursor_entry> entries;
    for (std::uint32_t i = 0; i < 315; ++i)
      entries.push_back(entry(i, "e", 1));
    entries.back().position.epoch = "eee";
    auto text = encode_cursor(entries);
    REQUIRE(text.size() == max_cursor_bytes);
    CHECK(accepts(text, 1000));
    entries.back().position.epoch = "eeee";
    text = encode_cursor(entries);
    REQUIRE(text.size() == max_cursor_bytes + 1);
    CHECK_FALSE(accepts(text, 1000));
  }
}

TEST_CASE("parse_cursor refuses malformed cursors", "[sse][cursor][bad-input]") {
  // Each input is shown on failure.
  auto refused = [](std::string_view text, std::size_t max_entries = many) {
    INFO("input: \"" << std::string(text) << "\" (" << text.size() << " bytes)");
    std::vector<cursor_entry> out;
    CHECK_FALSE(parse_cursor(text, max_entries, out));
  };

  SECTION("empty") {
    refused("");
  }
  SECTION("over 4096 bytes") {
    refused(std::string(4097, 'a'));
    refused("00000001-e-1_" + std::string(5000, 'x'));
    std::string long_valid_shape = cursor_of(400); // 400*13-1 = 5199 bytes, valid shape
    REQUIRE(long_valid_shape.size() > max_cursor_bytes);
    refused(long_valid_shape, 1000);
  }
  SECTION("bad hash") {
    refused("7AE5332B-e-1");  // uppercase
    refused("7ae5332B-e-1");  // one uppercase digit
    refused("7ae5332-e-1");   // 7 digits
    refused("7ae5332bb-e-1"); // 9 digits
    refused("7ae5332g-e-1");  // non-hex
    refused("7ae 332b-e-1");
    refused("-e-1"); // empty
    refused("0x7ae533-e-1");
    refused("+7ae5332-e-1");
  }
  SECTION("bad epoch") {
    refused("7ae5332b--1");                             // empty
    refused("7ae5332b-" + std::string(33, 'a') + "-1"); // 33 characters
    refused("7ae5332b-ABC-1");                          // uppercase
    refused("7ae5332b-abC-1");
    refused("7ae5332b-ab.c-1"); // symbols
    refused("7ae5332b-ab:c-1");
    refused("7ae5332b-ab c-1");
    refused("7ae5332b-\xc3\xa9-1"); // non-ASCII
  }
  SECTION("bad offset") {
    refused("7ae5332b-e--1"); // negative
    refused("7ae5332b-e-+1"); // with sign
    refused("7ae5332b-e-");   // empty
    refused("7ae5332b-e-1a"); // non-decimal
    refused("7ae5332b-e-0x10");
    refused("7ae5332b-e-1.0");
    refused("7ae5332b-e- 1");
    refused("7ae5332b-e-1 ");
    refused("7ae5332b-e-1-2");                  // extra field
    refused("7ae5332b-e-9007199254740992");     // 2^53
    refused("7ae5332b-e-9999999999999999");     // 16 digits, over 2^53-1
    refused("7ae5332b-e-18446744073709551616"); // 2^64, 20 digits: overflow
    refused("7ae5332b-e-99999999999999999999"); // 20 digits
    refused("7ae5332b-e-18446744073709551615"); // 2^64-1
  }
  SECTION("missing fields") {
    refused("abc");
    refused("7ae5332b");
    refused("7ae5332b-e");
    refused("7ae5332b-1");
    refused("-");
    refused("--");
    refused("_");
  }
  SECTION("separators") {
    refused("00000001-e-1_");              // trailing '_'
    refused("_00000001-e-1");              // leading '_'
    refused("00000001-e-1__00000002-e-1"); // empty entry in the middle
    refused("00000001-e-1,00000002-e-1");
    refused("00000001-e-1 00000002-e-1");
  }
  SECTION("repeated channel hash") {
    refused("00000001-e-1_00000001-e-1");
    refused("00000001-a-1_00000002-b-2_00000001-c-3");
  }
  SECTION("more entries than max_entries") {
    refused(cursor_of(2), 1);
    refused(cursor_of(65), 64);
    refused(cursor_of(1), 0);
  }
  SECTION("embedded CR, LF, NUL") {
    refused("00000001-e-1\r");
    refused("00000001-e-1\n");
    refused("00000001-e-1\r\n");
    refused("00000001-e\n-1");
    refused("0000\r001-e-1");
    refused("00000001-e-1\0"sv);
    refused("00000001-e\0-1"sv);
    refused("00000001-e-1\0_00000002-e-1"sv);
    refused("00000001-e-1_\n00000002-e-1");
  }
}
