#include "net/wire/fossil_delta.hpp"

#include "net/wire/ws/utf8.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fossil = herald::net::fossil;
using fossil::apply_error;

namespace {

// A test-local writer of the format's integers, to craft deltas by hand.
std::string b64(std::uint64_t v) {
  static constexpr std::string_view digits =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~";
  std::string s;
  do {
    s.insert(s.begin(), digits[v & 63]);
    v >>= 6;
  } while (v != 0);
  return s;
}

// The checksum command that ends a delta for `target`.
std::string end_of(std::string_view target) {
  return b64(fossil::checksum(target)) + ";";
}

// create(), then apply() with the tightest limit; returns the delta.
std::string round_trip(std::string_view source, std::string_view target) {
  std::string delta = fossil::create(source, target);
  auto r = fossil::apply(source, delta, target.size());
  INFO("delta: " << delta);
  INFO("error: " << fossil::describe(r.error) << " at " << r.error_at);
  REQUIRE(r);
  REQUIRE(*r.target == target);
  return delta;
}

apply_error refusal(std::string_view source, std::string_view delta,
                    std::size_t max_target_bytes = 1 << 20) {
  auto r = fossil::apply(source, delta, max_target_bytes);
  CHECK_FALSE(r.target.has_value());
  return r.error;
}

std::string random_bytes(std::mt19937& rng, std::size_t n, int alphabet = 256) {
  std::uniform_int_distribution<int> byte(0, alphabet - 1);
  std::string s(n, '\0');
  for (auto& c : s)
    c = static_cast<char>(byte(rng));
  return s;
}

// A publication of about 2 KiB: an object of 30 string fields and a few
// numbers, as a stream event might carry.
nlohmann::json sample_object() {
  nlohmann::json j;
  j["type"] = "payment";
  j["id"] = "0x5c1d3f4a9b8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a392817065f4e";
  j["ledger"] = 51234567;
  j["created_at"] = "2024-05-01T12:34:56Z";
  j["amount"] = "1250.0000000";
  j["asset"] = {{"code", "USDC"},
                {"issuer", "GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN"}};
  for (int i = 0; i < 30; ++i) {
    char key[16];
    std::snprintf(key, sizeof key, "field_%02d", i);
    j["details"][key] = "value of field " + std::to_string(i) + " with some padding text abcdefgh";
  }
  return j;
}

// Runs a shell command; returns its exit status (-1 when it did not run)
// and appends what it printed to `output`.
int run(const std::string& command, std::string& output) {
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr)
    return -1;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    output.append(buf, n);
  int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

void write_file(const std::filesystem::path& p, std::string_view bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

} // namespace

// -- the format's pieces -------------------------------------------------------

TEST_CASE("fossil: checksum sums big-endian words, a last partial word padded", "[fossil]") {
  CHECK(fossil::checksum("") == 0);
  CHECK(fossil::checksum("abcd") == 0x61626364u);
  CHECK(fossil::checksum("hello") == 0xd7656c6cu); // 0x68656c6c + 0x6f000000
  CHECK(fossil::checksum("abcdefghijklmnopqrstuvwxyz") == 0xfe049094u);
  // Wraps modulo 2^32.
  CHECK(fossil::checksum(std::string(8, '\xff')) == 0xfffffffeu);
}

TEST_CASE("fossil: known deltas, byte for byte", "[fossil]") {
  // Header, inserts and checksum, in the format's base 64.
  CHECK(fossil::create("", "") == "0\n0;");
  CHECK(fossil::create("", "hello") == "5\n5:hello3NPMmh;");
  CHECK(fossil::create("hello", "") == "0\n0;");
  // An unchanged value is one copy of the whole source (26 is "Q").
  CHECK(fossil::create("abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyz") ==
        "Q\nQ@0,3z192K;");
  // One byte changed in the middle: copy, insert, copy.
  // 64 distinct bytes (four blocks): the copy after the change is found at
  // the next block (48) and extended back to the change (41; 23 bytes is "N").
  std::string source(64, ' ');
  for (std::size_t i = 0; i < source.size(); ++i)
    source[i] = static_cast<char>(' ' + i);
  std::string target = source;
  target[40] = '*';
  CHECK(fossil::create(source, target) == "10\nd@0,1:*N@e," + end_of(target));

  // Integers: 63 is "~", 64 is "10", 4096 is "100" (header of an insert-only delta).
  CHECK(fossil::create("", std::string(63, 'x')).rfind("~\n~:", 0) == 0);
  CHECK(fossil::create("", std::string(64, 'x')).rfind("10\n10:", 0) == 0);
  CHECK(fossil::create("", std::string(4096, 'x')).rfind("100\n100:", 0) == 0);

  // The reference encoder's own spellings decode too: an empty insert, and
  // leading zeros.
  CHECK(*fossil::apply("", "0\n0:0;", 0).target == "");
  CHECK(*fossil::apply("hello", "05\n005@0,3NPMmh;", 5).target == "hello");
}

// -- round trips ---------------------------------------------------------------

TEST_CASE("fossil: round trips at the edges", "[fossil]") {
  std::mt19937 rng(21);
  const std::string text = random_bytes(rng, 3000);

  SECTION("empty source and target") {
    CHECK(round_trip("", "") == "0\n0;");
  }
  SECTION("empty source") {
    CHECK(round_trip("", text).size() <= text.size() + 16);
  }
  SECTION("empty target") {
    CHECK(round_trip(text, "") == "0\n0;");
  }
  SECTION("identical") {
    CHECK(round_trip(text, text).size() < 20);
  }
  SECTION("completely different") {
    const std::string other = random_bytes(rng, 3000);
    CHECK(round_trip(text, other).size() <= other.size() + 16);
  }
  SECTION("source shorter than a block") {
    round_trip("tiny", "tiny but longer");
    round_trip(std::string(15, 'a'), std::string(15, 'a') + "b");
  }
  SECTION("target shorter than a block") {
    round_trip(text, text.substr(100, 10));
  }
  SECTION("a slice of the source") {
    const std::string slice = text.substr(1000, 700);
    CHECK(round_trip(text, slice).size() < 20);
  }
  SECTION("the source twice") {
    CHECK(round_trip(text, text + text).size() < 30);
  }
  SECTION("a source of one repeated byte") {
    const std::string zeros(100000, '\0');
    CHECK(round_trip(zeros, zeros + std::string(10, '\0')).size() < 40);
    CHECK(round_trip(zeros, std::string(5000, '\0') + "x" + std::string(5000, '\0')).size() < 40);
  }
  SECTION("a shared start that opens with continuation bytes") {
    // The copy of the shared start moves past the 0x80-0xBF bytes; they go
    // in an insert first (a fault found by the random edits below).
    const std::string start = "\x80\xbf\x80" + text.substr(0, 300);
    CHECK(round_trip(start + "tail", start + "TAIL").size() < 30);
  }
  SECTION("binary with every byte value") {
    std::string all;
    for (int i = 0; i < 256 * 8; ++i)
      all.push_back(static_cast<char>(i & 0xff));
    std::string changed = all;
    changed[700] = '\n';
    changed.insert(1500, std::string("\0\0;@,:", 6));
    CHECK(round_trip(all, changed).size() < 80);
  }
}

TEST_CASE("fossil: a 2 KiB JSON publication with a few fields changed gives a small delta",
          "[fossil]") {
  const nlohmann::json before = sample_object();
  const std::string source = before.dump();
  REQUIRE(source.size() > 2000);
  REQUIRE(source.size() < 2300);

  auto changed = before;
  SECTION("one field") {
    changed["ledger"] = 51234568;
  }
  SECTION("two fields") {
    changed["ledger"] = 51234568;
    changed["amount"] = "17.5000000";
  }
  SECTION("three fields, one of them deep") {
    changed["ledger"] = 51234568;
    changed["amount"] = "17.5000000";
    changed["details"]["field_13"] = "a new value for field 13";
  }
  SECTION("a field added and one removed") {
    changed["memo"] = "invoice 42";
    changed["details"].erase("field_07");
  }
  const std::string target = changed.dump();
  const std::string delta = round_trip(source, target);
  INFO(source.size() << " -> " << target.size() << " bytes, delta " << delta.size());
  CHECK(delta.size() * 100 < target.size() * 15);
  CHECK(delta.size() < 80);
}

TEST_CASE("fossil: changes within a block of either end still copy the rest", "[fossil]") {
  const std::string source =
    R"({"a":"1","payload":"a long enough value to hold several blocks of sixteen bytes","z":1})";
  std::string target = source;
  target[6] = '2';                 // in the first block
  target[target.size() - 2] = '9'; // in the last
  const std::string delta = round_trip(source, target);
  // Header, the start, "2", the middle, and "9}" (one byte is not worth a copy).
  CHECK(delta ==
        b64(target.size()) + "\n6@0,1:2" + b64(source.size() - 9) + "@7,2:9}" + end_of(target));
  // No block at all (a source of 13 bytes): the shared end is still a copy.
  CHECK(round_trip("short {\"a\":1}", "other {\"a\":1}") ==
        "D\n5:other8@5," + end_of("other {\"a\":1}"));
}

TEST_CASE("fossil: random edits round trip and never grow past the target", "[fossil]") {
  std::mt19937 rng(2024);
  for (int round = 0; round < 400; ++round) {
    // A small alphabet makes blocks repeat, so hashes collide and chains grow.
    const int alphabet = round % 3 == 0 ? 4 : round % 3 == 1 ? 40 : 256;
    std::string source = random_bytes(rng, rng() % 5000, alphabet);
    std::string target = source;
    const int edits = static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = target.empty() ? 0 : rng() % target.size();
      const std::size_t len = rng() % 200;
      switch (rng() % 4) {
      case 0: // insert new bytes
        target.insert(at, random_bytes(rng, len, alphabet));
        break;
      case 1: // delete
        target.erase(at, len);
        break;
      case 2: // overwrite
        target.replace(at, std::min(len, target.size() - at), random_bytes(rng, len, alphabet));
        break;
      default: // move a piece of the source here
        if (!source.empty()) {
          const std::size_t from = rng() % source.size();
          target.insert(at, source.substr(from, len));
        }
      }
    }
    INFO("round " << round << ": " << source.size() << " -> " << target.size() << " bytes");
    const std::string delta = round_trip(source, target);
    CHECK(delta.size() <= target.size() + 20);
  }
}

TEST_CASE("fossil: a delta of UTF-8 text is UTF-8 text (inserts never split a character)",
          "[fossil]") {
  std::mt19937 rng(8);
  // Characters of 1 to 4 bytes that share lead or continuation bytes, so
  // matches often begin or end inside a character.
  const std::vector<std::string> chars = {"a", "é", "ü", "€", "₿", "中", "文", "😀", "😁", "\""};
  auto text = [&](std::size_t n) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i)
      s += chars[rng() % chars.size()];
    return s;
  };
  for (int round = 0; round < 300; ++round) {
    std::string source = text(rng() % 1500);
    std::string target;
    // The target: runs of the source cut at character boundaries (copies),
    // with new characters between them.
    std::size_t at = 0;
    while (at < source.size()) {
      std::size_t len = rng() % 80;
      std::size_t end = std::min(source.size(), at + len);
      while (end < source.size() && (static_cast<unsigned char>(source[end]) & 0xC0) == 0x80)
        ++end;
      target += source.substr(at, end - at);
      target += text(rng() % 3);
      at = end;
    }
    REQUIRE(herald::net::ws::is_valid_utf8(target));
    const std::string delta = round_trip(source, target);
    INFO("round " << round << ", delta: " << delta);
    CHECK(herald::net::ws::is_valid_utf8(delta));
  }
}

// -- refusals --------------------------------------------------------------------

TEST_CASE("fossil: apply refuses each kind of bad delta", "[fossil][bad-input]") {
  const std::string source = "hello, world!";
  const std::string hello = "5\n5:hello" + end_of("hello");
  REQUIRE(fossil::apply(source, hello, 5));

  // Each kind: the delta, against `source` unless another source is named.
  struct bad_delta {
    std::string source, delta;
    apply_error error;
  };
  const bad_delta cases[] = {
    // Bad integers.
    {source, "", apply_error::bad_integer},
    {source, "\n0;", apply_error::bad_integer},
    {source, "5\n!:hello", apply_error::bad_integer},
    {source, "5\n5@,", apply_error::bad_integer},
    {source, "5\n5@", apply_error::bad_integer},
    // Above 2^32 - 1 (seven digits), in a header and in a command.
    {source, "4000000\n", apply_error::bad_integer},
    {source, "5\n~~~~~~~@0,", apply_error::bad_integer},
    {source, "5\n5@4000000,", apply_error::bad_integer},
    {source, "5\n5:hello4000000;", apply_error::bad_integer},
    // The header's newline.
    {source, "5", apply_error::missing_newline},
    {source, "5 \n5:hello", apply_error::missing_newline},
    {source, "5:hello", apply_error::missing_newline},
    // Unknown commands.
    {source, "5\n5!hello", apply_error::unknown_command},
    {source, "5\n5\nhello", apply_error::unknown_command},
    {source, std::string("5\n5\0hello", 9), apply_error::unknown_command},
    // A copy without its comma.
    {source, "5\n5@0", apply_error::copy_not_terminated},
    {source, "5\n5@0" + end_of("hello"), apply_error::copy_not_terminated},
    {source, "5\n5@0:", apply_error::copy_not_terminated},
    // A copy past the end of the source.
    {"abc", "5\n5@0,", apply_error::copy_past_source},
    {"abc", "1\n1@3,", apply_error::copy_past_source},
    {"abc", "1\n1@~~~~~,", apply_error::copy_past_source},
    {"", "1\n1@0,", apply_error::copy_past_source},
    // An insert past the end of the delta.
    {source, "5\n5:hell", apply_error::literal_past_end},
    {source, "5\n5:", apply_error::literal_past_end},
    // More output than announced.
    {source, "3\n5:hello", apply_error::output_overflow},
    {source, "3\n5@0,", apply_error::output_overflow},
    {source, "5\n3@0,3@0,", apply_error::output_overflow},
    {source, "0\n1:x", apply_error::output_overflow},
    // Huge counts stop at the announced size, before the source or delta is read.
    {source, "5\n3~~~~~:x", apply_error::output_overflow},
    {source, "5\n3~~~~~@3~~~~~,", apply_error::output_overflow},
    // Less output than announced.
    {source, "5\n3:hel" + end_of("hel"), apply_error::size_mismatch},
    {source, "5\n" + end_of(""), apply_error::size_mismatch},
    // A wrong checksum.
    {source, "5\n5:hello0;", apply_error::bad_checksum},
    {source, "5\n5:hellp" + end_of("hello"), apply_error::bad_checksum},
    // No checksum.
    {source, "5\n5:hello", apply_error::unterminated},
    {source, "5\n", apply_error::unterminated},
    {source, "5\n5", apply_error::unterminated},
    {source, "5\n5@0,", apply_error::unterminated},
    // Bytes after the checksum.
    {source, hello + "x", apply_error::trailing_bytes},
    {source, hello + hello, apply_error::trailing_bytes},
  };
  for (const auto& [from, delta, error] : cases) {
    CAPTURE(from, delta);
    CHECK(refusal(from, delta) == error);
  }

  SECTION("a target above the limit, refused before allocating") {
    CHECK(refusal(source, hello, 4) == apply_error::target_too_large);
    CHECK(fossil::apply(source, hello, 5)); // the limit itself is allowed
    // 2^32 - 1 bytes announced: refused from the header, nothing allocated.
    auto r = fossil::apply(source, "3~~~~~\n", 1 << 20);
    CHECK(r.error == apply_error::target_too_large);
    CHECK(r.error_at == 0);
  }
  SECTION("a copy past the end of the source") {
    // The end itself is allowed: an empty copy there, a full copy from 0.
    CHECK(fossil::apply("abc", "3\n0@3,3@0," + end_of("abc"), 3));
  }
  SECTION("where the error is") {
    auto r = fossil::apply(source, "5\n3@0,9@0,", 5);
    CHECK(r.error == apply_error::output_overflow);
    CHECK(r.error_at == 6); // the second copy
  }
}

TEST_CASE("fossil: every truncation of a delta is refused, every flipped bit refused or harmless",
          "[fossil][bad-input]") {
  const nlohmann::json before = sample_object();
  auto after = before;
  after["ledger"] = 7;
  const std::string source = before.dump();
  const std::string target = after.dump();
  const std::string delta = fossil::create(source, target);
  for (std::size_t n = 0; n < delta.size(); ++n) {
    INFO("first " << n << " bytes");
    CHECK_FALSE(fossil::apply(source, delta.substr(0, n), target.size()));
  }
  for (std::size_t i = 0; i < delta.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = delta;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      auto r = fossil::apply(source, bad, 1 << 16);
      // Refused, or the same target: a flipped copy offset may copy equal
      // bytes from elsewhere (a flipped insert byte changes the checksum).
      if (r) {
        CHECK(*r.target == target);
      }
    }
  }
}

TEST_CASE("fossil: every error has its own description", "[fossil]") {
  std::set<std::string_view> seen;
  for (int e = 0; e <= static_cast<int>(apply_error::trailing_bytes); ++e) {
    auto text = fossil::describe(static_cast<apply_error>(e));
    CHECK_FALSE(text.empty());
    CHECK(seen.insert(text).second);
  }
}

// -- the SDK's decoder ---------------------------------------------------------------

TEST_CASE("fossil: the centrifuge SDK's own decoder rebuilds our targets", "[fossil][sdk]") {
  const std::string node = HERALD_NODE;
  INFO("node: " << node << " (scripts/install-deps.sh); SDK: `npm ci --prefix tests/e2e`");
  REQUIRE_FALSE(node.empty());
  REQUIRE(std::filesystem::exists(node));
  const std::string e2e = std::string(HERALD_SOURCE_DIR) + "/tests/e2e";
  const std::string script = std::string(HERALD_SOURCE_DIR) + "/tests/wire/fossil_delta_sdk.mjs";

  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> cases;
  const nlohmann::json before = sample_object();
  const std::string json = before.dump();
  auto one = before;
  one["ledger"] = 51234568;
  auto three = one;
  three["amount"] = "17.5000000";
  three["details"]["field_13"] = "a new value for field 13";
  auto unicode = before;
  unicode["memo"] = "café 中文 😀 — ₿";
  auto unicode2 = unicode;
  unicode2["memo"] = "cafè 中文 😁 — ₿€";
  std::mt19937 rng(5);
  const std::string bytes = random_bytes(rng, 4000);
  std::string bytes_changed = bytes;
  bytes_changed.replace(1000, 10, "\0\n;:@,\xff\x80", 8);
  bytes_changed += bytes.substr(0, 500);
  std::string big;
  for (int i = 0; i < 2000; ++i)
    big += "line " + std::to_string(i) + " of a long text\n";
  std::string big_changed = big;
  big_changed.replace(30000, 5, "CHANGED");
  big_changed.erase(5000, 300);

  cases.push_back({"empty", {"", ""}});
  cases.push_back({"to_empty", {json, ""}});
  cases.push_back({"from_empty", {"", json}});
  cases.push_back({"identical", {json, json}});
  cases.push_back({"json_one_field", {json, one.dump()}});
  cases.push_back({"json_three_fields", {json, three.dump()}});
  cases.push_back({"json_unicode", {unicode.dump(), unicode2.dump()}});
  cases.push_back({"json_other", {json, nlohmann::json{{"x", 1}}.dump()}});
  cases.push_back({"short_source", {"{\"a\":1}", "{\"a\":2,\"b\":[1,2,3]}"}});
  cases.push_back({"binary", {bytes, bytes_changed}});
  cases.push_back({"binary_different", {bytes, random_bytes(rng, 3000)}});
  cases.push_back({"text_80k", {big, big_changed}});

  const auto dir =
    std::filesystem::temp_directory_path() / ("herald-fossil-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string names;
  for (const auto& [name, pair] : cases) {
    const auto& [source, target] = pair;
    const std::string delta = round_trip(source, target);
    write_file(dir / (name + ".source"), source);
    write_file(dir / (name + ".delta"), delta);
    write_file(dir / (name + ".target"), target);
    names += " " + name;
  }

  std::string output;
  const int status = run(quoted(node) + " " + quoted(script) + " " + quoted(e2e) + " " +
                           quoted(dir.string()) + names + " 2>&1",
                         output);
  std::filesystem::remove_all(dir);
  INFO(output);
  CHECK(status == 0);
  for (const auto& [name, pair] : cases) {
    CHECK(output.find(name + " bytes ok\n") != std::string::npos);
  }
  for (const char* name : {"json_one_field", "json_three_fields", "json_unicode", "json_other",
                           "short_source", "identical", "from_empty"}) {
    CHECK(output.find(std::string(name) + " json ok\n") != std::string::npos);
  }
}
